#pragma once
// Pieces of the float64 forward passes the engine tests write from a family's code (GrassmannGPTv3
// in mixer_stages_test.cpp, the CausalGrassmannMixer in per_offset_mlp_test.cpp): a model's
// parameters as double tensors, LayerNorm, Linear, exact GELU, and a relative error.

#include "engine_test_util.h"
#include "gwb/engine/array.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/model.h"
#include "model/incremental_decoder.h"
#include "model/lm_modules.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine::test {

/// Parameter `name` of a model's parameters() as a float64 tensor of its shape.
inline torch::Tensor param(const std::map<std::string, FloatArray>& p, const std::string& name) {
    const FloatArray& a = p.at(name);
    return torch::tensor(a.data, torch::kDouble).view(a.shape);
}

inline torch::Tensor layerNorm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, double eps) {
    const torch::Tensor mu = x.mean(-1, true);
    const torch::Tensor var = (x - mu).pow(2).mean(-1, true);
    return (x - mu) / (var + eps).sqrt() * w + b;
}

/// x W^T + b with the parameters `n`.weight and `n`.bias.
inline torch::Tensor linear(const torch::Tensor& x, const std::map<std::string, FloatArray>& p, const std::string& n) {
    return torch::matmul(x, param(p, n + ".weight").t()) + param(p, n + ".bias");
}

/// Exact (erf) GELU, written out.
inline torch::Tensor erfGelu(const torch::Tensor& x) {
    return 0.5 * x * (1.0 + torch::erf(x / std::sqrt(2.0)));
}

/// max |a - b| / max |b|.
inline double relError(const torch::Tensor& a, const torch::Tensor& b) {
    return (a.to(torch::kDouble) - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

/// E[ids] + P[0..T): the embedding of a 1 x T id tensor, 1 x T x d.
inline torch::Tensor embedTokens(const std::map<std::string, FloatArray>& p, const torch::Tensor& ids) {
    const int64_t T = ids.size(1);
    return param(p, "tok_embed.weight").index_select(0, ids[0]).unsqueeze(0) +
           param(p, "pos_embed.weight").narrow(0, 0, T).unsqueeze(0);
}

/// The C(r,2) pairs (i, j), i < j, in lexicographic order, as two index tensors.
inline std::pair<torch::Tensor, torch::Tensor> pairIndices(int64_t r) {
    std::vector<int64_t> ii, jj;
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = i + 1; j < r; ++j) {
            ii.push_back(i);
            jj.push_back(j);
        }
    return {torch::tensor(ii), torch::tensor(jj)};
}

/// x + FFN(LN2 x) of block prefix b ("blocks.l."): the pre-norm FFN sublayer with exact GELU.
inline torch::Tensor ffnSublayer(const std::map<std::string, FloatArray>& p, const std::string& b,
                                 const torch::Tensor& x, double eps) {
    const torch::Tensor f =
        linear(layerNorm(x, param(p, b + "ln2.weight"), param(p, b + "ln2.bias"), eps), p, b + "ffn_in");
    return x + linear(erfGelu(f), p, b + "ffn_out");
}

/// The final LayerNorm and the head tied to the token table: logits 1 x T x V.
inline torch::Tensor tiedHead(const std::map<std::string, FloatArray>& p, const torch::Tensor& x, double eps) {
    return torch::matmul(layerNorm(x, param(p, "ln_final.weight"), param(p, "ln_final.bias"), eps),
                         param(p, "tok_embed.weight").t());
}

/// n ids (7 t + 3 mod V): a prompt every test of a small model can trace.
inline std::vector<int32_t> someIds(const ModelConfig& c, int n) {
    std::vector<int32_t> ids;
    for (int32_t t = 0; t < n; ++t)
        ids.push_back((7 * t + 3) % static_cast<int32_t>(c.vocabSize));
    return ids;
}

/// The model's forward pass, and its per-offset oracle, against a reference's logits on ids.
inline void expectForwardAndOracleMatch(const Model& m, const torch::Tensor& ids, const torch::Tensor& ref) {
    auto& net = *m.impl().net;
    net.eval();
    torch::NoGradGuard noGrad;
    EXPECT_LT(relError(net.forward(ids), ref), 1e-5);
    for (const auto& b : net.blocks())
        static_cast<GrassmannBlockImpl*>(b.get())->perOffsetOracle = true;
    EXPECT_LT(relError(net.forward(ids), ref), 1e-5);
    for (const auto& b : net.blocks())
        static_cast<GrassmannBlockImpl*>(b.get())->perOffsetOracle = false;
}

/// Incremental decoding (prefill of 3 tokens, then one at a time) equals the whole-prompt forward
/// pass, and a save/load round trip keeps the config and the logits exactly.
inline void expectIncrementalAndRoundTrip(const Model& m, const std::string& fileName) {
    const ModelConfig& c = m.config();
    auto& net = *m.impl().net;
    net.eval();
    torch::NoGradGuard noGrad;
    torch::manual_seed(2);
    const torch::Tensor ids = torch::randint(c.vocabSize, {1, c.maxLen}, torch::kLong);
    const torch::Tensor full = net.forward(ids);
    IncrementalDecoder dec(net);
    const torch::Tensor pre = dec.prefill(ids.narrow(1, 0, 3));
    EXPECT_LT(relError(pre, full.narrow(1, 2, 1).to(torch::kDouble)), 1e-5);
    for (int64_t t = 3; t < c.maxLen; ++t)
        EXPECT_LT(relError(dec.next(ids[0][t].item<int64_t>()), full.narrow(1, t, 1).to(torch::kDouble)), 1e-5) << t;
    // One token from an empty state: no offset is valid.
    IncrementalDecoder one(net);
    EXPECT_LT(relError(one.prefill(ids.narrow(1, 0, 1)), full.narrow(1, 0, 1).to(torch::kDouble)), 1e-5);

    TempDir dir;
    m.save(dir.file(fileName));
    const Model back = Model::load(dir.file(fileName), "cpu");
    EXPECT_EQ(configToJson(back.config()), configToJson(c));
    EXPECT_TRUE(torch::equal(back.impl().net->forward(ids), full));
}

} // namespace gwb::engine::test
