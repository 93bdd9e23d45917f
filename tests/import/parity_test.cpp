// PyTorch parity: for each family, tests/python/parity_<family>.py implements that family's
// forward pass in its own style from model-spec.md ("Verified semantics of each family"), with
// its own module names and buffers, saves random weights (non-zero biases and LayerNorm
// parameters) the way the family saves them, and records logits for prompts of length 1
// (t = 0 alone), 5, 18 (past the largest offset 16) and Lmax. Every family x kind runs at the
// paper size (V=30522, d=256, r=32, 6 layers, T=128); the reader formats (bf16 safetensors,
// fp16 .pt) at a tiny size. We import the file and require max |ours - PyTorch| < 1e-4 on the
// logits. The families of issue 23 (arledge's fused kernel and SmallTransformer, adipks, wake2vec
// and its earlier ln1 version, youdie006 with its .hydra/config.yaml) run at their own realistic
// sizes, saved under their own file names. Negative controls: flipping each variant switch
// (every other block arrangement, empty, eps, gate, aggregation, heads) and the offset schedule
// must break that tolerance (or be refused). Skipped with a message when no python3 with torch is
// found.

#include "gwb/engine/config_io.h"
#include "gwb/engine/import.h"
#include "model/model_impl.h"
#include "python_runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <optional>
#include <ostream>

#include <unistd.h>

namespace gwb::engine {
namespace {

constexpr double kTolerance = 1e-4;

struct Case {
    std::string family, kind, norm, format, dtype, size;
    std::string script = ""; ///< made as one family's training script saves it (parity_all.py SCRIPT_CASES)
    std::string name() const {
        return family + "_" + kind + "_" + norm + "_" + format + "_" + dtype + "_" + size +
               (script.empty() ? "" : "_" + script);
    }
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << c.name();
}

/// gtest names allow [A-Za-z0-9_] only: "wake2vec-ln1" -> "wake2vec_ln1".
std::string caseName(const testing::TestParamInfo<Case>& info) {
    std::string n = info.param.name();
    std::replace(n.begin(), n.end(), '-', '_');
    return n;
}

/// Logits (T x V, row-major) of `ids` through the imported model in eval mode.
std::vector<float> logits(const Model& model, const std::vector<int64_t>& ids) {
    torch::NoGradGuard noGrad;
    auto& net = *model.impl().net;
    net.eval();
    const torch::Tensor x = torch::tensor(ids, torch::kLong).view({1, -1}).to(model.impl().device);
    const torch::Tensor y = net.forward(x).to(torch::kCPU).contiguous();
    return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

/// What parity_<family>.py wrote for one case.
struct Expected {
    nlohmann::json meta;
    std::vector<std::vector<int64_t>> prompts;
    std::vector<std::vector<float>> logits; ///< per prompt, T x V row-major
};

Expected readExpected(const std::filesystem::path& dir) {
    Expected e;
    e.meta = nlohmann::json::parse(std::ifstream((dir / "expected.json").string()));
    const int64_t v = e.meta["config"]["V"].get<int64_t>();
    std::ifstream in((dir / e.meta["logits_file"].get<std::string>()).string(), std::ios::binary);
    for (const auto& p : e.meta["prompts"]) {
        e.prompts.push_back(p.get<std::vector<int64_t>>());
        std::vector<float> rows(e.prompts.back().size() * static_cast<size_t>(v));
        in.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size() * sizeof(float)));
        e.logits.push_back(std::move(rows));
    }
    EXPECT_TRUE(in.good()) << "logits file shorter than its prompts";
    return e;
}

/// max |ours - reference| over every prompt.
double maxDiff(const Model& model, const Expected& e) {
    double worst = 0.0;
    for (size_t p = 0; p < e.prompts.size(); ++p) {
        const auto got = logits(model, e.prompts[p]);
        EXPECT_EQ(got.size(), e.logits[p].size());
        for (size_t i = 0; i < got.size() && i < e.logits[p].size(); ++i)
            worst = std::max(worst, static_cast<double>(std::abs(got[i] - e.logits[p][i])));
    }
    return worst;
}

/// The folder holding every case, generated once by parity_all.py (one torch start-up) and
/// shared by the test processes ctest starts: named after the scripts' sizes and times, built
/// in a private folder and renamed into place, so parallel runs never see a half-written one.
std::optional<std::filesystem::path> casesFolder(const std::string& python) {
    namespace fs = std::filesystem;
    static std::optional<fs::path> cached;
    if (cached) return cached;
    uint64_t key = 1469598103934665603ull;
    for (const auto& e : fs::directory_iterator(GWB_PYTHON_DIR)) {
        if (e.path().filename().string().rfind("parity_", 0) != 0) continue;
        const uint64_t parts[2] = {static_cast<uint64_t>(e.file_size()),
                                   static_cast<uint64_t>(e.last_write_time().time_since_epoch().count())};
        for (uint64_t v : parts)
            key = (key ^ v) * 1099511628211ull;
    }
    const fs::path dir = fs::temp_directory_path() / ("gwb_parity_cases_" + std::to_string(key));
    if (!fs::exists(dir)) {
        const fs::path tmp = dir.string() + ".tmp" + std::to_string(::getpid());
        fs::remove_all(tmp);
        const std::string cmd = "cd '" GWB_PYTHON_DIR "' && '" + python + "' parity_all.py '" + tmp.string() + "'";
        if (!test::runQuiet(cmd)) return std::nullopt;
        std::error_code ec;
        fs::rename(tmp, dir, ec);
        if (ec) fs::remove_all(tmp); // another process won the race: use its folder
    }
    cached = dir;
    return cached;
}

class Parity : public testing::TestWithParam<Case> {};

TEST_P(Parity, LogitsMatchPyTorch) {
    const Case& c = GetParam();
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: PyTorch parity skipped";
    const auto cases = casesFolder(*py);
    ASSERT_TRUE(cases) << "parity_all.py failed";
    const auto dir = *cases / c.name();
    const Expected e = readExpected(dir);
    // The family's own file name (grassmann_best.pt, best.pt beside .hydra/, ...).
    const std::string checkpoint =
        (dir / e.meta.value("checkpoint_file", c.format == "pt" ? "model.pt" : "model.safetensors")).string();

    ImportOptions options;
    options.expectedKind = c.kind == "grassmann" ? ModelKind::Grassmann : ModelKind::Transformer;
    // kanenorman's pre_norm flag is not in its state dict: a user passes --norm pre.
    if (c.family == "kanenorman" && c.norm == "pre") options.norm = NormPlacement::Pre;
    const ImportedModel imported = importCheckpoint(checkpoint, options);
    EXPECT_EQ(imported.report.layout, c.family);
    const ModelConfig& cfg = imported.model.config();
    const auto& size = e.meta["config"];
    EXPECT_EQ(cfg.family, c.family);
    EXPECT_EQ(cfg.vocabSize, size["V"].get<int64_t>());
    EXPECT_EQ(cfg.dModel, size["d"].get<int64_t>());
    EXPECT_EQ(cfg.nLayers, size["N"].get<int64_t>());
    EXPECT_EQ(cfg.maxLen, size["Lmax"].get<int64_t>());
    EXPECT_EQ(cfg.dFF, size["d_ff"].get<int64_t>());
    const auto& variant = e.meta["variant"];
    EXPECT_EQ(normName(cfg.norm), variant["norm"].get<std::string>());
    if (c.kind == "grassmann") {
        EXPECT_EQ(cfg.reduced, size["r"].get<int64_t>());
        EXPECT_EQ(gateName(cfg.gate), variant["gate"].get<std::string>());
        EXPECT_EQ(emptyName(cfg.empty), variant["empty"].get<std::string>());
        EXPECT_DOUBLE_EQ(cfg.pluckerEps, variant["eps"].get<double>());
        EXPECT_EQ(aggregationName(cfg.aggregation), variant["aggregation"].get<std::string>());
        if (size.contains("d_geom")) {
            EXPECT_EQ(cfg.dGeom, size["d_geom"].get<int64_t>());
        }
    } else {
        EXPECT_EQ(cfg.nHeads, size["heads"].get<int64_t>());
    }

    if (variant.contains("offsets")) { // the schedule the family's code runs (one set, every layer)
        const auto want = variant["offsets"].get<std::vector<int>>();
        for (const auto& layer : cfg.layerOffsets)
            EXPECT_EQ(layer, want);
    }
    if (variant.contains("offsets_per_layer")) {
        const auto want = variant["offsets_per_layer"].get<std::vector<std::vector<int>>>();
        EXPECT_EQ(cfg.layerOffsets, want);
    }

    const double diff = maxDiff(imported.model, e);
    EXPECT_LT(diff, kTolerance);
    std::cout << "[          ] " << c.name() << ": max |logit diff| = " << diff << "\n";
    for (const auto& note : imported.report.notes)
        std::cout << "[          ]   note: " << note << "\n";
    if (c.size != "paper") return;

    // Negative controls: each switch flipped alone must break the tolerance.
    // A flip the importer refuses (the geometry-only gate in a post_mix / pre_mix block) passes
    // too: either way the wrong variant cannot silently match.
    auto flipped = [&](const std::string& what, const std::function<void(ImportOptions&)>& change) {
        ImportOptions o = options;
        change(o);
        std::optional<ImportedModel> m;
        try {
            m.emplace(importCheckpoint(checkpoint, o));
        } catch (const std::runtime_error& err) {
            std::cout << "[          ]   " << what << " flipped: refused (" << err.what() << ")\n";
            return;
        }
        const double d = maxDiff(m->model, e);
        EXPECT_GT(d, kTolerance) << what << " flipped still matches: the comparison cannot see it";
        std::cout << "[          ]   " << what << " flipped: max |logit diff| = " << d << "\n";
    };
    if (cfg.mixerLayerNorm) { // alphaXiv-style Grassmann: post has no place for the mixer LayerNorm
        ImportOptions post = options;
        post.norm = NormPlacement::Post;
        EXPECT_THROW(importCheckpoint(checkpoint, post), std::runtime_error);
    }
    // Every other arrangement that exists for these blocks (a mixer LayerNorm exists only in pre;
    // post_mix / pre_mix only for Grassmann blocks with the paper gate; the importer refuses the
    // rest, as checked above for post).
    for (const NormPlacement n :
         {NormPlacement::Post, NormPlacement::Pre, NormPlacement::PostMix, NormPlacement::PreMix}) {
        const bool mixOnly = n == NormPlacement::PostMix || n == NormPlacement::PreMix;
        if (n == cfg.norm || cfg.mixerLayerNorm) continue;
        if (mixOnly && (c.kind != "grassmann" || cfg.gate != GateVariant::Paper)) continue;
        flipped(std::string("norm=") + normName(n), [&](ImportOptions& o) { o.norm = n; });
    }
    if (c.kind != "grassmann") {
        flipped("heads", [&](ImportOptions& o) { o.nHeads = cfg.nHeads == 8 ? 4 : 8; });
        return;
    }
    flipped("empty",
            [&](ImportOptions& o) { o.empty = cfg.empty == EmptyRule::Zero ? EmptyRule::Bias : EmptyRule::Zero; });
    if (cfg.aggregation != Aggregation::Mean) // raw planes averaged: no eps anywhere
        flipped("eps", [&](ImportOptions& o) { o.pluckerEps = cfg.pluckerEps < 1e-7 ? 1e-6 : 1e-8; });
    if (variant.contains("stages")) {
        // The stages the family's code runs, as the case recorded them, and each one off must show.
        // (A stage the case does not name is off.)
        const auto& st = variant["stages"];
        EXPECT_EQ(cfg.stages.reductionNorm, st.value("reduction_norm", false));
        EXPECT_NEAR(cfg.stages.pluckerScale, st.value("plucker_scale", 1.0), 1e-12);
        EXPECT_EQ(cfg.stages.featureNorm, st.value("feature_norm", false));
        EXPECT_EQ(cfg.stages.gateFromInput, st.value("gate_input", std::string("x_and_g")) == "x");
        EXPECT_NEAR(cfg.stages.mixScale, st.value("mix_scale", 1.0), 1e-12);
        EXPECT_EQ(cfg.stages.outputProjection, st.value("output_projection", false));
        EXPECT_EQ(cfg.stages.wedgePastFirst, st.value("wedge_order", std::string("current_past")) == "past_current");
        auto stageOff = [&](const std::string& what, const std::function<void(ModelConfig&)>& change,
                            const std::string& dropped) {
            ModelConfig off = cfg;
            change(off);
            auto params = imported.model.parameters();
            for (auto it = params.begin(); it != params.end();)
                it = !dropped.empty() && it->first.find("." + dropped + ".") != std::string::npos ? params.erase(it)
                                                                                                  : std::next(it);
            const Model m = Model::fromParameters(off, params, imported.model.tokenizer(), "cpu");
            const double d = maxDiff(m, e);
            EXPECT_GT(d, kTolerance) << what << " off still matches";
            std::cout << "[          ]   " << what << " off: max |logit diff| = " << d << "\n";
        };
        // Each stage the case runs, switched off (with the parameters only that stage has).
        struct Stage {
            bool on;
            const char* what;
            void (*off)(ModelConfig&);
            const char* dropped;
        };
        const Stage stages[] = {
            {cfg.stages.reductionNorm, "reduction norm", [](ModelConfig& o) { o.stages.reductionNorm = false; },
             "ln_red"},
            {cfg.stages.pluckerScale != 1.0, "plucker scale", [](ModelConfig& o) { o.stages.pluckerScale = 1.0; }, ""},
            {cfg.stages.featureNorm, "feature norm", [](ModelConfig& o) { o.stages.featureNorm = false; }, "ln_geo"},
            {cfg.stages.mixScale != 1.0, "mix scale", [](ModelConfig& o) { o.stages.mixScale = 1.0; }, ""},
            {cfg.stages.outputProjection, "output projection",
             [](ModelConfig& o) { o.stages.outputProjection = false; }, "w_out"},
            // The paper's orientation: every plane's sign flipped before the MLP.
            {cfg.stages.wedgePastFirst, "wedge order past x current",
             [](ModelConfig& o) { o.stages.wedgePastFirst = false; }, ""},
        };
        for (const Stage& stage : stages)
            if (stage.on) stageOff(stage.what, stage.off, stage.dropped);
    }
    flipped("gate", [&](ImportOptions& o) {
        o.gate = cfg.gate == GateVariant::Paper ? GateVariant::GeometryOnly : GateVariant::Paper;
    });
    flipped("aggregation", [&](ImportOptions& o) {
        o.aggregation = cfg.aggregation == Aggregation::NormalizeThenMean ? Aggregation::MeanThenNormalize
                                                                          : Aggregation::NormalizeThenMean;
    });
    // std::string(1, '3'), not "3": GCC 12 reports a bogus -Wrestrict on the literal here.
    flipped("offsets", [&](ImportOptions& o) { o.offsetSchedule = std::string(1, '3'); });
    // A config that states offsets the family's code never ran: applying them must show.
    if (variant.contains("config_offsets")) {
        std::string list;
        for (int v : variant["config_offsets"].get<std::vector<int>>())
            list += (list.empty() ? "" : ",") + std::to_string(v);
        flipped("the config's own window_sizes", [&](ImportOptions& o) { o.offsetSchedule = list; });
    }
}

INSTANTIATE_TEST_SUITE_P(
    Families, Parity,
    testing::Values(Case{"grasslm", "grassmann", "post", "pt", "float32", "paper"},
                    Case{"alphaxiv", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"alphaxiv", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"kanenorman", "grassmann", "post", "pt", "float32", "paper"},
                    Case{"kanenorman", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"kanenorman", "transformer", "post", "pt", "float32", "paper"},
                    Case{"kanenorman", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"arledge", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"arledge", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"adipks", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"adipks", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"wake2vec", "grassmann", "post_mix", "pt", "float32", "paper"},
                    Case{"wake2vec-ln1", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"wake2vec", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"youdie006", "grassmann", "post", "pt", "float32", "paper"},
                    Case{"youdie006", "grassmann", "pre_mix", "pt", "float32", "paper"},
                    Case{"youdie006", "grassmann", "pre", "pt", "float32", "paper"},
                    Case{"youdie006", "transformer", "post", "pt", "float32", "paper"},
                    Case{"youdie006", "transformer", "pre", "pt", "float32", "paper"},
                    Case{"grasslm", "grassmann", "post", "safetensors", "bfloat16", "tiny"},
                    Case{"alphaxiv", "grassmann", "pre", "pt", "float16", "tiny"},
                    Case{"kanenorman", "grassmann", "post", "safetensors", "float32", "tiny"},
                    // Arledge's train.py and train_exp4_ddp.py (issue 30).
                    Case{"alphaxiv", "grassmann", "pre", "pt", "float32", "paper", "arledge-train"},
                    Case{"arledge-gpt2", "transformer", "pre", "pt", "float32", "paper", "arledge-train"},
                    Case{"arledge-v3", "grassmann", "pre", "pt", "float32", "paper", "arledge-train"},
                    Case{"alphaxiv", "grassmann", "pre", "pt", "float32", "paper", "arledge-exp4"},
                    Case{"arledge", "transformer", "pre", "pt", "float32", "paper", "arledge-exp4"},
                    // The CausalGrassmannMixer family's train.py (out_dir/<model>/checkpoint.pt).
                    Case{"causal-mixer", "grassmann", "pre", "pt", "float32", "paper", "causal-train"},
                    Case{"causal-mixer", "transformer", "pre", "pt", "float32", "paper", "causal-train"}),
    caseName);

// The 1.8e-3 paper-size Transformer gap reported with the old parity weights (all N(0, 0.35^2)):
// not a semantic difference but float32 rounding amplified by an ill-conditioned network
// (attention scores ~1e2, nearly one-hot softmax rows). Pinned three ways on those weights:
// the float32 PyTorch reference is itself > 1e-4 from the float64 one; our engine is as far
// from the float64 reference in float32; and our engine run in float64 on the same weights
// matches the float64 reference to 1e-8, so every operation agrees.
TEST(ParityConditioning, OldTransformerGapIsFloat32RoundingNotSemantics) {
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: PyTorch parity skipped";
    const auto cases = casesFolder(*py);
    ASSERT_TRUE(cases) << "parity_all.py failed";
    const auto dir = *cases / "conditioning";
    const auto meta = nlohmann::json::parse(std::ifstream((dir / "expected.json").string()));
    const auto ids = meta["prompt"].get<std::vector<int64_t>>();
    const size_t n = ids.size() * meta["config"]["V"].get<size_t>();
    std::vector<float> ref32(n);
    std::vector<double> ref64(n);
    std::ifstream((dir / "logits32.f32").string(), std::ios::binary)
        .read(reinterpret_cast<char*>(ref32.data()), static_cast<std::streamsize>(n * sizeof(float)));
    std::ifstream((dir / "logits64.f64").string(), std::ios::binary)
        .read(reinterpret_cast<char*>(ref64.data()), static_cast<std::streamsize>(n * sizeof(double)));

    ImportedModel m = importCheckpoint((dir / "model.pt").string());
    ASSERT_EQ(m.model.config().kind, ModelKind::Transformer);
    const auto ours32 = logits(m.model, ids);
    double refGap = 0.0, ourGap32 = 0.0, ourGap64 = 0.0;
    for (size_t i = 0; i < n; ++i) {
        refGap = std::max(refGap, std::abs(static_cast<double>(ref32[i]) - ref64[i]));
        ourGap32 = std::max(ourGap32, std::abs(static_cast<double>(ours32[i]) - ref64[i]));
    }
    {
        torch::NoGradGuard noGrad;
        auto& net = *m.model.impl().net;
        net.eval();
        net.to(torch::kDouble);
        const torch::Tensor y = net.forward(torch::tensor(ids, torch::kLong).view({1, -1})).contiguous();
        ASSERT_EQ(y.scalar_type(), torch::kDouble);
        const double* p = y.data_ptr<double>();
        for (size_t i = 0; i < n; ++i)
            ourGap64 = std::max(ourGap64, std::abs(p[i] - ref64[i]));
    }
    std::cout << "[          ] old 0.35 weights (max attention score " << meta["max_attention_score"].get<double>()
              << "): PyTorch f32 vs f64 " << refGap << ", ours f32 vs PyTorch f64 " << ourGap32
              << ", ours f64 vs PyTorch f64 " << ourGap64 << "\n";
    EXPECT_GT(refGap, kTolerance) << "the old weights no longer show the float32 amplification";
    EXPECT_GT(ourGap32, kTolerance);
    EXPECT_LT(ourGap64, 1e-8) << "in float64 the engine must agree with the reference exactly";
}

} // namespace
} // namespace gwb::engine
