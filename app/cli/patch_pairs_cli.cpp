// `gwb patch --pairs` and `gwb patch merge` on the command line: the run itself, the file and the
// merge are the engine's (gwb/engine/patch_pairs_run.h); here the progress line, Ctrl-C and the
// printed summary.

#include "cli/patch_pairs_cli.h"

#include "cli/cli_args.h"
#include "cli/pairs_summary.h"
#include "cli/stop_signals.h"

#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patch_pairs.h"

#include <QStringList>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace gwb::app {
namespace {

using namespace gwb::engine;
using gwb::app::cli::number;
using gwb::app::cli::shown;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
std::atomic<bool> g_stopPairs{false};

void printSummary(const PairsResult& r, int bootstrap, uint64_t seed) {
    const PairsEstimates e = estimatePairs(r.metric, r.clean, r.corrupt, r.patchMode, r.pairs(), r.rows * r.cols,
                                           r.minDifference, bootstrap, seed);
    const size_t C = static_cast<size_t>(r.cols);
    printPairsEstimates(
        e, [&](size_t i) { return r.rowLabels[i / C] + ", " + r.colLabels[i % C]; }, r.estimated);
}

void printSkipped(const std::vector<SkippedLine>& skipped) {
    for (const SkippedLine& s : skipped)
        std::printf("  skipped line %lld: %s\n", static_cast<long long>(s.line), s.reason.c_str());
}

} // namespace

int runPatchPairs(const PairsCliOptions& cli) {
    const PairsRunOptions& o = cli.run;
    gwb::engine::checkBootstrap(o.bootstrap);
    if (o.shardCount < 1 || o.shardIndex < 0 || o.shardIndex >= o.shardCount)
        throw std::invalid_argument("--shard must be i/n with 0 <= i < n");
    const Model m = gwb::engine::loadOrImportModel(o.modelFile, cli.device.toStdString()).model;
    PairsFile file;
    try {
        file = readPairsFile(o.pairsPath);
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
    const int64_t from = r.shardFirst, to = r.shardEnd;
    if (!complete) r.stoppedBy = StopSignals::name();
    writePairsResult(r, o.bootstrap, o.seed, cli.out.toStdString(), cli.data.toStdString());
    std::printf(
        "%s: site %s, mode %s; %lld pairs used of %lld lines (%zu skipped)%s\n", m.displayName().c_str(),
        r.site.c_str(), r.mode.c_str(), static_cast<long long>(P), static_cast<long long>(file.lines), r.skipped.size(),
        o.shardCount > 1 ? (" in shard " + std::to_string(o.shardIndex) + "/" + std::to_string(o.shardCount)).c_str()
                         : "");
    printSkipped(r.skipped);
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
                    o.check, o.check, shown(nsp ? sp / static_cast<double>(nsp) : kNaN).c_str(), o.check,
                    shown(nrc ? rc / static_cast<double>(nrc) : kNaN).c_str(), static_cast<long long>(P));
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
        std::printf("stopped by %s after %lld of %lld pairs: wrote them to %s (complete: false)\n", StopSignals::name(),
                    static_cast<long long>(P), static_cast<long long>(to - from), qPrintable(cli.out));
        return StopSignals::exitCode(130);
    }
    std::printf("wrote %s%s%s\n", qPrintable(cli.out), cli.data.isEmpty() ? "" : ", ", qPrintable(cli.data));
    return 0;
}

int runPatchMerge(const QStringList& inputs, const QString& out, int bootstrap, uint64_t seed, bool seedSet,
                  bool bootstrapSet) {
    std::vector<std::string> paths;
    for (const QString& in : inputs)
        paths.push_back(in.toStdString());
    const PairsResult merged = mergePairsFiles(paths, bootstrap, seed, seedSet, bootstrapSet);
    const int64_t usable = merged.usable;
    writePairsResult(merged, bootstrap, seed, out.toStdString());
    std::printf("merged %lld pairs of %lld usable from %lld files%s\nwrote %s\n",
                static_cast<long long>(merged.pairs()), static_cast<long long>(usable),
                static_cast<long long>(inputs.size()), merged.pairs() == usable ? "" : " (incomplete: pairs missing)",
                qPrintable(out));
    printSummary(merged, bootstrap, seed);
    return 0;
}

} // namespace gwb::app
