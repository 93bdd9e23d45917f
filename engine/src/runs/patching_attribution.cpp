// Attribution patching (gwb/engine/patching.h): first-order estimates of every cell of a sweep
// from one forward and one backward pass per batch of requests (AtP), grouped by attributionSweeps.
// The exact sweeps are in patching.cpp.

#include "gwb/engine/patching.h"

#include "runs/patching_common.h"
#include "runs/patching_request.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace gwb::engine {

namespace {

using namespace patching_detail;
using detail::hasMetric;
using detail::sweepCells;
using Site = BlockEdit::Site;

/// One batch of attribution sweeps: requests of one length, metric position, site, mode and part
/// (attributionSweeps groups them). Batch row b is request b; rows are independent, so the
/// gradient of the summed metric with respect to row b's deltas is row b's own gradient.
std::vector<PatchSweep> attributionBatch(const Model& model, const std::vector<const PatchRequest*>& batch) {
    const PatchRequest& r = *batch.front();
    const int64_t B = static_cast<int64_t>(batch.size());
    PatchSweep shape;
    shape.site = r.site;
    shape.mode = r.mode;
    shape.estimated = true;
    shape.modelName = model.displayName();
    shape.T = static_cast<int64_t>(r.clean.size());
    shape.metricPosition = metricPosition(r);
    shape.hasMetric = true;
    shape.cells = sweepCells(model, r, shape);
    const size_t n = shape.cells.size();
    const bool patching = r.mode == PatchMode::Patch;
    const int64_t m = shape.metricPosition;

    const Lock lock(model);
    Prepared prep(model);
    LanguageModelImpl& net = prep.net;
    const bool plucker = r.site == PatchSite::Offset;
    const int N = static_cast<int>(net.blocks().size());
    const ModelConfig& c = model.config();
    const int64_t T = shape.T, d = c.dModel;
    auto idsOf = [&](bool clean) {
        std::vector<int64_t> flat;
        for (const PatchRequest* q : batch)
            flat.insert(flat.end(), (clean ? q->clean : q->corrupt).begin(), (clean ? q->clean : q->corrupt).end());
        return torch::tensor(flat, torch::kLong).view({B, T}).to(prep.device);
    };
    std::vector<int64_t> answers, wrongs;
    for (const PatchRequest* q : batch) {
        answers.push_back(q->answer);
        wrongs.push_back(q->wrong);
    }
    const torch::Tensor ansIdx = torch::tensor(answers, torch::kLong).to(prep.device).view({B, 1});
    const torch::Tensor wrongIdx = torch::tensor(wrongs, torch::kLong).to(prep.device).view({B, 1});
    auto metricRows = [&](const torch::Tensor& rows) {                       // B x d -> B
        const torch::Tensor logits = net.head(rows.unsqueeze(0)).squeeze(0); // B x V
        return (logits.gather(1, ansIdx) - logits.gather(1, wrongIdx)).squeeze(1);
    };
    RunRecord source;
    std::vector<double> cleanMetric(static_cast<size_t>(B)), changedMetric(static_cast<size_t>(B));
    {
        torch::NoGradGuard noGrad;
        torch::Tensor h = net.embed(idsOf(true));
        for (const auto& block : net.blocks()) {
            BlockRecord br;
            br.wantPlucker = plucker;
            h = block->run(h, SuffixContext{}, nullptr, &br);
            source.blocks.push_back(std::move(br));
        }
        source.final = h;
        const torch::Tensor cm = metricRows(source.final.select(1, m)).to(torch::kDouble).to(torch::kCPU).contiguous();
        std::copy(cm.data_ptr<double>(), cm.data_ptr<double>() + B, cleanMetric.begin());
    }
    // The changed runs with a zero, gradient-carrying delta added at the site of every layer: one
    // backward pass gives d metric / d site everywhere, each later site still computed from it.
    torch::AutoGradMode grad(true);
    torch::Tensor h = net.embed(idsOf(!patching)).detach();
    std::vector<torch::Tensor> deltas, bases;
    std::vector<BlockRecord> recs(static_cast<size_t>(N));
    auto zeros = [&](std::vector<int64_t> shape) {
        return torch::zeros(shape, h.options().requires_grad(false)).requires_grad_(true);
    };
    for (int l = 0; l < N; ++l) {
        BlockRecord& br = recs[static_cast<size_t>(l)];
        br.wantPlucker = plucker;
        BlockEdit edit;
        edit.additive = true;
        const BlockEdit* e = &edit;
        switch (r.site) {
        case PatchSite::Resid: {
            torch::Tensor delta = zeros({B, T, d});
            bases.push_back(h.detach());
            h = h + delta;
            deltas.push_back(delta);
            e = nullptr;
            break;
        }
        case PatchSite::Mixer:
            edit.site = BlockEdit::Site::Mixer;
            edit.value = zeros({B, T, d});
            break;
        case PatchSite::Gate:
            edit.site = BlockEdit::Site::Gate;
            edit.value = zeros({B, T, d});
            break;
        case PatchSite::Ffn:
            edit.site = BlockEdit::Site::Ffn;
            edit.value = zeros({B, T, d});
            break;
        case PatchSite::Head:
            edit.site = BlockEdit::Site::Head;
            edit.value = zeros({B, T, c.nHeads, d / c.nHeads});
            break;
        case PatchSite::Offset: {
            const int64_t W = static_cast<int64_t>(c.layerOffsets[static_cast<size_t>(l)].size());
            edit.site = BlockEdit::Site::Offset;
            edit.value = zeros({B, T, W, c.reduced * (c.reduced - 1) / 2});
            break;
        }
        }
        if (e) deltas.push_back(edit.value);
        h = net.blocks()[static_cast<size_t>(l)]->run(h, SuffixContext{}, e, &br);
    }
    if (r.site == PatchSite::Resid) {
        torch::Tensor delta = zeros({B, T, d});
        bases.push_back(h.detach());
        h = h + delta;
        deltas.push_back(delta);
    }
    const torch::Tensor metric = metricRows(h.select(1, m));
    {
        const torch::Tensor mm = metric.detach().to(torch::kDouble).to(torch::kCPU).contiguous();
        std::copy(mm.data_ptr<double>(), mm.data_ptr<double>() + B, changedMetric.begin());
    }
    const std::vector<torch::Tensor> grads = torch::autograd::grad({metric.sum()}, deltas, {}, false, false, true);
    torch::NoGradGuard noGrad;
    auto siteOf = [&](const BlockRecord& br) -> torch::Tensor {
        switch (r.site) {
        case PatchSite::Mixer:
            return br.mixer;
        case PatchSite::Gate:
            return br.gate;
        case PatchSite::Ffn:
            return br.ffn;
        case PatchSite::Head:
            return br.heads;
        default:
            return br.plucker;
        }
    };
    if (r.site != PatchSite::Resid)
        for (int l = 0; l < N; ++l)
            bases.push_back(siteOf(recs[static_cast<size_t>(l)]).detach());
    const size_t rows = bases.size();
    // Per layer (row of the sweep): the estimated change of every column, B x columns, on the CPU.
    std::vector<torch::Tensor> estimates(rows);
    for (size_t l = 0; l < rows; ++l) {
        const torch::Tensor base = bases[l].to(torch::kDouble);
        torch::Tensor src;
        if (patching) {
            src = r.site == PatchSite::Resid ? (l == static_cast<size_t>(N) ? source.final : source.blocks[l].h)
                                             : siteOf(source.blocks[l]);
            src = src.to(torch::kDouble);
        } else if (r.mode == PatchMode::Zero) {
            src = torch::zeros_like(base);
        } else if (r.site == PatchSite::Offset) {
            // The mean over the positions where each offset is valid, of the changed run.
            const auto& offs = c.layerOffsets[l];
            src = base.clone();
            for (size_t o = 0; o < offs.size(); ++o) {
                const int64_t D = offs[o];
                if (D >= T) continue;
                const torch::Tensor rowsD = base.select(2, static_cast<int64_t>(o)).narrow(1, D, T - D);
                src.select(2, static_cast<int64_t>(o)).narrow(1, D, T - D).copy_(rowsD.mean(1, true).expand_as(rowsD));
            }
        } else {
            src = base.mean(1, true).expand_as(base);
        }
        const torch::Tensor change =
            (src - base) * (grads[l].defined() ? grads[l].to(torch::kDouble) : torch::zeros_like(base));
        // Head, offset: B x T x K x width -> B x K; position sites: B x T x d -> B x T.
        const bool slots = r.site == PatchSite::Head || r.site == PatchSite::Offset;
        estimates[l] = (slots ? change.sum({1, 3}) : change.sum(2)).to(torch::kCPU).contiguous();
    }
    // Saturated gates (Grassmann): per layer, row and position, in the changed or the source run.
    std::vector<torch::Tensor> saturated(static_cast<size_t>(N));
    if (c.kind == ModelKind::Grassmann)
        for (int l = 0; l < N; ++l) {
            auto sat = [](const torch::Tensor& a) {
                return ((a < 0.02) | (a > 0.98)).to(torch::kDouble).mean(-1) >= 0.5; // B x T
            };
            torch::Tensor any = sat(recs[static_cast<size_t>(l)].gate.detach());
            if (patching) any = any | sat(source.blocks[static_cast<size_t>(l)].gate);
            saturated[static_cast<size_t>(l)] = any.to(torch::kCPU).contiguous();
        }
    const auto offsetIndex = [&](int layer, int D) {
        const auto& offs = c.layerOffsets[static_cast<size_t>(layer)];
        return static_cast<int64_t>(std::find(offs.begin(), offs.end(), D) - offs.begin());
    };
    std::vector<PatchSweep> out;
    for (int64_t b = 0; b < B; ++b) {
        const PatchRequest& q = *batch[static_cast<size_t>(b)];
        PatchSweep s = shape;
        s.clean = q.clean;
        s.corrupt = q.corrupt;
        s.cleanMetric = cleanMetric[static_cast<size_t>(b)];
        s.corruptMetric = q.corrupt.empty() ? s.cleanMetric : changedMetric[static_cast<size_t>(b)];
        s.metric.assign(n, kNaN);
        s.effect.assign(n, kNaN);
        s.attribution.assign(n, kNaN);
        s.flagged.assign(n, 0);
        s.computed.assign(n, 1);
        const double baseMetric = patching ? s.corruptMetric : s.cleanMetric;
        s.minDifference = q.minDifference;
        s.effectDefined = false;
        s.effectNote.clear();
        if (patching && !q.corrupt.empty()) { // the first-order estimate's normalised effect: the same rule
            const EffectCondition ec =
                effectCondition(s.cleanMetric, s.corruptMetric, q.minDifference, true, "estimated patched - corrupted");
            s.effectDefined = ec.defined;
            s.effectNote = ec.reason;
        }
        for (size_t i = 0; i < n; ++i) {
            if (!s.defined[i]) continue;
            const Intervention& cell = s.cells[i];
            const torch::Tensor& est = estimates[static_cast<size_t>(cell.layer)];
            const double* row = est.data_ptr<double>() + b * est.size(1);
            const int gateLayer = cell.layer < N ? cell.layer : -1;
            const torch::Tensor* sat = gateLayer >= 0 && saturated[static_cast<size_t>(gateLayer)].defined()
                                           ? &saturated[static_cast<size_t>(gateLayer)]
                                           : nullptr;
            const bool* satRow = sat ? sat->data_ptr<bool>() + b * T : nullptr;
            double e = 0;
            bool flag = false;
            switch (r.site) {
            case PatchSite::Head:
                e = row[cell.head];
                break;
            case PatchSite::Offset:
                e = row[offsetIndex(cell.layer, cell.offset)];
                if (satRow)
                    for (int64_t t = cell.offset; t < T && !flag; ++t)
                        flag = satRow[t];
                break;
            default:
                e = row[cell.position];
                // The block's own gate sees a changed block input, g or gate; the FFN comes after it.
                if (r.site != PatchSite::Ffn && satRow) flag = satRow[cell.position];
            }
            s.attribution[i] = e;
            s.metric[i] = baseMetric + e;
            s.flagged[i] = flag ? 1 : 0;
            if (s.effectDefined) s.effect[i] = e / (s.cleanMetric - s.corruptMetric);
        }
        out.push_back(std::move(s));
    }
    return out;
}

} // namespace

std::vector<PatchSweep> attributionSweeps(const Model& model, const std::vector<PatchRequest>& requests,
                                          const PatchProgress& progress) {
    for (const PatchRequest& r : requests) {
        validatePatchRequest(model, r);
        if (!hasMetric(r))
            throw std::invalid_argument("attribution estimates the change of the metric logit[answer] - "
                                        "logit[wrong]: give an answer piece and a wrong piece");
        if (r.site == PatchSite::Offset && r.mode == PatchMode::Zero)
            throw std::invalid_argument("zero ablation of an offset drops it from the mean, which is not a change of "
                                        "its value: estimate offsets with mode patch or mean");
    }
    // Batches of requests that share a length, metric position, site, mode and part (and whether
    // they have a corrupted prompt), at most kBatch rows each, in the order of their first request.
    constexpr size_t kBatch = 64;
    std::vector<std::vector<size_t>> groups;
    auto key = [](const PatchRequest& r) {
        return std::make_tuple(r.clean.size(), metricPosition(r), static_cast<int>(r.site), static_cast<int>(r.mode),
                               r.layer, r.offset, r.head, r.corrupt.empty());
    };
    for (size_t i = 0; i < requests.size(); ++i) {
        bool placed = false;
        for (auto& g : groups)
            if (g.size() < kBatch && key(requests[g.front()]) == key(requests[i])) {
                g.push_back(i);
                placed = true;
                break;
            }
        if (!placed) groups.push_back({i});
    }
    std::vector<PatchSweep> out(requests.size());
    size_t done = 0;
    for (const auto& g : groups) {
        if (progress && !progress(static_cast<double>(done) / static_cast<double>(requests.size())))
            throw PatchCancelled();
        std::vector<const PatchRequest*> batch;
        for (size_t i : g)
            batch.push_back(&requests[i]);
        std::vector<PatchSweep> sweeps = attributionBatch(model, batch);
        for (size_t k = 0; k < g.size(); ++k)
            out[g[k]] = std::move(sweeps[k]);
        done += g.size();
    }
    if (progress) progress(1.0);
    return out;
}

PatchSweep attributionSweep(const Model& model, const PatchRequest& r) {
    return attributionSweeps(model, {r}).front();
}

} // namespace gwb::engine
