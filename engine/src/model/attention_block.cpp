// The baseline's causal multi-head self-attention block: forward pass, prefill and the
// KV-cached step of generation.

#include "model/lm_modules.h"

#include "kernels/causal_softmax.h"

#include <algorithm>
#include <cmath>

namespace gwb::engine {

using detail::makeFfn;
using detail::makeNorm;

namespace {

/// Query rows processed at once by inference-time attention: bounds the T x T scratch memory.
constexpr int64_t kAttentionChunk = 1024;

} // namespace

AttentionBlockImpl::AttentionBlockImpl(const ModelConfig& config, bool initialize) : m_config(config) {
    const int64_t d = config.dModel;
    m_drop = register_module("drop", torch::nn::Dropout(config.dropout));
    ln1 = register_module("ln1", makeNorm(config));
    qkv = register_module("qkv", Dense(d, 3 * d, initialize));
    outProj = register_module("out_proj", Dense(d, d, initialize));
    if (config.mixerLayerNorm) lnMix = register_module("ln_mix", makeNorm(config));
    ln2 = register_module("ln2", makeNorm(config));
    m_ffn = makeFfn(*this, config, m_drop, initialize);
}

torch::Tensor AttentionBlockImpl::attend(const torch::Tensor& x, BlockCapture* capture, AttentionState* cache) {
    const int64_t B = x.size(0), T = x.size(1), d = m_config.dModel, H = m_config.nHeads, dh = d / H;
    // Fused projection rows are q | k | v, heads contiguous inside each.
    const auto parts = qkv(x).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({B, T, H, dh}).transpose(1, 2); };
    const torch::Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]); // B x H x T x dh
    if (cache) {
        TORCH_CHECK(B == 1 && T <= m_config.maxLen, "prefill takes one sequence of at most max_len tokens");
        cache->keys = torch::zeros({1, H, m_config.maxLen, dh}, x.options());
        cache->values = torch::zeros({1, H, m_config.maxLen, dh}, x.options());
        cache->keys.narrow(2, 0, T).copy_(k);
        cache->values.narrow(2, 0, T).copy_(v);
        cache->length = T;
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    const bool keep = capture && (capture->keepAttention);
    if (capture) {
        capture->q = q;
        capture->k = k;
    }
    // Training (and short inputs) use one T x T score matrix; long inference inputs go in query
    // chunks so memory stays O(chunk * T) per head.
    const int64_t chunk = (is_training() || torch::GradMode::is_enabled()) ? T : kAttentionChunk;
    std::vector<torch::Tensor> outs, probs;
    for (int64_t s = 0; s < T; s += chunk) {
        const int64_t n = std::min(chunk, T - s);
        const int64_t keys = s + n; // query rows s..s+n-1 see keys 0..s+n-1
        const torch::Tensor scores = torch::matmul(q.narrow(2, s, n), k.narrow(2, 0, keys).transpose(-2, -1));
        const torch::Tensor p = detail::causalSoftmax(scores, scale, s); // future keys get weight 0
        outs.push_back(torch::matmul(p, v.narrow(2, 0, keys)));
        if (keep) probs.push_back(keys < T ? torch::constant_pad_nd(p, {0, T - keys}) : p);
    }
    const torch::Tensor y = outs.size() == 1 ? outs[0] : torch::cat(outs, 2);
    if (keep) capture->attn = probs.size() == 1 ? probs[0] : torch::cat(probs, 2);
    return outProj(y.transpose(1, 2).reshape({B, T, d}));
}

torch::Tensor AttentionBlockImpl::forward(const torch::Tensor& h, BlockCapture* capture) {
    const bool pre = m_config.norm == NormPlacement::Pre;
    const torch::Tensor x = pre ? ln1(h) : h;
    if (capture) {
        capture->h = h;
        capture->mixerInput = x;
    }
    return finish(h, attend(x, capture));
}

torch::Tensor AttentionBlockImpl::prefill(const torch::Tensor& h, AttentionState& state) {
    const torch::Tensor x = m_config.norm == NormPlacement::Pre ? ln1(h) : h;
    return finish(h, attend(x, nullptr, &state));
}

torch::Tensor AttentionBlockImpl::finish(const torch::Tensor& h, torch::Tensor a, const BlockEdit* edit,
                                         BlockRecord* record) {
    const bool hooked = edit || record;
    if (m_config.norm == NormPlacement::Pre) {
        if (lnMix) a = lnMix(a);
        torch::Tensor out = h + m_drop(a);
        return out + m_drop(hooked ? m_ffn(ln2(out), edit, record) : m_ffn(ln2(out)));
    }
    const torch::Tensor y = ln1(h + m_drop(a));
    return ln2(y + m_drop(hooked ? m_ffn(y, edit, record) : m_ffn(y)));
}

torch::Tensor AttentionBlockImpl::run(const torch::Tensor& h, const SuffixContext& ctx, const BlockEdit* edit,
                                      BlockRecord* record) {
    using Site = BlockEdit::Site;
    const int64_t B = h.size(0), S = h.size(1), d = m_config.dModel, H = m_config.nHeads, dh = d / H;
    const int64_t start = ctx.start;
    const torch::Tensor x = m_config.norm == NormPlacement::Pre ? ln1(h) : h;
    const auto parts = qkv(x).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({B, S, H, dh}).transpose(1, 2); };
    const torch::Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]); // B x H x S x dh
    auto withPrefix = [&](const torch::Tensor& prefix, const torch::Tensor& rows) {
        return start > 0 ? torch::cat({prefix.narrow(2, 0, start).expand({B, H, start, dh}), rows}, 2) : rows;
    };
    const torch::Tensor keys = withPrefix(ctx.k, k), values = withPrefix(ctx.v, v); // B x H x T x dh
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    const torch::Tensor p = detail::causalSoftmax(torch::matmul(q, keys.transpose(-2, -1)), scale, start);
    torch::Tensor context = torch::matmul(p, values).transpose(1, 2); // B x S x H x dh
    if (edit && edit->site == Site::Head) context = edit->apply(context);
    torch::Tensor a = outProj(context.reshape({B, S, d}));
    if (edit && edit->site == Site::Mixer) a = edit->apply(a);
    if (edit && edit->freezeMixer.defined()) a = edit->freezeMixer;
    if (record) {
        record->h = h;
        record->heads = context;
        record->mixer = a;
        record->k = k;
        record->v = v;
    }
    return finish(h, a, edit, record);
}

torch::Tensor AttentionBlockImpl::step(const torch::Tensor& h, AttentionState& state) {
    const int64_t d = m_config.dModel, H = m_config.nHeads, dh = d / H;
    const torch::Tensor x = m_config.norm == NormPlacement::Pre ? ln1(h) : h; // 1 x 1 x d
    const auto parts = qkv(x).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({1, 1, H, dh}).transpose(1, 2); }; // 1 x H x 1 x dh
    const int64_t t = state.length;
    if (!state.keys.defined()) {
        const int64_t cap = m_config.maxLen;
        state.keys = torch::zeros({1, H, cap, dh}, x.options());
        state.values = torch::zeros({1, H, cap, dh}, x.options());
    }
    TORCH_CHECK(t < state.keys.size(2), "KV cache full at ", t, " tokens");
    state.keys.narrow(2, t, 1).copy_(heads(parts[1]));
    state.values.narrow(2, t, 1).copy_(heads(parts[2]));
    state.length = t + 1;
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    const torch::Tensor scores =
        torch::matmul(heads(parts[0]), state.keys.narrow(2, 0, t + 1).transpose(-2, -1)) * scale; // 1 x H x 1 x t+1
    const torch::Tensor y = torch::matmul(torch::softmax(scores, -1), state.values.narrow(2, 0, t + 1));
    return finish(h, outProj(y.transpose(1, 2).reshape({1, 1, d})));
}

} // namespace gwb::engine
