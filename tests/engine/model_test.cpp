// Both language models: causality for every variant, gradients reaching every parameter, and the
// vectorized Grassmann layer against a per-token reference computed from the weights.

#include "engine_test_util.h"
#include "gwb/engine/model.h"
#include "model/lm_modules.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

using namespace gwb::engine;

namespace {

torch::Tensor randomIds(int64_t V, int64_t T, uint64_t seed) {
    torch::manual_seed(seed);
    return torch::randint(V, {1, T}, torch::kLong);
}

} // namespace

TEST(Models, CausalForEveryVariant) {
    for (const ModelConfig& c : test::allVariants()) {
        const Model m = Model::init(c, 3, nullptr, "cpu");
        auto& net = *m.impl().net;
        net.eval();
        torch::NoGradGuard noGrad;
        const int64_t T = 20;
        const torch::Tensor ids = randomIds(c.vocabSize, T, 11);
        const torch::Tensor base = net.forward(ids);
        for (int64_t t : {0, 5, 13}) {
            for (int64_t k : {1, 4, 6}) {
                if (t + k >= T) continue;
                torch::Tensor changed = ids.clone();
                changed[0][t + k] = (changed[0][t + k].item<int64_t>() + 1) % c.vocabSize;
                const torch::Tensor out = net.forward(changed);
                const double past = (out.narrow(1, 0, t + 1) - base.narrow(1, 0, t + 1)).abs().max().item<double>();
                const double future =
                    (out.narrow(1, t + k, T - t - k) - base.narrow(1, t + k, T - t - k)).abs().max().item<double>();
                EXPECT_LE(past, 1e-6) << test::variantName(c) << " t=" << t << " k=" << k;
                EXPECT_GT(future, 1e-6) << test::variantName(c) << ": the changed token had no effect";
            }
        }
    }
}

TEST(Models, GradientsReachEveryParameter) {
    for (ModelConfig c : test::allVariants()) {
        c.dropout = 0.1;
        const Model m = Model::init(c, 5, nullptr, "cpu");
        auto& net = *m.impl().net;
        net.train();
        const torch::Tensor ids = torch::randint(c.vocabSize, {2, 17}, torch::kLong);
        const torch::Tensor logits = net.forward(ids);
        const torch::Tensor loss = torch::nll_loss(torch::log_softmax(logits.reshape({-1, c.vocabSize}), -1),
                                                   torch::randint(c.vocabSize, {34}, torch::kLong));
        loss.backward();
        for (const auto& p : net.named_parameters()) {
            ASSERT_TRUE(p.value().grad().defined()) << test::variantName(c) << " " << p.key();
            EXPECT_TRUE(torch::isfinite(p.value().grad()).all().item<bool>()) << p.key();
            EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << test::variantName(c) << " " << p.key();
        }
        net.eval();
    }
}

TEST(Models, InitFollowsSpec) {
    const Model m = Model::init(test::tinyConfig(ModelKind::Grassmann), 9, nullptr, "cpu");
    for (const auto& [name, a] : m.parameters()) {
        const bool norm = name.find("ln") != std::string::npos;
        const bool bias = name.size() > 4 && name.compare(name.size() - 4, 4, "bias") == 0;
        double sum = 0, sq = 0;
        for (float v : a.data) {
            sum += v;
            sq += double(v) * v;
        }
        const double n = double(a.data.size());
        if (norm && !bias) {
            EXPECT_DOUBLE_EQ(sum, n) << name; // LayerNorm weight = 1
        } else if (bias) {
            EXPECT_DOUBLE_EQ(sq, 0.0) << name; // zero biases
        } else if (n > 200) {
            EXPECT_NEAR(std::sqrt(sq / n), 0.02, 0.004) << name; // N(0, 0.02)
        }
    }
    // Same seed, same weights.
    const Model again = Model::init(test::tinyConfig(ModelKind::Grassmann), 9, nullptr, "cpu");
    EXPECT_EQ(m.parameters().at("blocks.1.w_plu.weight").data, again.parameters().at("blocks.1.w_plu.weight").data);
}

/// Per-token reference of model-spec steps 1-7 in double precision, from the weights alone.
TEST(Models, GrassmannLayerMatchesPerTokenReference) {
    for (EmptyRule empty : {EmptyRule::Zero, EmptyRule::Bias}) {
        ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
        c.empty = empty;
        c.layerOffsets = {{1, 2, 4}, {2, 3, 7}};
        const Model m = Model::init(c, 21, nullptr, "cpu");
        auto& net = *m.impl().net;
        net.eval();
        torch::NoGradGuard noGrad;
        const int64_t T = 15, d = c.dModel, r = c.reduced;
        ForwardCapture cap;
        net.forward(randomIds(c.vocabSize, T, 4), &cap);
        const auto params = m.parameters();
        for (int64_t l = 0; l < c.nLayers; ++l) {
            const std::string p = "blocks." + std::to_string(l) + ".";
            const auto& wRed = params.at(p + "w_red.weight").data;
            const auto& bRed = params.at(p + "w_red.bias").data;
            const auto& wPlu = params.at(p + "w_plu.weight").data;
            const auto& bPlu = params.at(p + "w_plu.bias").data;
            const auto& wGate = params.at(p + "w_gate.weight").data;
            const auto& bGate = params.at(p + "w_gate.bias").data;
            const torch::Tensor x = cap.blocks[l].mixerInput[0].contiguous();
            const torch::Tensor zc = cap.blocks[l].z[0], gc = cap.blocks[l].g[0], ac = cap.blocks[l].gate[0];
            auto X = x.accessor<float, 2>();
            std::vector<std::vector<double>> z(T, std::vector<double>(r));
            for (int64_t t = 0; t < T; ++t)
                for (int64_t i = 0; i < r; ++i) {
                    double s = bRed[i];
                    for (int64_t k = 0; k < d; ++k)
                        s += double(wRed[i * d + k]) * X[t][k];
                    z[t][i] = s;
                    EXPECT_NEAR(zc[t][i].item<double>(), s, 1e-4);
                }
            const int64_t C = r * (r - 1) / 2;
            for (int64_t t = 0; t < T; ++t) {
                std::vector<double> B(C, 0.0);
                int valid = 0;
                for (int D : c.layerOffsets[l]) {
                    if (t - D < 0) continue;
                    ++valid;
                    std::vector<double> pl;
                    double norm = 0;
                    for (int64_t i = 0; i < r; ++i)
                        for (int64_t j = i + 1; j < r; ++j) {
                            const double v = z[t][i] * z[t - D][j] - z[t][j] * z[t - D][i];
                            pl.push_back(v);
                            norm += v * v;
                        }
                    norm = std::max(std::sqrt(norm), c.pluckerEps);
                    for (int64_t k = 0; k < C; ++k)
                        B[k] += pl[k] / norm;
                }
                std::vector<double> g(d);
                for (int64_t o = 0; o < d; ++o) {
                    double s = 0;
                    for (int64_t k = 0; k < C; ++k)
                        s += double(wPlu[o * C + k]) * (valid ? B[k] / valid : 0.0);
                    g[o] = valid ? s + bPlu[o] : (empty == EmptyRule::Bias ? double(bPlu[o]) : 0.0);
                    EXPECT_NEAR(gc[t][o].item<double>(), g[o], 1e-4) << "layer " << l << " t " << t;
                }
                for (int64_t o = 0; o < d; ++o) {
                    double s = bGate[o];
                    for (int64_t k = 0; k < d; ++k)
                        s += double(wGate[o * 2 * d + k]) * X[t][k];
                    for (int64_t k = 0; k < d; ++k)
                        s += double(wGate[o * 2 * d + d + k]) * g[k];
                    EXPECT_NEAR(ac[t][o].item<double>(), 1.0 / (1.0 + std::exp(-s)), 1e-5);
                }
            }
        }
    }
}

TEST(Models, AttentionCaptureIsCausalSoftmax) {
    const ModelConfig c = test::tinyConfig(ModelKind::Transformer);
    const Model m = Model::init(c, 2, nullptr, "cpu");
    auto& net = *m.impl().net;
    torch::NoGradGuard noGrad;
    ForwardCapture cap;
    net.forward(randomIds(c.vocabSize, 12, 8), &cap);
    const torch::Tensor a = cap.blocks[1].attn[0]; // H x T x T
    const torch::Tensor q = cap.blocks[1].q[0], k = cap.blocks[1].k[0];
    const double scale = 1.0 / std::sqrt(double(c.dModel / c.nHeads));
    const torch::Tensor expect =
        torch::softmax((torch::matmul(q, k.transpose(-2, -1)) * scale)
                           .masked_fill(torch::ones({12, 12}).triu(1).to(torch::kBool), -INFINITY),
                       -1);
    EXPECT_LE((a - expect).abs().max().item<double>(), 1e-6);
    EXPECT_EQ(a.triu(1).abs().sum().item<double>(), 0.0);
}

TEST(Models, LongInferenceAttentionChunksAgree) {
    // Above the chunk size (1024 query rows) inference attends in chunks; compare with training mode.
    ModelConfig c = test::tinyConfig(ModelKind::Transformer);
    c.maxLen = 1100;
    c.nLayers = 1;
    const Model m = Model::init(c, 2, nullptr, "cpu");
    auto& net = *m.impl().net;
    net.eval();
    const torch::Tensor ids = randomIds(c.vocabSize, 1100, 1);
    torch::Tensor full;
    {
        full = net.forward(ids).detach(); // grad mode on: one T x T matrix
    }
    torch::NoGradGuard noGrad;
    ForwardCapture cap;
    const torch::Tensor chunked = net.forward(ids, &cap);
    EXPECT_LE((full - chunked).abs().max().item<double>(), 1e-4);
    EXPECT_EQ(cap.blocks[0].attn.size(-1), 1100);
}

TEST(Models, ALongPromptsForwardInTokenBlocksEqualsTheWholeOne) {
    // Without gradients a prompt longer than 1,024 tokens runs its position-wise parts (the Plucker
    // coordinates and W_plu, the FFN) over blocks of 1,024 tokens; with gradients in one piece.
    // The logits agree (the packed product's rows do not depend on how many rows it is given).
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        ModelConfig c = test::tinyConfig(kind);
        c.maxLen = 2600;
        const Model m = Model::init(c, 7, nullptr, "cpu");
        auto& net = *m.impl().net;
        net.eval();
        const torch::Tensor ids = randomIds(c.vocabSize, 2600, 12);
        torch::Tensor blocks;
        {
            torch::NoGradGuard noGrad;
            blocks = net.forward(ids);
        }
        const torch::Tensor whole = net.forward(ids).detach(); // parameters record gradients: one piece
        ASSERT_TRUE(net.parameters().front().requires_grad());
        EXPECT_LE((blocks - whole).abs().max().item<double>(), 1e-5 * whole.abs().max().item<double>())
            << (kind == ModelKind::Grassmann ? "grassmann" : "transformer");
        EXPECT_EQ(blocks.sizes(), whole.sizes());
    }
}
