// Layout mapping without Python: our own random model is renamed into each family's key names,
// written as .safetensors, imported, and must give identical logits; then every error the
// importer promises is provoked and its message checked.

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "import/import_config.h"
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

TEST(Import, ConfigBesideTheCheckpointIsReadAndChecked) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("kanenorman", ModelKind::Grassmann), 13);
    const Tensors t = familyTensors(ref, "kanenorman");
    // An HF-style folder: config.json + model.safetensors, opened by its folder name.
    const std::filesystem::path folder = dir.file("hf");
    std::filesystem::create_directories(folder);
    writeFile(dir, t, "hf/model.safetensors");
    std::ofstream((folder / "config.json").string())
        << R"({"vocab_size": 50, "d_model": 16, "n_layers": 2, "pre_norm": true, "lags": [1, 3]})";
    const auto m = importCheckpoint(folder.string());
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{1, 3}, {1, 3}}));
    std::string notes;
    for (const auto& n : m.report.notes)
        notes += n + "\n";
    for (const auto& n : m.report.flags)
        notes += n + "\n";
    EXPECT_NE(notes.find("norm=pre (from config.json: pre_norm)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("offsets=1,3 (from config.json: lags)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("sizes V=50, d=16, N=2 agree"), std::string::npos) << notes;
    // The command line wins over the config.
    ImportOptions o;
    o.norm = NormPlacement::Post;
    o.empty = EmptyRule::Zero;
    EXPECT_EQ(importCheckpoint(folder.string(), o).model.config().norm, NormPlacement::Post);
    EXPECT_EQ(importCheckpoint(folder.string(), o).model.config().empty, EmptyRule::Zero);
    // A config that belongs to other weights is refused, naming the field.
    std::ofstream((folder / "config.json").string()) << R"({"architecture": {"d_model": 32}})";
    expectImportError([&] { importCheckpoint(folder.string()); },
                      "config.json: architecture.d_model says 32 but the tensor shapes give d = 16");
    std::ofstream((folder / "config.json").string()) << R"({"pre_norm": "maybe"})";
    expectImportError([&] { importCheckpoint(folder.string()); }, "pass --norm pre|post");

    // GrassLM: config.json's window_schedule is not what its code runs (see the next test).
    const Model gl = randomModel(tinyConfig("grasslm", ModelKind::Grassmann), 14);
    std::filesystem::create_directories(dir.file("grasslm"));
    writeFile(dir, familyTensors(gl, "grasslm"), "grasslm/best_model.safetensors");
    std::ofstream(dir.file("grasslm/config.json")) << R"({"architecture": {"window_schedule": [2, 8]}})";
    const auto g = importCheckpoint(dir.file("grasslm/best_model.safetensors"));
    EXPECT_EQ(g.model.config().layerOffsets, (std::vector<std::vector<int>>{{1}, {1}}));
    EXPECT_EQ(g.model.config().empty, EmptyRule::Zero);
}

TEST(Import, GrassLMBeforeItsCausalityFixIsCautioned) {
    // GrassLM's layers.py paired t with t+D (a look-ahead) until 3df2a60 (2026-02-14); its
    // train.py saved args without model_name until 472db8d, later that day. A file whose args
    // lack model_name may come from the look-ahead code, which gwb does not run: the report says
    // so. With model_name (the code after the fix) nothing is said.
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model gl = randomModel(c, 22);
    TempDir dir;
    std::filesystem::create_directories(dir.file("old"));
    std::filesystem::create_directories(dir.file("new"));
    writeFile(dir, familyTensors(gl, "grasslm"), "old/best_model.pt");
    writeFile(dir, familyTensors(gl, "grasslm"), "new/best_model.pt");
    std::ofstream(dir.file("old/config.json")) << R"({"lr": 0.0003, "n_layers": 2})";
    std::ofstream(dir.file("new/config.json")) << R"({"lr": 0.0003, "n_layers": 2, "model_name": "GrassLM-10M"})";
    auto notes = [](const ImportedModel& m) {
        std::string all;
        for (const auto& n : m.report.notes)
            all += n + "\n";
        return all;
    };
    const auto old = importCheckpoint(dir.file("old/best_model.pt"));
    EXPECT_NE(notes(old).find("caution, config rule of the grasslm layout (no model_name in the found config)"),
              std::string::npos)
        << notes(old);
    EXPECT_NE(notes(old).find("paired each token t with t+D"), std::string::npos) << notes(old);
    const auto now = importCheckpoint(dir.file("new/best_model.pt"));
    EXPECT_EQ(notes(now).find("caution"), std::string::npos) << notes(now);
    // Nothing else changes: the same model either way.
    const std::vector<int64_t> ids{3, 1, 4, 1, 5};
    EXPECT_EQ(logits(old.model, ids), logits(now.model, ids));
}

TEST(Import, GrassLMOffsetsFollowItsOwnRuleAndItsModelFolder) {
    // GrassLM's rule (python/grasslm/model.py): a built-in list for 6 and 12 layers, else [1] * N.
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 3), (std::vector<std::vector<int>>{{1}, {1}, {1}}));
    EXPECT_EQ(defaultLayoutOffsets("grasslm", 2), (std::vector<std::vector<int>>{{1}, {1}}));
    // Its trained model: models/NAME/config.json, weights in models/NAME/checkpoints/best_model.pt.
    // train.py builds GrassLM() without window_schedule (so the built-in [1, 1] ran) but writes
    // [1,2,4,8,12,16][:N] = [1, 2] into config.json: the code is followed and the file's list is
    // reported, not applied.
    ModelConfig c = tinyConfig("grasslm", ModelKind::Grassmann);
    c.layerOffsets = {{1}, {1}};
    const Model gl = randomModel(c, 21);
    TempDir dir;
    std::filesystem::create_directories(dir.file("models/tiny/checkpoints"));
    writeFile(dir, familyTensors(gl, "grasslm"), "models/tiny/checkpoints/best_model.pt");
    std::ofstream(dir.file("models/tiny/config.json"))
        << R"({"name": "tiny", "architecture": {"vocab_size": 50, "n_layers": 2, "window_schedule": [1, 2]}})";
    auto notes = [](const ImportedModel& m) {
        std::string all;
        for (const auto& n : m.report.notes)
            all += n + "\n";
        return all;
    };
    for (const std::string& given : {dir.file("models/tiny/checkpoints/best_model.pt"), dir.file("models/tiny")}) {
        const auto m = importCheckpoint(given);
        EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets) << given;
        const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
        EXPECT_EQ(logits(m.model, ids), logits(gl, ids)) << given;
        EXPECT_NE(notes(m).find("says [1,2], but GrassLM's train.py, evaluate.py and generate.py build GrassLM() "
                                "without window_schedule"),
                  std::string::npos)
            << notes(m);
        EXPECT_NE(notes(m).find("--offsets per_layer:1,2 applies the file's list"), std::string::npos) << notes(m);
    }
    // The option applies the file's list when a user's own script did pass it.
    ImportOptions fileList;
    fileList.offsetSchedule = "per_layer:1,2";
    EXPECT_EQ(importCheckpoint(dir.file("models/tiny"), fileList).model.config().layerOffsets,
              (std::vector<std::vector<int>>{{1}, {2}}));
    // A list of another length (train.py writes 6 entries for 12 layers) is reported the same way.
    std::ofstream(dir.file("models/tiny/config.json")) << R"({"architecture": {"window_schedule": [1, 2, 4]}})";
    const auto three = importCheckpoint(dir.file("models/tiny"));
    EXPECT_EQ(three.model.config().layerOffsets, c.layerOffsets);
    EXPECT_NE(notes(three).find("says [1,2,4], but"), std::string::npos) << notes(three);
    // A list that is what the code runs is said to agree.
    std::ofstream(dir.file("models/tiny/config.json")) << R"({"architecture": {"window_schedule": [1, 1]}})";
    EXPECT_NE(notes(importCheckpoint(dir.file("models/tiny"))).find("[1,1] agrees with what grasslm runs for 2 layers"),
              std::string::npos);
    // Without a config the default is reported as a default, with the option that overrides it.
    TempDir bare;
    const auto d = importCheckpoint(writeFile(bare, familyTensors(gl, "grasslm")));
    std::string flags;
    for (const auto& f : d.report.flags)
        flags += f + "\n";
    EXPECT_NE(flags.find("offsets=1 (default of the grasslm layout for 2 layers; --offsets overrides)"),
              std::string::npos)
        << flags;
    EXPECT_NE(flags.find("norm=post (from the grasslm layout)"), std::string::npos) << flags;
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

const char* kYoudiePre = "model:\n  tensor_lifting_strategy: grassmann\n  num_layers: 2\n  lags:\n  - 1\n  - 2\n"
                         "  - 4\n  pre_norm: true\n  weight_tying: true\ndata:\n  max_context_len: 40\n";
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

TEST(Import, YoudieHydraConfigSetsPreNormAndLags) {
    // youdie006's pre_norm: true is its pre_mix arrangement; the lags come from the YAML list.
    ModelConfig c = tinyConfig("youdie006", ModelKind::Grassmann);
    c.norm = NormPlacement::PreMix;
    c.layerOffsets = {{1, 2, 4}, {1, 2, 4}};
    const Model ref = randomModel(c, 32);
    TempDir dir;
    std::filesystem::create_directories(dir.file("run/.hydra"));
    std::ofstream(dir.file("run/.hydra/config.yaml")) << kYoudiePre;
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "youdie006"), "run/best.safetensors"));
    EXPECT_EQ(m.report.layout, "youdie006");
    EXPECT_EQ(m.model.config().norm, NormPlacement::PreMix);
    EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets);
    std::string flags;
    for (const auto& f : m.report.flags)
        flags += f + "\n";
    EXPECT_NE(flags.find("norm=pre_mix (from .hydra/config.yaml: model.pre_norm)"), std::string::npos) << flags;
    EXPECT_NE(flags.find("offsets=1,2,4 (from .hydra/config.yaml: model.lags)"), std::string::npos) << flags;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // Without the Hydra folder the same weights are kanenorman's (same keys), and the report
    // names youdie006 as the runner-up that needs its config.
    TempDir bare;
    const auto k = importCheckpoint(writeFile(bare, familyTensors(ref, "youdie006")));
    EXPECT_EQ(k.report.layout, "kanenorman");
    ASSERT_EQ(k.report.detection.size(), 2u);
    EXPECT_NE(k.report.detection[1].find(".hydra/config.yaml not beside the checkpoint"), std::string::npos)
        << k.report.detection[1];
    // Lags repeated unevenly would weigh some offsets more: refused, not averaged wrongly.
    std::ofstream(dir.file("run/.hydra/config.yaml")) << "model:\n  lags: [1, 1, 2]\n";
    expectImportError([&] { importCheckpoint(dir.file("run/best.safetensors")); }, "repeated unevenly");
}

std::string reportText(const ImportedModel& m) {
    std::string s;
    for (const auto& n : m.report.notes)
        s += n + "\n";
    for (const auto& f : m.report.flags)
        s += f + "\n";
    return s;
}

// Issue 30: Arledge's train.py saves TrainingConfig's defaults (reduced_dim 64, window_sizes
// [1,2,4,8,16,32]) with a grassmann_v4 model that its create_model built with r = 32 and
// [1,2,4,8,12,16]. The alphaxiv layout's config rule says so: those fields are reported, not
// applied. Without the rule the same config is refused, naming both values.
TEST(Import, ConfigFieldsTheFamilysCodeIgnoresAreReportedNotApplied) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 41);
    std::filesystem::create_directories(dir.file("run"));
    const std::string path = writeFile(dir, familyTensors(ref, "alphaxiv"), "run/best_model.safetensors");
    std::ofstream(dir.file("run/config.json"))
        << R"({"model_type": "grassmann_v4", "model_dim": 16, "num_layers": 2, "reduced_dim": 64,
              "window_sizes": [1, 2, 4, 8, 16, 32], "num_heads": 8, "ff_dim": 64, "max_seq_len": 40})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.model.config().layerOffsets,
              (std::vector<std::vector<int>>{{1, 2, 4, 8, 12, 16}, {1, 2, 4, 8, 12, 16}}));
    const std::string report = reportText(m);
    EXPECT_NE(report.find("config rule of the alphaxiv layout (config.json: model_type = grassmann_v4)"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("config.json: reduced_dim says 64: not applied"), std::string::npos) << report;
    EXPECT_NE(report.find("config.json: window_sizes says 1,2,4,8,16,32: not applied"), std::string::npos) << report;
    EXPECT_NE(report.find("offsets=1,2,4,8,12,16 (what alphaxiv's code runs here"), std::string::npos) << report;
    EXPECT_NE(report.find("sizes d=16, N=2, d_ff=64, Lmax=40 agree"), std::string::npos) << report;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // Another model_type: nothing says the field is ignored, so r = 64 contradicts the weights.
    std::ofstream(dir.file("run/config.json")) << R"({"model_type": "grassmann", "reduced_dim": 64})";
    expectImportError([&] { importCheckpoint(path); },
                      "config.json: reduced_dim says 64 but the tensor shapes give r = 4: the config does not belong");
    // Sizes under the names other families use are checked too.
    std::ofstream(dir.file("run/config.json")) << R"({"model_dim": 32})";
    expectImportError([&] { importCheckpoint(path); },
                      "config.json: model_dim says 32 but the tensor shapes give d = 16");
    std::ofstream(dir.file("run/config.json")) << R"({"ff_dim": 128})";
    expectImportError([&] { importCheckpoint(path); }, "ff_dim says 128 but the tensor shapes give d_ff = 64");
    std::ofstream(dir.file("run/config.json")) << R"({"model": {"d_low": 8}})";
    expectImportError([&] { importCheckpoint(path); }, "model.d_low says 8 but the tensor shapes give r = 4");
}

// Arledge's train_exp4_ddp.py: bare state dicts in run_dir/checkpoints/, and run_dir/config.json
// keeps the arguments under "config", with --window-sizes as the string "1,3".
TEST(Import, NestedConfigSectionsAndListsWrittenAsStrings) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig("alphaxiv", ModelKind::Grassmann), 42);
    std::filesystem::create_directories(dir.file("run/checkpoints"));
    const std::string path =
        writeFile(dir, familyTensors(ref, "alphaxiv"), "run/checkpoints/grassmann_best.safetensors");
    std::ofstream(dir.file("run/config.json"))
        << R"({"run_id": "20260101_000000", "config": {"model": "both", "model_dim": 16, "reduced_dim": 4,
              "window_sizes": "1,3", "max_seq_len": 40}, "env": {"rank": 0}})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{1, 3}, {1, 3}}));
    const std::string report = reportText(m);
    EXPECT_NE(report.find("offsets=1,3 (from config.json: config.window_sizes)"), std::string::npos) << report;
    EXPECT_NE(report.find("sizes d=16, Lmax=40, r=4 agree"), std::string::npos) << report;
    // Lists in other spellings.
    EXPECT_EQ(normalizeListText("1,3,5"), "1,3,5");
    EXPECT_EQ(normalizeListText(" [1, 3, 5] "), "1,3,5");
    EXPECT_EQ(normalizeListText("(2, 4)"), "2,4");
    EXPECT_EQ(normalizeListText("1 2  4"), "1,2,4");
    EXPECT_EQ(normalizeListText("64"), "64");
    for (const char* notAList : {"1,,3", "1,3,", ",1", "a,b", "1.5,2", "-1,2", "[]", "both", "1;2"})
        EXPECT_EQ(normalizeListText(notAList), notAList) << notAList;
    // A head count that cannot divide d is refused with both values.
    const Model t = randomModel(tinyConfig("alphaxiv", ModelKind::Transformer), 43);
    std::filesystem::create_directories(dir.file("t"));
    const std::string tp = writeFile(dir, familyTensors(t, "alphaxiv"), "t/model.safetensors");
    std::ofstream(dir.file("t/config.json")) << R"({"num_heads": 3})";
    expectImportError([&] { importCheckpoint(tp); },
                      "config.json: num_heads says 3 heads, but the tensor shapes give d = 16");
}

// Arledge's train.py --model gpt2: the GPT2 baseline (its own layout), heads from the config.
TEST(Import, ArledgeGpt2BaselineOpensWithTheConfigsHeads) {
    ModelConfig c = tinyConfig("arledge-gpt2", ModelKind::Transformer);
    c.nHeads = 2;
    const Model ref = randomModel(c, 44);
    TempDir dir;
    Tensors t = familyTensors(ref, "arledge-gpt2");
    for (int l = 0; l < 2; ++l) { // the causal_mask buffer: 1 x 1 x Lmax x Lmax lower-triangular ones
        FloatArray mask = FloatArray::zeros({1, 1, 40, 40});
        for (int i = 0; i < 40; ++i)
            for (int j = 0; j <= i; ++j)
                mask.data[static_cast<size_t>(i * 40 + j)] = 1.0f;
        t["blocks." + std::to_string(l) + ".attention.causal_mask"] = mask;
    }
    std::filesystem::create_directories(dir.file("run"));
    const std::string path = writeFile(dir, t, "run/best_model.safetensors");
    std::ofstream(dir.file("run/config.json")) << R"({"model_type": "gpt2", "num_heads": 2, "model_dim": 16})";
    const auto m = importCheckpoint(path);
    EXPECT_EQ(m.report.layout, "arledge-gpt2");
    EXPECT_EQ(m.model.config().nHeads, 2);
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
}

// youdie006's current code (e8aa8c8 and later; its configs carry layerwise_lags): pre_norm true
// puts a residual around the mixer (pre), and layerwise_lags gives layer i the lag lags[i].
// A config without layerwise_lags is the initial code's: pre_mix (YoudieHydraConfigSetsPreNormAndLags).
TEST(Import, YoudieCurrentCodeIsToldApartByItsConfig) {
    ModelConfig c = tinyConfig("youdie006", ModelKind::Grassmann);
    c.norm = NormPlacement::Pre;
    c.layerOffsets = {{1}, {2}};
    const Model ref = randomModel(c, 45);
    TempDir dir;
    std::filesystem::create_directories(dir.file("run/.hydra"));
    std::ofstream(dir.file("run/.hydra/config.yaml"))
        << "model:\n  tensor_lifting_strategy: grassmann\n  num_layers: 2\n  d_model: 16\n  d_low: 4\n"
           "  expansion_ratio: 4\n  lags:\n  - 1\n  - 2\n  pre_norm: true\n  weight_tying: true\n"
           "  layerwise_lags: true\n  use_custom_init: false\ndata:\n  max_context_len: 40\n";
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, "youdie006"), "run/best.safetensors"));
    EXPECT_EQ(m.model.config().norm, NormPlacement::Pre);
    EXPECT_EQ(m.model.config().layerOffsets, c.layerOffsets);
    const std::string report = reportText(m);
    EXPECT_EQ(report.find("config rule"), std::string::npos) << report;
    EXPECT_NE(report.find("d_ff/d=4"), std::string::npos) << report;
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(m.model, ids), logits(ref, ids));
    // The same weights with the initial code's config (no layerwise_lags): pre_mix, said why.
    std::ofstream(dir.file("run/.hydra/config.yaml")) << kYoudiePre;
    const auto old = importCheckpoint(dir.file("run/best.safetensors"));
    EXPECT_EQ(old.model.config().norm, NormPlacement::PreMix);
    EXPECT_NE(reportText(old).find("youdie006's initial code (8aa6e5bc"), std::string::npos) << reportText(old);
}

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
