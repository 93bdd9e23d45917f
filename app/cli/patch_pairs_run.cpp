#include "cli/patch_pairs_run.h"

#include "cli/cli_args.h"
#include "cli/patch_setup.h"
#include "cli/stop_signals.h"

#include "gwb/engine/device.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <nlohmann/json.hpp>

#include <QStringList>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

namespace gwb::app {
namespace {

using namespace gwb::engine;
using gwb::app::cli::csvField;
using gwb::app::cli::number;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
std::atomic<bool> g_stopPairs{false};

/// Sites whose columns are token positions (aligned at the metric position across pairs).
bool positional(PatchSite s) {
    return s != PatchSite::Offset && s != PatchSite::Head;
}

const char* kAlignment = "Pairs may differ in length: columns of a position site count back from each pair's metric "
                         "position m (labels m, m-1, ...; the rightmost column is the metric position). A pair too "
                         "short for a column, a cell that does not exist in the model, or a pair whose clean and "
                         "corrupted metrics are equal (no normalised effect) leaves that cell out of the mean; "
                         "effect_n counts the pairs in each cell.";

json definitions(int bootstrap, uint64_t seed) {
    return {{"words", patchDefinitions()},
            {"alignment", kAlignment},
            {"metric", "pairs x rows x columns  logit[answer] - logit[wrong] at the pair's metric position in the "
                       "changed run; NaN where undefined"},
            {"effect", "pairs x rows x columns  (metric - corrupt_metric) / (clean_metric - corrupt_metric) of the "
                       "pair; NaN where undefined"},
            {"clean_metric", "pairs  the metric of each pair's clean run"},
            {"corrupt_metric", "pairs  the metric of each pair's corrupted run"},
            {"line", "pairs  the line of the pairs file each pair came from"},
            {"effect_mean", "rows x columns  mean of effect over the pairs where it is defined"},
            {"effect_ci_low", "rows x columns  2.5th percentile of the mean over " + std::to_string(bootstrap) +
                                  " bootstrap resamples of the pairs (with replacement, seed " + std::to_string(seed) +
                                  ")"},
            {"effect_ci_high", "rows x columns  97.5th percentile of the same"},
            {"effect_n", "rows x columns  pairs with a defined effect in the cell"}};
}

void writeResult(const PairsResult& r, int bootstrap, uint64_t seed, const std::string& path, const QString& data) {
    const int64_t P = r.pairs(), cells = r.rows * r.cols;
    const CellSummary s = summarizeOverPairs(r.primary, P, cells, bootstrap, seed);
    NpzWriter npz;
    const std::string pn = r.primaryName();
    npz.add(r.metricName(), Array<double>({P, r.rows, r.cols}, r.metric));
    npz.add(pn, Array<double>({P, r.rows, r.cols}, r.primary));
    if (r.estimated) {
        npz.add("flagged", Array<uint8_t>({P, r.rows, r.cols}, r.flagged));
        if (r.checkWidth > 0) {
            npz.add("check_cells", Array<int64_t>({P, r.checkWidth}, r.checkCells));
            npz.add("check_estimate", Array<double>({P, r.checkWidth}, r.checkEstimate));
            npz.add("check_exact", Array<double>({P, r.checkWidth}, r.checkExact));
            npz.add("check_spearman", Array<double>({P}, r.checkSpearman));
            npz.add("check_recall", Array<double>({P}, r.checkRecall));
        }
    }
    npz.add("clean_metric", Array<double>({P}, r.clean));
    npz.add("corrupt_metric", Array<double>({P}, r.corrupt));
    npz.add("line", Array<int64_t>({P}, r.lines));
    npz.add(pn + "_mean", Array<double>({r.rows, r.cols}, s.mean));
    npz.add(pn + "_ci_low", Array<double>({r.rows, r.cols}, s.low));
    npz.add(pn + "_ci_high", Array<double>({r.rows, r.cols}, s.high));
    npz.add(pn + "_n", Array<int64_t>({r.rows, r.cols}, s.n));
    json meta = r.meta;
    meta["bootstrap"] = bootstrap;
    meta["seed"] = seed;
    meta["interval"] = "95% percentile bootstrap over pairs";
    meta["definitions"] = definitions(bootstrap, seed);
    meta["method"] = r.estimated ? "attribution" : "exact";
    if (r.estimated) {
        json& d = meta["definitions"];
        for (const char* k : {"metric", "effect", "effect_mean", "effect_ci_low", "effect_ci_high", "effect_n"})
            d.erase(k);
        d["attribution"] = "pairs x rows x columns  first-order estimate of the metric's change: (value in the source "
                           "run - value in the changed run) . d metric / d value, the gradient taken on the changed "
                           "run (the corrupted run when patching); NaN where undefined";
        d["estimated_metric"] = "pairs x rows x columns  the changed run's metric + attribution";
        d["attribution_mean"] = "rows x columns  mean of attribution over the pairs where it is defined";
        d["attribution_ci_low"] = "rows x columns  2.5th percentile of the mean over the bootstrap resamples";
        d["attribution_ci_high"] = "rows x columns  97.5th percentile of the same";
        d["attribution_n"] = "rows x columns  pairs with a defined estimate in the cell";
        d["flagged"] = "pairs x rows x columns  1 where the estimate passes a saturated Grassmann gate (half or more "
                       "of its channels below 0.02 or above 0.98 in the changed or the source run): a first-order "
                       "estimate is known to be poor there (AtP*)";
        if (r.checkWidth > 0) {
            d["check_cells"] = "pairs x 2K  flat cell index (row * columns + column) of the cells run exactly: the K "
                               "with the largest |attribution|, then K drawn at random; -1 where the pair has fewer";
            d["check_estimate"] = "pairs x 2K  attribution of those cells";
            d["check_exact"] = "pairs x 2K  exact metric change of those cells (patched run - changed run)";
            d["check_spearman"] = "pairs  Spearman rank correlation of check_estimate and check_exact";
            d["check_recall"] = "pairs  recall@K: of the K checked cells with the largest |exact|, the share that are "
                                "among the K largest |attribution|";
        }
    }
    npz.addFile("meta.json", meta.dump(2));
    npz.write(path);
    if (data.isEmpty()) return;
    // Tidy: one row per pair x cell, then one summary row per cell (pair "all").
    const auto& rowLabels = r.meta["row_labels"];
    const auto& colLabels = r.meta["column_labels"];
    std::string csv = std::string("pair,line,row,column,") + r.metricName() + "," + pn + ",mean,ci_low,ci_high,n\n";
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < cells; ++i) {
            const size_t k = static_cast<size_t>(p * cells + i);
            csv += std::to_string(p) + "," + std::to_string(r.lines[static_cast<size_t>(p)]) + "," +
                   csvField(rowLabels[static_cast<size_t>(i / r.cols)].get<std::string>()) + "," +
                   csvField(colLabels[static_cast<size_t>(i % r.cols)].get<std::string>()) + "," + number(r.metric[k]) +
                   "," + number(r.primary[k]) + ",,,,\n";
        }
    for (int64_t i = 0; i < cells; ++i) {
        const size_t k = static_cast<size_t>(i);
        csv += "all,," + csvField(rowLabels[static_cast<size_t>(i / r.cols)].get<std::string>()) + "," +
               csvField(colLabels[static_cast<size_t>(i % r.cols)].get<std::string>()) + ",,," + number(s.mean[k]) +
               "," + number(s.low[k]) + "," + number(s.high[k]) + "," + std::to_string(s.n[k]) + "\n";
    }
    writeBytesAtomic(data.toStdString(), csv.data(), csv.size());
}

void printSummary(const PairsResult& r, int bootstrap, uint64_t seed) {
    const int64_t cells = r.rows * r.cols;
    const CellSummary s = summarizeOverPairs(r.primary, r.pairs(), cells, bootstrap, seed);
    std::vector<int64_t> order;
    for (int64_t i = 0; i < cells; ++i)
        if (std::isfinite(s.mean[static_cast<size_t>(i)])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return std::abs(s.mean[static_cast<size_t>(a)]) > std::abs(s.mean[static_cast<size_t>(b)]);
    });
    if (order.empty()) {
        std::printf("no cell has a defined effect in any pair\n");
        return;
    }
    std::printf("top %zu cells by |mean %s| (95%% bootstrap interval over pairs, n):\n",
                std::min<size_t>(5, order.size()), r.estimated ? "attribution (estimated metric change)" : "effect");
    for (size_t k = 0; k < order.size() && k < 5; ++k) {
        const size_t i = static_cast<size_t>(order[k]);
        std::printf("  %s, %s: %s [%s, %s], n = %lld\n",
                    r.meta["row_labels"][i / static_cast<size_t>(r.cols)].get<std::string>().c_str(),
                    r.meta["column_labels"][i % static_cast<size_t>(r.cols)].get<std::string>().c_str(),
                    number(s.mean[i]).c_str(), number(s.low[i]).c_str(), number(s.high[i]).c_str(),
                    static_cast<long long>(s.n[i]));
    }
}

json skippedJson(const std::vector<SkippedLine>& skipped) {
    json out = json::array();
    for (const SkippedLine& s : skipped)
        out.push_back({{"line", s.line}, {"reason", s.reason}});
    return out;
}

void printSkipped(const json& skipped) {
    for (const auto& s : skipped)
        std::printf("  skipped line %lld: %s\n", static_cast<long long>(s["line"].get<int64_t>()),
                    s["reason"].get<std::string>().c_str());
}

} // namespace

PatchRequest pairRequest(const Model& model, const PatchPair& pair, const QString& site, const QString& mode,
                         int64_t defaultPosition) {
    PatchInput in;
    in.clean = QString::fromStdString(pair.clean);
    in.corrupt = QString::fromStdString(pair.corrupt);
    in.answer = QString::fromStdString(pair.answer);
    in.wrong = QString::fromStdString(pair.wrong);
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
    std::vector<Ready> ready;
    std::vector<SkippedLine> skipped = file.skipped;
    for (const PatchPair& pair : file.pairs) {
        try {
            PatchRequest r = pairRequest(m, pair, o.site, o.mode, o.position);
            r.layer = o.layer;
            r.offset = o.offset;
            r.head = o.head;
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
            ? static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(1, gwb::engine::threads())), 1, count))
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
                std::vector<PatchSweep> sweeps = gwb::engine::attributionSweeps(m, chunk);
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
        const std::optional<gwb::engine::ScopedThreads> single =
            workers > 1 ? std::optional<gwb::engine::ScopedThreads>(std::in_place, 1) : std::nullopt;
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
        std::vector<std::thread> pool;
        for (int w = 1; w < workers; ++w)
            pool.emplace_back(work, w);
        work(0);
        for (std::thread& t : pool)
            t.join();
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
    r.meta = {{"model_file", o.modelFile.toStdString()},
              {"model_name", m.displayName()},
              {"model_kind", m.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer"},
              {"site", patchSiteName(first.site)},
              {"mode", patchModeName(first.mode)},
              {"pairs_file", o.pairsPath.toStdString()},
              {"pairs_format", file.format},
              {"row_labels", first.rowLabels},
              {"column_labels", colLabels},
              {"column_axis", aligned ? "position relative to the metric position m"
                                      : (first.site == PatchSite::Offset ? "offset D" : "head")},
              {"row_axis", first.site == PatchSite::Resid ? "layer (block input h^l)" : "layer"},
              {"pairs", pairsMeta},
              {"pairs_usable", usable},
              {"skipped", skippedJson(skipped)},
              {"shard", {{"index", o.shardIndex}, {"count", o.shardCount}, {"first_pair", from}, {"end_pair", to}}},
              {"complete", complete && o.shardCount == 1}};
    return r;
}

int runPatchPairs(const PairsRunOptions& o) {
    if (o.bootstrap < 0 || o.bootstrap > 1'000'000)
        throw std::invalid_argument("--bootstrap must be between 0 and 1000000, got " + std::to_string(o.bootstrap));
    if (o.shardCount < 1 || o.shardIndex < 0 || o.shardIndex >= o.shardCount)
        throw std::invalid_argument("--shard must be i/n with 0 <= i < n");
    const Model m = Model::load(o.modelFile.toStdString(), o.device.toStdString());
    PairsFile file;
    try {
        file = readPairsFile(o.pairsPath.toStdString());
    } catch (const std::exception& e) {
        throw std::invalid_argument(e.what());
    }
    g_stopPairs = false;
    const StopSignals signals(g_stopPairs);
    ProgressLine line;
    const auto started = std::chrono::steady_clock::now();
    std::mutex printing;
    PairsResult r = computePairs(m, file, o, [&](double fraction) {
        const std::lock_guard<std::mutex> lock(printing);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const bool last = fraction >= 1 || g_stopPairs.load();
        if ((seconds > 1 || last) && line.due(seconds, last)) {
            std::fprintf(stderr, "%spairs %.0f%%  elapsed %.0f s%s", line.start(), 100 * fraction, seconds, line.end());
            std::fflush(stderr);
        }
        return !g_stopPairs.load();
    });
    if (line.tty()) std::fprintf(stderr, "\n");
    const bool complete = r.complete;
    const int64_t P = r.pairs();
    const size_t from = r.meta["shard"]["first_pair"].get<size_t>(), to = r.meta["shard"]["end_pair"].get<size_t>();
    if (!complete) r.meta["stopped_by"] = StopSignals::name();
    writeResult(r, o.bootstrap, o.seed, o.out.toStdString(), o.data);
    const auto skipped = r.meta["skipped"];

    std::printf("%s: site %s, mode %s; %lld pairs used of %lld lines (%zu skipped)%s\n", m.displayName().c_str(),
                r.meta["site"].get<std::string>().c_str(), r.meta["mode"].get<std::string>().c_str(),
                static_cast<long long>(P), static_cast<long long>(file.lines), skipped.size(),
                o.shardCount > 1
                    ? (" in shard " + std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount)).c_str()
                    : "");
    printSkipped(r.meta["skipped"]);
    printSummary(r, o.bootstrap, o.seed);
    if (r.checkWidth > 0) {
        double sp = 0, rc = 0;
        int64_t nsp = 0, nrc = 0;
        for (int64_t p = 0; p < P; ++p) {
            if (std::isfinite(r.checkSpearman[static_cast<size_t>(p)]))
                sp += r.checkSpearman[static_cast<size_t>(p)], ++nsp;
            if (std::isfinite(r.checkRecall[static_cast<size_t>(p)]))
                rc += r.checkRecall[static_cast<size_t>(p)], ++nrc;
        }
        std::printf("check: %d cells of largest |estimate| + %d random per pair run exactly: mean Spearman %s, mean "
                    "recall@%d %s over %lld pairs\n",
                    o.check, o.check, number(nsp ? sp / static_cast<double>(nsp) : kNaN).c_str(), o.check,
                    number(nrc ? rc / static_cast<double>(nrc) : kNaN).c_str(), static_cast<long long>(P));
    }
    if (r.estimated) {
        int64_t flagged = 0;
        for (uint8_t f : r.flagged)
            flagged += f;
        if (flagged > 0)
            std::printf("flagged: %lld pair x cell estimates pass a saturated gate (flagged = 1): first order is poor "
                        "there\n",
                        static_cast<long long>(flagged));
    }
    if (!complete) {
        std::printf("stopped by %s after %lld of %zu pairs: wrote them to %s (complete: false)\n", StopSignals::name(),
                    static_cast<long long>(P), to - from, qPrintable(o.out));
        return StopSignals::exitCode(130);
    }
    std::printf("wrote %s%s%s\n", qPrintable(o.out), o.data.isEmpty() ? "" : ", ", qPrintable(o.data));
    return 0;
}

int runPatchMerge(const QStringList& inputs, const QString& out, int bootstrap, uint64_t seed, bool seedSet,
                  bool bootstrapSet) {
    if (inputs.size() < 2) throw std::invalid_argument("gwb patch merge needs two or more files");
    PairsResult merged;
    std::set<int64_t> seen;
    json skipped = json::array();
    std::set<int64_t> skippedLines;
    for (const QString& in : inputs) {
        const std::string path = in.toStdString();
        std::map<std::string, std::vector<uint8_t>> members;
        try {
            members = readZipStored(readBinaryFile(path));
        } catch (const std::exception& e) {
            throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs: " + e.what());
        }
        if (!members.count("meta.json") || !members.count("line.npy"))
            throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs (no per-pair arrays)");
        const json meta = json::parse(std::string(members["meta.json"].begin(), members["meta.json"].end()));
        const bool estimatedFile = meta.value("method", std::string("exact")) == "attribution";
        const std::string metricMember = estimatedFile ? "estimated_metric.npy" : "metric.npy";
        const std::string primaryMember = estimatedFile ? "attribution.npy" : "effect.npy";
        for (const std::string& member : {metricMember, primaryMember})
            if (!members.count(member))
                throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs (no " + member + ")");
        if (!merged.meta.is_null() && estimatedFile != merged.estimated)
            throw std::invalid_argument("'" + path +
                                        "' is another run: one file holds exact sweeps, the other "
                                        "attribution estimates");
        const NpyArray metric = parseNpy(members.at(metricMember));
        if (metric.shape.size() != 3) throw std::invalid_argument("'" + path + "': metric is not pairs x rows x cols");
        const bool hasChecks = members.count("check_cells.npy") > 0;
        const NpyArray checkCells = hasChecks ? parseNpy(members.at("check_cells.npy")) : NpyArray{};
        const int64_t checkWidth = hasChecks && checkCells.shape.size() == 2 ? checkCells.shape[1] : 0;
        if (merged.meta.is_null()) {
            merged.meta = meta;
            merged.rows = metric.shape[1];
            merged.cols = metric.shape[2];
            merged.estimated = estimatedFile;
            merged.checkWidth = checkWidth;
            if (!bootstrapSet) bootstrap = meta.value("bootstrap", bootstrap);
            if (!seedSet) seed = meta.value("seed", seed);
            merged.meta["pairs"] = json::array();
        } else {
            for (const char* key : {"model_name", "site", "mode", "pairs_file", "row_labels", "column_axis"})
                if (meta.value(key, json()) != merged.meta.value(key, json()))
                    throw std::invalid_argument("'" + path + "' is another run: its " + key + " differs");
            if (metric.shape[1] != merged.rows)
                throw std::invalid_argument("'" + path + "' has " + std::to_string(metric.shape[1]) + " rows, not " +
                                            std::to_string(merged.rows));
            if (checkWidth != merged.checkWidth)
                throw std::invalid_argument("'" + path + "' is another run: its --check differs");
        }
        // Position columns of shards may differ in width (their longest pair): right-align them.
        const int64_t P = metric.shape[0], C = metric.shape[2];
        const auto mv = metric.values<double>();
        const auto ev = parseNpy(members.at(primaryMember)).values<double>();
        const auto fv = estimatedFile && members.count("flagged.npy")
                            ? parseNpy(members.at("flagged.npy")).values<uint8_t>()
                            : std::vector<uint8_t>();
        const auto lines = parseNpy(members.at("line.npy")).values<int64_t>();
        const auto cm = parseNpy(members.at("clean_metric.npy")).values<double>();
        const auto km = parseNpy(members.at("corrupt_metric.npy")).values<double>();
        const bool aligned = meta.value("column_axis", std::string()).rfind("position", 0) == 0;
        if (!aligned && C != merged.cols)
            throw std::invalid_argument("'" + path + "' has other columns than the first file");
        if (aligned && C > merged.cols) {
            // Widen what is merged so far (new columns on the left, NaN).
            const int64_t extra = C - merged.cols, oldCells = merged.rows * merged.cols;
            std::vector<double> m2, e2;
            std::vector<uint8_t> f2;
            for (int64_t p = 0; p < merged.pairs(); ++p)
                for (int64_t row = 0; row < merged.rows; ++row) {
                    for (int64_t c = 0; c < extra; ++c) {
                        m2.push_back(kNaN);
                        e2.push_back(kNaN);
                        if (merged.estimated) f2.push_back(0);
                    }
                    for (int64_t c = 0; c < merged.cols; ++c) {
                        const size_t k = static_cast<size_t>(p * oldCells + row * merged.cols + c);
                        m2.push_back(merged.metric[k]);
                        e2.push_back(merged.primary[k]);
                        if (merged.estimated) f2.push_back(k < merged.flagged.size() ? merged.flagged[k] : 0);
                    }
                }
            // The checked cells' flat indices move with their columns.
            for (int64_t& cell : merged.checkCells)
                if (cell >= 0) cell = (cell / merged.cols) * C + cell % merged.cols + extra;
            merged.metric = std::move(m2);
            merged.primary = std::move(e2);
            merged.flagged = std::move(f2);
            merged.cols = C;
            merged.meta["column_labels"] = meta["column_labels"];
        }
        std::vector<int64_t> ckCells;
        std::vector<double> ckEstimate, ckExact, ckSpearman, ckRecall;
        if (checkWidth > 0) {
            ckCells = checkCells.values<int64_t>();
            ckEstimate = parseNpy(members.at("check_estimate.npy")).values<double>();
            ckExact = parseNpy(members.at("check_exact.npy")).values<double>();
            ckSpearman = parseNpy(members.at("check_spearman.npy")).values<double>();
            ckRecall = parseNpy(members.at("check_recall.npy")).values<double>();
        }
        for (int64_t p = 0; p < P; ++p) {
            const int64_t ln = lines[static_cast<size_t>(p)];
            if (!seen.insert(ln).second)
                throw std::invalid_argument("line " + std::to_string(ln) +
                                            " of the pairs file is in two of the files ('" + path +
                                            "' and an earlier one): each pair must be covered once");
            for (int64_t row = 0; row < merged.rows; ++row)
                for (int64_t c = 0; c < merged.cols; ++c) {
                    const int64_t src = c - (merged.cols - C);
                    const bool in = src >= 0 && src < C;
                    const size_t k = static_cast<size_t>(p * merged.rows * C + row * C + (in ? src : 0));
                    merged.metric.push_back(in ? mv[k] : kNaN);
                    merged.primary.push_back(in ? ev[k] : kNaN);
                    if (merged.estimated) merged.flagged.push_back(in && k < fv.size() ? fv[k] : 0);
                }
            for (int64_t j = 0; j < checkWidth; ++j) {
                const size_t k = static_cast<size_t>(p * checkWidth + j);
                const int64_t cell = ckCells[k];
                merged.checkCells.push_back(cell < 0 ? -1 : (cell / C) * merged.cols + cell % C + (merged.cols - C));
                merged.checkEstimate.push_back(ckEstimate[k]);
                merged.checkExact.push_back(ckExact[k]);
            }
            if (checkWidth > 0) {
                merged.checkSpearman.push_back(ckSpearman[static_cast<size_t>(p)]);
                merged.checkRecall.push_back(ckRecall[static_cast<size_t>(p)]);
            }
            merged.lines.push_back(ln);
            merged.clean.push_back(cm[static_cast<size_t>(p)]);
            merged.corrupt.push_back(km[static_cast<size_t>(p)]);
            merged.meta["pairs"].push_back(meta["pairs"][static_cast<size_t>(p)]);
        }
        for (const auto& s : meta.value("skipped", json::array()))
            if (skippedLines.insert(s["line"].get<int64_t>()).second) skipped.push_back(s);
    }
    // Pairs in the order of their lines, whatever the order of the files: the merged file (and its
    // bootstrap) is the one an unsharded run writes.
    {
        const int64_t P = merged.pairs(), cells = merged.rows * merged.cols, W = merged.checkWidth;
        std::vector<size_t> order(static_cast<size_t>(P));
        std::iota(order.begin(), order.end(), size_t{0});
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return merged.lines[a] < merged.lines[b]; });
        auto permute = [&](auto& v, int64_t width) {
            if (v.empty()) return;
            auto copy = v;
            for (size_t i = 0; i < order.size(); ++i)
                std::copy_n(copy.begin() + static_cast<int64_t>(order[i]) * width, width,
                            v.begin() + static_cast<int64_t>(i) * width);
        };
        permute(merged.metric, cells);
        permute(merged.primary, cells);
        permute(merged.flagged, cells);
        permute(merged.checkCells, W);
        permute(merged.checkEstimate, W);
        permute(merged.checkExact, W);
        permute(merged.checkSpearman, 1);
        permute(merged.checkRecall, 1);
        permute(merged.clean, 1);
        permute(merged.corrupt, 1);
        permute(merged.lines, 1);
        json pairs = json::array();
        for (size_t i : order)
            pairs.push_back(merged.meta["pairs"][i]);
        merged.meta["pairs"] = pairs;
    }
    const int64_t usable = merged.meta.value("pairs_usable", int64_t{0});
    merged.meta["skipped"] = skipped;
    merged.meta.erase("shard");
    merged.meta.erase("stopped_by");
    merged.meta["merged_from"] = inputs.size();
    merged.meta["complete"] = merged.pairs() == usable;
    writeResult(merged, bootstrap, seed, out.toStdString(), QString());
    std::printf("merged %lld pairs of %lld usable from %lld files%s\nwrote %s\n",
                static_cast<long long>(merged.pairs()), static_cast<long long>(usable),
                static_cast<long long>(inputs.size()), merged.pairs() == usable ? "" : " (incomplete: pairs missing)",
                qPrintable(out));
    printSummary(merged, bootstrap, seed);
    return 0;
}

} // namespace gwb::app
