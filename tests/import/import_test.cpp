// Layout mapping without Python: our own random model is renamed into each family's key names,
// written as .safetensors, imported, and must give identical logits; then every error the
// importer promises is provoked and its message checked.

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "import/import_layouts.h"
#include "model/model_impl.h"
#include "test_builders.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

namespace gwb::engine {
namespace {

using Tensors = std::map<std::string, FloatArray>;

ModelConfig tinyConfig(ImportLayout layout, ModelKind kind) {
    ModelConfig c;
    c.kind = kind;
    c.vocabSize = 50;
    c.dModel = 16;
    c.reduced = 4;
    c.nLayers = 2;
    c.dFF = 64;
    c.maxLen = 40;
    c.nHeads = 4;
    applyLayoutVariant(layout, c);
    if (kind == ModelKind::Grassmann) c.layerOffsets = defaultLayoutOffsets(layout, c.nLayers);
    return c;
}

/// Random weights (not the init's 1/0 LayerNorms) so that a wrong mapping shows.
Model randomModel(const ModelConfig& c, uint64_t seed) {
    Tensors p;
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::normal_distribution<float> n(0.0f, 0.3f);
    for (const auto& s : parameterSpecs(c)) {
        FloatArray a = FloatArray::zeros(s.shape);
        for (float& v : a.data)
            v = n(rng);
        p[s.name] = a;
    }
    return Model::fromParameters(c, p, nullptr, "cpu");
}

std::vector<float> logits(const Model& m, std::vector<int64_t> ids) {
    torch::NoGradGuard g;
    m.impl().net->eval();
    const torch::Tensor y = m.impl().net->forward(torch::tensor(ids, torch::kLong).view({1, -1})).contiguous();
    return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

/// Our parameters under the family's names (tied head included, as the families save it).
Tensors familyTensors(const Model& m, ImportLayout layout) {
    const Tensors ours = m.parameters();
    Tensors theirs;
    for (const KeyMapping& k : layoutMappings(layout, m.config().kind, m.config().nLayers))
        theirs[k.theirs] = ours.at(k.ours);
    theirs[layoutKeys(layout).lmHead] = ours.at("tok_embed.weight");
    return theirs;
}

class TempDir {
public:
    TempDir() : m_dir(std::filesystem::temp_directory_path() / ("gwb_import_test_" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(m_dir);
    }
    ~TempDir() { std::filesystem::remove_all(m_dir); }
    std::string file(const std::string& name) const { return (m_dir / name).string(); }

private:
    std::filesystem::path m_dir;
};

std::string writeFile(const TempDir& dir, const Tensors& t, const std::string& name = "ckpt.safetensors") {
    SafetensorsFile f;
    for (const auto& [n, a] : t)
        f.tensors[n] = makeStoredTensor(a.shape, a.data.data(), "F32");
    const std::string path = dir.file(name);
    writeSafetensors(path, f);
    return path;
}

template <typename F> void expectImportError(F fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

struct RoundTrip {
    ImportLayout layout;
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
    EXPECT_EQ(again.model.config().family, layoutName(layout)); // the .gwb keeps where it came from
    EXPECT_EQ(logits(again.model, ids), logits(ref, ids));
}

INSTANTIATE_TEST_SUITE_P(All, LayoutRoundTrip,
                         testing::Values(RoundTrip{ImportLayout::GrassLM, ModelKind::Grassmann},
                                         RoundTrip{ImportLayout::GrassLM, ModelKind::Transformer},
                                         RoundTrip{ImportLayout::AlphaXiv, ModelKind::Grassmann},
                                         RoundTrip{ImportLayout::AlphaXiv, ModelKind::Transformer},
                                         RoundTrip{ImportLayout::KaneNorman, ModelKind::Grassmann},
                                         RoundTrip{ImportLayout::KaneNorman, ModelKind::Transformer}));

TEST(Import, LayoutDefaultsAndOffsetOverrides) {
    EXPECT_EQ(defaultLayoutOffsets(ImportLayout::GrassLM, 6),
              (std::vector<std::vector<int>>{{1}, {2}, {4}, {8}, {12}, {16}}));
    EXPECT_EQ(defaultLayoutOffsets(ImportLayout::GrassLM, 12)[1], std::vector<int>{1});
    EXPECT_EQ(defaultLayoutOffsets(ImportLayout::GrassLM, 12)[11], std::vector<int>{16});
    EXPECT_EQ(defaultLayoutOffsets(ImportLayout::KaneNorman, 2)[1], (std::vector<int>{1, 2, 4, 8, 12, 16}));
    EXPECT_EQ(parseOffsetSchedule("4,1,1", 2), (std::vector<std::vector<int>>{{1, 4}, {1, 4}}));
    EXPECT_EQ(parseOffsetSchedule("1,2;3", 2), (std::vector<std::vector<int>>{{1, 2}, {3}}));
    EXPECT_THROW(parseOffsetSchedule("1;2;3", 2), std::invalid_argument);
    EXPECT_THROW(parseOffsetSchedule("1,x", 2), std::invalid_argument);
    EXPECT_THROW(parseOffsetSchedule("0", 2), std::invalid_argument);
    EXPECT_EQ(layoutFromName("AlphaXiv"), ImportLayout::AlphaXiv);
    EXPECT_THROW(layoutFromName("gpt2"), std::invalid_argument);

    const Model ref = randomModel(tinyConfig(ImportLayout::KaneNorman, ModelKind::Grassmann), 2);
    TempDir dir;
    ImportOptions o;
    o.offsetSchedule = "per_layer:2,16";
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, ImportLayout::KaneNorman)), o);
    EXPECT_EQ(m.model.config().layerOffsets, (std::vector<std::vector<int>>{{2}, {16}}));
}

TEST(Import, PermutedPairIndicesAreFoldedIntoWPlu) {
    const Model ref = randomModel(tinyConfig(ImportLayout::GrassLM, ModelKind::Grassmann), 9);
    Tensors t = familyTensors(ref, ImportLayout::GrassLM);
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
    const Model ref = randomModel(tinyConfig(ImportLayout::AlphaXiv, ModelKind::Grassmann), 3);
    const Tensors good = familyTensors(ref, ImportLayout::AlphaXiv);
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

    const Model tr = randomModel(tinyConfig(ImportLayout::AlphaXiv, ModelKind::Transformer), 3);
    ImportOptions wantG;
    wantG.expectedKind = ModelKind::Grassmann;
    expectImportError([&] { importCheckpoint(writeFile(dir, familyTensors(tr, ImportLayout::AlphaXiv)), wantG); },
                      "this is a Transformer checkpoint");

    ImportOptions vocab;
    std::ofstream(dir.file("vocab.txt")) << "[PAD]\n[UNK]\nhello\n";
    vocab.vocabPath = dir.file("vocab.txt");
    expectImportError([&] { importCheckpoint(writeFile(dir, good), vocab); },
                      "has 3 entries but the embedding table has 50 rows");

    ImportOptions forced;
    forced.layout = ImportLayout::KaneNorman;
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
    const Model ref = randomModel(tinyConfig(ImportLayout::GrassLM, ModelKind::Grassmann), 4);
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
    const auto m = importCheckpoint(writeFile(dir, familyTensors(ref, ImportLayout::GrassLM)), o);
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
    const Model g = randomModel(tinyConfig(ImportLayout::KaneNorman, ModelKind::Grassmann), 11);
    std::map<std::string, StoredTensor> idx;
    for (int l = 0; l < 2; ++l) {
        const std::string p = "transformer_blocks." + std::to_string(l) + ".attention.";
        idx[p + "idx_i"] = i64({0, 0, 0, 1, 1, 2});
        idx[p + "idx_j"] = i64({1, 2, 3, 2, 3, 3});
    }
    const auto m = importCheckpoint(writeWithBuffers(dir, familyTensors(g, ImportLayout::KaneNorman), idx, "g.st"));
    EXPECT_EQ(m.model.config().empty, EmptyRule::Bias);
    EXPECT_EQ(m.model.config().pluckerEps, 1e-6);
    EXPECT_EQ(m.model.config().gate, GateVariant::GeometryOnly);
    EXPECT_EQ(importedVariantText(m.model.config()),
              "kanenorman grassmann: norm=post gate=geometry_only empty=bias eps=1e-06");
    bool asksForNorm = false;
    for (const auto& n : m.report.notes)
        asksForNorm |= n.find("pass --norm pre") != std::string::npos;
    EXPECT_TRUE(asksForNorm) << "the undecidable pre_norm flag must be reported";
    idx["transformer_blocks.1.attention.idx_i"] = i64({0, 0, 1});
    expectImportError(
        [&] { importCheckpoint(writeWithBuffers(dir, familyTensors(g, ImportLayout::KaneNorman), idx, "g2.st")); },
        "index buffers hold 3 and 6 pairs");

    // Transformer: the causal_mask buffer must be Lmax x Lmax lower-triangular ones.
    const Model t = randomModel(tinyConfig(ImportLayout::KaneNorman, ModelKind::Transformer), 12);
    auto mask = [](int64_t n, bool causal) {
        std::vector<float> v(static_cast<size_t>(n * n));
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < n; ++j)
                v[static_cast<size_t>(i * n + j)] = (!causal || j <= i) ? 1.0f : 0.0f;
        return makeStoredTensor({n, n}, v.data(), "F32");
    };
    std::map<std::string, StoredTensor> masks{{"transformer_blocks.0.attention.causal_mask", mask(40, true)},
                                              {"transformer_blocks.1.attention.causal_mask", mask(40, true)}};
    const auto tm =
        importCheckpoint(writeWithBuffers(dir, familyTensors(t, ImportLayout::KaneNorman), masks, "t.st"));
    const std::vector<int64_t> ids{3, 1, 4, 1, 5, 9, 2, 6};
    EXPECT_EQ(logits(tm.model, ids), logits(t, ids));
    masks["transformer_blocks.1.attention.causal_mask"] = mask(40, false);
    expectImportError(
        [&] { importCheckpoint(writeWithBuffers(dir, familyTensors(t, ImportLayout::KaneNorman), masks, "t2.st")); },
        "'transformer_blocks.1.attention.causal_mask' is not lower-triangular ones (entry [0, 1]");
    masks["transformer_blocks.1.attention.causal_mask"] = mask(20, true);
    expectImportError(
        [&] { importCheckpoint(writeWithBuffers(dir, familyTensors(t, ImportLayout::KaneNorman), masks, "t3.st")); },
        "the buffer disagrees with the weights");
}

TEST(Import, ConfigBesideTheCheckpointIsReadAndChecked) {
    TempDir dir;
    const Model ref = randomModel(tinyConfig(ImportLayout::KaneNorman, ModelKind::Grassmann), 13);
    const Tensors t = familyTensors(ref, ImportLayout::KaneNorman);
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
    EXPECT_NE(notes.find("config: norm=pre (from config.json: pre_norm)"), std::string::npos) << notes;
    EXPECT_NE(notes.find("config: offsets 1,3"), std::string::npos) << notes;
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

    // GrassLM: window_schedule is spread over the layers, one offset each.
    const Model gl = randomModel(tinyConfig(ImportLayout::GrassLM, ModelKind::Grassmann), 14);
    std::filesystem::create_directories(dir.file("grasslm"));
    writeFile(dir, familyTensors(gl, ImportLayout::GrassLM), "grasslm/best_model.safetensors");
    std::ofstream(dir.file("grasslm/config.json")) << R"({"architecture": {"window_schedule": [2, 8]}})";
    const auto g = importCheckpoint(dir.file("grasslm/best_model.safetensors"));
    EXPECT_EQ(g.model.config().layerOffsets, (std::vector<std::vector<int>>{{2}, {8}}));
    EXPECT_EQ(g.model.config().empty, EmptyRule::Zero);
}

} // namespace
} // namespace gwb::engine
