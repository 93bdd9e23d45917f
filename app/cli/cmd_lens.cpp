// gwb lens fit | merge | eval: tuned and Jacobian lenses (gwb/engine/lens.h) from the command line.
// The options are the engine's tables (lensFitOptions, lensEvalOptions), with the requests' defaults.

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "common/option_table.h"
#include "cli/stop_signals.h"

#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/lens.h"

#include <QCommandLineParser>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace gwb::engine;

std::atomic<bool> g_stop{false};

std::string clock(double s) {
    if (!std::isfinite(s) || s < 0) return "?";
    const long t = std::lround(s);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
    return buf;
}

std::vector<std::string> corpus(const QCommandLineParser& p, const QCommandLineOption& o) {
    std::vector<std::string> files;
    for (const QString& f : p.values(o))
        files.push_back(f.toStdString());
    // `--corpus texts/*.txt`: the shell expands the glob, the files after the first are positional.
    for (const QString& f : p.positionalArguments())
        files.push_back(f.toStdString());
    return files;
}

int lensFit(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Fit a tuned lens (Belrose et al. 2023) or a Jacobian lens (Gurnee et al. 2026) of a model over text.\n"
        "The Jacobian lens is written as TransformerLens's JacobianLens.load reads it (jacobian_lens.pt), the\n"
        "tuned lens as tuned-lens's TunedLens loads it (config.json + params.pt). Ctrl-C or SIGTERM stops after\n"
        "the current prompt or step and writes the partial lens (exit status 130 or 143); --resume carries on."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption text(QStringLiteral("corpus"), QStringLiteral("UTF-8 text file (repeat for several)."),
                                  QStringLiteral("FILE"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Lens folder."), QStringLiteral("DIR"));
    const QCommandLineOption resume(QStringLiteral("resume"),
                                    QStringLiteral("Carry on from a partial lens of the same fit (may be --out)."),
                                    QStringLiteral("DIR"));
    const std::vector<QCommandLineOption> table = gwb::app::commandLineOptions(lensFitOptions());
    p.addOptions({model, text, out, resume, gwb::app::deviceOption(), gwb::app::threadsOption()});
    for (const auto& o : table)
        p.addOption(o);
    p.process(args);
    LensFitRequest r;
    r.files = corpus(p, text);
    gwb::app::readCommandLineOptions(p, table, lensFitOptions(), r);
    if (!p.isSet(out)) throw std::invalid_argument("--out is required");
    r.validate();
    const std::string dir = p.value(out).toStdString();
    checkLensFolder(dir);
    setThreads(p.value(QStringLiteral("threads")).toInt());
    const Model m = loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(),
                                      p.value(QStringLiteral("device")).toStdString())
                        .model;
    std::optional<Lens> earlier;
    if (p.isSet(resume)) {
        earlier = readLens(p.value(resume).toStdString());
        std::fprintf(stderr, "resuming: %s\n",
                     (earlier->kind == LensKind::Jacobian ? std::to_string(earlier->nPrompts) + " prompts"
                                                          : std::to_string(earlier->stepsDone) + " steps")
                         .c_str());
    }
    gwb::app::ProgressLine line;
    g_stop = false;
    gwb::app::StopSignals signals(g_stop);
    const Lens lens = fitLens(
        m, r,
        [&line, &r](const LensProgress& pr) {
            if (!line.due(pr.seconds, pr.done == pr.total)) return true;
            const double eta =
                pr.done > 0 ? pr.seconds / static_cast<double>(pr.done) * static_cast<double>(pr.total - pr.done) : NAN;
            std::fprintf(stderr, "%s%s %lld/%lld", line.start(), r.kind == LensKind::Jacobian ? "prompts" : "steps",
                         static_cast<long long>(pr.done), static_cast<long long>(pr.total));
            if (r.kind == LensKind::Tuned) std::fprintf(stderr, "  KL summed over layers %.4f", pr.loss);
            std::fprintf(stderr, "  elapsed %s  ETA %s%s", clock(pr.seconds).c_str(), clock(eta).c_str(), line.end());
            std::fflush(stderr);
            return true;
        },
        &g_stop, earlier ? &*earlier : nullptr,
        [](const std::string& w) { std::fprintf(stderr, "\nwarning: %s\n", w.c_str()); });
    writeLens(lens, dir);
    std::fprintf(stderr, "%stime: %.1f s\n", line.tty() ? "\n" : "", lens.seconds);
    if (lens.kind == LensKind::Jacobian)
        std::printf("%s lens of %s: %lld prompts of %lld planned for shard %d/%d\n", lensKindName(lens.kind).c_str(),
                    lens.modelName.c_str(), static_cast<long long>(lens.nPrompts),
                    static_cast<long long>(lens.promptsPlanned), r.shardIndex, r.shardCount);
    else
        std::printf("%s lens of %s: %lld of %lld steps over %lld windows\n", lensKindName(lens.kind).c_str(),
                    lens.modelName.c_str(), static_cast<long long>(lens.stepsDone), static_cast<long long>(r.steps),
                    static_cast<long long>(lens.nPrompts));
    if (!lens.complete) std::printf("partial: stopped by %s; --resume %s carries on\n", signals.name(), dir.c_str());
    std::printf("wrote %s\n", dir.c_str());
    return lens.complete ? 0 : signals.exitCode(130);
}

int lensMerge(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Merge Jacobian lens shards (from --shard i/n fits) into one lens:\n"
                                               "the prompt-weighted mean of their matrices. A prompt in two shards "
                                               "is an error."));
    p.addHelpOption();
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Merged lens folder."), QStringLiteral("DIR"));
    p.addOption(out);
    p.addPositionalArgument(QStringLiteral("shards"), QStringLiteral("Lens folders to merge."),
                            QStringLiteral("A B ..."));
    p.process(args);
    if (!p.isSet(out) || p.positionalArguments().isEmpty())
        throw std::invalid_argument("usage: gwb lens merge A B ... --out DIR");
    checkLensFolder(p.value(out).toStdString());
    std::vector<Lens> shards;
    for (const QString& f : p.positionalArguments())
        shards.push_back(readLens(f.toStdString()));
    const Lens merged = mergeLenses(shards);
    writeLens(merged, p.value(out).toStdString());
    std::printf("prompts: %lld of %lld%s\nwrote %s\n", static_cast<long long>(merged.nPrompts),
                static_cast<long long>(merged.promptsPlanned), merged.complete ? " (complete)" : " (partial)",
                qPrintable(p.value(out)));
    return 0;
}

int lensEval(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Evaluate the logit lens and fitted lenses of a model over held-out text: per lens and residual state,\n"
        "KL(p_final || p_lens), cross-entropy against the next token, top-1 agreement with the final layer and\n"
        "the next token's rank. Writes an NPZ with meta.json (numpy.load reads it)."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption lens(QStringLiteral("lens"), QStringLiteral("Lens folder (repeat for several)."),
                                  QStringLiteral("DIR"));
    const QCommandLineOption text(QStringLiteral("corpus"), QStringLiteral("Held-out UTF-8 text file (repeat)."),
                                  QStringLiteral("FILE"));
    const std::vector<QCommandLineOption> table = gwb::app::commandLineOptions(lensEvalOptions());
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Result (.npz)."), QStringLiteral("FILE"));
    p.addOptions({model, lens, text, out, gwb::app::deviceOption(), gwb::app::threadsOption()});
    for (const auto& o : table)
        p.addOption(o);
    p.process(args);
    LensEvalRequest r;
    r.files = corpus(p, text);
    if (r.files.empty()) throw std::invalid_argument("no text: give --corpus files");
    gwb::app::readCommandLineOptions(p, table, lensEvalOptions(), r);
    setThreads(p.value(QStringLiteral("threads")).toInt());
    std::vector<Lens> lenses;
    std::vector<std::string> folders;
    for (const QString& f : p.values(lens)) {
        folders.push_back(f.toStdString());
        lenses.push_back(readLens(folders.back()));
    }
    const Model m = loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(),
                                      p.value(QStringLiteral("device")).toStdString())
                        .model;
    const LensEvalResult res = evaluateLenses(m, lenses, folders, r);
    std::printf("%s: %lld prompts, %lld positions; the model's own cross-entropy %.4f nats\n", res.modelName.c_str(),
                static_cast<long long>(res.prompts), static_cast<long long>(res.positions), res.finalCe.data[0]);
    for (size_t l = 0; l < res.lenses.size(); ++l)
        if (!res.sameModel[l])
            std::printf("note: the %s lens %s was fitted on %s, not on this model's weights\n", res.lenses[l].c_str(),
                        res.lensFolders[l].c_str(), res.lensModels[l].c_str());
    std::printf("%-9s %5s %10s %10s %8s %10s\n", "lens", "state", "KL", "CE", "top-1", "rank");
    for (size_t l = 0; l < res.lenses.size(); ++l)
        for (int64_t s = 0; s < res.nLayers; ++s)
            if (!std::isnan(res.kl.at2(static_cast<int64_t>(l), s)))
                std::printf("%-9s %5lld %10.4f %10.4f %8.3f %10.1f\n", res.lenses[l].c_str(), static_cast<long long>(s),
                            res.kl.at2(static_cast<int64_t>(l), s), res.ce.at2(static_cast<int64_t>(l), s),
                            res.top1.at2(static_cast<int64_t>(l), s), res.rank.at2(static_cast<int64_t>(l), s));
    if (p.isSet(out)) {
        writeLensEval(res, p.value(out).toStdString());
        std::printf("wrote %s\n", qPrintable(p.value(out)));
    }
    return 0;
}

int runLens(const QStringList& args) {
    const QString sub = args.size() > 1 ? args.at(1) : QString();
    if (sub != QLatin1String("fit") && sub != QLatin1String("merge") && sub != QLatin1String("eval")) {
        std::fprintf(stderr, "usage: gwb lens fit|merge|eval ... (gwb lens fit --help)\n");
        return sub == QLatin1String("--help") || sub == QLatin1String("-h") ? 0 : 1;
    }
    QStringList rest = args;
    rest[0] = rest[0] + QLatin1Char(' ') + sub;
    rest.removeAt(1);
    try {
        if (sub == QLatin1String("fit")) return lensFit(rest);
        if (sub == QLatin1String("merge")) return lensMerge(rest);
        return lensEval(rest);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb lens %s: %s\n", qPrintable(sub), e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kLensCommand{
    "lens", "Tuned and Jacobian lenses: fit (--shard i/n), merge shards, eval over held-out text", runLens, false};
} // namespace gwb::app
