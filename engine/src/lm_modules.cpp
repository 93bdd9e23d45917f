// GrassmannLM and TransformerLM forward passes (model-spec.md), vectorized over T.

#include "lm_modules.h"

#include "causal_softmax.h"
#include "linear_cross_entropy.h"

#include <algorithm>
#include <cmath>

namespace gwb::engine {

namespace {

torch::nn::LayerNorm makeNorm(const ModelConfig& c) {
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dModel}).eps(c.layerNormEps));
}

FeedForward makeFfn(torch::nn::Module& owner, const ModelConfig& c, const torch::nn::Dropout& drop, bool init) {
    FeedForward f;
    f.in = owner.register_module("ffn_in", Dense(c.dModel, c.dFF, init));
    f.out = owner.register_module("ffn_out", Dense(c.dFF, c.dModel, init));
    f.drop = drop;
    return f;
}

/// Query rows processed at once by inference-time attention: bounds the T x T scratch memory.
constexpr int64_t kAttentionChunk = 1024;

} // namespace

DenseImpl::DenseImpl(int64_t in, int64_t out, bool initialize) {
    weight = register_parameter("weight", torch::empty({out, in}));
    bias = register_parameter("bias", torch::empty({out}));
    if (initialize) { // what torch's LinearImpl::reset_parameters() does
        torch::NoGradGuard noGrad;
        torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        torch::nn::init::uniform_(bias, -bound, bound);
    }
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
    // Inference on the CPU: the engine's product over the weight packed once (packed_gemm.h), one
    // row (a generated token) included: it streams the packed weight once.
    if (torch::Tensor y = detail::packedLinear(x, weight, bias, m_packed); y.defined()) return y;
    // One row elsewhere: a matrix-vector product. The 1-row GEMM path of OpenBLAS is 3-6x slower at
    // these sizes (80 us against 14 us for 256 -> 1024) and was most of a token step.
    if (x.dim() >= 1 && x.numel() == x.size(-1)) {
        std::vector<int64_t> sizes = x.sizes().vec();
        sizes.back() = weight.size(0);
        return torch::addmv(bias, weight, x.reshape({-1})).view(sizes);
    }
    return torch::nn::functional::linear(x, weight, bias);
}

torch::Tensor FeedForward::operator()(const torch::Tensor& x) {
    return out(drop(torch::gelu(in(x)))); // exact (erf) GELU is torch's default
}

// ---------------------------------------------------------------------------------------------
GrassmannBlockImpl::GrassmannBlockImpl(const ModelConfig& config, std::vector<int> offsets, bool initialize)
    : m_config(config), m_offsets(std::move(offsets)) {
    const int64_t d = config.dModel, r = config.reduced;
    m_drop = register_module("drop", torch::nn::Dropout(config.dropout));
    ln1 = register_module("ln1", makeNorm(config));
    wRed = register_module("w_red", Dense(d, r, initialize));
    wPlu = register_module("w_plu", Dense(r * (r - 1) / 2, d, initialize));
    wGate = register_module("w_gate", Dense(2 * d, d, initialize));
    if (config.mixerLayerNorm) lnMix = register_module("ln_mix", makeNorm(config));
    ln2 = register_module("ln2", makeNorm(config));
    m_ffn = makeFfn(*this, config, m_drop, initialize);

    std::vector<int64_t> ii, jj;
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = i + 1; j < r; ++j) {
            ii.push_back(i);
            jj.push_back(j);
        }
    // Plain members, not buffers: Module::to(dtype) would turn registered buffers into floats.
    m_idxI = torch::tensor(ii, torch::kLong);
    m_idxJ = torch::tensor(jj, torch::kLong);
}

void GrassmannBlockImpl::moveIndices(const torch::Device& device) {
    if (m_idxI.device() != device) {
        m_idxI = m_idxI.to(device);
        m_idxJ = m_idxJ.to(device);
    }
}

torch::Tensor GrassmannBlockImpl::wedge(const torch::Tensor& a, const torch::Tensor& b) {
    // Inference on the CPU: one pass that writes each coordinate a_i b_j - a_j b_i (i < j) in place
    // of four index_selects, two products and a difference (a seventh of a paper-size forward pass).
    if (detail::cpuInference(a) && detail::cpuInference(b) && a.sizes() == b.sizes()) {
        const torch::Tensor ac = a.contiguous(), bc = b.contiguous();
        const int64_t r = a.size(-1), rows = r == 0 ? 0 : a.numel() / r, C = r * (r - 1) / 2;
        std::vector<int64_t> sizes = a.sizes().vec();
        sizes.back() = C;
        torch::Tensor out = torch::empty(sizes, a.options());
        const float* pa = ac.data_ptr<float>();
        const float* pb = bc.data_ptr<float>();
        float* po = out.data_ptr<float>();
        for (int64_t t = 0; t < rows; ++t) {
            const float* x = pa + t * r;
            const float* y = pb + t * r;
            for (int64_t i = 0; i < r; ++i) {
                const float xi = x[i], yi = y[i];
                for (int64_t j = i + 1; j < r; ++j)
                    *po++ = xi * y[j] - x[j] * yi;
            }
        }
        return out;
    }
    moveIndices(a.device());
    return a.index_select(-1, m_idxI) * b.index_select(-1, m_idxJ) -
           a.index_select(-1, m_idxJ) * b.index_select(-1, m_idxI);
}

torch::Tensor GrassmannBlockImpl::offsetCounts(int64_t T, const torch::Device& device) const {
    std::vector<float> count(static_cast<size_t>(T), 0.0f);
    for (int D : m_offsets)
        for (int64_t t = D; t < T; ++t)
            count[static_cast<size_t>(t)] += 1.0f;
    return torch::tensor(count, torch::kFloat).to(device).view({1, T, 1});
}

torch::Tensor GrassmannBlockImpl::featureFromDirection(const torch::Tensor& z, const torch::Tensor& y,
                                                       const torch::Tensor& valid) {
    // B_t = z_t ^ y_t: one Plucker vector per token, W_plu applied once.
    torch::Tensor g = wPlu(wedge(z, y));
    // Tokens with no valid offset have y = 0, so g = b_plu ("bias"); "zero" masks them to 0.
    if (m_config.empty == EmptyRule::Zero) g = g * valid.to(g.dtype());
    return g;
}

torch::Tensor GrassmannBlockImpl::pastDirection(const torch::Tensor& zCur, const torch::Tensor& zPast,
                                                const torch::Tensor& curNormSq, const torch::Tensor& pastNormSq) const {
    // z_t ^ z_{t-D} = z_t ^ u with u = z_{t-D} - (z_t . z_{t-D} / ||z_t||^2) z_t, the part of the past vector
    // orthogonal to z_t, and ||z_t ^ z_{t-D}||^2 = ||z_t||^2 ||u||^2 (Lagrange: ||z_t||^2 ||z_{t-D}||^2 -
    // (z_t . z_{t-D})^2, written without its cancellation). Because every u is orthogonal to z_t, the
    // wedge z_t ^ y of the averaged direction has no cancellation either, so nearly parallel pairs keep
    // the accuracy of the per-offset formula. max(sqrt(x), eps) is written sqrt(max(x, eps^2)): same value,
    // and a finite (zero) gradient where the plane degenerates. pastNormSq is not needed in this form.
    (void)pastNormSq;
    const torch::Tensor dot = (zCur * zPast).sum(-1, /*keepdim=*/true);
    const torch::Tensor u = zPast - (dot / curNormSq.clamp_min(1e-30)) * zCur;
    const double eps = m_config.pluckerEps;
    const torch::Tensor norm = (curNormSq * (u * u).sum(-1, /*keepdim=*/true)).clamp_min(eps * eps).sqrt();
    return u / norm;
}

torch::Tensor GrassmannBlockImpl::pastDirectionMean(const torch::Tensor& z, const torch::Tensor& ring,
                                                    const std::vector<int64_t>& rows) const {
    // pastDirection's formula for one current vector (1 x r) against ring rows `rows`, averaged.
    const int64_t r = z.size(-1);
    const float* zc = z.data_ptr<float>();
    const torch::Tensor ringc = ring.contiguous();
    const float* base = ringc.data_ptr<float>();
    float normSq = 0.0f;
    for (int64_t i = 0; i < r; ++i)
        normSq += zc[i] * zc[i];
    const float eps = static_cast<float>(m_config.pluckerEps);
    const float scale = std::max(normSq, 1e-30f);
    torch::Tensor y = torch::zeros({1, r}, z.options());
    float* out = y.data_ptr<float>();
    std::vector<float> u(static_cast<size_t>(r));
    for (int64_t row : rows) {
        const float* past = base + row * r;
        float dot = 0.0f;
        for (int64_t i = 0; i < r; ++i)
            dot += zc[i] * past[i];
        const float coef = dot / scale;
        float uu = 0.0f;
        for (int64_t i = 0; i < r; ++i) {
            u[static_cast<size_t>(i)] = past[i] - coef * zc[i];
            uu += u[static_cast<size_t>(i)] * u[static_cast<size_t>(i)];
        }
        const float norm = std::sqrt(std::max(normSq * uu, eps * eps));
        for (int64_t i = 0; i < r; ++i)
            out[i] += u[static_cast<size_t>(i)] / norm;
    }
    const float count = static_cast<float>(rows.size());
    for (int64_t i = 0; i < r; ++i)
        out[i] /= count;
    return y;
}

std::pair<torch::Tensor, torch::Tensor> GrassmannBlockImpl::geometry(const torch::Tensor& x, torch::Tensor* zOut) {
    const int64_t T = x.size(1);
    const torch::Tensor z = wRed(x); // B x T x r
    if (zOut) *zOut = z;
    // y_t = (1/|W_t|) sum_D z_{t-D} / max(||z_t ^ z_{t-D}||, eps); then B_t = z_t ^ y_t = mean_D p^(D).
    const torch::Tensor normSq = (z * z).sum(-1, /*keepdim=*/true); // B x T x 1
    torch::Tensor sum;
    for (int D : m_offsets) {
        if (D >= T) continue; // no token has t - D >= 0
        const int64_t n = T - D;
        const torch::Tensor term =
            pastDirection(z.narrow(1, D, n), z.narrow(1, 0, n), normSq.narrow(1, D, n), normSq.narrow(1, 0, n));
        const torch::Tensor padded = torch::constant_pad_nd(term, {0, 0, D, 0}); // rows t < D are zero
        sum = sum.defined() ? sum + padded : padded;
    }
    const torch::Tensor cnt = offsetCounts(T, z.device());
    const torch::Tensor y = sum.defined() ? sum / cnt.clamp_min(1.0f).to(z.dtype()) : torch::zeros_like(z);
    const torch::Tensor g = featureFromDirection(z, y, cnt > 0);
    const torch::Tensor a = torch::sigmoid(wGate(torch::cat({x, g}, -1)));
    return {g, a};
}

std::pair<torch::Tensor, torch::Tensor> GrassmannBlockImpl::geometryPerOffset(const torch::Tensor& x) {
    // Test oracle: model-spec steps 1-7 literally, one normalized Plucker vector per valid offset.
    const int64_t B = x.size(0), T = x.size(1);
    const torch::Tensor z = wRed(x);
    const int64_t r = z.size(-1), C = r * (r - 1) / 2;
    torch::Tensor sum = torch::zeros({B, T, C}, z.options());
    for (int D : m_offsets) {
        if (D >= T) continue;
        const int64_t n = T - D;
        torch::Tensor p = wedge(z.narrow(1, D, n), z.narrow(1, 0, n)); // current x past
        p = p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
        sum = sum + torch::constant_pad_nd(p, {0, 0, D, 0});
    }
    const torch::Tensor cnt = offsetCounts(T, z.device());
    torch::Tensor g = wPlu(sum / cnt.clamp_min(1.0f).to(sum.dtype()));
    if (m_config.empty == EmptyRule::Zero) g = g * (cnt > 0).to(g.dtype());
    const torch::Tensor a = torch::sigmoid(wGate(torch::cat({x, g}, -1)));
    return {g, a};
}

torch::Tensor GrassmannBlockImpl::forward(const torch::Tensor& h, BlockCapture* capture) {
    const bool pre = m_config.norm == NormPlacement::Pre;
    const torch::Tensor x = pre ? ln1(h) : h;
    torch::Tensor z;
    auto [g, a] = perOffsetOracle ? geometryPerOffset(x) : geometry(x, capture ? &z : nullptr);
    if (capture) {
        if (perOffsetOracle) z = wRed(x);
        capture->h = h;
        capture->mixerInput = x;
        capture->z = z;
        capture->g = g;
        capture->gate = a;
    }
    return finish(h, x, g, a);
}

torch::Tensor GrassmannBlockImpl::finish(const torch::Tensor& h, const torch::Tensor& x, const torch::Tensor& g,
                                         const torch::Tensor& a) {
    const bool pre = m_config.norm == NormPlacement::Pre;
    const bool paper = m_config.gate == GateVariant::Paper;
    torch::Tensor mix = paper ? a * x + (1 - a) * g : a * g;
    if (pre) {
        if (lnMix) mix = lnMix(mix);
        torch::Tensor out = h + m_drop(mix);
        return out + m_drop(m_ffn(ln2(out)));
    }
    // Post-norm. Paper gate: no residual around the mixer (a * h is the skip path).
    const torch::Tensor y = paper ? m_drop(ln1(mix)) : ln1(h + m_drop(mix));
    return ln2(y + m_drop(m_ffn(y)));
}

torch::Tensor GrassmannBlockImpl::step(const torch::Tensor& h, GrassmannState& state) {
    const bool pre = m_config.norm == NormPlacement::Pre;
    const torch::Tensor x = pre ? ln1(h) : h; // 1 x 1 x d
    const int64_t r = m_config.reduced;
    const torch::Tensor z = wRed(x).view({1, r});
    const int64_t t = state.position;
    if (!state.z.defined()) state.z = torch::zeros({std::max<int64_t>(state.capacity, 1), r}, z.options());
    // Every valid offset at once: the past vectors z_{t-D} gathered from the ring buffer (|W_t| x r).
    std::vector<int64_t> rows;
    for (int D : m_offsets)
        if (D <= t) rows.push_back((t - D) % state.capacity);
    torch::Tensor y;
    if (!rows.empty() && detail::cpuInference(z)) {
        // The same sum in one pass over the |W_t| past vectors (generation runs this once per layer
        // and token; the tensor form below is a dozen small operations).
        y = pastDirectionMean(z.contiguous(), state.z, rows);
    } else if (!rows.empty()) {
        const torch::Tensor past =
            state.z.index_select(0, torch::tensor(rows, torch::kLong).to(z.device())); // |W_t| x r
        const torch::Tensor normSq = (z * z).sum(-1, /*keepdim=*/true);                // 1 x 1
        y = pastDirection(z, past, normSq, torch::Tensor()).sum(0, /*keepdim=*/true) / static_cast<double>(rows.size());
    } else {
        y = torch::zeros_like(z);
    }
    const torch::Tensor valid = torch::full({1, 1}, !rows.empty(), z.options().dtype(torch::kBool));
    const torch::Tensor g = featureFromDirection(z, y, valid).view({1, 1, -1});
    const torch::Tensor a = torch::sigmoid(wGate(torch::cat({x, g}, -1)));
    if (state.capacity > 0) state.z[t % state.capacity].copy_(z[0]);
    ++state.position;
    return finish(h, x, g, a);
}

torch::Tensor GrassmannBlockImpl::prefill(const torch::Tensor& h, GrassmannState& state) {
    const bool pre = m_config.norm == NormPlacement::Pre;
    const torch::Tensor x = pre ? ln1(h) : h;
    torch::Tensor z;
    auto [g, a] = geometry(x, &z);
    const int64_t T = h.size(1);
    state.z = torch::zeros({std::max<int64_t>(state.capacity, 1), m_config.reduced}, z.options());
    for (int64_t t = std::max<int64_t>(0, T - state.capacity); t < T; ++t)
        state.z[t % state.capacity].copy_(z[0][t]);
    state.position = T;
    return finish(h, x, g, a);
}

GrassmannState GrassmannBlockImpl::initialState() const {
    GrassmannState s;
    for (int D : m_offsets)
        s.capacity = std::max<int64_t>(s.capacity, D);
    return s;
}

// ---------------------------------------------------------------------------------------------
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

torch::Tensor AttentionBlockImpl::finish(const torch::Tensor& h, torch::Tensor a) {
    if (m_config.norm == NormPlacement::Pre) {
        if (lnMix) a = lnMix(a);
        torch::Tensor out = h + m_drop(a);
        return out + m_drop(m_ffn(ln2(out)));
    }
    const torch::Tensor y = ln1(h + m_drop(a));
    return ln2(y + m_drop(m_ffn(y)));
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

// ---------------------------------------------------------------------------------------------
LanguageModelImpl::LanguageModelImpl(const ModelConfig& config, bool initialize) : m_config(config) {
    // The embedding tables are the largest parameters: without initialize they are not even filled
    // by torch's default N(0, 1) (an Embedding given _weight takes it as is).
    auto table = [&](int64_t rows) {
        torch::nn::EmbeddingOptions o(rows, config.dModel);
        if (!initialize) o._weight(torch::empty({rows, config.dModel}));
        return torch::nn::Embedding(o);
    };
    tokEmbed = register_module("tok_embed", table(config.vocabSize));
    posEmbed = register_module("pos_embed", table(config.maxLen));
    m_drop = register_module("drop", torch::nn::Dropout(config.dropout));
    m_blockList = register_module("blocks", torch::nn::ModuleList());
    for (int64_t l = 0; l < config.nLayers; ++l) {
        std::shared_ptr<BlockImpl> block;
        if (config.kind == ModelKind::Grassmann)
            block = std::make_shared<GrassmannBlockImpl>(config, config.layerOffsets.at(static_cast<size_t>(l)),
                                                         initialize);
        else
            block = std::make_shared<AttentionBlockImpl>(config, initialize);
        m_blockList->push_back(block);
        m_blocks.push_back(block);
    }
    lnFinal = register_module("ln_final", makeNorm(config));
    if (initialize) resetParameters();
}

void LanguageModelImpl::resetParameters() {
    torch::NoGradGuard noGrad;
    for (auto& item : named_parameters()) {
        const std::string& name = item.key();
        torch::Tensor& p = item.value();
        const bool isNorm = name.rfind("ln_final.", 0) == 0 || name.find(".ln1.") != std::string::npos ||
                            name.find(".ln2.") != std::string::npos || name.find(".ln_mix.") != std::string::npos;
        if (isNorm) {
            if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0)
                p.fill_(1.0);
            else
                p.zero_();
        } else if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
            p.zero_();
        } else {
            p.normal_(0.0, 0.02);
        }
    }
}

torch::Tensor LanguageModelImpl::embed(const torch::Tensor& ids) {
    const int64_t T = ids.size(1);
    TORCH_CHECK(T <= m_config.maxLen, "sequence of ", T, " tokens exceeds max_len ", m_config.maxLen);
    const torch::Tensor pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    return tokEmbed(ids) + posEmbed(pos).unsqueeze(0);
}

torch::Tensor LanguageModelImpl::forwardFromEmbedding(const torch::Tensor& h0, ForwardCapture* capture) {
    return head(blocksFrom(h0, capture));
}

torch::Tensor LanguageModelImpl::forwardHidden(const torch::Tensor& ids, ForwardCapture* capture) {
    return blocksFrom(embed(ids), capture);
}

torch::Tensor LanguageModelImpl::blocksFrom(const torch::Tensor& h0, ForwardCapture* capture) {
    torch::Tensor h = m_drop(h0);
    if (capture) {
        BlockCapture proto;
        proto.keepAttention = capture->keepAttention;
        capture->blocks.assign(m_blocks.size(), proto);
    }
    for (size_t l = 0; l < m_blocks.size(); ++l)
        h = m_blocks[l]->forward(h, capture ? &capture->blocks[l] : nullptr);
    if (capture) capture->finalH = h;
    return h;
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& ids, ForwardCapture* capture) {
    return forwardFromEmbedding(embed(ids), capture);
}

torch::Tensor LanguageModelImpl::nextTokenLoss(const torch::Tensor& h, const torch::Tensor& targets) {
    const torch::Tensor x = lnFinal(h);
    return detail::linearCrossEntropy(x.reshape({-1, x.size(-1)}), tokEmbed->weight, targets.reshape({-1}));
}

torch::Tensor LanguageModelImpl::head(const torch::Tensor& h) {
    const torch::Tensor x = lnFinal(h);
    if (torch::Tensor y = detail::packedLinear(x, tokEmbed->weight, {}, headPacked); y.defined()) return y;
    if (x.numel() == x.size(-1)) { // one position (generation): E x as a matrix-vector product, 3.5x faster
        std::vector<int64_t> sizes = x.sizes().vec();
        sizes.back() = tokEmbed->weight.size(0);
        return torch::mv(tokEmbed->weight, x.reshape({-1})).view(sizes);
    }
    return torch::matmul(x, tokEmbed->weight.t());
}

} // namespace gwb::engine
