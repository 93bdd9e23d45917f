#include "cli/patch_pairs_run.h"

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
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

namespace gwb::app {
namespace {

using namespace gwb::engine;
using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
std::atomic<bool> g_stopPairs{false};

/// Sites whose columns are token positions (aligned at the metric position across pairs).
bool positional(PatchSite s) {
    return s != PatchSite::Offset && s != PatchSite::Head;
}

std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

/// Everything a pairs file holds, in memory: per-pair arrays (P x rows x cols) and meta.
struct PairsResult {
    int64_t rows = 0, cols = 0;
    std::vector<double> metric, effect; ///< P x rows x cols
    std::vector<double> clean, corrupt; ///< P
    std::vector<int64_t> lines;         ///< P
    json meta;                          ///< without the summary's numbers
    int64_t pairs() const { return static_cast<int64_t>(lines.size()); }
};

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
    const CellSummary s = summarizeOverPairs(r.effect, P, cells, bootstrap, seed);
    NpzWriter npz;
    npz.add("metric", Array<double>({P, r.rows, r.cols}, r.metric));
    npz.add("effect", Array<double>({P, r.rows, r.cols}, r.effect));
    npz.add("clean_metric", Array<double>({P}, r.clean));
    npz.add("corrupt_metric", Array<double>({P}, r.corrupt));
    npz.add("line", Array<int64_t>({P}, r.lines));
    npz.add("effect_mean", Array<double>({r.rows, r.cols}, s.mean));
    npz.add("effect_ci_low", Array<double>({r.rows, r.cols}, s.low));
    npz.add("effect_ci_high", Array<double>({r.rows, r.cols}, s.high));
    npz.add("effect_n", Array<int64_t>({r.rows, r.cols}, s.n));
    json meta = r.meta;
    meta["bootstrap"] = bootstrap;
    meta["seed"] = seed;
    meta["interval"] = "95% percentile bootstrap over pairs";
    meta["definitions"] = definitions(bootstrap, seed);
    npz.addFile("meta.json", meta.dump(2));
    npz.write(path);
    if (data.isEmpty()) return;
    // Tidy: one row per pair x cell, then one summary row per cell (pair "all").
    const auto& rowLabels = r.meta["row_labels"];
    const auto& colLabels = r.meta["column_labels"];
    std::string csv = "pair,line,row,column,metric,effect,mean,ci_low,ci_high,n\n";
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < cells; ++i) {
            const size_t k = static_cast<size_t>(p * cells + i);
            csv += std::to_string(p) + "," + std::to_string(r.lines[static_cast<size_t>(p)]) + "," +
                   csvField(rowLabels[static_cast<size_t>(i / r.cols)].get<std::string>()) + "," +
                   csvField(colLabels[static_cast<size_t>(i % r.cols)].get<std::string>()) + "," + number(r.metric[k]) +
                   "," + number(r.effect[k]) + ",,,,\n";
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
    const CellSummary s = summarizeOverPairs(r.effect, r.pairs(), cells, bootstrap, seed);
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
    std::printf("top %zu cells by |mean effect| (95%% bootstrap interval over pairs, n):\n",
                std::min<size_t>(5, order.size()));
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
    // Each pair as gwb patch would run it alone; a pair it would refuse is skipped, with the reason.
    struct Ready {
        const PatchPair* pair;
        PatchRequest request;
    };
    std::vector<Ready> ready;
    std::vector<SkippedLine> skipped = file.skipped;
    for (const PatchPair& pair : file.pairs) {
        PatchInput in;
        in.clean = QString::fromStdString(pair.clean);
        in.corrupt = QString::fromStdString(pair.corrupt);
        in.answer = QString::fromStdString(pair.answer);
        in.wrong = QString::fromStdString(pair.wrong);
        in.site = o.site;
        in.mode = o.mode;
        in.position = pair.position >= 0 ? pair.position : o.position;
        try {
            PatchRequest r = preparePatchRequest(m, in);
            r.layer = o.layer;
            r.offset = o.offset;
            r.head = o.head;
            validatePatchRequest(m, r);
            ready.push_back({&pair, std::move(r)});
        } catch (const std::invalid_argument& e) {
            skipped.push_back({pair.line, e.what()});
        }
    }
    std::sort(skipped.begin(), skipped.end(),
              [](const SkippedLine& a, const SkippedLine& b) { return a.line < b.line; });
    if (ready.empty()) {
        std::string why;
        for (size_t k = 0; k < skipped.size() && k < 3; ++k)
            why += (k ? "; " : "") + std::string("line ") + std::to_string(skipped[k].line) + ": " + skipped[k].reason;
        throw std::invalid_argument("the pairs file has no usable pair for this model (" + why + ")");
    }
    const int64_t usable = static_cast<int64_t>(ready.size());
    const size_t from = static_cast<size_t>(usable * o.shardIndex / o.shardCount);
    const size_t to = static_cast<size_t>(usable * (o.shardIndex + 1) / o.shardCount);

    g_stopPairs = false;
    const StopSignals signals(g_stopPairs);
    ProgressLine line;
    const auto started = std::chrono::steady_clock::now();
    // Sweeps first (their sizes fix the columns), then the aligned arrays. A pair's sweep is small
    // (a few-token prompt): on the CPU the pairs run side by side, one single-threaded worker a
    // core, each with its own copy of the model (a model runs one sweep at a time).
    const size_t count = to - from;
    const int workers =
        m.device() == "cpu"
            ? static_cast<int>(std::clamp<size_t>(static_cast<size_t>(std::max(1, gwb::engine::threads())), 1, count))
            : 1;
    std::vector<Model> models{m};
    for (int w = 1; w < workers; ++w)
        models.push_back(Model::load(o.modelFile.toStdString(), o.device.toStdString()));
    std::vector<std::optional<PatchSweep>> results(count);
    std::vector<std::string> errors(count);
    std::atomic<size_t> next{0}, finished{0};
    {
        const std::optional<gwb::engine::ScopedThreads> single =
            workers > 1 ? std::optional<gwb::engine::ScopedThreads>(std::in_place, 1) : std::nullopt;
        auto work = [&](int w) {
            for (size_t k; !g_stopPairs.load() && (k = next.fetch_add(1)) < count; ++finished) {
                try {
                    results[k] = runPatchSweep(models[static_cast<size_t>(w)], ready[from + k].request);
                } catch (const std::invalid_argument& e) {
                    errors[k] = e.what();
                }
            }
        };
        std::vector<std::thread> pool;
        for (int w = 1; w < workers; ++w)
            pool.emplace_back(work, w);
        std::thread progress([&] {
            for (;;) {
                const size_t n = finished.load();
                const bool last = n >= count || g_stopPairs.load();
                const double seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                if ((seconds > 1 || last) && line.due(seconds, last)) {
                    std::fprintf(stderr, "%spairs %zu/%zu  elapsed %.0f s%s", line.start(), n, count, seconds,
                                 line.end());
                    std::fflush(stderr);
                }
                if (last) return;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        });
        work(0);
        for (std::thread& t : pool)
            t.join();
        finished = count; // let the progress thread finish even after a stop
        progress.join();
    }
    if (line.tty()) std::fprintf(stderr, "\n");
    std::vector<PatchSweep> sweeps;
    std::vector<const Ready*> done;
    for (size_t k = 0; k < count; ++k) {
        if (!errors[k].empty()) skipped.push_back({ready[from + k].pair->line, errors[k]});
        if (!results[k]) continue;
        sweeps.push_back(std::move(*results[k]));
        done.push_back(&ready[from + k]);
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
    r.effect.assign(static_cast<size_t>(P * cells), kNaN);
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
                r.effect[to_] = s.effect[from_];
            }
        r.clean.push_back(s.cleanMetric);
        r.corrupt.push_back(s.corruptMetric);
        r.lines.push_back(rd.pair->line);
        const auto answer = pieceTexts(m, {rd.request.answer}).front();
        const auto wrong = pieceTexts(m, {rd.request.wrong}).front();
        json entry = {{"line", rd.pair->line},
                      {"clean", rd.pair->clean},
                      {"corrupt", rd.pair->corrupt},
                      {"answer", {{"typed", rd.pair->answer}, {"piece", answer}, {"id", rd.request.answer}}},
                      {"wrong", {{"typed", rd.pair->wrong}, {"piece", wrong}, {"id", rd.request.wrong}}},
                      {"tokens", s.T},
                      {"metric_position", s.metricPosition},
                      {"clean_metric", s.cleanMetric},
                      {"corrupt_metric", s.corruptMetric},
                      {"effect_defined", s.effectDefined}};
        if (!rd.pair->tags.empty()) entry["tags"] = rd.pair->tags;
        pairsMeta.push_back(std::move(entry));
    }
    std::sort(skipped.begin(), skipped.end(),
              [](const SkippedLine& a, const SkippedLine& b) { return a.line < b.line; });
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
    if (!complete) r.meta["stopped_by"] = StopSignals::name();
    writeResult(r, o.bootstrap, o.seed, o.out.toStdString(), o.data);

    std::printf("%s: site %s, mode %s; %lld pairs used of %lld lines (%zu skipped)%s\n", m.displayName().c_str(),
                patchSiteName(first.site), patchModeName(first.mode), static_cast<long long>(P),
                static_cast<long long>(file.lines), skipped.size(),
                o.shardCount > 1
                    ? (" in shard " + std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount)).c_str()
                    : "");
    printSkipped(r.meta["skipped"]);
    printSummary(r, o.bootstrap, o.seed);
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
        const NpyArray metric = parseNpy(members.at("metric.npy"));
        if (metric.shape.size() != 3) throw std::invalid_argument("'" + path + "': metric is not pairs x rows x cols");
        if (merged.meta.is_null()) {
            merged.meta = meta;
            merged.rows = metric.shape[1];
            merged.cols = metric.shape[2];
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
        }
        // Position columns of shards may differ in width (their longest pair): right-align them.
        const int64_t P = metric.shape[0], C = metric.shape[2];
        const auto mv = metric.values<double>();
        const auto ev = parseNpy(members.at("effect.npy")).values<double>();
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
            for (int64_t p = 0; p < merged.pairs(); ++p)
                for (int64_t row = 0; row < merged.rows; ++row) {
                    for (int64_t c = 0; c < extra; ++c) {
                        m2.push_back(kNaN);
                        e2.push_back(kNaN);
                    }
                    for (int64_t c = 0; c < merged.cols; ++c) {
                        m2.push_back(merged.metric[static_cast<size_t>(p * oldCells + row * merged.cols + c)]);
                        e2.push_back(merged.effect[static_cast<size_t>(p * oldCells + row * merged.cols + c)]);
                    }
                }
            merged.metric = std::move(m2);
            merged.effect = std::move(e2);
            merged.cols = C;
            merged.meta["column_labels"] = meta["column_labels"];
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
                    merged.effect.push_back(in ? ev[k] : kNaN);
                }
            merged.lines.push_back(ln);
            merged.clean.push_back(cm[static_cast<size_t>(p)]);
            merged.corrupt.push_back(km[static_cast<size_t>(p)]);
            merged.meta["pairs"].push_back(meta["pairs"][static_cast<size_t>(p)]);
        }
        for (const auto& s : meta.value("skipped", json::array()))
            if (skippedLines.insert(s["line"].get<int64_t>()).second) skipped.push_back(s);
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
