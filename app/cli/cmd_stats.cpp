// gwb stats: corpus statistics of a model (and a baseline) over text files, shardable;
// gwb stats merge: adds shards into one file.

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "common/option_table.h"
#include "cli/stop_signals.h"

#include "gwb/engine/import.h"
#include "gwb/engine/corpus_run.h"
#include "gwb/engine/device.h"

#include <QCommandLineParser>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

namespace {

std::atomic<bool> g_stop{false};

std::string clock(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = std::lround(s);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    return buf;
}

int statsMerge(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Merge statistics shards (from --shard i/n runs) into one file.\n"
                                               "Counts and sums add exactly; a window covered twice is an error."));
    p.addHelpOption();
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Merged statistics (.npz)."),
                                 QStringLiteral("FILE"));
    p.addOption(out);
    p.addPositionalArgument(QStringLiteral("shards"), QStringLiteral("Statistics files to merge."),
                            QStringLiteral("A.npz B.npz ..."));
    p.process(args);
    if (!p.isSet(out) || p.positionalArguments().isEmpty())
        throw std::invalid_argument("usage: gwb stats merge A.npz B.npz ... --out S.npz");
    gwb::engine::CorpusStats all;
    bool first = true;
    for (const QString& f : p.positionalArguments()) {
        auto s = gwb::engine::CorpusStats::read(f.toStdString());
        if (first)
            all = std::move(s);
        else
            all.merge(s);
        first = false;
    }
    all.write(p.value(out).toStdString());
    std::printf("windows: %zu of %lld%s\n", all.windows.size(), static_cast<long long>(all.windowsTotal),
                all.complete ? " (complete)" : " (partial: some windows are missing)");
    return 0;
}

int statsRun(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Stream text files window by window through a model and a baseline and accumulate\n"
                       "mergeable statistics (fixed-edge histograms, counts, sums, curves against position).\n"
                       "Ctrl-C or SIGTERM (a scheduler's time limit) stops after the current window and writes a\n"
                       "valid partial file, marked incomplete (exit status 130 or 143); --resume carries on from it."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption baseline(QStringLiteral("baseline"),
                                      QStringLiteral("Baseline model ('none' for none; default: the bundled "
                                                     "Transformer)."),
                                      QStringLiteral("FILE"), QStringLiteral("transformer"));
    const QCommandLineOption data(QStringLiteral("data"), QStringLiteral("UTF-8 text file (repeat for several)."),
                                  QStringLiteral("FILE"));
    const std::vector<QCommandLineOption> valued = gwb::app::commandLineOptions(gwb::engine::corpusOptions());
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Statistics file (.npz)."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption resume(QStringLiteral("resume"),
                                    QStringLiteral("Carry on from a partial statistics file of the same run (same "
                                                   "models, data, window settings and shard): its windows are "
                                                   "kept, the rest are computed, and --out gets both."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, baseline, data});
    for (const QCommandLineOption& o : valued)
        p.addOption(o);
    p.addOptions({out, resume, device, threads});
    p.process(args);
    using namespace gwb::engine;
    if (!p.isSet(data)) throw std::invalid_argument("--data is required");
    if (!p.isSet(out)) throw std::invalid_argument("--out is required");
    auto integer = [&](const QCommandLineOption& o) {
        bool ok = false;
        const qlonglong v = p.value(o).toLongLong(&ok);
        if (!ok || v < 0) throw std::invalid_argument("--" + o.names().first().toStdString() + " needs a number >= 0");
        return static_cast<int64_t>(v);
    };
    CorpusOptions o;
    for (const QString& f : p.values(data))
        o.files.push_back(f.toStdString());
    // `--data valid/*.txt`: the shell expands the glob, so every file after the first arrives as a
    // positional argument; they are data files too (dropping them silently lost most of a corpus).
    for (const QString& f : p.positionalArguments())
        o.files.push_back(f.toStdString());
    gwb::app::readCommandLineOptions(p, valued, corpusOptions(), o);
    setThreads(static_cast<int>(integer(threads)));
    const std::string dev = p.value(device).toStdString();
    const Model m = gwb::engine::loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(), dev).model;
    Model b;
    if (p.value(baseline) != QLatin1String("none"))
        b = gwb::engine::loadOrImportModel(gwb::app::modelArgument(p.value(baseline)).toStdString(), dev).model;
    std::optional<CorpusStats> earlier;
    if (p.isSet(resume)) {
        earlier = CorpusStats::read(p.value(resume).toStdString());
        if (earlier->shardIndex != o.shardIndex || earlier->shardCount != o.shardCount)
            throw std::invalid_argument(p.value(resume).toStdString() + " covers shard " +
                                        std::to_string(earlier->shardIndex) + "/" +
                                        std::to_string(earlier->shardCount) + ", not " + std::to_string(o.shardIndex) +
                                        "/" + std::to_string(o.shardCount));
        o.skipWindows = earlier->windows;
        std::fprintf(stderr, "resuming: %zu windows already in %s%s\n", earlier->windows.size(),
                     qPrintable(p.value(resume)), earlier->complete ? " (it is complete: nothing left to do)" : "");
    }
    CorpusProgress last;
    gwb::app::ProgressLine line;
    g_stop = false;
    gwb::app::StopSignals signals(g_stop); // Ctrl-C or SIGTERM: keep the windows done, write them
    const CorpusStats s = runCorpus(
        m, b.valid() ? &b : nullptr, o,
        [&last, &line](const CorpusProgress& pr) {
            last = pr;
            if (!line.due(pr.seconds, pr.windowsDone == pr.windowsTotal)) return true;
            const double rate = pr.seconds > 0 ? static_cast<double>(pr.tokensDone) / pr.seconds : 0;
            const double eta = pr.windowsDone > 0 ? pr.seconds / static_cast<double>(pr.windowsDone) *
                                                        static_cast<double>(pr.windowsTotal - pr.windowsDone)
                                                  : NAN;
            std::fprintf(stderr, "%swindows %lld/%lld  %.0f tokens/s  elapsed %s  ETA %s%s", line.start(),
                         static_cast<long long>(pr.windowsDone), static_cast<long long>(pr.windowsTotal), rate,
                         clock(pr.seconds).c_str(), clock(eta).c_str(), line.end());
            std::fflush(stderr);
            return true;
        },
        &g_stop, [](const std::string& w) { std::fprintf(stderr, "\nwarning: %s\n", w.c_str()); });
    std::fprintf(stderr, "%stime: %.1f s (forward passes %.1f s, analyses %.1f s, statistics %.1f s)\n",
                 line.tty() ? "\n" : "", last.seconds, last.traceSeconds, last.analysisSeconds, last.accumulateSeconds);
    CorpusStats result = s;
    if (earlier) { // the earlier windows and the new ones, as one file of this shard
        const int64_t planned = s.windowsPlanned;
        result = *earlier;
        result.merge(s); // refuses files of other models, data or window settings
        result.shardIndex = s.shardIndex;
        result.shardCount = s.shardCount;
        result.windowsPlanned = planned;
        result.complete = static_cast<int64_t>(result.windows.size()) == planned;
    }
    const CorpusStats& written = result;
    written.write(p.value(out).toStdString());
    for (const char* role : {"model", "baseline"}) {
        const auto bits = written.totals.find(std::string(role) + ".bits");
        const auto chars = written.totals.find(std::string(role) + ".characters");
        if (bits != written.totals.end() && chars != written.totals.end() && chars->second > 0)
            std::printf("%s bits per character: %.4f\n", role, bits->second / chars->second);
    }
    std::printf("windows: %zu of %lld planned for shard %d/%d%s\nwrote %s\n", written.windows.size(),
                static_cast<long long>(written.windowsPlanned), s.shardIndex, s.shardCount,
                written.complete ? ""
                                 : (std::string(" (partial: stopped by ") + signals.name() + "; --resume " +
                                    p.value(out).toStdString() + " carries on)")
                                       .c_str(),
                qPrintable(p.value(out)));
    return written.complete ? 0 : signals.exitCode(130);
}

int runStats(const QStringList& args) {
    const bool merge = args.size() > 1 && args.at(1) == QLatin1String("merge");
    QStringList rest = args;
    if (merge) {
        rest[0] = rest[0] + QStringLiteral(" merge");
        rest.removeAt(1);
    }
    try {
        return merge ? statsMerge(rest) : statsRun(rest);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb stats%s: %s\n", merge ? " merge" : "", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kStatsCommand{"stats", "Corpus statistics over text files (--shard i/n; 'stats merge' adds shards)",
                            runStats, false};
} // namespace gwb::app
