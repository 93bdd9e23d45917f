// Causal tests (gwb/engine/patching.h): ablation and activation patching in both models.
//
// A run to be changed (the corrupted prompt when patching, the clean one when ablating) is
// recorded once, block by block: every block's input and site values, and the context later
// suffix runs need (z, keys, values). A cell changing position p at layer l starts from the
// recorded input of layer l and recomputes only positions >= p (the models are causal, so
// earlier positions keep their recorded values and serve as context). Cells with the same p run as
// one batch, each joining it at its own layer. A cell whose new values equal the recorded ones
// bitwise takes the unchanged run's results without a forward pass.

#include "gwb/engine/patching.h"

#include "model/model_impl.h"
#include "runs/patching_common.h"
#include "runs/patching_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace {

using namespace patching_detail;
using detail::checkIntervention;
using detail::hasMetric;
using detail::sweepCells;

/// Cells whose first changed positions fall in one chunk of this many positions run as one batch.
constexpr int64_t kPositionChunk = 8;

using Site = BlockEdit::Site;

/// log p(ids[t+1]) of final states (B x S x d at positions start..start+S-1): B x S doubles (the
/// sequence's last row: 0). One batch row at a time: S x V logits stay small.
torch::Tensor nextLogprob(LanguageModelImpl& net, const torch::Tensor& states, const std::vector<int64_t>& ids,
                          int64_t start) {
    const int64_t B = states.size(0), S = states.size(1), T = static_cast<int64_t>(ids.size());
    torch::Tensor out = torch::zeros({B, S}, torch::kDouble);
    const int64_t n = std::min(S, T - 1 - start); // rows with a next token
    if (n <= 0) return out;
    const std::vector<int64_t> next(ids.begin() + start + 1, ids.begin() + start + 1 + n);
    const torch::Tensor idx = torch::tensor(next, torch::kLong).to(states.device()).view({n, 1});
    for (int64_t b = 0; b < B; ++b) {
        const torch::Tensor logits = net.head(states[b].narrow(0, 0, n).unsqueeze(0)).squeeze(0); // n x V
        const torch::Tensor lp = torch::log_softmax(logits, -1).gather(1, idx).squeeze(1);
        out[b].narrow(0, 0, n).copy_(lp.to(torch::kDouble).to(torch::kCPU));
    }
    return out;
}

/// logit[answer] - logit[wrong] of final states (B x d).
torch::Tensor logitDiff(LanguageModelImpl& net, const torch::Tensor& rows, int64_t answer, int64_t wrong) {
    const torch::Tensor logits = net.head(rows.unsqueeze(0)).squeeze(0).to(torch::kDouble).to(torch::kCPU); // B x V
    return logits.select(1, answer) - logits.select(1, wrong);
}

RunRecord record(LanguageModelImpl& net, const std::vector<int64_t>& ids, const torch::Device& device,
                 bool wantPlucker) {
    RunRecord rec;
    torch::Tensor h = net.embed(idsTensor(ids, device));
    for (const auto& block : net.blocks()) {
        BlockRecord br;
        br.wantPlucker = wantPlucker;
        h = block->run(h, SuffixContext{}, nullptr, &br);
        rec.blocks.push_back(std::move(br));
    }
    rec.final = h;
    return rec;
}

SuffixContext contextAt(const RunRecord& r, size_t layer, int64_t start) {
    SuffixContext c;
    c.start = start;
    c.z = r.blocks[layer].z;
    c.k = r.blocks[layer].k;
    c.v = r.blocks[layer].v;
    return c;
}

/// One cell, resolved: where it starts, what it puts in.
struct CellJob {
    size_t index = 0;    ///< into the sweep's cells
    int startLayer = 0;  ///< blocks startLayer.. run (N: only the head)
    int64_t start = 0;   ///< first recomputed position
    torch::Tensor input; ///< 1 x S x d: input of block startLayer (resid edits applied)
    bool blockEdit = false;
    BlockEdit edit; ///< batch 1, S rows (blockEdit)
};

/// Turns interventions into jobs against the recorded run `base` (and `source` for patches).
class JobBuilder {
public:
    JobBuilder(const Model& model, const RunRecord& base, const RunRecord* source)
        : m_model(model), m_c(model.config()), m_base(base), m_source(source) {}

    /// The job of `cell`, or nothing when it changes no value (then the unchanged results hold).
    std::optional<CellJob> build(const Intervention& cell) const {
        const int64_t T = m_base.final.size(1);
        CellJob job;
        job.startLayer = cell.layer;
        const bool all = cell.position < 0;
        switch (cell.site) {
        case PatchSite::Resid: {
            job.start = all ? 0 : cell.position;
            const torch::Tensor& old = residAt(m_base, cell.layer);
            const torch::Tensor val = siteValue(cell, [&](const RunRecord& r) { return residAt(r, cell.layer); });
            torch::Tensor input = old.narrow(1, job.start, T - job.start).clone();
            if (all)
                input.copy_(val.expand_as(input));
            else
                input.narrow(1, 0, 1).copy_(pick(val, cell.position));
            if (torch::equal(input, old.narrow(1, job.start, T - job.start))) return std::nullopt;
            job.input = input;
            return job;
        }
        case PatchSite::Mixer:
        case PatchSite::Gate:
        case PatchSite::Ffn: {
            job.start = all ? 0 : cell.position;
            auto get = [&](const RunRecord& r) -> torch::Tensor {
                const BlockRecord& b = r.blocks[static_cast<size_t>(cell.layer)];
                return cell.site == PatchSite::Mixer ? b.mixer : cell.site == PatchSite::Gate ? b.gate : b.ffn;
            };
            const torch::Tensor old = get(m_base).narrow(1, job.start, T - job.start);
            const torch::Tensor val = siteValue(cell, get);
            const int64_t S = T - job.start;
            torch::Tensor value = old.clone();
            torch::Tensor mask = torch::zeros({1, S, 1}, torch::dtype(torch::kBool).device(old.device()));
            if (all) {
                value.copy_(val.size(1) == 1 ? val.expand_as(value) : val.narrow(1, job.start, S));
                mask.fill_(true);
            } else {
                value.narrow(1, 0, 1).copy_(pick(val, cell.position));
                mask.narrow(1, 0, 1).fill_(true);
            }
            if (torch::equal(value, old)) return std::nullopt;
            job.blockEdit = true;
            job.edit.site = cell.site == PatchSite::Mixer  ? Site::Mixer
                            : cell.site == PatchSite::Gate ? Site::Gate
                                                           : Site::Ffn;
            job.edit.mask = mask;
            job.edit.value = value;
            break;
        }
        case PatchSite::Head: {
            job.start = 0;
            const int64_t H = m_c.nHeads, dh = m_c.dModel / H;
            auto get = [&](const RunRecord& r) { return r.blocks[static_cast<size_t>(cell.layer)].heads; };
            const torch::Tensor old = get(m_base); // 1 x T x H x dh
            torch::Tensor val = siteValue(cell, get);
            torch::Tensor value = old.clone();
            value.select(2, cell.head).copy_(val.expand({1, T, H, dh}).select(2, cell.head));
            if (torch::equal(value, old)) return std::nullopt;
            torch::Tensor mask = torch::zeros({1, 1, H, 1}, torch::dtype(torch::kBool).device(old.device()));
            mask.select(2, cell.head).fill_(true);
            job.blockEdit = true;
            job.edit.site = Site::Head;
            job.edit.mask = mask.expand({1, T, H, 1});
            job.edit.value = value;
            break;
        }
        case PatchSite::Offset: {
            const std::vector<int>& offs = m_c.layerOffsets[static_cast<size_t>(cell.layer)];
            const auto j = static_cast<int64_t>(std::find(offs.begin(), offs.end(), cell.offset) - offs.begin());
            if (cell.offset >= T) return std::nullopt; // no position reaches back that far
            job.start = cell.offset;
            const int64_t S = T - job.start, W = static_cast<int64_t>(offs.size());
            const auto opts = m_base.final.options();
            job.blockEdit = true;
            job.edit.site = Site::Offset;
            if (cell.mode == PatchMode::Zero) {
                torch::Tensor keep = torch::ones({1, 1, W, 1}, opts);
                keep.select(2, j).fill_(0.0f);
                job.edit.keep = keep;
                break;
            }
            auto get = [&](const RunRecord& r) { return r.blocks[static_cast<size_t>(cell.layer)].plucker; };
            const torch::Tensor old = get(m_base).narrow(1, job.start, S); // 1 x S x W x C
            torch::Tensor value;
            if (cell.mode == PatchMode::Patch) {
                value = get(*m_source).narrow(1, job.start, S);
            } else { // mean over the positions where the offset is valid (t >= D)
                value = get(m_base).narrow(1, job.start, S).mean(1, /*keepdim=*/true).expand_as(old);
            }
            torch::Tensor replaced = old.clone();
            replaced.select(2, j).copy_(value.select(2, j));
            if (torch::equal(replaced, old)) return std::nullopt;
            torch::Tensor mask = torch::zeros({1, 1, W, 1}, opts.dtype(torch::kBool));
            mask.select(2, j).fill_(true);
            job.edit.mask = mask.expand({1, S, W, 1});
            job.edit.value = replaced;
            break;
        }
        }
        job.input = blockInput(job.startLayer, job.start);
        return job;
    }

private:
    /// h^l of a run (l = N: the final state).
    const torch::Tensor& residAt(const RunRecord& r, int layer) const {
        return layer == m_c.nLayers ? r.final : r.blocks[static_cast<size_t>(layer)].h;
    }
    torch::Tensor blockInput(int layer, int64_t start) const {
        const torch::Tensor& h = residAt(m_base, layer);
        return h.narrow(1, start, h.size(1) - start);
    }
    /// The value a cell puts in: the source run's (patch), zeros, or the base run's mean over
    /// positions (1 x 1 x ...); get picks the site of a record.
    template <class Get> torch::Tensor siteValue(const Intervention& cell, const Get& get) const {
        const torch::Tensor base = get(m_base);
        switch (cell.mode) {
        case PatchMode::Patch:
            return get(*m_source);
        case PatchMode::Zero:
            return torch::zeros_like(base.narrow(1, 0, 1));
        case PatchMode::Mean:
            return base.mean(1, /*keepdim=*/true);
        }
        return base;
    }
    /// Row `position` of a value that is either per position (1 x T x ...) or one row (1 x 1 x ...).
    static torch::Tensor pick(const torch::Tensor& value, int64_t position) {
        return value.size(1) == 1 ? value : value.narrow(1, position, 1);
    }

    const Model& m_model;
    const ModelConfig& m_c;
    const RunRecord& m_base;
    const RunRecord* m_source;
};

/// Rows [start, T) of a job whose own first recomputed position is later: the recorded rows
/// [start, job.start) go in front (unchanged inputs; edits there: none).
torch::Tensor padFront(const torch::Tensor& t, int64_t rows, int64_t jobRows) {
    if (!t.defined() || rows == 0 || t.size(1) != jobRows) return t; // broadcast over rows: nothing to pad
    std::vector<int64_t> shape = t.sizes().vec();
    shape[1] = rows;
    return torch::cat({torch::zeros(shape, t.options()), t}, 1);
}

/// Final states (B x S x d, positions start..T-1) of a batch of jobs starting at or after `start`.
torch::Tensor runJobs(LanguageModelImpl& net, const RunRecord& base, const std::vector<const CellJob*>& jobs,
                      int64_t start) {
    const int N = static_cast<int>(net.blocks().size());
    const int64_t T = base.final.size(1);
    int first = N;
    for (const CellJob* j : jobs)
        first = std::min(first, j->startLayer);
    auto inputFrom = [&](const CellJob* j) {
        if (j->start == start) return j->input;
        const torch::Tensor& h = j->startLayer == N ? base.final : base.blocks[static_cast<size_t>(j->startLayer)].h;
        return torch::cat({h.narrow(1, start, j->start - start), j->input}, 1);
    };
    torch::Tensor h; // batch so far
    std::vector<const CellJob*> order;
    for (int l = first; l <= N; ++l) {
        // Jobs starting at l join the batch.
        std::vector<torch::Tensor> joining;
        for (const CellJob* j : jobs)
            if (j->startLayer == l) {
                joining.push_back(inputFrom(j));
                order.push_back(j);
            }
        if (!joining.empty()) {
            if (h.defined()) joining.insert(joining.begin(), h);
            h = torch::cat(joining, 0);
        }
        if (l == N) break;
        // Edits of this layer, batched (rows of jobs without one: mask false).
        const CellJob* anyEdit = nullptr;
        for (const CellJob* j : order)
            if (j->blockEdit && j->startLayer == l) anyEdit = j;
        if (!anyEdit) {
            h = net.blocks()[static_cast<size_t>(l)]->run(h, contextAt(base, static_cast<size_t>(l), start), nullptr,
                                                          nullptr);
            continue;
        }
        BlockEdit edit;
        edit.site = anyEdit->edit.site;
        std::vector<torch::Tensor> masks, values, keeps;
        for (const CellJob* j : order) {
            const bool here = j->blockEdit && j->startLayer == l;
            const BlockEdit& e = anyEdit->edit;
            const int64_t pad = anyEdit->start - start, own = T - anyEdit->start;
            const torch::Tensor em = padFront(e.mask, pad, own), ev = padFront(e.value, pad, own);
            if (e.mask.defined()) {
                if (here) {
                    const int64_t jp = j->start - start, jo = T - j->start;
                    masks.push_back(padFront(j->edit.mask, jp, jo).expand(em.sizes()));
                    values.push_back(padFront(j->edit.value, jp, jo).expand(ev.sizes()));
                } else {
                    masks.push_back(torch::zeros_like(em));
                    values.push_back(torch::zeros_like(ev));
                }
            }
            if (e.keep.defined()) keeps.push_back(here ? j->edit.keep : torch::ones_like(e.keep));
        }
        if (!masks.empty()) {
            edit.mask = torch::cat(masks, 0);
            edit.value = torch::cat(values, 0);
        }
        if (!keeps.empty()) edit.keep = torch::cat(keeps, 0);
        h = net.blocks()[static_cast<size_t>(l)]->run(h, contextAt(base, static_cast<size_t>(l), start), &edit,
                                                      nullptr);
    }
    // Back in the jobs' order.
    std::vector<int64_t> where(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i)
        where[i] = std::find(order.begin(), order.end(), jobs[i]) - order.begin();
    return h.index_select(0, torch::tensor(where, torch::kLong).to(h.device()));
}

} // namespace

PatchSweep runPatchSweep(const Model& model, const PatchRequest& r, const PatchProgress& progress) {
    validatePatchRequest(model, r);
    PatchSweep s;
    s.site = r.site;
    s.mode = r.mode;
    s.minDifference = r.minDifference;
    s.modelName = model.displayName();
    s.T = static_cast<int64_t>(r.clean.size());
    s.clean = r.clean;
    s.corrupt = r.corrupt;
    s.metricPosition = metricPosition(r);
    s.hasMetric = hasMetric(r);
    s.cells = sweepCells(model, r, s);
    const size_t n = s.cells.size();
    const bool patching = r.mode == PatchMode::Patch;
    const bool ablationDelta = r.corrupt.empty();

    const Lock lock(model);
    Prepared prep(model);
    LanguageModelImpl& net = prep.net;
    const bool plucker = r.site == PatchSite::Offset;
    const RunRecord clean = record(net, r.clean, prep.device, plucker);
    RunRecord corrupt;
    if (!r.corrupt.empty()) corrupt = record(net, r.corrupt, prep.device, plucker);
    const RunRecord& base = patching ? corrupt : clean;
    const std::vector<int64_t>& baseIds = patching ? r.corrupt : r.clean;
    const int64_t m = s.metricPosition;
    if (s.hasMetric) {
        s.cleanMetric = logitDiff(net, clean.final.select(1, m), r.answer, r.wrong)[0].item<double>();
        s.corruptMetric = r.corrupt.empty()
                              ? s.cleanMetric
                              : logitDiff(net, corrupt.final.select(1, m), r.answer, r.wrong)[0].item<double>();
    }
    const double baseMetric = patching ? s.corruptMetric : s.cleanMetric;
    torch::Tensor baseLogprob;
    if (ablationDelta) baseLogprob = nextLogprob(net, base.final, baseIds, 0)[0]; // T

    s.metric.assign(n, kNaN);
    s.effect.assign(n, kNaN);
    if (!r.skip.empty() && r.skip.size() != n)
        throw std::invalid_argument("the cells to skip (" + std::to_string(r.skip.size()) +
                                    ") do not match the sweep (" + std::to_string(n) + " cells)");
    s.computed.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
        if (!s.defined[i] && (r.skip.empty() || !r.skip[i])) s.computed[i] = 1;
    if (ablationDelta) {
        s.deltaLogprob.assign(n * static_cast<size_t>(s.T), kNaN);
        s.meanDeltaLogprob.assign(n, kNaN);
    }
    // Resolve every defined cell; those that change nothing take the unchanged results at once.
    const JobBuilder builder(model, base, patching ? &clean : nullptr);
    std::vector<CellJob> jobs;
    auto unchanged = [&](size_t i) {
        s.computed[i] = 1;
        s.metric[i] = s.hasMetric ? baseMetric : kNaN;
        if (ablationDelta) {
            for (int64_t t = 0; t + 1 < s.T; ++t)
                s.deltaLogprob[i * static_cast<size_t>(s.T) + static_cast<size_t>(t)] = 0.0;
            s.meanDeltaLogprob[i] = 0.0;
        }
    };
    for (size_t i = 0; i < n; ++i) {
        if (!s.defined[i] || (!r.skip.empty() && r.skip[i])) continue;
        std::optional<CellJob> job = builder.build(s.cells[i]);
        // Positions after the metric's cannot change it (patching measures only the metric).
        if (job && !ablationDelta && job->start > m) job.reset();
        if (!job) {
            unchanged(i);
            continue;
        }
        job->index = i;
        jobs.push_back(std::move(*job));
    }
    // Batches: jobs whose first recomputed positions lie in one chunk of kPositionChunk positions
    // run together from the chunk's first position (the rows before a job's own start are its
    // recorded, unchanged inputs): fewer, larger products.
    std::map<int64_t, std::vector<const CellJob*>> groups;
    for (const CellJob& j : jobs)
        groups[j.start / kPositionChunk * kPositionChunk].push_back(&j);
    size_t done = 0;
    constexpr size_t kMaxBatch = 64;
    for (const auto& [start, group] : groups) {
        if (!s.complete) break;
        for (size_t b = 0; b < group.size(); b += kMaxBatch) {
            if (progress &&
                !progress(static_cast<double>(done) / static_cast<double>(std::max<size_t>(jobs.size(), 1)))) {
                if (!r.partialOnCancel) throw PatchCancelled();
                s.complete = false; // what is done so far is valid: computed says which cells
                break;
            }
            const std::vector<const CellJob*> batch(
                group.begin() + static_cast<std::ptrdiff_t>(b),
                group.begin() + static_cast<std::ptrdiff_t>(std::min(group.size(), b + kMaxBatch)));
            const torch::Tensor finals = runJobs(net, base, batch, start); // B x S x d
            if (s.hasMetric) {
                const torch::Tensor diff = logitDiff(net, finals.select(1, m - start), r.answer, r.wrong);
                for (size_t k = 0; k < batch.size(); ++k)
                    s.metric[batch[k]->index] = diff[static_cast<int64_t>(k)].item<double>();
            }
            if (ablationDelta) {
                const torch::Tensor lpT = nextLogprob(net, finals, baseIds, start); // B x S
                const auto lp = lpT.accessor<double, 2>();
                const auto baseLp = baseLogprob.accessor<double, 1>();
                for (size_t k = 0; k < batch.size(); ++k) {
                    const size_t i = batch[k]->index;
                    double sum = 0.0;
                    for (int64_t t = 0; t + 1 < s.T; ++t) {
                        const double d = t < batch[k]->start ? 0.0 : lp[static_cast<int64_t>(k)][t - start] - baseLp[t];
                        s.deltaLogprob[i * static_cast<size_t>(s.T) + static_cast<size_t>(t)] = d;
                        sum += d;
                    }
                    s.meanDeltaLogprob[i] = s.T > 1 ? sum / static_cast<double>(s.T - 1) : 0.0;
                }
            }
            for (const CellJob* j : batch)
                s.computed[j->index] = 1;
            done += batch.size();
        }
    }
    patchEffects(s);
    if (progress && s.complete) progress(1.0);
    return s;
}

void patchEffects(PatchSweep& s) {
    s.effectDefined = false;
    s.effectNote.clear();
    if (!s.hasMetric || s.corrupt.empty()) return; // no normalised effect is asked for
    const EffectCondition e = effectCondition(s.cleanMetric, s.corruptMetric, s.minDifference, true,
                                              s.mode == PatchMode::Patch ? "patched - corrupted" : "ablated - clean");
    s.effectDefined = e.defined;
    s.effectNote = e.reason;
    if (!s.effectDefined) return;
    for (size_t i = 0; i < s.defined.size() && i < s.effect.size(); ++i)
        if (s.defined[i]) s.effect[i] = (s.metric[i] - s.corruptMetric) / (s.cleanMetric - s.corruptMetric);
}

std::vector<float> interventionLogits(const Model& model, const PatchRequest& r, const Intervention& cell,
                                      int64_t position) {
    validatePatchRequest(model, r);
    const int64_t T = static_cast<int64_t>(r.clean.size());
    checkIntervention(model, cell, T);
    if (position < 0 || position >= T)
        throw std::invalid_argument("position " + std::to_string(position) + " is out of range");
    const Lock lock(model);
    Prepared prep(model);
    const bool patching = cell.mode == PatchMode::Patch;
    const bool plucker = cell.site == PatchSite::Offset;
    const RunRecord clean = record(prep.net, r.clean, prep.device, plucker);
    RunRecord corrupt;
    if (!r.corrupt.empty()) corrupt = record(prep.net, r.corrupt, prep.device, plucker);
    const RunRecord& base = patching ? corrupt : clean;
    const JobBuilder builder(model, base, patching ? &clean : nullptr);
    torch::Tensor row;
    const std::optional<CellJob> job = builder.build(cell);
    if (!job || job->start > position) {
        row = base.final.select(1, position); // 1 x d
    } else {
        const torch::Tensor finals = runJobs(prep.net, base, {&*job}, job->start);
        row = finals.select(1, position - job->start);
    }
    const torch::Tensor logits = prep.net.head(row.unsqueeze(0)).reshape({-1}).to(torch::kFloat).to(torch::kCPU);
    return std::vector<float>(logits.data_ptr<float>(), logits.data_ptr<float>() + logits.numel());
}

std::vector<double> ablationDeltaLogprob(const Model& model, const std::vector<int64_t>& ids,
                                         const Intervention& intervention) {
    if (intervention.mode == PatchMode::Patch)
        throw std::invalid_argument("a quick ablation uses mode zero or mean, not patch");
    PatchRequest r;
    r.clean = ids;
    r.site = intervention.site;
    r.mode = intervention.mode;
    validatePatchRequest(model, r);
    const int64_t T = static_cast<int64_t>(ids.size());
    checkIntervention(model, intervention, T);
    const Lock lock(model);
    Prepared prep(model);
    const RunRecord base = record(prep.net, ids, prep.device, intervention.site == PatchSite::Offset);
    const JobBuilder builder(model, base, nullptr);
    std::vector<double> out(static_cast<size_t>(T), kNaN);
    for (int64_t t = 0; t + 1 < T; ++t)
        out[static_cast<size_t>(t)] = 0.0;
    const std::optional<CellJob> job = builder.build(intervention);
    if (!job) return out;
    const torch::Tensor baseLp = nextLogprob(prep.net, base.final, ids, 0)[0];
    const torch::Tensor finals = runJobs(prep.net, base, {&*job}, job->start);
    const torch::Tensor lp = nextLogprob(prep.net, finals, ids, job->start)[0];
    for (int64_t t = job->start; t + 1 < T; ++t)
        out[static_cast<size_t>(t)] = lp[t - job->start].item<double>() - baseLp[t].item<double>();
    return out;
}

} // namespace gwb::engine
