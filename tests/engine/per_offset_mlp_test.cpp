// Aggregation per_offset_mlp and the past x current wedge (issue 30): the CausalGrassmannMixer
// family's mixer (training/grassman.py), checked against a float64 forward pass written here from
// that code's steps (each offset's plane past x current, normalised with clamp_min(eps), through
// Linear -> exact GELU -> Linear, averaged over the valid offsets; alpha h + (1 - alpha) g inside a
// pre-norm block), not from the engine's own order of sums; incremental decoding, save/load, the
// config and its refusals, the trace analysis (influence from the MLP outputs, B_t and the read-out
// planes not defined).

#include "engine_test_util.h"
#include "float64_reference.h"
#include "gwb/engine/analysis.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"
#include "model/incremental_decoder.h"
#include "model/lm_modules.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

using namespace gwb::engine;
using test::erfGelu;
using test::layerNorm;
using test::linear;
using test::param;
using test::relError;

namespace {

ModelConfig mlpConfig() {
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    c.norm = NormPlacement::Pre;
    c.gate = GateVariant::Paper;
    c.aggregation = Aggregation::PerOffsetMlp;
    c.dGeom = 12;
    c.pluckerEps = 1e-6;
    c.stages.wedgePastFirst = true;
    return c;
}

/// The CausalGrassmannMixer model's forward pass as its code runs it, in float64.
torch::Tensor perOffsetMlpLogits(const Model& m, const torch::Tensor& ids) {
    const ModelConfig& c = m.config();
    const auto p = m.parameters();
    const int64_t T = ids.size(1), r = c.reduced;
    const double eps = c.layerNormEps;
    torch::Tensor x = test::embedTokens(p, ids);
    const auto [I, J] = test::pairIndices(r);
    for (int64_t l = 0; l < c.nLayers; ++l) {
        const std::string b = "blocks." + std::to_string(l) + ".";
        const torch::Tensor h = layerNorm(x, param(p, b + "ln1.weight"), param(p, b + "ln1.bias"), eps);
        const torch::Tensor z = linear(h, p, b + "w_red");
        torch::Tensor sum = torch::zeros_like(h), count = torch::zeros({1, T, 1}, torch::kDouble);
        for (int D : c.layerOffsets[static_cast<size_t>(l)]) {
            if (D >= T) continue;
            // u = z_past, v = z: p_ij = u_i v_j - u_j v_i.
            const torch::Tensor u = z.narrow(1, 0, T - D), v = z.narrow(1, D, T - D);
            torch::Tensor pl =
                u.index_select(-1, I) * v.index_select(-1, J) - u.index_select(-1, J) * v.index_select(-1, I);
            pl = pl / pl.norm(2, {-1}, true).clamp_min(c.pluckerEps);
            sum.narrow(1, D, T - D).add_(linear(erfGelu(linear(pl, p, b + "geo_in")), p, b + "geo_out"));
            count.narrow(1, D, T - D).add_(1.0);
        }
        const torch::Tensor g = sum / count.clamp_min(1.0);
        const torch::Tensor a = torch::sigmoid(linear(torch::cat({h, g}, -1), p, b + "w_gate"));
        x = test::ffnSublayer(p, b, x + a * h + (1 - a) * g, eps);
    }
    return test::tiedHead(p, x, eps);
}

} // namespace

TEST(PerOffsetMlp, LogitsFollowTheFamilysSteps) {
    const ModelConfig c = mlpConfig();
    const Model m = test::randomModel(c, 7);
    torch::manual_seed(4);
    const torch::Tensor ids = torch::randint(c.vocabSize, {1, c.maxLen}, torch::kLong);
    const torch::Tensor ref = perOffsetMlpLogits(m, ids);
    test::expectForwardAndOracleMatch(m, ids, ref);
    torch::NoGradGuard noGrad;
    // Negative controls: the paper's orientation (the MLP is not odd, so the sign shows), the
    // geometry-only gate and the offsets.
    ModelConfig off = c;
    off.stages.wedgePastFirst = false;
    EXPECT_GT(relError(Model::fromParameters(off, m.parameters(), nullptr, "cpu").impl().net->forward(ids), ref), 1e-3);
    off = c;
    off.gate = GateVariant::GeometryOnly;
    EXPECT_GT(relError(Model::fromParameters(off, m.parameters(), nullptr, "cpu").impl().net->forward(ids), ref), 1e-3);
    off = c;
    off.layerOffsets = {{1, 2}, {1, 2}};
    EXPECT_GT(relError(Model::fromParameters(off, m.parameters(), nullptr, "cpu").impl().net->forward(ids), ref), 1e-3);
}

TEST(PerOffsetMlp, WedgeOrderIsTheSignOfEveryPlane) {
    // For a linear read-out the orientation is a sign of W_plu: past x current with W_plu equals
    // current x past with -W_plu, to rounding.
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    c.norm = NormPlacement::Pre;
    const Model m = test::randomModel(c, 3);
    auto params = m.parameters();
    for (auto& [name, a] : params)
        if (name.find(".w_plu.weight") != std::string::npos)
            for (float& v : a.data)
                v = -v;
    ModelConfig past = c;
    past.stages.wedgePastFirst = true;
    const Model flipped = Model::fromParameters(past, params, nullptr, "cpu");
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::randint(c.vocabSize, {1, c.maxLen}, torch::kLong);
    const torch::Tensor a = m.impl().net->forward(ids), b = flipped.impl().net->forward(ids);
    EXPECT_LT((a - b).abs().max().item<double>(), 1e-4);
    const Model unflipped = Model::fromParameters(c, params, nullptr, "cpu");
    EXPECT_GT((a - unflipped.impl().net->forward(ids)).abs().max().item<double>(), 1e-2);
}

TEST(PerOffsetMlp, ParametersIncrementalDecodingAndSaveLoad) {
    const ModelConfig c = mlpConfig();
    std::map<std::string, std::vector<int64_t>> shape;
    for (const ParameterSpec& s : parameterSpecs(c))
        shape[s.name] = s.shape;
    const int64_t C = c.reduced * (c.reduced - 1) / 2;
    EXPECT_EQ(shape.at("blocks.0.geo_in.weight"), (std::vector<int64_t>{c.dGeom, C}));
    EXPECT_EQ(shape.at("blocks.0.geo_in.bias"), (std::vector<int64_t>{c.dGeom}));
    EXPECT_EQ(shape.at("blocks.1.geo_out.weight"), (std::vector<int64_t>{c.dModel, c.dGeom}));
    EXPECT_EQ(shape.count("blocks.0.w_plu.weight"), 0u);
    // The block's count: W_red, the MLP, W_gate [x; g], two LayerNorms, the FFN.
    const int64_t d = c.dModel, r = c.reduced;
    const int64_t block = (d * r + r) + (C * c.dGeom + c.dGeom) + (c.dGeom * d + d) + (2 * d * d + d) + 4 * d +
                          (d * c.dFF + c.dFF) + (c.dFF * d + d);
    EXPECT_EQ(countParameters(c).perBlock.at(0), block);

    test::expectIncrementalAndRoundTrip(test::randomModel(c, 9), "mlp.gwb");
}

TEST(PerOffsetMlp, ConfigSaysWhatIsWrong) {
    const ModelConfig c = mlpConfig();
    const ModelConfig back = configFromJson(configToJson(c));
    EXPECT_EQ(configToJson(back), configToJson(c));
    EXPECT_EQ(back.dGeom, c.dGeom);
    EXPECT_TRUE(back.stages.wedgePastFirst);
    auto refused = [&](ModelConfig bad, const std::string& word) {
        try {
            validateConfig(bad);
            ADD_FAILURE() << "accepted; expected a message naming " << word;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
        }
    };
    ModelConfig bad = c;
    bad.dGeom = 0;
    refused(bad, "d_geom");
    bad = c;
    bad.empty = EmptyRule::Bias;
    refused(bad, "per_offset_mlp");
    bad = c;
    bad.aggregation = Aggregation::NormalizeThenMean;
    refused(bad, "d_geom");
    ModelConfig t = test::tinyConfig(ModelKind::Transformer);
    t.dGeom = 4;
    refused(t, "d_geom");
    std::string text = configToJson(c);
    text.replace(text.find("\"past_current\""), 14, "\"past_future\"");
    EXPECT_THROW(configFromJson(text), std::invalid_argument);
}

TEST(PerOffsetMlp, TraceAnalysisInfluenceIsEachOffsetsMlpShare) {
    const ModelConfig c = mlpConfig();
    const Model m = test::randomModel(c, 13);
    const TracePtr tr = traceIds(m, test::someIds(c, 12));
    const TraceAnalysis a = analyzeTrace(*tr);
    ASSERT_EQ(a.grassmann.size(), static_cast<size_t>(c.nLayers));
    const GrassmannLayerTrace& g0 = *tr->layers[0].grassmann;
    ASSERT_EQ(g0.wGeoIn.dim(0), c.dGeom);
    EXPECT_TRUE(g0.wPlu.data.empty());
    // By hand: m_D = W_out GELU(W_in p^(D) + b_in) + b_out with p = z_{t-D} ^ z_t normalised; the
    // share of g is 1 - a; c(t, t-D) = ||(1 - a) m_D|| / |W_t|, normalised over the row. And the
    // traced g is the mean of the m_D.
    const auto p = m.parameters();
    const int64_t r = c.reduced, d = c.dModel;
    for (int64_t t = 1; t < 12; ++t) {
        std::vector<double> share(static_cast<size_t>(g0.offsets.size()), -1.0);
        std::vector<double> gsum(static_cast<size_t>(d), 0.0);
        double total = 0;
        int count = 0;
        for (int D : g0.offsets)
            count += t - D >= 0;
        for (size_t o = 0; o < g0.offsets.size(); ++o) {
            const int64_t s = t - g0.offsets[o];
            if (s < 0) continue;
            std::vector<double> pl;
            double nn = 0;
            for (int64_t i = 0; i < r; ++i)
                for (int64_t j = i + 1; j < r; ++j) {
                    const double v = static_cast<double>(g0.z.row(s)[i]) * g0.z.row(t)[j] -
                                     static_cast<double>(g0.z.row(s)[j]) * g0.z.row(t)[i];
                    pl.push_back(v);
                    nn += v * v;
                }
            const torch::Tensor pv = torch::tensor(pl, torch::kDouble) / std::max(std::sqrt(nn), c.pluckerEps);
            const torch::Tensor md = linear(erfGelu(linear(pv, p, "blocks.0.geo_in")), p, "blocks.0.geo_out");
            const torch::Tensor gate =
                torch::tensor(std::vector<float>(g0.gate.row(t), g0.gate.row(t) + d)).to(torch::kDouble);
            share[o] = ((1 - gate) * md).norm().item<double>() / count;
            total += share[o];
            for (int64_t k = 0; k < d; ++k)
                gsum[static_cast<size_t>(k)] += md[k].item<double>() / count;
        }
        for (size_t o = 0; o < g0.offsets.size(); ++o) {
            const float got = a.grassmann[0].influence.row(t)[o];
            if (share[o] < 0)
                EXPECT_TRUE(std::isnan(got));
            else
                EXPECT_NEAR(got, share[o] / total, 1e-4) << t << " " << o;
        }
        for (int64_t k = 0; k < d; ++k)
            EXPECT_NEAR(g0.g.row(t)[k], gsum[static_cast<size_t>(k)], 1e-4) << t;
    }
    // Not defined for this mixer, and said: B_t (residual, planarity, coherence) and the read-out
    // planes; the pair norms and the lifted planes' angles are.
    for (const auto& layer : a.grassmann) {
        for (float v : layer.residual)
            EXPECT_TRUE(std::isnan(v));
        for (float v : layer.coherence)
            EXPECT_TRUE(std::isnan(v));
        for (float v : layer.readoutContribution.data)
            EXPECT_TRUE(std::isnan(v));
        EXPECT_EQ(layer.readoutResidual.size(), static_cast<size_t>(d));
        EXPECT_TRUE(std::isfinite(layer.pairNorm.row(5)[0]));
    }
    EXPECT_TRUE(std::isfinite(a.grassmann[0].anglesNext.row(5)[0]));
    std::string all;
    for (const std::string& w : a.warnings)
        all += w + "\n";
    EXPECT_NE(all.find("B_t is not defined"), std::string::npos) << all;
    EXPECT_NE(all.find("read-out planes are not defined"), std::string::npos) << all;
}
