// Mixer stages described as data (config.stages; issue 30): GrassmannGPTv3's mixer (Arledge's
// train.py --model grassmann) as a stage combination, checked against a forward pass written here
// from that code's steps (one projection per offset, averaged, then its LayerNorm; a gate of x
// alone; out_proj(x + a g s)), not from the engine's one-plane form; the per-offset oracle,
// incremental decoding, save/load, the config file and its refusals.

#include "engine_test_util.h"
#include "float64_reference.h"
#include "gwb/engine/analysis.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/tracer.h"
#include "gwb/engine/model.h"
#include "model/incremental_decoder.h"
#include "model/lm_modules.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

using namespace gwb::engine;
using test::layerNorm;
using test::linear;
using test::param;
using test::relError;

namespace {

ModelConfig v3Config() {
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    c.norm = NormPlacement::Pre;
    c.gate = GateVariant::Residual;
    c.empty = EmptyRule::Zero;
    c.aggregation = Aggregation::Mean;
    c.layerOffsets = {{1, 2, 4, 8}, {1, 2, 4, 8}}; // every layer the same windows, as GrassmannGPTv3
    const double C = static_cast<double>(c.reduced * (c.reduced - 1) / 2);
    c.stages.reductionNorm = true;
    c.stages.pluckerScale = 1.0 / std::sqrt(C);
    c.stages.featureNorm = true;
    c.stages.gateFromInput = true;
    c.stages.mixScale = 1.0 / std::sqrt(2.0 * 4.0);
    c.stages.outputProjection = true;
    return c;
}

/// GrassmannGPTv3's forward pass, step by step as its code runs it, in float64.
torch::Tensor grassmannGptV3Logits(const Model& m, const torch::Tensor& ids) {
    const ModelConfig& c = m.config();
    const auto p = m.parameters();
    const int64_t T = ids.size(1), r = c.reduced, C = r * (r - 1) / 2;
    const double eps = c.layerNormEps;
    torch::Tensor h = test::embedTokens(p, ids);
    const auto [I, J] = test::pairIndices(r);
    for (int64_t l = 0; l < c.nLayers; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        const torch::Tensor n = layerNorm(h, param(p, b + "ln1.weight"), param(p, b + "ln1.bias"), eps);
        const torch::Tensor z =
            layerNorm(linear(n, p, b + "w_red"), param(p, b + "ln_red.weight"), param(p, b + "ln_red.bias"), eps);
        torch::Tensor geo = torch::zeros_like(n), counts = torch::zeros({1, T, 1}, torch::kDouble);
        for (int D : c.layerOffsets[static_cast<size_t>(l)]) {
            if (D >= T) continue;
            const torch::Tensor cur = z.narrow(1, D, T - D), past = z.narrow(1, 0, T - D);
            const torch::Tensor pl = (cur.index_select(-1, I) * past.index_select(-1, J) -
                                      cur.index_select(-1, J) * past.index_select(-1, I)) /
                                     std::sqrt(static_cast<double>(C));
            geo.narrow(1, D, T - D).add_(linear(pl, p, b + "w_plu"));
            counts.narrow(1, D, T - D).add_(1.0);
        }
        geo = layerNorm(geo / counts.clamp_min(1.0), param(p, b + "ln_geo.weight"), param(p, b + "ln_geo.bias"), eps);
        const torch::Tensor gate = torch::sigmoid(linear(n, p, b + "w_gate"));
        const double s = 1.0 / std::sqrt(2.0 * static_cast<double>(c.layerOffsets[static_cast<size_t>(l)].size()));
        h = test::ffnSublayer(p, b, h + linear(n + gate * geo * s, p, b + "w_out"), eps);
    }
    return test::tiedHead(p, h, eps);
}

} // namespace

TEST(MixerStages, GrassmannGPTv3LogitsFollowThatCodesSteps) {
    const ModelConfig c = v3Config();
    const Model m = test::randomModel(c, 7);
    torch::manual_seed(4);
    const torch::Tensor ids = torch::randint(c.vocabSize, {1, c.maxLen}, torch::kLong);
    const torch::Tensor ref = grassmannGptV3Logits(m, ids);
    test::expectForwardAndOracleMatch(m, ids, ref);
    torch::NoGradGuard noGrad;
    // Negative controls: each stage switched off moves the logits.
    for (int stage = 0; stage < 5; ++stage) {
        ModelConfig off = c;
        switch (stage) {
        case 0:
            off.aggregation = Aggregation::NormalizeThenMean, off.stages.pluckerScale = 1.0;
            break;
        case 1:
            off.stages.mixScale = 1.0;
            break;
        case 2:
            off.gate = GateVariant::Paper, off.stages.mixScale = 1.0;
            break;
        case 3:
            off.empty = EmptyRule::Bias;
            break;
        default:
            off.stages.pluckerScale = 0.5;
        }
        const Model other = Model::fromParameters(off, m.parameters(), nullptr, "cpu");
        EXPECT_GT(relError(other.impl().net->forward(ids), ref), 1e-3) << "control " << stage;
    }
}

TEST(MixerStages, ParametersIncrementalDecodingAndSaveLoad) {
    const ModelConfig c = v3Config();
    std::map<std::string, std::vector<int64_t>> shape;
    for (const ParameterSpec& s : parameterSpecs(c))
        shape[s.name] = s.shape;
    EXPECT_EQ(shape.at("blocks.0.ln_red.weight"), (std::vector<int64_t>{c.reduced}));
    EXPECT_EQ(shape.at("blocks.0.ln_geo.bias"), (std::vector<int64_t>{c.dModel}));
    EXPECT_EQ(shape.at("blocks.1.w_gate.weight"), (std::vector<int64_t>{c.dModel, c.dModel}));
    EXPECT_EQ(shape.at("blocks.1.w_out.weight"), (std::vector<int64_t>{c.dModel, c.dModel}));
    EXPECT_EQ(shape.count("blocks.0.ln_mix.weight"), 0u);

    test::expectIncrementalAndRoundTrip(test::randomModel(c, 9), "v3.gwb");
}

TEST(MixerStages, ConfigFileSaysWhichStageIsWrong) {
    const ModelConfig c = v3Config();
    const ModelConfig back = configFromJson(configToJson(c));
    EXPECT_EQ(configToJson(back), configToJson(c));
    EXPECT_DOUBLE_EQ(back.stages.pluckerScale, c.stages.pluckerScale);
    EXPECT_TRUE(back.stages.gateFromInput);
    // The paper's models keep files without the field.
    EXPECT_EQ(configToJson(test::tinyConfig(ModelKind::Grassmann)).find("mixer_stages"), std::string::npos);
    auto refused = [&](ModelConfig bad, const std::string& word) {
        try {
            validateConfig(bad);
            ADD_FAILURE() << "accepted; expected a message naming " << word;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
    };
    ModelConfig bad = c;
    bad.aggregation = Aggregation::NormalizeThenMean;
    refused(bad, "plucker_scale");
    bad = c;
    bad.norm = NormPlacement::Post;
    refused(bad, "residual");
    bad = c;
    bad.stages.mixScale = -1;
    refused(bad, "mix_scale");
    ModelConfig t = test::tinyConfig(ModelKind::Transformer);
    t.stages.featureNorm = true;
    refused(t, "mixer_stages");
    std::string text = configToJson(c);
    text.replace(text.find("\"reduction_norm\""), 16, "\"reduction_nrom\"");
    EXPECT_THROW(configFromJson(text), std::invalid_argument);
}

TEST(MixerStages, TraceAnalysisSaysWhatIsNotDefinedForThisMixer) {
    const ModelConfig c = v3Config();
    const Model m = test::randomModel(c, 13);
    const TracePtr tr = traceIds(m, test::someIds(c, 12));
    const TraceAnalysis a = analyzeTrace(*tr);
    ASSERT_EQ(a.grassmann.size(), static_cast<size_t>(c.nLayers));
    // B_t is the scaled raw mean its code forms: from the traced z, by hand.
    const GrassmannLayerTrace& g0 = *tr->layers[0].grassmann;
    const int64_t r = c.reduced;
    for (int64_t t = 1; t < 12; ++t) {
        std::vector<double> b(static_cast<size_t>(r * (r - 1) / 2), 0.0);
        int count = 0;
        for (int D : g0.offsets) {
            if (t - D < 0) continue;
            ++count;
            const float* zt = g0.z.row(t);
            const float* zs = g0.z.row(t - D);
            size_t k = 0;
            for (int64_t i = 0; i < r; ++i)
                for (int64_t j = i + 1; j < r; ++j, ++k)
                    b[k] += c.stages.pluckerScale *
                            (static_cast<double>(zt[i]) * zs[j] - static_cast<double>(zt[j]) * zs[i]);
        }
        double norm = 0;
        for (double v : b)
            norm += (v / count) * (v / count);
        EXPECT_NEAR(a.grassmann[0].coherence[static_cast<size_t>(t)], std::sqrt(norm), 1e-4 * std::sqrt(norm) + 1e-6)
            << t;
    }
    // Not defined for this mixer, and said: the influence (g is normalised) and the lifted planes'
    // angles between layers (z is normalised).
    for (const auto& layer : a.grassmann) {
        for (float v : layer.influence.data)
            EXPECT_TRUE(std::isnan(v));
        for (float v : layer.anglesNext.data)
            EXPECT_TRUE(std::isnan(v));
    }
    std::string all;
    for (const std::string& w : a.warnings)
        all += w + "\n";
    EXPECT_NE(all.find("influence is not defined"), std::string::npos) << all;
    EXPECT_NE(all.find("lifted planes"), std::string::npos) << all;
}
