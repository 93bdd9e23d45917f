#include "gwb/engine/sites.h"

#include <algorithm>
#include <stdexcept>

namespace gwb::engine {

const char* siteKindName(SiteKind kind) {
    switch (kind) {
    case SiteKind::Resid:
        return "resid";
    case SiteKind::Mixer:
        return "mixer";
    case SiteKind::Gate:
        return "gate";
    case SiteKind::Ffn:
        return "ffn";
    case SiteKind::FfnIn:
        return "ffn_in";
    case SiteKind::Offset:
        return "offset";
    case SiteKind::Head:
        return "head";
    }
    return "?";
}

std::string siteName(SiteKind kind, int layer, int unit) {
    std::string out = std::string(siteKindName(kind)) + "." + std::to_string(layer);
    if (kind == SiteKind::Offset || kind == SiteKind::Head) out += "." + std::to_string(unit);
    return out;
}

std::string siteName(const SiteRef& s) {
    return siteName(s.kind, s.layer, s.unit);
}

std::string validSiteNames(const ModelConfig& c) {
    const bool g = c.kind == ModelKind::Grassmann;
    const int N = static_cast<int>(c.nLayers);
    std::string out = "resid.0 .. resid." + std::to_string(N) + ", mixer.L, ffn_in.L (read only)";
    if (g) out += ", gate.L";
    out += ", ffn.L";
    out += g ? ", offset.L.D" : ", head.L.H (H = 0.." + std::to_string(c.nHeads - 1) + ")";
    out += " with L = 0.." + std::to_string(N - 1);
    if (g) {
        std::string offs;
        const auto& first = c.layerOffsets.empty() ? std::vector<int>{} : c.layerOffsets.front();
        const bool same = std::all_of(c.layerOffsets.begin(), c.layerOffsets.end(),
                                      [&](const std::vector<int>& o) { return o == first; });
        if (same) {
            for (int D : first)
                offs += (offs.empty() ? "" : ",") + std::to_string(D);
            out += " and D in {" + offs + "}";
        } else {
            out += " and D in the layer's offsets (";
            for (size_t l = 0; l < c.layerOffsets.size(); ++l) {
                std::string s;
                for (int D : c.layerOffsets[l])
                    s += (s.empty() ? "" : ",") + std::to_string(D);
                out += (l ? "; " : "") + std::to_string(l) + ": " + s;
            }
            out += ")";
        }
    }
    return out;
}

SiteRef parseSiteName(const std::string& name, const ModelConfig& c, const std::string& what) {
    auto fail = [&](const std::string& why) -> SiteRef {
        throw std::invalid_argument("unknown " + what + " '" + name + "'" + (why.empty() ? "" : " (" + why + ")") +
                                    "; the " + (c.kind == ModelKind::Grassmann ? "Grassmann" : "Transformer") +
                                    " model's sites are " + validSiteNames(c));
    };
    std::vector<std::string> parts;
    size_t start = 0;
    while (true) {
        const size_t dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    auto number = [&](const std::string& s) -> int {
        if (s.empty() || s.size() > 6 ||
            !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
            fail("'" + s + "' is not a number");
        return std::stoi(s);
    };
    const bool grassmann = c.kind == ModelKind::Grassmann;
    const int N = static_cast<int>(c.nLayers);
    SiteRef p;
    const std::string& k = parts[0];
    if (k == "resid" || k == "mixer" || k == "gate" || k == "ffn" || k == "ffn_in") {
        if (parts.size() != 2) fail("expected " + k + ".L");
        p.kind = k == "resid"    ? SiteKind::Resid
                 : k == "mixer"  ? SiteKind::Mixer
                 : k == "gate"   ? SiteKind::Gate
                 : k == "ffn_in" ? SiteKind::FfnIn
                                 : SiteKind::Ffn;
        if (p.kind == SiteKind::Gate && !grassmann) fail("a Transformer has no gate");
        p.layer = number(parts[1]);
        if (p.layer > N || (p.layer == N && p.kind != SiteKind::Resid)) fail("layer " + parts[1] + " does not exist");
        return p;
    }
    if (k == "offset" || k == "head") {
        if (parts.size() != 3) fail("expected " + k + (k == "offset" ? ".L.D" : ".L.H"));
        p.kind = k == "offset" ? SiteKind::Offset : SiteKind::Head;
        if (p.kind == SiteKind::Offset && !grassmann) fail("a Transformer has no offsets");
        if (p.kind == SiteKind::Head && grassmann) fail("a Grassmann model has no heads");
        p.layer = number(parts[1]);
        if (p.layer >= N) fail("layer " + parts[1] + " does not exist");
        p.unit = number(parts[2]);
        if (p.kind == SiteKind::Head) {
            if (p.unit >= c.nHeads) fail("head " + parts[2] + " does not exist");
        } else {
            const auto& offs = c.layerOffsets[static_cast<size_t>(p.layer)];
            if (std::find(offs.begin(), offs.end(), p.unit) == offs.end())
                fail("layer " + parts[1] + " has no offset " + parts[2]);
        }
        return p;
    }
    return fail("");
}

std::vector<std::string> siteNames(const ModelConfig& c) {
    const bool grassmann = c.kind == ModelKind::Grassmann;
    std::vector<std::string> out;
    for (int l = 0; l < c.nLayers; ++l) {
        out.push_back(siteName(SiteKind::Resid, l));
        if (grassmann)
            for (int D : c.layerOffsets[static_cast<size_t>(l)])
                out.push_back(siteName(SiteKind::Offset, l, D));
        else
            for (int hd = 0; hd < c.nHeads; ++hd)
                out.push_back(siteName(SiteKind::Head, l, hd));
        out.push_back(siteName(SiteKind::Mixer, l));
        if (grassmann) out.push_back(siteName(SiteKind::Gate, l));
        out.push_back(siteName(SiteKind::Ffn, l));
    }
    out.push_back(siteName(SiteKind::Resid, static_cast<int>(c.nLayers)));
    return out;
}

const char* unitSiteWord(ModelKind kind) {
    return kind == ModelKind::Grassmann ? "offset" : "head";
}

std::string resolveUnitAlias(const std::string& word, ModelKind kind) {
    return word == kUnitAlias ? std::string(unitSiteWord(kind)) : word;
}

std::string patchTextProblem(const std::string& mode, bool hasCorrupt, bool hasAnswer, bool hasWrong) {
    if (mode == "patch" && !hasCorrupt)
        return "mode patch puts clean values into a corrupted run: give a corrupted prompt (or ablate with mode zero "
               "or mean)";
    if (hasAnswer != hasWrong) return "the metric needs both an answer piece and a wrong piece";
    if (hasCorrupt && !hasAnswer)
        return "with a corrupted prompt the metric logit[answer] - logit[wrong] needs an answer piece and a wrong "
               "piece";
    return {};
}

} // namespace gwb::engine
