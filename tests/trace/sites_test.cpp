// The one site vocabulary (gwb/engine/sites.h): every name the printer writes parses back to the
// same site; names a model lacks are refused with the model's sites; the offset/head alias.
#include "gwb/engine/sites.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace gwb::engine;

namespace {
ModelConfig config(ModelKind kind) {
    ModelConfig c;
    c.kind = kind;
    c.nLayers = 3;
    c.nHeads = 4;
    if (kind == ModelKind::Grassmann) c.layerOffsets = {{1, 2, 4}, {1, 2, 4}, {1, 8}};
    return c;
}

std::string refusal(const std::string& name, const ModelConfig& c) {
    try {
        parseSiteName(name, c, "hook site");
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST(Sites, EveryPrintedNameParsesBackToItsSite) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const ModelConfig c = config(kind);
        const std::vector<std::string> names = siteNames(c);
        // Per layer: resid, 3 offsets (2 in layer 2) and a gate, or 4 heads; mixer, ffn. Then resid.N.
        EXPECT_EQ(names.size(), kind == ModelKind::Grassmann ? size_t(3 * 3 + 2 + 3 * 3 + 1) : size_t(3 * 7 + 1));
        EXPECT_EQ(names.front(), "resid.0");
        EXPECT_EQ(names.back(), "resid.3");
        for (const std::string& n : names)
            EXPECT_EQ(siteName(parseSiteName(n, c)), n);
        EXPECT_EQ(siteName(parseSiteName("ffn_in.2", c)), "ffn_in.2");
    }
    const SiteRef s = parseSiteName("offset.2.8", config(ModelKind::Grassmann));
    EXPECT_EQ(s.kind, SiteKind::Offset);
    EXPECT_EQ(s.layer, 2);
    EXPECT_EQ(s.unit, 8);
    EXPECT_EQ(siteName(SiteKind::Head, 1, 3), "head.1.3");
    EXPECT_EQ(siteName(SiteKind::Resid, 4), "resid.4");
}

TEST(Sites, NamesTheModelLacksAreRefusedWithItsSites) {
    const ModelConfig g = config(ModelKind::Grassmann), t = config(ModelKind::Transformer);
    EXPECT_NE(refusal("offset.2.4", g).find("layer 2 has no offset 4"), std::string::npos) << refusal("offset.2.4", g);
    EXPECT_NE(refusal("offset.2.4", g).find("D in the layer's offsets (0: 1,2,4; 1: 1,2,4; 2: 1,8)"),
              std::string::npos);
    EXPECT_NE(refusal("attn.1", t).find("unknown hook site 'attn.1'"), std::string::npos);
    EXPECT_NE(refusal("attn.1", t).find("head.L.H (H = 0..3)"), std::string::npos);
    EXPECT_NE(refusal("gate.0", t).find("a Transformer has no gate"), std::string::npos);
    EXPECT_NE(refusal("head.0.1", g).find("a Grassmann model has no heads"), std::string::npos);
    EXPECT_NE(refusal("head.0.4", t).find("head 4 does not exist"), std::string::npos);
    EXPECT_NE(refusal("mixer.3", g).find("layer 3 does not exist"), std::string::npos);
    EXPECT_NE(refusal("resid.x", g).find("'x' is not a number"), std::string::npos);
    EXPECT_NE(refusal("resid.1.2", g).find("expected resid.L"), std::string::npos);
    EXPECT_EQ(refusal("resid.3", g), ""); // the final state
}

TEST(Sites, TheUnitAliasIsEachModelsOwnUnit) {
    EXPECT_EQ(resolveUnitAlias(kUnitAlias, ModelKind::Grassmann), "offset");
    EXPECT_EQ(resolveUnitAlias(kUnitAlias, ModelKind::Transformer), "head");
    EXPECT_EQ(resolveUnitAlias("mixer", ModelKind::Transformer), "mixer");
    EXPECT_EQ(resolveUnitAlias("offset", ModelKind::Transformer), "offset"); // only the alias is resolved
    EXPECT_STREQ(unitSiteWord(ModelKind::Grassmann), "offset");
}
