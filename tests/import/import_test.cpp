// Layout mapping without Python: our own random model is renamed into each family's key names,
// written as .safetensors, imported, and must give identical logits; then every error the
// importer promises is provoked and its message checked. Layout files are families too. The
// configs found beside a checkpoint (config.json, saved arguments, Hydra) are in
// import_config_test.cpp.

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "import/layout_file.h"
#include "model/model_impl.h"
#include "import_test_util.h"
#include "test_builders.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

namespace gwb::engine {
namespace {

using namespace import_test;

struct RoundTrip {
    std::string layout;
    ModelKind kind;
};

class LayoutRoundTrip : public testing::TestWithParam<RoundTrip> {};

TEST_P(LayoutRoundTrip, RenamedWeightsGiveIdenticalLogits) {
    const auto [layout, kind] = GetParam();
    const Model ref = randomModel(tinyConfig(layout, kind), 5);
    TempDir dir;
    const std::string path = writeFile(dir, familyTensors(ref, layout));
    const ImportedModel got = importCheckpoint(path); // layout detected
    EXPECT_EQ(got.report.layout, layout);
    EXPECT_EQ(got.model.config().kind, kind);
    EXPECT_EQ(got.model.config().layerOffsets, ref.config().layerOffsets);
    EXPECT_EQ(got.model.config().norm, ref.config().norm);
    EXPECT_EQ(got.model.config().gate, ref.config().gate);
    EXPECT_EQ(got.model.config().empty, ref.config().empty);
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};
    EXPECT_EQ(logits(got.model, ids), logits(ref, ids));
    // Saved as .gwb and opened again (also through importCheckpoint): still the same model.
    got.model.save(dir.file("out.gwb"));
    const ImportedModel again = importCheckpoint(dir.file("out.gwb"));
    EXPECT_EQ(again.report.format, "gwb");
    EXPECT_EQ(again.model.config().family, layout); // the .gwb keeps where it came from
    EXPECT_EQ(logits(again.model, ids), logits(ref, ids));
}

INSTANTIATE_TEST_SUITE_P(
    All, LayoutRoundTrip,
    testing::Values(RoundTrip{"grasslm", ModelKind::Grassmann}, RoundTrip{"grasslm", ModelKind::Transformer},
                    RoundTrip{"alphaxiv", ModelKind::Grassmann}, RoundTrip{"alphaxiv", ModelKind::Transformer},
                    RoundTrip{"kanenorman", ModelKind::Grassmann}, RoundTrip{"kanenorman", ModelKind::Transformer}));

TEST(Import, LayoutDefaultsAndOffsetOverrides) {
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 6), (std::vector<std::vector<int>>{{1}, {2}, {4}, {8}, {12}, {16}}));
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 12)[1], std::vector<int>{1});
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 12)[11], std::vector<int>{16});
    EXPECT_EQ(defaultLayoutOffsets("kanenorman", 2)[1], (std::vector<int>{1, 2, 4, 8, 12, 16}));
    EXPECT_EQ(parseOffsetSchedule("4,1,1", 2), (std::vector<std::vector<int>>{{1, 4}, {1, 4}}));
    EXPECT_EQ(parseOffsetSchedule("1,2;3", 2), (std::vector<std::vector<int>>{{1, 2}, {3}}));
    EXPECT_THROW(parseOffsetSchedule("1;2;3", 2), std::invalid_argument);
    EXPECT_THROW(parseOffsetSchedule("1,x", 2), std::invalid_argument);
    EXPECT_THROW(parseOffsetSchedule("0", 2), std::invalid_argument);
    EXPECT_EQ(builtinLayout("AlphaXiv").name, "alphaxiv");
    EXPECT_THROW(builtinLayout("gpt2"), std::invalid_argument);

    const Model ref = randomModel(tinyConfig("kanenorman", ModelKind::Grassmann), 2);
    TempDir dir;
    ImportOptions o;
    o.offsetSchedule = "per_layer:2,16";
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "kanenorman")), o);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{2}, {16}}));
}

TEST(Import, PermutedPairIndicesAreFoldedIntoWPlu) {
    const Model ref = randomModel(tinyConfig("grasslm", ModelKind::Grassmann), 9);
    Tensors t = familyTensors(ref, "grasslm");
    // Layer 0 stores its 6 pairs of r = 4 reversed and as (j, i): p flips sign, so the columns
    // of W_plu must be reversed and negated to describe the same model.
    // Our order: (0,1) (0,2) (0,3) (1,2) (1,3) (2,3). The file lists them reversed, three of
    // them as (j, i).
    const std::vector<std::pair<int, int>> filePairs{{3, 2}, {1, 3}, {2, 1}, {0, 3}, {2, 0}, {0, 1}};
    std::vector<float> fi, fj;
    for (auto [a, b] : filePairs) {
        fi.push_back(static_cast<float>(a));
        fj.push_back(static_cast<float>(b));
    }
    const std::string p = "blocks.0.mixing.plucker_encoder.";
    FloatArray& w = t.at(p + "W_plu.weight"); // d x 6 in our order
    const FloatArray orig = w;
    for (int64_t row = 0; row < 16; ++row)
        for (int q = 0; q < 6; ++q) {
            const int ours = 5 - q;
            const float sign =
                filePairs[static_cast<size_t>(q)].first > filePairs[static_cast<size_t>(q)].second ? -1.0f : 1.0f;
            w.data[static_cast<size_t>(row * 6 + q)] = sign * orig.data[static_cast<size_t>(row * 6 + ours)];
        }
    TempDir dir;
    SafetensorsFile f;
    for (const auto& [n, a] : t)
        f.tensors[n] = makeStoredTensor(a.shape, a.data.data(), "F32");
    auto idx = [](const std::vector<float>& v) {
        StoredTensor s;
        s.dtype = "I64";
        s.shape = {static_cast<int64_t>(v.size())};
        for (float x : v) {
            const auto i = static_cast<int64_t>(x);
            s.bytes.append(reinterpret_cast<const char*>(&i), 8);
        }
        return s;
    };
    f.tensors[p + "idx_i"] = idx(fi);
    f.tensors[p + "idx_j"] = idx(fj);
    writeSafetensors(dir.file("perm.safetensors"), f);
    const auto m = importCheckpoint(dir.file("perm.safetensors"));
    const std::vector<int64_t> ids{1, 2, 3, 4, 5, 6, 7, 8};
    const auto a = logits(m.model, ids), b = logits(ref, ids);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], 1e-5);
    // A pair listed twice is not a pair order.
    f.tensors[p + "idx_i"] = idx({0, 0, 0, 1, 1, 2});
    f.tensors[p + "idx_j"] = idx({1, 1, 3, 2, 3, 3});
    writeSafetensors(dir.file("dup.safetensors"), f);
    expectImportError([&] { importCheckpoint(dir.file("dup.safetensors")); }, "pair (0, 1) twice");
}

TEST(Import, ErrorsNameTheProblem) {
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 3);
    const Tensors good = familyTensors(ref, "alphaxiv");
    TempDir dir;

    Tensors t = good;
    t["blocks.1.grassmann.extra.weight"] = FloatArray::zeros({2});
    expectImportError([&] { importCheckpoint(writeFile(dir, t)); },
                      "unknown keys (alphaxiv layout, grassmann model): blocks.1.grassmann.extra.weight");

    t = good;
    t.erase("ln_f.bias");
    expectImportError([&] { importCheckpoint(writeFile(dir, t)); },
                      "missing keys (alphaxiv layout, grassmann model): ln_f.bias");

    t = good;
    t["blocks.1.grassmann.W_gate.weight"] = FloatArray::zeros({16, 30});
    expectImportError([&] { importCheckpoint(writeFile(dir, t)); },
                      "shape mismatch: 'blocks.1.grassmann.W_gate.weight' is float32 [16, 30], "
                      "expected [16, 32]");

    t = good;
    t["lm_head.weight"] = FloatArray::zeros({50, 16});
    expectImportError([&] { importCheckpoint(writeFile(dir, t)); }, "untied heads are not supported");

    const Model tr = randomModel(tinyConfig("alphaxiv", ModelKind::Transformer), 3);
    ImportOptions wantG;
    wantG.expectedKind = ModelKind::Grassmann;
    expectImportError([&] { importCheckpoint(writeFile(dir, familyTensors(tr, "alphaxiv")), wantG); },
                      "this is a Transformer checkpoint");

    ImportOptions vocab;
    std::ofstream(dir.file("vocab.txt")) << "[PAD]\n[UNK]\nhello\n";
    vocab.vocabPath = dir.file("vocab.txt");
    expectImportError([&] { importCheckpoint(writeFile(dir, good), vocab); },
                      "has 3 entries but the embedding table has 50 rows");

    ImportOptions forced;
    forced.layout = "kanenorman";
    expectImportError([&] { importCheckpoint(writeFile(dir, good), forced); },
                      "not a kanenorman checkpoint (the keys look like the alphaxiv layout)");

    expectImportError(
        [&] {
            importCheckpoint(writeFile(dir, {{"foo.weight", FloatArray::zeros({2})}}));
        },
        "cannot tell which implementation");

    // A .pt whose pickle asks for os.system is refused before anything runs.
    const std::string evil = test::PickleWriter().global("os", "system").str("echo pwned").op('\x85').op('R').done();
    const auto zip = test::makeZip({{"evil/data.pkl", evil}});
    std::ofstream(dir.file("evil.pt"), std::ios::binary)
        .write(reinterpret_cast<const char*>(zip.data()), static_cast<std::streamsize>(zip.size()));
    expectImportError([&] { importCheckpoint(dir.file("evil.pt")); }, "'os.system', which is outside the allowed set");
    expectImportError([&] { importCheckpoint(dir.file("missing.pt")); }, "cannot open");
}

TEST(Import, VocabularyIsAttached) {
    const Model ref = randomModel(tinyConfig("grasslm", ModelKind::Grassmann), 4);
    TempDir dir;
    std::string vocab = "[PAD]\n[UNK]\n";
    for (int i = 2; i < 50; ++i) {
        vocab += 'w';
        vocab += std::to_string(i);
        vocab += '\n';
    }
    std::ofstream(dir.file("vocab.txt")) << vocab;
    ImportOptions o;
    o.vocabPath = dir.file("vocab.txt");
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "grasslm")), o);
    ASSERT_TRUE(m.model.tokenizer());
    EXPECT_EQ(m.model.tokenizer()->kind(), "wordpiece");
    EXPECT_EQ(m.model.tokenizer()->encodeIds("W7 w49 zz"), (std::vector<int32_t>{7, 49, 1}));
}

/// An int64 or float tensor for buffers.
StoredTensor i64(const std::vector<int64_t>& v) {
    StoredTensor s;
    s.dtype = "I64";
    s.shape = {static_cast<int64_t>(v.size())};
    s.bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * 8);
    return s;
}

std::string writeWithBuffers(const TempDir& dir, const Tensors& t, const std::map<std::string, StoredTensor>& extra,
                             const std::string& name) {
    SafetensorsFile f;
    for (const auto& [n, a] : t)
        f.tensors[n] = makeStoredTensor(a.shape, a.data.data(), "F32");
    for (const auto& [n, s] : extra)
        f.tensors[n] = s;
    writeSafetensors(dir.file(name), f);
    return dir.file(name);
}

TEST(Import, KaneNormanBuffersAreCheckedAndSkipped) {
    TempDir dir;
    // Grassmann: idx_i / idx_j in the lexicographic order are accepted; a wrong count refused.
    const Model g = randomModel(tinyConfig("kanenorman", ModelKind::Grassmann), 11);
    std::map<std::string, StoredTensor> idx;
    for (int l = 0; l < 2; ++l) {
        const std::string p = "transformer_blocks." + std::to_string(l) + ".attention.";
        idx[p + "idx_i"] = i64({0, 0, 0, 1, 1, 2});
        idx[p + "idx_j"] = i64({1, 2, 3, 2, 3, 3});
    }
    const auto m = importCheckpoint(writeWithBuffers(dir, familyTensors(g, "kanenorman"), idx, "g.st"));
    EXPECT_EQ(m.model.config().empty, EmptyRule::Bias);
    EXPECT_EQ(m.model.config().pluckerEps, 1e-6);
    EXPECT_EQ(m.model.config().gate, GateVariant::GeometryOnly);
    EXPECT_EQ(importedVariantText(m.model.config()),
              "kanenorman grassmann: norm=post gate=geometry_only empty=bias eps=1e-06");
    bool asksForNorm = false;
    for (const auto& n : m.report.flags)
        asksForNorm |= n.find("pass --norm pre") != std::string::npos;
    EXPECT_TRUE(asksForNorm) << "the undecidable pre_norm flag must be reported";
    idx["transformer_blocks.1.attention.idx_i"] = i64({0, 0, 1});
    expectImportError([&] { importCheckpoint(writeWithBuffers(dir, familyTensors(g, "kanenorman"), idx, "g2.st")); },
                      "index buffers hold 3 and 6 pairs");

    // Transformer: the causal_mask buffer must be Lmax x Lmax lower-triangular ones.
    const Model t = randomModel(tinyConfig("kanenorman", ModelKind::Transformer), 12);
    auto mask = [](int64_t n, bool causal) {
        std::vector<float> v(static_cast<size_t>(n * n));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
                v[static_cast<size_t>(i * n + j)] = (!causal || j <= i) ? 1.0f : 0.0f;
        return makeStoredTensor({n, n}, v.data(), "F32");
    };
    std::map<std::string, StoredTensor> masks{{"transformer_blocks.0.attention.causal_mask", mask(40, true)},
                                              {"transformer_blocks.1.attention.causal_mask", mask(40, true)}};
    const auto tm = importCheckpoint(writeWithBuffers(dir, familyTensors(t, "kanenorman"), masks, "t.st"));
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(tm.model, ids), logits(t, ids));
    masks["transformer_blocks.1.attention.causal_mask"] = mask(40, false);
    expectImportError([&] { importCheckpoint(writeWithBuffers(dir, familyTensors(t, "kanenorman"), masks, "t2.st")); },
                      "'transformer_blocks.1.attention.causal_mask' is not lower-triangular ones (entry [0, 1]");
    masks["transformer_blocks.1.attention.causal_mask"] = mask(20, true);
    expectImportError([&] { importCheckpoint(writeWithBuffers(dir, familyTensors(t, "kanenorman"), masks, "t3.st")); },
                      "the buffer disagrees with the weights");
}

TEST(Import, DetectionSaysWhyAndWhatCameSecond) {
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 22);
    TempDir dir;
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "alphaxiv")));
    ASSERT_EQ(m.report.detection.size(), 2u);
    EXPECT_NE(m.report.detection[0].find("layout alphaxiv (auto: token_embedding.weight, blocks.0.* and "
                                         "blocks.0.grassmann.W_red.weight)"),
              std::string::npos)
        << m.report.detection[0];
    EXPECT_NE(m.report.detection[1].find("second: "), std::string::npos) << m.report.detection[1];
    EXPECT_NE(m.report.detection[1].find("does not fit"), std::string::npos) << m.report.detection[1];
}

/// A family that exists only as a file: its own key names, separate q/k/v projections stacked
/// into our fused qkv, a pre-norm block.
const char* kSeparateQkvLayout = R"({
  "format": "gwb-layout", "version": 1, "name": "splitqkv", "title": "test family",
  "detect": {"all": ["emb.tok.weight", "layers.0."]},
  "embedding": {"tokens": "emb.tok.weight", "positions": "emb.pos.weight"},
  "blocks": "layers.{i}.", "final_norm": "norm_out", "head": "head.weight",
  "kinds": {
    "transformer": {
      "probe": "attn.q_proj.weight",
      "parameters": {
        "ln1": "n1",
        "qkv": {"weight": ["attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight"],
                "bias": ["attn.q_proj.bias", "attn.k_proj.bias", "attn.v_proj.bias"]},
        "out_proj": "attn.o",
        "ln2": "n2", "ffn_in": "ff.fc1", "ffn_out": "ff.fc2"
      },
      "variant": {"norm": "pre", "mixer_layer_norm": false}
    }
  }
})";

TEST(Import, ALayoutFileIsAFamily) {
    TempDir dir;
    const std::string layoutPath = dir.file("splitqkv.json");
    std::ofstream(layoutPath) << kSeparateQkvLayout;
    EXPECT_EQ(checkLayoutFile(layoutPath), "splitqkv");
    ModelConfig c = tinyConfig("alphaxiv", ModelKind::Transformer); // pre-norm, no mixer LN
    const Model ref = randomModel(c, 23);
    const Tensors ours = ref.parameters();
    Tensors theirs{{"emb.tok.weight", ours.at("tok_embed.weight")},
                   {"emb.pos.weight", ours.at("pos_embed.weight")},
                   {"norm_out.weight", ours.at("ln_final.weight")},
                   {"norm_out.bias", ours.at("ln_final.bias")}};
    const int64_t d = c.dModel;
    for (int64_t i = 0; i < c.nLayers; ++i) {
        const std::string o = "blocks." + std::to_string(i) + ".", t = "layers." + std::to_string(i) + ".";
        for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
                 {"ln1", "n1"}, {"out_proj", "attn.o"}, {"ln2", "n2"}, {"ffn_in", "ff.fc1"}, {"ffn_out", "ff.fc2"}})
            for (const char* part : {".weight", ".bias"})
                theirs[t + b + part] = ours.at(o + a + part);
        const FloatArray& w = ours.at(o + "qkv.weight");
        const FloatArray& bias = ours.at(o + "qkv.bias");
        const char* names[] = {"q_proj", "k_proj", "v_proj"};
        for (int64_t j = 0; j < 3; ++j) {
            theirs[t + "attn." + names[j] + ".weight"] =
                FloatArray({d, d}, std::vector<float>(w.data.begin() + j * d * d, w.data.begin() + (j + 1) * d * d));
            theirs[t + "attn." + names[j] + ".bias"] =
                FloatArray({d}, std::vector<float>(bias.data.begin() + j * d, bias.data.begin() + (j + 1) * d));
        }
    }
    const std::string ckpt = writeFile(dir, theirs);
    ImportOptions o;
    o.layoutFile = layoutPath;
    const auto m = importCheckpoint(ckpt, o);
    EXPECT_EQ(m.report.layout, "splitqkv");
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // The built-in layouts do not know it: auto detection says so for each of them.
    expectImportError([&] { importCheckpoint(ckpt); }, "no layout fits");
}

TEST(Import, LayoutFilesThatDoNotCoverOrMapTwiceAreRefused) {
    auto refused = [](const std::string& text, const std::string& needle) {
        try {
            parseLayout(text, "bad.json");
            ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    std::string t = kSeparateQkvLayout;
    std::string noFfn = t;
    noFfn.replace(noFfn.find(R"("ffn_out": "ff.fc2")"), std::string(R"("ffn_out": "ff.fc2")").size(),
                  R"("ffn_outx": "ff.fc2")");
    refused(noFfn, "names 'ffn_outx', which a transformer block does not have");
    std::string missing = t;
    missing.replace(missing.find(R"(, "ffn_out": "ff.fc2")"), std::string(R"(, "ffn_out": "ff.fc2")").size(), "");
    refused(missing, "does not cover every tensor of a block: ffn_out missing");
    std::string twice = t;
    twice.replace(twice.find(R"("out_proj": "attn.o")"), std::string(R"("out_proj": "attn.o")").size(),
                  R"("out_proj": "n1")");
    refused(twice, "maps 'n1.weight' twice");
    refused("{", "is not valid JSON");
    refused(R"({"format": "gwb-layout", "version": 2})", "\"version\" must be 1");
    // A found schedule the family's code never reads must say what the code runs instead.
    nlohmann::json ignored = nlohmann::json::parse(t);
    ignored["offsets"] = {{"otherwise", "1"}, {"config", "ignored"}};
    refused(ignored.dump(), "\"offsets\".config ignored needs \"config_ignored_why\"");
    ignored["offsets"]["config"] = "sometimes";
    refused(ignored.dump(), "must be set, per_layer or ignored");
}

/// The families that exist as layout files only: renamed weights (with the family's buffers)
/// import by auto-detection with the family's variant and give the original logits bit for bit.
struct NewFamily {
    std::string layout;
    ModelKind kind;
    std::string hydraYaml; ///< written as .hydra/config.yaml beside the checkpoint when not empty
};

class NewFamilyRoundTrip : public testing::TestWithParam<NewFamily> {};

TEST_P(NewFamilyRoundTrip, RenamedWeightsGiveIdenticalLogits) {
    const NewFamily f = GetParam();
    ModelConfig c = tinyConfig(f.layout, f.kind);
    const Layout& l = builtinLayout(f.layout);
    if (l.kind(f.kind).heads) c.nHeads = *l.kind(f.kind).heads;
    // Offsets: Arledge's fused checkpoints carry them (window_sizes_tensor); youdie006's come
    // from its Hydra config; the others use their layout's default (tinyConfig).
    if (f.kind == ModelKind::Grassmann && f.layout == "arledge") c.layerOffsets = {{1, 2, 4}, {1, 3}};
    if (f.kind == ModelKind::Grassmann && f.layout == "youdie006") c.layerOffsets = {{1, 3}, {1, 3}};
    if (f.hydraYaml.find("pre_norm: true") != std::string::npos) c.norm = l.kind(f.kind).preNorm;
    const Model ref = randomModel(c, 31);
    TempDir dir;
    std::filesystem::create_directories(dir.file("run/.hydra"));
    if (!f.hydraYaml.empty()) std::ofstream(dir.file("run/.hydra/config.yaml")) << f.hydraYaml;
    std::map<std::string, StoredTensor> buffers;
    const KindLayout& k = l.kind(f.kind);
    for (int64_t i = 0; i < c.nLayers; ++i) {
        const std::string p = l.blockPrefix(i);
        if (!k.offsetsBuffer.empty()) { // Arledge's fused kernel: int32 window sizes per layer
            StoredTensor t;
            t.dtype = "I32";
            const auto& set = c.layerOffsets[static_cast<size_t>(i)];
            t.shape = {static_cast<int64_t>(set.size())};
            std::vector<int32_t> v(set.begin(), set.end());
            t.bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
            buffers[p + k.offsetsBuffer] = t;
        }
        if (!k.causalMask.empty()) { // Wake2vec's 1 x 1 x Lmax x Lmax float mask
            std::vector<float> mask(static_cast<size_t>(c.maxLen * c.maxLen), 0.0f);
            for (int64_t a = 0; a < c.maxLen; ++a)
                for (int64_t b = 0; b <= a; ++b)
                    mask[static_cast<size_t>(a * c.maxLen + b)] = 1.0f;
            buffers[p + k.causalMask] = makeStoredTensor({1, 1, c.maxLen, c.maxLen}, mask.data(), "F32");
        }
    }
    const std::string path = writeWithBuffers(dir, familyTensors(ref, f.layout), buffers, "run/best.pt.safetensors");
    const ImportedModel got = importCheckpoint(path);
    EXPECT_EQ(got.report.layout, f.layout);
    std::string report;
    for (const auto& s : got.report.detection)
        report += s + "\n";
    for (const auto& s : got.report.flags)
        report += s + "\n";
    EXPECT_EQ(got.model.config().kind, f.kind) << report;
    EXPECT_EQ(got.model.config().norm, c.norm) << report;
    EXPECT_EQ(got.model.config().aggregation, c.aggregation) << report;
    EXPECT_EQ(got.model.config().empty, c.empty) << report;
    EXPECT_EQ(got.model.config().pluckerEps, c.pluckerEps) << report;
    EXPECT_EQ(got.model.config().nHeads, c.nHeads) << report;
    if (f.kind == ModelKind::Grassmann) {
        EXPECT_EQ(got.model.config().layerOffsets, c.layerOffsets) << report;
    }
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};
    EXPECT_EQ(logits(got.model, ids), logits(ref, ids)) << report;
}

const char* kYoudiePost = "model:\n  num_layers: 2\n  lags: [1, 3, 1, 3]\n  pre_norm: false # the paper's\n";

INSTANTIATE_TEST_SUITE_P(
    All, NewFamilyRoundTrip,
    testing::Values(NewFamily{"arledge", ModelKind::Grassmann, ""}, NewFamily{"arledge", ModelKind::Transformer, ""},
                    NewFamily{"adipks", ModelKind::Grassmann, ""}, NewFamily{"adipks", ModelKind::Transformer, ""},
                    NewFamily{"wake2vec", ModelKind::Grassmann, ""}, NewFamily{"wake2vec", ModelKind::Transformer, ""},
                    NewFamily{"wake2vec-ln1", ModelKind::Grassmann, ""},
                    NewFamily{"youdie006", ModelKind::Grassmann, kYoudiePost},
                    NewFamily{"youdie006", ModelKind::Transformer, kYoudiePost}),
    [](const testing::TestParamInfo<NewFamily>& info) {
        std::string n = info.param.layout + "_" + kindName(info.param.kind);
        for (char& ch : n)
            if (ch == '-') ch = '_';
        return n;
    });

// Found by tests/fuzz/fuzz_import_config and fuzz_layout (libFuzzer): a number too large for a
// double ("9999E9999") made the JSON library throw its own out_of_range exception instead of the
// readers' "not valid JSON" error, from a config.json beside a checkpoint and from a layout file.
TEST(Import, FuzzFoundNumberOverflowIsInvalidJson) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("kanenorman", ModelKind::Grassmann), 13);
    std::filesystem::create_directories(dir.file("hf"));
    writeFile(dir, familyTensors(ref, "kanenorman"), "hf/model.safetensors");
    std::ofstream(dir.file("hf/config.json")) << R"({"d_model": 9999E9999})";
    expectImportError([&] { importCheckpoint(dir.file("hf")); }, "config.json is not valid JSON");
    expectImportError([&] { parseLayout(R"({"format": "gwb-layout", "version": 710E8415941594503766})", "big.json"); },
                      "layout big.json is not valid JSON");
}

} // namespace
} // namespace gwb::engine
