// The frozen local replacement (replacement.h): the prompt recorded once, then the affine map
// replayed on batched sources. Every block variant the engine runs is written out here in its
// frozen form; the recorded pass must give the model's own logits (attributeGraph checks it).

#include "graph/replacement.h"

#include "features/feature_util.h"
#include "gwb/engine/config_io.h"
#include "model/model_impl.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace gwb::engine::graph {

namespace {

/// A LayerNorm with its denominators frozen, less its bias: (x - mean x) * scale, scale = w / sigma
/// (... x T x d, or ... x T x 1 without weights). Its own backward, g * scale less its mean, is three
/// passes over the cotangent where autograd's mean, subtraction, division and product took six.
struct FrozenNormFn : torch::autograd::Function<FrozenNormFn> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& scale) {
        ctx->saved_data["scale"] = scale;
        return (x - x.mean(-1, /*keepdim=*/true)) * scale;
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const torch::Tensor g = grads[0] * ctx->saved_data["scale"].toTensor();
        return {g - g.mean(-1, /*keepdim=*/true), torch::Tensor()};
    }
};

/// The frozen LayerNorm: records sigma (the prompt's pass) or replays it (affine in x).
torch::Tensor frozenNorm(const Norm& n, const torch::Tensor& x, torch::Tensor& sigma, bool record) {
    if (record) {
        const torch::Tensor c = x - x.mean(-1, /*keepdim=*/true);
        sigma = (c.pow(2).mean(-1, /*keepdim=*/true) + n.eps).sqrt();
        const torch::Tensor y = c / sigma;
        return n.w.defined() ? y * n.w + n.b : y;
    }
    const torch::Tensor y = FrozenNormFn::apply(x, n.w.defined() ? n.w / sigma : sigma.reciprocal());
    return n.w.defined() ? y + n.b : y;
}

Norm normOf(const torch::nn::LayerNorm& ln, const torch::TensorOptions& o) {
    Norm n;
    if (!ln) return n;
    n.on = true;
    n.eps = ln->options.eps();
    if (ln->weight.defined()) {
        n.w = ln->weight.detach().to(o);
        n.b = ln->bias.detach().to(o);
    }
    return n;
}

Lin linOf(const Dense& dense, const torch::TensorOptions& o) {
    Lin l;
    if (!dense) return l;
    l.w = dense->weight.detach().to(o);
    if (dense->bias.defined()) l.b = dense->bias.detach().to(o);
    return l;
}

torch::Tensor tensorOf(const FloatArray& a, const torch::TensorOptions& o) {
    return features::toTensor(a).to(o);
}

std::vector<int64_t> toLongs(const torch::Tensor& t) {
    const torch::Tensor c = t.to(torch::kCPU, torch::kLong).contiguous();
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

} // namespace

torch::Tensor Lin::operator()(const torch::Tensor& x) const {
    const torch::Tensor y = torch::matmul(x, w.t());
    return b.defined() ? y + b : y;
}

Replacement::Replacement(const Model& model, const TranscoderSet& transcoders, const std::vector<int32_t>& ids,
                         torch::ScalarType dtype) {
    Model::Impl& m = model.impl();
    m_config = m.config;
    const ModelConfig& c = m_config;
    if (c.kind == ModelKind::Grassmann && c.aggregation == Aggregation::PerOffsetMlp)
        throw std::invalid_argument("attribution graphs do not cover aggregation per_offset_mlp (a GELU inside the "
                                    "mixer, with no linear form at the prompt)");
    layers = static_cast<int>(c.nLayers);
    grassmann = c.kind == ModelKind::Grassmann;
    d = c.dModel;
    T = static_cast<int64_t>(ids.size());
    if (T == 0) throw std::invalid_argument("the prompt has no tokens");
    if (T > c.maxLen)
        throw std::invalid_argument("the prompt has " + std::to_string(T) + " tokens; the model reads at most " +
                                    std::to_string(c.maxLen));
    if (static_cast<int>(transcoders.layers.size()) != layers)
        throw std::invalid_argument("the transcoder set has " + std::to_string(transcoders.layers.size()) +
                                    " layers; the model has " + std::to_string(layers));
    options = torch::TensorOptions().dtype(dtype).device(m.device);
    const auto& net = *m.net;

    const int64_t r = grassmann ? c.reduced : 0;
    std::vector<int64_t> ii, jj;
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = i + 1; j < r; ++j) {
            ii.push_back(i);
            jj.push_back(j);
        }
    m_idxI = torch::tensor(ii, torch::kLong).to(m.device);
    m_idxJ = torch::tensor(jj, torch::kLong).to(m.device);

    for (int l = 0; l < layers; ++l) {
        BlockParams P;
        const Dictionary& tc = transcoders.layers[static_cast<size_t>(l)];
        if (tc.config.dIn != d || tc.config.outWidth() != d)
            throw std::invalid_argument("the transcoder of layer " + std::to_string(l) + " reads " +
                                        std::to_string(tc.config.dIn) + " and writes " +
                                        std::to_string(tc.config.outWidth()) + " values; the model's width is " +
                                        std::to_string(d));
        P.wEnc = tensorOf(tc.wEnc, options);
        P.bEnc = tensorOf(tc.bEnc, options);
        P.wDec = tensorOf(tc.wDec, options);
        P.bDec = tensorOf(tc.bDec, options);
        P.architecture = tc.config.architecture;
        P.k = tc.config.k;
        const auto& blockPtr = net.blocks()[static_cast<size_t>(l)];
        // The norms both kinds of block have: LN1, the mixer's LN, LN2.
        auto blockNorms = [&](const auto* b) {
            P.ln1 = normOf(b->ln1, options);
            P.lnMix = normOf(b->lnMix, options);
            P.ln2 = normOf(b->ln2, options);
        };
        if (grassmann) {
            const auto* b = dynamic_cast<const GrassmannBlockImpl*>(blockPtr.get());
            blockNorms(b);
            P.lnRed = normOf(b->lnRed, options);
            P.lnGeo = normOf(b->lnGeo, options);
            P.red = linOf(b->wRed, options);
            P.plu = linOf(b->wPlu, options);
            P.gate = linOf(b->wGate, options);
            P.out = linOf(b->wOut, options);
            P.offsets = b->offsets();
        } else {
            const auto* b = dynamic_cast<const AttentionBlockImpl*>(blockPtr.get());
            blockNorms(b);
            P.qkv = linOf(b->qkv, options);
            P.proj = linOf(b->outProj, options);
        }
        // The FFN's two layers are registered as ffn_in / ffn_out in every block.
        for (const auto& child : blockPtr->named_children())
            if (child.key() == "ffn_in" || child.key() == "ffn_out") {
                const auto dense = std::dynamic_pointer_cast<DenseImpl>(child.value());
                Lin lin;
                lin.w = dense->weight.detach().to(options);
                lin.b = dense->bias.detach().to(options);
                (child.key() == "ffn_in" ? P.ffnIn : P.ffnOut) = lin;
            }
        P.tanhGelu = c.activation == Activation::GeluTanh;
        m_params.push_back(std::move(P));
    }
    m_frozen.resize(static_cast<size_t>(layers));
    m_lnFinal = normOf(net.lnFinal, options);
    unembed = net.tokEmbed->weight.detach().to(options);

    torch::NoGradGuard noGrad;
    const torch::Tensor idsT =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).to(m.device).view({1, T});
    base.emb = (unembed.index_select(0, idsT.view({T})) + net.posEmbed->weight.detach().to(options).narrow(0, 0, T))
                   .unsqueeze(0);
    Sources s = base;
    s.act.resize(static_cast<size_t>(layers));
    s.err.resize(static_cast<size_t>(layers));
    torch::Tensor h = base.emb;
    m_len = T;
    for (int l = 0; l < layers; ++l)
        h = block(l, h, s, nullptr, nullptr, /*record=*/true);
    // Fold the split Plucker product into W_plu while the matrices stay small (2 T d r per block).
    const bool fold = grassmann && 2 * T * d * r * layers * 8 <= (int64_t(1) << 30);
    for (int l = 0; l < layers; ++l) {
        Frozen& F = m_frozen[static_cast<size_t>(l)];
        const std::vector<int64_t> pos = toLongs(F.actPos);
        F.activeBefore.assign(static_cast<size_t>(T + 1), 0);
        for (int64_t p : pos)
            ++F.activeBefore[static_cast<size_t>(p + 1)];
        int64_t slots = 0; // the most features active at one position
        for (int64_t t = 0; t < T; ++t) {
            slots = std::max(slots, F.activeBefore[static_cast<size_t>(t + 1)]);
            F.activeBefore[static_cast<size_t>(t + 1)] += F.activeBefore[static_cast<size_t>(t)];
        }
        // Position t's features in slots t * slots + j (the rest point at feature 0 with activation 0).
        std::vector<int64_t> slotOf(pos.size()), slotFeat(static_cast<size_t>(T * slots), 0);
        const std::vector<int64_t> feat = toLongs(F.actFeat);
        for (size_t i = 0; i < pos.size(); ++i) {
            slotOf[i] = pos[i] * slots + (static_cast<int64_t>(i) - F.activeBefore[static_cast<size_t>(pos[i])]);
            slotFeat[static_cast<size_t>(slotOf[i])] = feat[i];
        }
        F.slots = slots;
        F.slotOf = torch::tensor(slotOf, torch::kLong).to(m.device);
        F.slotDec = m_params[static_cast<size_t>(l)]
                        .wDec.index_select(0, torch::tensor(slotFeat, torch::kLong).to(m.device))
                        .view({T, slots, d}); // T x slots x d
        if (fold) foldPlucker(l);
    }
    const torch::Tensor last = h.select(1, T - 1); // 1 x d
    const torch::Tensor c0 = last - last.mean(-1, true);
    m_sigmaFinal = (c0.pow(2).mean(-1, true) + m_lnFinal.eps).sqrt();
    lastNormed = finalNorm(last).detach();
    replacementLogits = torch::matmul(lastNormed, unembed.t()).view({-1}).to(torch::kCPU, torch::kDouble);

    featureStart.assign(static_cast<size_t>(layers), 0);
    for (int l = 0; l < layers; ++l) {
        const Frozen& F = m_frozen[static_cast<size_t>(l)];
        featureStart[static_cast<size_t>(l)] = activeCount;
        activeCount += F.actValue.size(0);
        base.act.push_back(F.actValue.unsqueeze(0));
        base.err.push_back(F.error);
    }

    // The model's own logits at the last position, in its own precision.
    {
        std::lock_guard<std::mutex> lock(m.mutex);
        auto& netMut = *m.net;
        const bool training = netMut.is_training();
        netMut.eval();
        modelLogits = netMut.forward(idsT).select(1, T - 1).view({-1}).to(torch::kCPU, torch::kDouble);
        if (training) netMut.train();
    }
}

int Replacement::units(int layer) const {
    return grassmann ? static_cast<int>(m_params[static_cast<size_t>(layer)].offsets.size())
                     : static_cast<int>(m_config.nHeads);
}

torch::Tensor Replacement::finalNorm(const torch::Tensor& h) const {
    torch::Tensor sigma = m_sigmaFinal;
    return frozenNorm(m_lnFinal, h, sigma, /*record=*/false);
}

torch::Tensor Replacement::wedge(const torch::Tensor& a, const torch::Tensor& b) const {
    return a.index_select(-1, m_idxI) * b.index_select(-1, m_idxJ) -
           a.index_select(-1, m_idxJ) * b.index_select(-1, m_idxI);
}

torch::Tensor Replacement::run(const Sources& sources, int upTo, std::vector<torch::Tensor>* ffnIn, const Route* route,
                               std::vector<torch::Tensor>* mixOut) {
    if (ffnIn) ffnIn->assign(static_cast<size_t>(layers), torch::Tensor());
    if (mixOut) mixOut->assign(static_cast<size_t>(layers), torch::Tensor());
    torch::Tensor h = sources.emb;
    m_len = h.size(1);
    for (int l = 0; l < upTo; ++l)
        h = block(l, h, sources, ffnIn, route, /*record=*/false, mixOut);
    return h;
}

torch::Tensor Replacement::runToMixer(const Sources& sources, int m, const Route& route) {
    torch::Tensor h = sources.emb;
    m_len = h.size(1);
    for (int l = 0; l < m; ++l)
        h = block(l, h, sources, nullptr, nullptr, /*record=*/false);
    return mixer(m, h, &route, /*record=*/false);
}

torch::Tensor Replacement::mixer(int l, const torch::Tensor& h, const Route* route, bool record) {
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    auto norm = [&](const Norm& n, const torch::Tensor& x, torch::Tensor& sigma) {
        if (record) return frozenNorm(n, x, sigma, true);
        torch::Tensor fixed = cut(sigma);
        return frozenNorm(n, x, fixed, false);
    };
    if (grassmann) {
        const torch::Tensor x = mixerSeesNormedInput(m_config.norm) ? norm(P.ln1, h, F.sigma1) : h;
        return grassmannMix(l, h, x, route, record);
    }
    const torch::Tensor x = m_config.norm == NormPlacement::Pre ? norm(P.ln1, h, F.sigma1) : h;
    return attentionMix(l, x, route, record);
}

torch::Tensor Replacement::block(int l, const torch::Tensor& h, const Sources& s, std::vector<torch::Tensor>* ffnIn,
                                 const Route* route, bool record, std::vector<torch::Tensor>* mixOut) {
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const ModelConfig& c = m_config;
    const int64_t B = h.size(0);
    const bool routed = route && route->layer == l;
    auto skipped = [&](const torch::Tensor& t) { return routed ? t * route->mask.select(1, 0).view({B, 1, 1}) : t; };
    auto norm = [&](const Norm& n, const torch::Tensor& x, torch::Tensor& sigma) {
        if (record) return frozenNorm(n, x, sigma, true);
        torch::Tensor fixed = cut(sigma);
        return frozenNorm(n, x, fixed, false);
    };
    if (grassmann) {
        torch::Tensor mix = mixer(l, h, route, record);
        if (mixOut) (*mixOut)[static_cast<size_t>(l)] = mix;
        const bool paper = c.gate == GateVariant::Paper;
        switch (c.norm) {
        case NormPlacement::Pre: {
            if (P.lnMix.on) mix = norm(P.lnMix, mix, F.sigmaMix);
            const torch::Tensor out = skipped(h) + mix;
            return out + ffn(l, norm(P.ln2, out, F.sigma2), s, ffnIn, record);
        }
        case NormPlacement::PostMix: {
            const torch::Tensor y = norm(P.ln1, mix, F.sigma1);
            return y + ffn(l, norm(P.ln2, y, F.sigma2), s, ffnIn, record);
        }
        case NormPlacement::PreMix:
            return mix + ffn(l, norm(P.ln2, mix, F.sigma2), s, ffnIn, record);
        case NormPlacement::Post:
            break;
        }
        const torch::Tensor y = paper ? norm(P.ln1, mix, F.sigma1) : norm(P.ln1, skipped(h) + mix, F.sigma1);
        return norm(P.ln2, y + ffn(l, y, s, ffnIn, record), F.sigma2);
    }
    const bool pre = c.norm == NormPlacement::Pre;
    torch::Tensor a = mixer(l, h, route, record);
    if (mixOut) (*mixOut)[static_cast<size_t>(l)] = a;
    if (pre) {
        if (P.lnMix.on) a = norm(P.lnMix, a, F.sigmaMix);
        const torch::Tensor out = skipped(h) + a;
        return out + ffn(l, norm(P.ln2, out, F.sigma2), s, ffnIn, record);
    }
    const torch::Tensor y = norm(P.ln1, skipped(h) + a, F.sigma1);
    return norm(P.ln2, y + ffn(l, y, s, ffnIn, record), F.sigma2);
}

torch::Tensor Replacement::cut(const torch::Tensor& t) const {
    if (!t.defined() || t.size(1) == m_len) return t;
    return t.narrow(1, 0, m_len);
}

Sources Replacement::baseBefore(int64_t len) const {
    if (len >= T) return base;
    Sources s;
    s.emb = base.emb.narrow(1, 0, len);
    for (int l = 0; l < layers; ++l) {
        const Frozen& F = m_frozen[static_cast<size_t>(l)];
        s.act.push_back(base.act[static_cast<size_t>(l)].narrow(1, 0, F.activeBefore[static_cast<size_t>(len)]));
        s.err.push_back(base.err[static_cast<size_t>(l)].narrow(1, 0, len));
    }
    return s;
}

void Replacement::foldPlucker(int l) {
    // (z ^ v)_k = z_i v_j - z_j v_i for the k-th pair (i, j): linear in z with the C x r matrix
    // J(v)[k, i] = v_j, J(v)[k, j] = -v_i; and (v ^ y) = -J(v) y. So W_plu (z_t ^ ybar_t) = W_plu J(ybar_t) z_t
    // and W_plu (zbar_t ^ y_t) = -W_plu J(zbar_t) y_t: T x d x r each, once per graph.
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    const int64_t C = m_idxI.size(0), r = F.zBar.size(2);
    const torch::Tensor k = torch::arange(C, torch::TensorOptions().dtype(torch::kLong).device(m_idxI.device()));
    auto jacobian = [&](const torch::Tensor& v) { // v: T x r -> T x C x r
        torch::Tensor J = torch::zeros({T, C, r}, options);
        using torch::indexing::Slice;
        J.index_put_({Slice(), k, m_idxI}, v.index_select(1, m_idxJ));
        J.index_put_({Slice(), k, m_idxJ}, -v.index_select(1, m_idxI));
        return J;
    };
    F.mz = torch::matmul(P.plu.w, jacobian(F.yBar[0]));  // T x d x r
    F.my = -torch::matmul(P.plu.w, jacobian(F.zBar[0])); // T x d x r
    F.mzOffset.clear();                                  // made when a loading first routes this block (foldOffsets)
}

void Replacement::foldOffsets(int l) {
    // Per offset (loadings route one offset at a time): ybar_t = sum_D s_{t,D} zbar_{t-D}, term by term.
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    const int64_t C = m_idxI.size(0), r = F.zBar.size(2);
    const torch::Tensor k = torch::arange(C, torch::TensorOptions().dtype(torch::kLong).device(m_idxI.device()));
    using torch::indexing::Slice;
    for (size_t i = 0; i < P.offsets.size(); ++i) {
        const int64_t D = P.offsets[i];
        if (D >= T) {
            F.mzOffset.push_back(torch::Tensor());
            continue;
        }
        const torch::Tensor past = torch::constant_pad_nd(F.zBar[0].narrow(0, 0, T - D), {0, 0, D, 0}) *
                                   F.offsetScale[0].narrow(1, static_cast<int64_t>(i), 1); // T x r
        torch::Tensor J = torch::zeros({T, C, r}, options);
        J.index_put_({Slice(), k, m_idxI}, past.index_select(1, m_idxJ));
        J.index_put_({Slice(), k, m_idxJ}, -past.index_select(1, m_idxI));
        F.mzOffset.push_back(torch::matmul(P.plu.w, J));
    }
}

torch::Tensor Replacement::grassmannMix(int l, const torch::Tensor& h, const torch::Tensor& x, const Route* route,
                                        bool record) {
    (void)h;
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const ModelConfig& c = m_config;
    const int64_t B = x.size(0), len = x.size(1);
    const bool routed = route && route->layer == l;
    torch::Tensor z = P.red(x);
    if (P.lnRed.on) {
        torch::Tensor sigma = record ? torch::Tensor() : cut(F.sigmaRed);
        z = frozenNorm(P.lnRed, z, record ? F.sigmaRed : sigma, record);
    }
    const auto W = static_cast<int64_t>(P.offsets.size());
    if (record) {
        // s_{t,D}: the weight of z_{t-D} in y_t = sum_D s_{t,D} z_{t-D}, so that B_t = z_t ^ y_t is the
        // model's aggregated bivector (model-spec steps 3-5; grassmann_block.cpp's one-plane form).
        std::vector<double> count(static_cast<size_t>(T), 0.0);
        for (int D : P.offsets)
            for (int64_t t = D; t < T; ++t)
                count[static_cast<size_t>(t)] += 1.0;
        const torch::Tensor cnt = torch::tensor(count, torch::kDouble).to(options).view({1, T, 1});
        torch::Tensor scale = torch::zeros({1, T, W}, options);
        const torch::Tensor normSq = (z * z).sum(-1, /*keepdim=*/true);
        for (int64_t i = 0; i < W; ++i) {
            const int64_t D = P.offsets[static_cast<size_t>(i)];
            if (D >= T) continue;
            const int64_t n = T - D;
            torch::Tensor w;
            if (c.aggregation == Aggregation::NormalizeThenMean) {
                const torch::Tensor zc = z.narrow(1, D, n), zp = z.narrow(1, 0, n);
                const torch::Tensor ncur = normSq.narrow(1, D, n);
                const torch::Tensor dot = (zc * zp).sum(-1, true);
                const torch::Tensor u = zp - (dot / ncur.clamp_min(1e-30)) * zc;
                w = 1.0 / (ncur * (u * u).sum(-1, true)).clamp_min(c.pluckerEps * c.pluckerEps).sqrt();
            } else {
                w = torch::full({1, n, 1}, c.aggregation == Aggregation::Mean ? c.stages.pluckerScale : 1.0, options);
            }
            scale.narrow(1, D, n).narrow(2, i, 1).copy_(w / cnt.narrow(1, D, n));
        }
        F.offsetScale = scale;
        F.valid = (cnt > 0).to(options.dtype());
        F.zBar = z;
    }
    const torch::Tensor offsetScale = cut(F.offsetScale), zBar = cut(F.zBar);
    // y_t = sum_D s_{t,D} zz_{t-D}, each offset's term weighted by its route mask when routed.
    auto pastMean = [&](const torch::Tensor& zz) {
        torch::Tensor y;
        for (int64_t i = 0; i < W; ++i) {
            const int64_t D = P.offsets[static_cast<size_t>(i)];
            if (D >= len) continue;
            torch::Tensor term =
                torch::constant_pad_nd(zz.narrow(1, 0, len - D), {0, 0, D, 0}) * offsetScale.narrow(2, i, 1);
            if (routed) term = term * route->mask.select(1, 1 + i).view({B, 1, 1});
            y = y.defined() ? y + term : term;
        }
        return y.defined() ? y : torch::zeros_like(zz);
    };
    torch::Tensor g;
    if (!record && F.mz.defined()) {
        // The even split, folded: (1/2)(W_plu (z ^ ybar) + W_plu (zbar ^ y)) without W_plu's T x C x d
        // product, one (d x r) x (r x B) product a position (bmm over T), not B x T matrix-vector ones.
        auto perToken = [&](const torch::Tensor& M, const torch::Tensor& v) {
            return torch::matmul(M.narrow(0, 0, len), v.permute({1, 2, 0})).permute({2, 0, 1});
        };
        const torch::Tensor y = pastMean(z); // routed: each offset's term weighted by its mask
        torch::Tensor fromCurrent;
        if (!routed) {
            fromCurrent = perToken(F.mz, z);
        } else { // ybar routed the same way: one offset's matrix at a time
            if (F.mzOffset.empty()) foldOffsets(l);
            for (int64_t i = 0; i < W; ++i) {
                if (!F.mzOffset[static_cast<size_t>(i)].defined()) continue;
                const torch::Tensor term =
                    perToken(F.mzOffset[static_cast<size_t>(i)], z) * route->mask.select(1, 1 + i).view({B, 1, 1});
                fromCurrent = fromCurrent.defined() ? fromCurrent + term : term;
            }
            if (!fromCurrent.defined()) fromCurrent = torch::zeros({B, len, d}, options);
        }
        g = 0.5 * (fromCurrent + perToken(F.my, y));
        if (c.stages.wedgePastFirst) g = -g;
        if (c.aggregation == Aggregation::MeanThenNormalize) g = g / cut(F.aggSigma);
        if (P.plu.b.defined()) g = g + P.plu.b;
    } else {
        torch::Tensor plane;
        if (record) {
            const torch::Tensor y = pastMean(z);
            F.yBar = y;
            plane = wedge(z, y);
        } else {
            // The even split of the bilinear product: z_t ^ ybar_t + zbar_t ^ y_t, halved.
            plane = 0.5 * (wedge(z, pastMean(zBar)) + wedge(zBar, pastMean(z)));
        }
        if (c.stages.wedgePastFirst) plane = -plane; // past ^ current
        if (c.aggregation == Aggregation::MeanThenNormalize) {
            if (record) F.aggSigma = ((plane * plane).sum(-1, true) + c.pluckerEps).sqrt();
            plane = plane / cut(F.aggSigma);
        }
        g = P.plu(plane);
    }
    if (c.empty == EmptyRule::Zero) g = g * cut(F.valid);
    if (P.lnGeo.on) {
        torch::Tensor sigma = record ? torch::Tensor() : cut(F.sigmaGeo);
        g = frozenNorm(P.lnGeo, g, record ? F.sigmaGeo : sigma, record);
    }
    if (record) F.gate = torch::sigmoid(P.gate(c.stages.gateFromInput ? x : torch::cat({x, g}, -1)));
    const torch::Tensor a = cut(F.gate);
    auto skipped = [&](const torch::Tensor& t) { return routed ? t * route->mask.select(1, 0).view({B, 1, 1}) : t; };
    torch::Tensor mix = c.gate == GateVariant::Paper      ? skipped(a * x) + (1 - a) * g
                        : c.gate == GateVariant::Residual ? skipped(x) + a * g * c.stages.mixScale
                                                          : a * g;
    if (P.out.defined()) mix = P.out(mix);
    return mix;
}

torch::Tensor Replacement::attentionMix(int l, const torch::Tensor& x, const Route* route, bool record) {
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const int64_t B = x.size(0), len = x.size(1), H = m_config.nHeads, dh = d / H;
    auto heads = [&](const torch::Tensor& t) { return t.reshape({B, len, H, dh}).transpose(1, 2); };
    const torch::Tensor wv = P.qkv.w.narrow(0, 2 * d, d);
    const torch::Tensor bv = P.qkv.b.defined() ? P.qkv.b.narrow(0, 2 * d, d) : torch::Tensor();
    torch::Tensor v = torch::matmul(x, wv.t());
    if (bv.defined()) v = v + bv;
    if (record) {
        const auto parts = P.qkv(x).chunk(3, -1);
        const torch::Tensor scores =
            torch::matmul(heads(parts[0]), heads(parts[1]).transpose(-2, -1)) / std::sqrt(static_cast<double>(dh));
        const torch::Tensor future = torch::ones({T, T}, torch::kBool).triu(1).to(x.device());
        F.pattern = torch::softmax(scores.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
    }
    // One T' x T' by T' x (B d_h) product a head, not B x H small ones.
    const torch::Tensor vh = v.reshape({B, len, H, dh}).permute({2, 1, 0, 3}).reshape({H, len, B * dh});
    torch::Tensor context = torch::matmul(F.pattern[0].narrow(1, 0, len).narrow(2, 0, len), vh)
                                .view({H, len, B, dh})
                                .permute({2, 0, 1, 3}); // B x H x T' x dh
    if (route && route->layer == l) context = context * route->mask.narrow(1, 1, H).view({B, H, 1, 1});
    return P.proj(context.transpose(1, 2).reshape({B, len, d}));
}

torch::Tensor Replacement::decodeActs(int l, const torch::Tensor& act) const {
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    const Frozen& F = m_frozen[static_cast<size_t>(l)];
    const int64_t B = act.size(0), n = act.size(1);
    if (F.slotDec.defined()) {
        // Each position's features in its slots: one (B x slots) x (slots x d) product a position.
        if (n == 0 || F.slots == 0) return torch::zeros({B, m_len, d}, options) + P.bDec;
        const torch::Tensor slotted =
            torch::zeros({B, m_len * F.slots}, options).index_copy(1, F.slotOf.narrow(0, 0, n), act);
        return torch::matmul(F.slotDec.narrow(0, 0, m_len).transpose(1, 2),
                             slotted.view({B, m_len, F.slots}).permute({1, 2, 0})) // T' x d x B
                   .permute({2, 0, 1}) +
               P.bDec;
    }
    torch::Tensor out = torch::zeros({B, m_len, d}, options);
    if (n > 0) {
        const torch::Tensor feat = F.actFeat.narrow(0, 0, n), pos = F.actPos.narrow(0, 0, n);
        const torch::Tensor contrib = act.unsqueeze(-1) * P.wDec.index_select(0, feat).unsqueeze(0); // B x n x d
        out = out.index_add(1, pos, contrib);
    }
    return out + P.bDec;
}

torch::Tensor Replacement::ffn(int l, const torch::Tensor& in, const Sources& s, std::vector<torch::Tensor>* ffnIn,
                               bool record) {
    if (ffnIn) (*ffnIn)[static_cast<size_t>(l)] = in;
    if (!record) return decodeActs(l, s.act[static_cast<size_t>(l)]) + s.err[static_cast<size_t>(l)];
    const BlockParams& P = m_params[static_cast<size_t>(l)];
    Frozen& F = m_frozen[static_cast<size_t>(l)];
    const torch::Tensor pre = torch::matmul(in[0], P.wEnc) + P.bEnc; // T x m
    torch::Tensor act = torch::relu(pre);
    if (P.architecture == "topk" && P.k < act.size(-1)) {
        const auto [values, indices] = act.topk(P.k, -1);
        act = torch::zeros_like(act).scatter(-1, indices, values);
    }
    const torch::Tensor nz = act.nonzero(); // n x 2 (position, feature), position-major
    F.actPos = nz.select(1, 0).contiguous();
    F.actFeat = nz.select(1, 1).contiguous();
    F.actValue = act.index({F.actPos, F.actFeat});
    const torch::Tensor hidden = P.ffnIn(in);
    const torch::Tensor truth = P.ffnOut(P.tanhGelu ? torch::gelu(hidden, "tanh") : torch::gelu(hidden));
    F.error = truth - decodeActs(l, F.actValue.unsqueeze(0));
    return truth;
}

} // namespace gwb::engine::graph
