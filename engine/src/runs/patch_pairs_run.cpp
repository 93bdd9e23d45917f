// Causal claims over datasets (patch_pairs_run.h): each usable pair of a pairs file swept as
// `gwb patch` sweeps one pair, the sweeps aligned at each pair's metric position. The file it
// writes and the merge of shards: patch_pairs_file.cpp.

#include "gwb/engine/patch_pairs_run.h"

#include "pairs_meta.h"
#include "formats/json_integer.h"

#include "gwb/engine/device.h"
#include "gwb/engine/patch_input.h"
#include "runtime/cpu_workers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

namespace gwb::engine {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Sites whose columns are token positions (aligned at the metric position across pairs).
bool positional(PatchSite s) {
    return s != PatchSite::Offset && s != PatchSite::Head;
}

} // namespace

json skippedJson(const std::vector<SkippedLine>& skipped) {
    json out = json::array();
    for (const SkippedLine& s : skipped)
        out.push_back({{"line", s.line}, {"reason", s.reason}});
    return out;
}

void setPairsMeta(PairsResult& r, const json& meta) {
    try {
        r.modelName = meta.value("model_name", std::string());
        r.site = meta.value("site", std::string());
        r.mode = meta.value("mode", std::string("patch"));
        r.rowLabels = meta.value("row_labels", std::vector<std::string>());
        r.colLabels = meta.value("column_labels", std::vector<std::string>());
        r.skipped.clear();
        for (const json& s : meta.value("skipped", json::array()))
            r.skipped.push_back({jsonInteger(s.at("line"), "line"), s.at("reason").get<std::string>()});
        r.usable = jsonIntegerOr(meta, "pairs_usable", 0);
        const json shard = meta.value("shard", json::object());
        r.shardFirst = jsonIntegerOr(shard, "first_pair", 0);
        r.shardEnd = jsonIntegerOr(shard, "end_pair", r.usable);
        r.stoppedBy = meta.value("stopped_by", std::string());
        r.minDifference = meta.value("min_difference", kDefaultMinDifference);
    } catch (const json::exception& e) {
        throw std::invalid_argument(std::string("meta.json of a pairs run: ") + e.what());
    }
    r.metaJson = meta.dump();
}

PatchRequest pairRequest(const Model& model, const PatchPair& pair, const std::string& site, const std::string& mode,
                         int64_t defaultPosition) {
    PatchText in;
    in.clean = pair.clean;
    in.corrupt = pair.corrupt;
    in.answer = pair.answer;
    in.wrong = pair.wrong;
    in.site = site;
    in.mode = mode;
    in.position = pair.position >= 0 ? pair.position : defaultPosition;
    return preparePatchRequest(model, in);
}

json pairJson(const Model& model, const PatchPair& pair, const PatchRequest& request) {
    json entry = {
        {"line", pair.line},
        {"clean", pair.clean},
        {"corrupt", pair.corrupt},
        {"answer",
         {{"typed", pair.answer}, {"piece", pieceTexts(model, {request.answer}).front()}, {"id", request.answer}}},
        {"wrong",
         {{"typed", pair.wrong}, {"piece", pieceTexts(model, {request.wrong}).front()}, {"id", request.wrong}}},
        {"tokens", request.clean.size()}};
    if (!pair.tags.empty()) entry["tags"] = pair.tags;
    return entry;
}

void sortSkippedOrRefuse(std::vector<SkippedLine>& skipped, size_t usable) {
    std::sort(skipped.begin(), skipped.end(),
              [](const SkippedLine& a, const SkippedLine& b) { return a.line < b.line; });
    if (usable > 0) return;
    std::string why;
    for (size_t k = 0; k < skipped.size() && k < 3; ++k)
        why += (k ? "; " : "") + std::string("line ") + std::to_string(skipped[k].line) + ": " + skipped[k].reason;
    throw std::invalid_argument("the pairs file has no usable pair for this model (" + why + ")");
}

AttributionCheck checkAttribution(const Model& model, const PatchRequest& request, const PatchSweep& est, int k,
                                  uint64_t seed) {
    AttributionCheck out;
    std::vector<size_t> defined;
    for (size_t i = 0; i < est.attribution.size(); ++i)
        if (std::isfinite(est.attribution[i])) defined.push_back(i);
    std::vector<size_t> byEstimate = defined;
    std::stable_sort(byEstimate.begin(), byEstimate.end(),
                     [&](size_t a, size_t b) { return std::abs(est.attribution[a]) > std::abs(est.attribution[b]); });
    const size_t K = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), byEstimate.size());
    out.cells.assign(byEstimate.begin(), byEstimate.begin() + static_cast<std::ptrdiff_t>(K));
    std::vector<size_t> rest(byEstimate.begin() + static_cast<std::ptrdiff_t>(K), byEstimate.end());
    std::mt19937_64 rng(seed);
    std::shuffle(rest.begin(), rest.end(), rng);
    for (size_t j = 0; j < rest.size() && j < K; ++j)
        out.cells.push_back(rest[j]);
    if (out.cells.empty()) return out;
    // The exact runs of just those cells: the sweep with every other cell skipped.
    PatchRequest exact = request;
    exact.skip.assign(est.attribution.size(), 1);
    for (size_t c : out.cells)
        exact.skip[c] = 0;
    const PatchSweep sweep = runPatchSweep(model, exact);
    const double base = request.mode == PatchMode::Patch ? sweep.corruptMetric : sweep.cleanMetric;
    for (size_t c : out.cells) {
        out.estimate.push_back(est.attribution[c]);
        out.exact.push_back(sweep.metric[c] - base);
    }
    out.spearman = spearmanCorrelation(out.estimate, out.exact);
    // recall@K over the checked cells.
    std::vector<size_t> byExact(out.cells.size());
    std::iota(byExact.begin(), byExact.end(), 0);
    std::stable_sort(byExact.begin(), byExact.end(),
                     [&](size_t a, size_t b) { return std::abs(out.exact[a]) > std::abs(out.exact[b]); });
    size_t hits = 0;
    for (size_t j = 0; j < K; ++j)
        hits += byExact[j] < K; // the first K checked cells are the estimate's top K
    out.recallAtK = K > 0 ? static_cast<double>(hits) / static_cast<double>(K) : kNaN;
    return out;
}

PairsResult computePairs(const Model& m, const PairsFile& file, const PairsRunOptions& o,
                         const std::function<bool(double)>& progressFn) {
    // Each pair as gwb patch would run it alone; a pair it would refuse is skipped, with the reason.
    struct Ready {
        const PatchPair* pair;
        PatchRequest request;
    };
    checkMinDifference(o.minDifference);
    std::vector<Ready> ready;
    std::vector<SkippedLine> skipped = file.skipped;
    for (const PatchPair& pair : file.pairs) {
        try {
            PatchRequest r = pairRequest(m, pair, o.site, o.mode, o.position);
            r.layer = o.layer;
            r.offset = o.offset;
            r.head = o.head;
            r.minDifference = o.minDifference;
            validatePatchRequest(m, r);
            ready.push_back({&pair, std::move(r)});
        } catch (const std::invalid_argument& e) {
            skipped.push_back({pair.line, e.what()});
        }
    }
    sortSkippedOrRefuse(skipped, ready.size());
    const int64_t usable = static_cast<int64_t>(ready.size());
    const size_t from = static_cast<size_t>(usable * o.shardIndex / o.shardCount);
    const size_t to = static_cast<size_t>(usable * (o.shardIndex + 1) / o.shardCount);

    std::atomic<bool> stop{false};
    // Sweeps first (their sizes fix the columns), then the aligned arrays. A pair's sweep is small
    // (a few-token prompt): on the CPU the pairs run side by side, one single-threaded worker a
    // core, each with its own copy of the model (a model runs one sweep at a time).
    const size_t count = to - from;
    const int workers =
        o.attribution && o.check == 0 ? 1 // the estimates run batched below, on every thread
        : m.device() == "cpu"
            ? static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(1, threads())), 1, count))
            : 1;
    std::vector<Model> models{m};
    for (int w = 1; w < workers; ++w) // a copy of the weights: a model runs one sweep at a time
        models.push_back(Model::fromParameters(m.config(), m.parameters(), m.tokenizer(), m.device()));
    std::vector<std::optional<PatchSweep>> results(count);
    std::vector<std::string> errors(count);
    std::vector<AttributionCheck> checks(count);
    std::vector<std::optional<PatchSweep>> estimates(count); // alsoEstimate: beside the exact results
    // Attribution: the pairs' estimates in batches (pairs of one length and metric position are the
    // rows of one forward and backward pass), 64 pairs a call so that a stop keeps what is done;
    // the workers below then only run the exact checks.
    std::vector<uint8_t> estimated(count, 0);
    std::atomic<size_t> next{0}, finished{0}, estimatedCount{0};
    // The watcher: progress about ten times a second (estimates and exact runs as equal parts),
    // and the stop it may ask for.
    const bool estimating = o.attribution || o.alsoEstimate, exactRuns = !o.attribution || o.check > 0;
    const double parts = (estimating ? 1.0 : 0.0) + (exactRuns ? 1.0 : 0.0);
    std::atomic<bool> watching{true};
    std::thread watcher([&] {
        while (watching.load()) {
            const double done = static_cast<double>(estimating ? estimatedCount.load() : 0) +
                                static_cast<double>(exactRuns ? finished.load() : 0);
            if (progressFn && !progressFn(count ? done / (parts * static_cast<double>(count)) : 1.0)) stop = true;
            for (int i = 0; i < 10 && watching.load(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    struct JoinWatcher {
        std::atomic<bool>& watching;
        std::thread& t;
        ~JoinWatcher() {
            watching = false;
            t.join();
        }
    } joinWatcher{watching, watcher};
    if (o.attribution || o.alsoEstimate) {
        constexpr size_t kChunk = 64;
        // Attribution runs keep the estimates as their results; exact runs keep them aside.
        auto& into = o.attribution ? results : estimates;
        for (size_t k0 = 0; k0 < count && !stop.load(); k0 += kChunk) {
            const size_t k1 = std::min(count, k0 + kChunk);
            std::vector<PatchRequest> chunk;
            for (size_t k = k0; k < k1; ++k)
                chunk.push_back(ready[from + k].request);
            try {
                std::vector<PatchSweep> sweeps = attributionSweeps(m, chunk);
                for (size_t k = k0; k < k1; ++k) {
                    into[k] = std::move(sweeps[k - k0]);
                    estimated[k] = 1;
                }
            } catch (const std::invalid_argument&) { // one pair refused: the pairs one at a time say which
                for (size_t k = k0; k < k1; ++k) {
                    try {
                        into[k] = attributionSweep(m, chunk[k - k0]);
                    } catch (const std::invalid_argument& e) {
                        errors[k] = e.what();
                    }
                    estimated[k] = 1;
                }
            }
            estimatedCount = k1;
        }
    }
    {
        auto work = [&](int w) {
            for (size_t k; !stop.load() && (k = next.fetch_add(1)) < count; ++finished) {
                try {
                    const Model& mw = models[static_cast<size_t>(w)];
                    const PatchRequest& rq = ready[from + k].request;
                    if ((o.attribution || o.alsoEstimate) && !estimated[k]) continue; // stopped before its batch
                    if (!o.attribution) results[k] = runPatchSweep(mw, rq);
                    if (o.attribution && o.check > 0 && results[k])
                        // seeded by the pair's line: a shard checks the cells a whole run would
                        checks[k] = checkAttribution(mw, rq, *results[k], o.check,
                                                     o.seed + static_cast<uint64_t>(ready[from + k].pair->line));
                } catch (const std::invalid_argument& e) {
                    errors[k] = e.what();
                }
            }
        };
        detail::runCpuWorkers(workers, work);
    }
    if (progressFn && !stop.load()) progressFn(1.0);
    std::vector<PatchSweep> sweeps;
    std::vector<const Ready*> done;
    std::vector<const AttributionCheck*> doneChecks;
    std::vector<const PatchSweep*> doneEstimates;
    for (size_t k = 0; k < count; ++k) {
        if (!errors[k].empty()) skipped.push_back({ready[from + k].pair->line, errors[k]});
        if (!results[k]) continue;
        sweeps.push_back(std::move(*results[k]));
        done.push_back(&ready[from + k]);
        doneChecks.push_back(&checks[k]);
        doneEstimates.push_back(estimates[k] ? &*estimates[k] : nullptr);
    }
    if (sweeps.empty()) throw std::runtime_error("stopped before the first pair: nothing written");
    const PatchSweep& first = sweeps.front();
    PairsResult r;
    r.rows = first.rows;
    const bool aligned = positional(first.site);
    if (aligned) {
        int64_t widest = 0;
        for (const PatchSweep& s : sweeps)
            widest = std::max(widest, s.metricPosition + 1);
        r.cols = widest;
    } else {
        r.cols = first.cols;
    }
    const int64_t P = static_cast<int64_t>(sweeps.size()), cells = r.rows * r.cols;
    r.metric.assign(static_cast<size_t>(P * cells), kNaN);
    r.primary.assign(static_cast<size_t>(P * cells), kNaN);
    r.estimated = o.attribution;
    r.patchMode = first.mode == PatchMode::Patch;
    if (r.estimated) r.flagged.assign(static_cast<size_t>(P * cells), 0);
    if (o.alsoEstimate && !o.attribution) r.estimate.assign(static_cast<size_t>(P * cells), kNaN);
    if (r.estimated && o.check > 0) {
        r.checkWidth = 2 * o.check;
        r.checkCells.assign(static_cast<size_t>(P * r.checkWidth), -1);
        r.checkEstimate.assign(static_cast<size_t>(P * r.checkWidth), kNaN);
        r.checkExact.assign(static_cast<size_t>(P * r.checkWidth), kNaN);
        r.checkSpearman.assign(static_cast<size_t>(P), kNaN);
        r.checkRecall.assign(static_cast<size_t>(P), kNaN);
    }
    json pairsMeta = json::array();
    for (int64_t p = 0; p < P; ++p) {
        const PatchSweep& s = sweeps[static_cast<size_t>(p)];
        const Ready& rd = *done[static_cast<size_t>(p)];
        for (int64_t row = 0; row < r.rows; ++row)
            for (int64_t c = 0; c < r.cols; ++c) {
                const int64_t src = aligned ? s.metricPosition - (r.cols - 1 - c) : c;
                if (src < 0 || src >= s.cols) continue;
                const size_t from_ = static_cast<size_t>(row * s.cols + src);
                if (!s.defined[from_]) continue;
                const size_t to_ = static_cast<size_t>(p * cells + row * r.cols + c);
                r.metric[to_] = s.metric[from_];
                r.primary[to_] = s.estimated ? s.attribution[from_] : s.effect[from_];
                if (s.estimated) r.flagged[to_] = s.flagged[from_];
                if (const PatchSweep* e = doneEstimates[static_cast<size_t>(p)]; e && !r.estimate.empty())
                    r.estimate[to_] = e->attribution[from_];
            }
        if (r.checkWidth > 0) {
            // Checked cells as flat indices of the aligned grid.
            const AttributionCheck& ck = *doneChecks[static_cast<size_t>(p)];
            for (size_t j = 0; j < ck.cells.size() && static_cast<int64_t>(j) < r.checkWidth; ++j) {
                const int64_t row = static_cast<int64_t>(ck.cells[j]) / s.cols,
                              col = static_cast<int64_t>(ck.cells[j]) % s.cols;
                const int64_t c = aligned ? col - s.metricPosition + (r.cols - 1) : col;
                const size_t at = static_cast<size_t>(p * r.checkWidth) + j;
                r.checkCells[at] = row * r.cols + c;
                r.checkEstimate[at] = ck.estimate[j];
                r.checkExact[at] = ck.exact[j];
            }
            r.checkSpearman[static_cast<size_t>(p)] = ck.spearman;
            r.checkRecall[static_cast<size_t>(p)] = ck.recallAtK;
        }
        r.clean.push_back(s.cleanMetric);
        r.corrupt.push_back(s.corruptMetric);
        r.lines.push_back(rd.pair->line);
        json entry = pairJson(m, *rd.pair, rd.request);
        entry["metric_position"] = s.metricPosition;
        entry["clean_metric"] = s.cleanMetric;
        entry["corrupt_metric"] = s.corruptMetric;
        entry["effect_defined"] = s.effectDefined;
        pairsMeta.push_back(std::move(entry));
    }
    sortSkippedOrRefuse(skipped, static_cast<size_t>(P)); // pairs whose sweep failed joined the list
    json colLabels = json::array();
    if (aligned)
        for (int64_t c = 0; c < r.cols; ++c) {
            const int64_t back = r.cols - 1 - c;
            colLabels.push_back(back == 0 ? std::string("m") : "m-" + std::to_string(back));
        }
    else
        colLabels = first.colLabels;
    size_t failed = 0;
    for (const std::string& e : errors)
        failed += !e.empty();
    const bool complete = done.size() + failed == count;
    r.complete = complete;
    setPairsMeta(
        r, json{{"model_file", o.modelFile},
                {"model_name", m.displayName()},
                {"model_kind", m.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer"},
                {"site", patchSiteName(first.site)},
                {"mode", patchModeName(first.mode)},
                {"pairs_file", o.pairsPath},
                {"pairs_format", file.format},
                {"row_labels", first.rowLabels},
                {"column_labels", colLabels},
                {"column_axis", aligned ? "position relative to the metric position m"
                                        : (first.site == PatchSite::Offset ? "offset D" : "head")},
                {"row_axis", first.site == PatchSite::Resid ? "layer (block input h^l)" : "layer"},
                {"pairs", pairsMeta},
                {"pairs_usable", usable},
                {"skipped", skippedJson(skipped)},
                {"min_difference", o.minDifference},
                {"shard", {{"index", o.shardIndex}, {"count", o.shardCount}, {"first_pair", from}, {"end_pair", to}}},
                {"complete", complete && o.shardCount == 1}});
    return r;
}

} // namespace gwb::engine
