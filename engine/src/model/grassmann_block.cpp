// The causal Grassmann mixing block (model-spec.md steps 1-9): the whole-prompt forward pass,
// the literal per-offset oracle, and the incremental step of generation.

#include "model/lm_modules.h"

#include "gwb/engine/config_io.h"

#include <algorithm>
#include <cmath>

namespace gwb::engine {

using detail::makeFfn;
using detail::makeNorm;

GrassmannBlockImpl::GrassmannBlockImpl(const ModelConfig& config, std::vector<int> offsets, bool initialize)
    : m_config(config), m_offsets(std::move(offsets)) {
    const int64_t d = config.dModel, r = config.reduced;
    m_drop = register_module("drop", torch::nn::Dropout(config.dropout));
    ln1 = register_module("ln1", makeNorm(config));
    wRed = register_module("w_red", Dense(d, r, initialize));
    if (config.aggregation == Aggregation::PerOffsetMlp) {
        geoIn = register_module("geo_in", Dense(r * (r - 1) / 2, config.dGeom, initialize));
        geoOut = register_module("geo_out", Dense(config.dGeom, d, initialize));
    } else {
        wPlu = register_module("w_plu", Dense(r * (r - 1) / 2, d, initialize));
    }
    if (config.stages.reductionNorm)
        lnRed =
            register_module("ln_red", torch::nn::LayerNorm(torch::nn::LayerNormOptions({r}).eps(config.layerNormEps)));
    if (config.stages.featureNorm) lnGeo = register_module("ln_geo", makeNorm(config));
    wGate = register_module("w_gate", Dense(config.stages.gateFromInput ? d : 2 * d, d, initialize));
    if (config.stages.outputProjection) wOut = register_module("w_out", Dense(d, d, initialize));
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

torch::Tensor GrassmannBlockImpl::reduce(const torch::Tensor& x) {
    const torch::Tensor z = wRed(x);
    return lnRed ? lnRed(z) : z;
}

torch::Tensor GrassmannBlockImpl::gateOf(const torch::Tensor& x, const torch::Tensor& g) {
    return torch::sigmoid(wGate(m_config.stages.gateFromInput ? x : torch::cat({x, g}, -1)));
}

torch::Tensor GrassmannBlockImpl::feature(const torch::Tensor& projected, const torch::Tensor& valid) {
    // Tokens with no valid offset have B = 0, so g = b_plu ("bias"); "zero" masks them to 0.
    torch::Tensor g = m_config.empty == EmptyRule::Zero ? projected * valid.to(projected.dtype()) : projected;
    return lnGeo ? lnGeo(g) : g;
}

torch::Tensor GrassmannBlockImpl::featureFromDirection(const torch::Tensor& z, const torch::Tensor& y,
                                                       const torch::Tensor& valid) {
    // B_t = z_t ^ y_t: one Plucker vector per token, W_plu applied once (y ^ z: past x current).
    return detail::overTokenBlocks(z, [&](int64_t t0, int64_t n) {
        auto rows = [&](const torch::Tensor& a) { return n < 0 || a.size(1) != z.size(1) ? a : a.narrow(1, t0, n); };
        return feature(wPlu(plane(rows(z), rows(y))), rows(valid));
    });
}

torch::Tensor GrassmannBlockImpl::plane(const torch::Tensor& cur, const torch::Tensor& past) {
    return m_config.stages.wedgePastFirst ? wedge(past, cur) : wedge(cur, past);
}

torch::Tensor GrassmannBlockImpl::mlpFeature(const torch::Tensor& P, const torch::Tensor& w) {
    // mean_D (W_out u_D + b_out) = W_out mean_D u_D + b_out for a token with >= 1 offset kept: the
    // d-wide product once per token instead of once per offset. Tokens with none: the empty rule.
    const torch::Tensor hidden = (torch::gelu(geoIn(P)) * w).sum(2); // B x S x d_geom
    const torch::Tensor count = w.sum(2);                            // (1|B) x S x 1
    return feature(geoOut(hidden / count.clamp_min(1.0)), count > 0);
}

torch::Tensor GrassmannBlockImpl::normalizedPlanes(const torch::Tensor& z, const torch::Tensor& past) {
    const torch::Tensor p = plane(z.expand_as(past), past);
    return p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
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
    if (m_config.aggregation != Aggregation::NormalizeThenMean) return u; // raw: z_t ^ u = p(D)
    const double eps = m_config.pluckerEps;
    const torch::Tensor norm = (curNormSq * (u * u).sum(-1, /*keepdim=*/true)).clamp_min(eps * eps).sqrt();
    return u / norm;
}

torch::Tensor GrassmannBlockImpl::finishDirection(const torch::Tensor& z, const torch::Tensor& y) const {
    // Mean: B = s mean_D p(D) = z ^ (s y), y the mean of the raw parts.
    if (m_config.aggregation == Aggregation::Mean)
        return m_config.stages.pluckerScale == 1.0 ? y : y * m_config.stages.pluckerScale;
    if (m_config.aggregation != Aggregation::MeanThenNormalize) return y;
    // q = z ^ y with y orthogonal to z (a mean of orthogonal parts), so ||q||^2 = ||z||^2 ||y||^2;
    // B = q / sqrt(||q||^2 + eps) = z ^ (y / sqrt(||z||^2 ||y||^2 + eps)).
    const torch::Tensor qq = (z * z).sum(-1, /*keepdim=*/true) * (y * y).sum(-1, /*keepdim=*/true);
    return y / (qq + m_config.pluckerEps).sqrt();
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
    const bool meanFirst = m_config.aggregation != Aggregation::NormalizeThenMean; // raw parts averaged
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
        const float norm = meanFirst ? 1.0f : std::sqrt(std::max(normSq * uu, eps * eps));
        for (int64_t i = 0; i < r; ++i)
            out[i] += u[static_cast<size_t>(i)] / norm;
    }
    const float count = static_cast<float>(rows.size());
    float yy = 0.0f;
    for (int64_t i = 0; i < r; ++i) {
        out[i] /= count;
        yy += out[i] * out[i];
    }
    if (m_config.aggregation == Aggregation::Mean) { // scale the mean, as finishDirection
        const float s = static_cast<float>(m_config.stages.pluckerScale);
        for (int64_t i = 0; i < r; ++i)
            out[i] *= s;
    } else if (meanFirst) { // normalise the mean: y / sqrt(||z||^2 ||y||^2 + eps), as finishDirection
        const float inv = 1.0f / std::sqrt(normSq * yy + eps);
        for (int64_t i = 0; i < r; ++i)
            out[i] *= inv;
    }
    return y;
}

std::pair<torch::Tensor, torch::Tensor> GrassmannBlockImpl::geometry(const torch::Tensor& x, torch::Tensor* zOut) {
    const int64_t T = x.size(1);
    const torch::Tensor z = reduce(x); // B x T x r
    if (zOut) *zOut = z;
    if (m_config.aggregation == Aggregation::PerOffsetMlp) { // no one-plane form: every offset's plane
        const auto [past, valid] = pastStack(z, 0);
        const torch::Tensor g = mlpFeature(pluckerStacked(z, past, valid), valid);
        return {g, gateOf(x, g)};
    }
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
    const torch::Tensor y =
        finishDirection(z, sum.defined() ? sum / cnt.clamp_min(1.0f).to(z.dtype()) : torch::zeros_like(z));
    const torch::Tensor g = featureFromDirection(z, y, cnt > 0);
    return {g, gateOf(x, g)};
}

std::pair<torch::Tensor, torch::Tensor> GrassmannBlockImpl::geometryPerOffset(const torch::Tensor& x) {
    // Test oracle: model-spec steps 1-7 literally, one normalized Plucker vector per valid offset.
    const int64_t B = x.size(0), T = x.size(1);
    const torch::Tensor z = reduce(x);
    const int64_t r = z.size(-1), C = r * (r - 1) / 2;
    if (m_config.aggregation == Aggregation::PerOffsetMlp) {
        // g = mean over the valid offsets of MLP(p^(D)), each MLP output whole (CausalGrassmannMixer's order).
        torch::Tensor gsum = torch::zeros({B, T, m_config.dModel}, z.options());
        for (int D : m_offsets) {
            if (D >= T) continue;
            const int64_t n = T - D;
            torch::Tensor p = plane(z.narrow(1, D, n), z.narrow(1, 0, n));
            p = p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
            gsum = gsum + torch::constant_pad_nd(geoOut(torch::gelu(geoIn(p))), {0, 0, D, 0});
        }
        const torch::Tensor cnt = offsetCounts(T, z.device());
        const torch::Tensor g = feature(gsum / cnt.clamp_min(1.0f).to(z.dtype()), cnt > 0);
        return {g, gateOf(x, g)};
    }
    torch::Tensor sum = torch::zeros({B, T, C}, z.options());
    for (int D : m_offsets) {
        if (D >= T) continue;
        const int64_t n = T - D;
        torch::Tensor p = plane(z.narrow(1, D, n), z.narrow(1, 0, n)); // current x past
        if (m_config.aggregation == Aggregation::NormalizeThenMean)
            p = p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
        if (m_config.aggregation == Aggregation::Mean) p = p * m_config.stages.pluckerScale;
        sum = sum + torch::constant_pad_nd(p, {0, 0, D, 0});
    }
    const torch::Tensor cnt = offsetCounts(T, z.device());
    torch::Tensor b = sum / cnt.clamp_min(1.0f).to(sum.dtype());
    if (m_config.aggregation == Aggregation::MeanThenNormalize)
        b = b / ((b * b).sum(-1, /*keepdim=*/true) + m_config.pluckerEps).sqrt();
    const torch::Tensor g = feature(wPlu(b), cnt > 0);
    return {g, gateOf(x, g)};
}

torch::Tensor GrassmannBlockImpl::forward(const torch::Tensor& h, BlockCapture* capture) {
    const torch::Tensor x = mixerSeesNormedInput(m_config.norm) ? ln1(h) : h;
    torch::Tensor z;
    auto [g, a] = perOffsetOracle ? geometryPerOffset(x) : geometry(x, capture ? &z : nullptr);
    if (capture) {
        if (perOffsetOracle) z = reduce(x);
        capture->h = h;
        capture->mixerInput = x;
        capture->z = z;
        capture->g = g;
        capture->gate = a;
    }
    return finish(h, x, g, a);
}

torch::Tensor GrassmannBlockImpl::finish(const torch::Tensor& h, const torch::Tensor& x, const torch::Tensor& g,
                                         const torch::Tensor& a, const BlockEdit* edit, BlockRecord* record) {
    const bool paper = m_config.gate == GateVariant::Paper;
    torch::Tensor mix = paper                                    ? a * x + (1 - a) * g
                        : m_config.gate == GateVariant::Residual ? x + a * g * m_config.stages.mixScale
                                                                 : a * g;
    if (wOut) mix = wOut(mix);
    const bool hooked = edit || record;
    auto ffn = [&](const torch::Tensor& in) { return hooked ? m_ffn(in, edit, record) : m_ffn(in); };
    switch (m_config.norm) {
    case NormPlacement::Pre: {
        if (lnMix) mix = lnMix(mix);
        torch::Tensor out = h + m_drop(mix);
        return out + m_drop(ffn(ln2(out)));
    }
    case NormPlacement::PostMix: { // LN after the mix, then a pre-LN FFN with its residual
        const torch::Tensor y = m_drop(ln1(mix));
        return y + m_drop(ffn(ln2(y)));
    }
    case NormPlacement::PreMix: { // the mix of LN1(h) with no skip path, then a pre-LN FFN
        const torch::Tensor y = m_drop(mix);
        return y + m_drop(ffn(ln2(y)));
    }
    case NormPlacement::Post:
        break;
    }
    // Post-norm. Paper gate: no residual around the mixer (a * h is the skip path).
    const torch::Tensor y = paper ? m_drop(ln1(mix)) : ln1(h + m_drop(mix));
    return ln2(y + m_drop(ffn(y)));
}

torch::Tensor GrassmannBlockImpl::pluckerPerOffset(const torch::Tensor& z, int64_t start) {
    const int64_t B = z.size(0), T = z.size(1), S = T - start;
    const int64_t r = z.size(-1), C = r * (r - 1) / 2;
    std::vector<torch::Tensor> per;
    for (int D : m_offsets) {
        const int64_t t0 = std::max<int64_t>(start, D);
        if (t0 >= T) {
            per.push_back(torch::zeros({B, S, C}, z.options()));
            continue;
        }
        const int64_t n = T - t0;
        torch::Tensor p = plane(z.narrow(1, t0, n), z.narrow(1, t0 - D, n)); // current x past
        if (unitPlanes()) p = p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
        if (m_config.aggregation == Aggregation::Mean) p = p * m_config.stages.pluckerScale;
        per.push_back(torch::constant_pad_nd(p, {0, 0, t0 - start, 0}));
    }
    return torch::stack(per, 2); // B x S x |W| x C
}

std::pair<torch::Tensor, torch::Tensor> GrassmannBlockImpl::pastStack(const torch::Tensor& z, int64_t start) {
    const int64_t B = z.size(0), T = z.size(1), S = T - start, W = static_cast<int64_t>(m_offsets.size());
    std::vector<int64_t> rows;
    std::vector<float> valid;
    rows.reserve(static_cast<size_t>(S * W));
    for (int64_t t = start; t < T; ++t)
        for (int D : m_offsets) {
            rows.push_back(t >= D ? t - D : 0);
            valid.push_back(t >= D ? 1.0f : 0.0f);
        }
    const torch::Tensor idx = torch::tensor(rows, torch::kLong).to(z.device());
    const torch::Tensor past = z.index_select(1, idx).view({B, S, W, z.size(2)});
    return {past, torch::tensor(valid, torch::kFloat).to(z.device()).to(z.dtype()).view({1, S, W, 1})};
}

torch::Tensor GrassmannBlockImpl::pluckerStacked(const torch::Tensor& zS, const torch::Tensor& past,
                                                 const torch::Tensor& valid) {
    // pluckerPerOffset's values from pastStack's gather: z_t ^ z_{t-D} normalised, 0 where t < D.
    torch::Tensor p = plane(zS.unsqueeze(2).expand_as(past), past);
    if (unitPlanes()) p = p / p.norm(2, {-1}, /*keepdim=*/true).clamp_min(m_config.pluckerEps);
    if (m_config.aggregation == Aggregation::Mean) p = p * m_config.stages.pluckerScale;
    return p * valid;
}

torch::Tensor GrassmannBlockImpl::run(const torch::Tensor& h, const SuffixContext& ctx, const BlockEdit* edit,
                                      BlockRecord* record) {
    using Site = BlockEdit::Site;
    const torch::Tensor x = mixerSeesNormedInput(m_config.norm) ? ln1(h) : h;
    const int64_t B = h.size(0), S = h.size(1), start = ctx.start, T = start + S;
    const torch::Tensor zS = reduce(x); // B x S x r
    const torch::Tensor z =
        start > 0 ? torch::cat({ctx.z.narrow(1, 0, start).expand({B, start, zS.size(2)}), zS}, 1) : zS; // B x T x r
    // g for rows [start, T) by the one-plane form, as geometry() computes it for the whole sequence.
    const torch::Tensor normSq = (z * z).sum(-1, /*keepdim=*/true);
    // Under autograd (attribution patching) every offset at once; without it offset by offset, the
    // order of the sums that the exact causal tests and the forward pass share.
    const bool stacked = torch::GradMode::is_enabled() && !m_offsets.empty();
    torch::Tensor past, pastValid; // B x S x |W| x r, 1 x S x |W| x 1 (stacked only)
    if (stacked) std::tie(past, pastValid) = pastStack(z, start);
    const bool offsetEdit = edit && edit->site == Site::Offset;
    // An additive offset edit (attribution) replaces g on every row by the mean of the edited
    // per-offset vectors: the one-plane g would only be computed to be thrown away.
    const bool onlyEdited = offsetEdit && edit->additive;
    // Aggregation per_offset_mlp has no one-plane form: g always comes from every offset's plane.
    const bool mlp = m_config.aggregation == Aggregation::PerOffsetMlp;
    torch::Tensor sum = torch::zeros_like(zS);
    if (onlyEdited || mlp) {
        // g comes from the (edited) per-offset vectors below.
    } else if (stacked) {
        const torch::Tensor term =
            pastDirection(zS.unsqueeze(2), past, normSq.narrow(1, start, S).unsqueeze(2), torch::Tensor());
        sum = (term * pastValid).sum(2);
    } else {
        for (int D : m_offsets) {
            const int64_t t0 = std::max<int64_t>(start, D);
            if (t0 >= T) continue;
            const int64_t n = T - t0;
            const torch::Tensor term = pastDirection(z.narrow(1, t0, n), z.narrow(1, t0 - D, n),
                                                     normSq.narrow(1, t0, n), normSq.narrow(1, t0 - D, n));
            sum = sum + torch::constant_pad_nd(term, {0, 0, t0 - start, 0});
        }
    }
    const torch::Tensor cnt = offsetCounts(T, z.device()).narrow(1, start, S);
    torch::Tensor g =
        onlyEdited || mlp
            ? torch::Tensor()
            : featureFromDirection(zS, finishDirection(zS, sum / cnt.clamp_min(1.0f).to(z.dtype())), cnt > 0);
    if (offsetEdit || mlp || (record && record->wantPlucker)) {
        const torch::Tensor P =
            stacked ? pluckerStacked(zS, past, pastValid) : pluckerPerOffset(z, start); // B x S x |W| x C
        if (record && record->wantPlucker) record->plucker = P;
        torch::Tensor valid = pastValid; // 1 x S x |W| x 1
        if (!valid.defined() && (offsetEdit || mlp)) {
            std::vector<float> offs(m_offsets.begin(), m_offsets.end());
            const torch::Tensor D = torch::tensor(offs, z.options()).view({1, 1, -1, 1});
            const torch::Tensor t = torch::arange(start, T, z.options()).view({1, -1, 1, 1});
            valid = (t >= D).to(z.dtype());
        }
        if (mlp && !onlyEdited) g = mlpFeature(P, valid);
        if (offsetEdit) {
            // g from the offsets kept (and valid), with edited vectors put in; the empty rule where
            // none remains. Only the edited rows take this g.
            torch::Tensor gE;
            if (mlp) { // the MLP of every such offset's plane, averaged
                if (edit->additive) {
                    gE = mlpFeature(P + edit->value * valid, valid);
                } else {
                    const torch::Tensor Pe = edit->mask.defined() ? torch::where(edit->mask, edit->value, P) : P;
                    gE = mlpFeature(Pe, edit->keep.defined() ? valid * edit->keep : valid);
                }
            } else {                      // B_t averaged over them, then W_plu
                torch::Tensor agg, count; // B x S x C, B x S x 1
                if (edit->additive) {
                    // P is 0 where t < D, and so is the masked delta: the valid offsets' mean directly.
                    count = cnt.expand({B, S, 1});
                    agg = (P + edit->value * valid).sum(2) / count.clamp_min(1.0f);
                } else {
                    const torch::Tensor Pe = edit->mask.defined() ? torch::where(edit->mask, edit->value, P) : P;
                    const torch::Tensor w = edit->keep.defined() ? valid * edit->keep : valid.expand({B, S, -1, 1});
                    count = w.sum(2);
                    agg = (Pe * w).sum(2) / count.clamp_min(1.0f);
                }
                if (m_config.aggregation == Aggregation::MeanThenNormalize)
                    agg = agg / ((agg * agg).sum(-1, /*keepdim=*/true) + m_config.pluckerEps).sqrt();
                gE = feature(wPlu(agg), count > 0);
            }
            if (onlyEdited) {
                g = gE;
            } else {
                torch::Tensor rows = torch::zeros({B, S, 1}, z.options().dtype(torch::kBool));
                if (edit->keep.defined()) rows = rows | (edit->keep == 0).any(2);
                if (edit->mask.defined()) rows = rows | edit->mask.expand({B, S, -1, 1}).any(2);
                g = torch::where(rows, gE, g);
            }
        }
    }
    if (edit && edit->site == Site::Mixer) g = edit->apply(g);
    if (edit && edit->freezeMixer.defined()) g = edit->freezeMixer;
    torch::Tensor a = gateOf(x, g);
    if (edit && edit->site == Site::Gate) a = edit->apply(a);
    if (edit && edit->freezeGate.defined()) a = edit->freezeGate;
    if (record) {
        record->h = h;
        record->z = zS;
        record->mixer = g;
        record->gate = a;
    }
    return finish(h, x, g, a, edit, record);
}

torch::Tensor GrassmannBlockImpl::step(const torch::Tensor& h, GrassmannState& state) {
    const torch::Tensor x = mixerSeesNormedInput(m_config.norm) ? ln1(h) : h; // 1 x 1 x d
    const int64_t r = m_config.reduced;
    const torch::Tensor z = reduce(x).view({1, r});
    const int64_t t = state.position;
    if (!state.z.defined()) state.z = torch::zeros({std::max<int64_t>(state.capacity, 1), r}, z.options());
    // Every valid offset at once: the past vectors z_{t-D} gathered from the ring buffer (|W_t| x r).
    std::vector<int64_t> rows;
    for (int D : m_offsets)
        if (D <= t) rows.push_back((t - D) % state.capacity);
    if (m_config.aggregation == Aggregation::PerOffsetMlp) { // every valid offset's plane through the MLP
        const auto n = static_cast<int64_t>(rows.size());
        const int64_t C = r * (r - 1) / 2;
        const torch::Tensor P =
            n > 0 ? normalizedPlanes(z, state.z.index_select(0, torch::tensor(rows, torch::kLong).to(z.device())))
                        .view({1, 1, n, C})
                  : torch::zeros({1, 1, 1, C}, z.options());
        const torch::Tensor g =
            mlpFeature(P, n > 0 ? torch::ones({1, 1, n, 1}, z.options()) : torch::zeros({1, 1, 1, 1}, z.options()));
        const torch::Tensor a = gateOf(x, g);
        if (state.capacity > 0) state.z[t % state.capacity].copy_(z[0]);
        ++state.position;
        return finish(h, x, g, a);
    }
    torch::Tensor y;
    if (!rows.empty() && detail::cpuInference(z)) {
        // The same sum in one pass over the |W_t| past vectors (generation runs this once per layer
        // and token; the tensor form below is a dozen small operations).
        y = pastDirectionMean(z.contiguous(), state.z, rows);
    } else if (!rows.empty()) {
        const torch::Tensor past =
            state.z.index_select(0, torch::tensor(rows, torch::kLong).to(z.device())); // |W_t| x r
        const torch::Tensor normSq = (z * z).sum(-1, /*keepdim=*/true);                // 1 x 1
        y = finishDirection(z, pastDirection(z, past, normSq, torch::Tensor()).sum(0, /*keepdim=*/true) /
                                   static_cast<double>(rows.size()));
    } else {
        y = torch::zeros_like(z);
    }
    const torch::Tensor valid = torch::full({1, 1}, !rows.empty(), z.options().dtype(torch::kBool));
    const torch::Tensor g = featureFromDirection(z, y, valid).view({1, 1, -1});
    const torch::Tensor a = gateOf(x, g);
    if (state.capacity > 0) state.z[t % state.capacity].copy_(z[0]);
    ++state.position;
    return finish(h, x, g, a);
}

torch::Tensor GrassmannBlockImpl::prefill(const torch::Tensor& h, GrassmannState& state) {
    const torch::Tensor x = mixerSeesNormedInput(m_config.norm) ? ln1(h) : h;
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

} // namespace gwb::engine
