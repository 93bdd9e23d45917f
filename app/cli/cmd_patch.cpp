// gwb patch: causal tests on one model. Activation patching (a corrupted prompt run with one
// site's value taken from the clean run) or zero / mean ablation, swept over every layer and
// position (offset, head) of a site, written as an NPZ with meta.json and optionally a CSV.

#include "common/bundled_models.h"
#include "cli/cli_args.h"
#include "common/command_registry.h"
#include "cli/patch_pairs_cli.h"
#include "cli/stop_signals.h"

#include "gwb/engine/config.h"
#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_file.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/patching.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

using namespace gwb::engine;
using gwb::app::cli::checkWritable;
using gwb::app::cli::csvField;
using gwb::app::cli::intValue;
using gwb::app::cli::number;

std::string csvText(const PatchSweep& s) {
    std::string out = "row,column";
    if (s.hasMetric) out += ",metric,effect";
    if (!s.meanDeltaLogprob.empty()) out += ",mean_delta_logprob";
    out += "\n";
    for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.cols; ++c) {
            const size_t i = static_cast<size_t>(r * s.cols + c);
            out += csvField(s.rowLabels[static_cast<size_t>(r)]) + "," + csvField(s.colLabels[static_cast<size_t>(c)]);
            if (s.hasMetric) {
                out += ',';
                out += number(s.metric[i]);
                out += ',';
                out += number(s.effect[i]);
            }
            if (!s.meanDeltaLogprob.empty()) {
                out += ',';
                out += number(s.meanDeltaLogprob[i]);
            }
            out += "\n";
        }
    return out;
}

struct Context {
    std::string answerText, wrongText; ///< the metric's pieces as the vocabulary spells them
    gwb::engine::PatchText input;
    PatchFileContext file; ///< what meta.json says beside the sweep
};

void printSummary(const Model& model, const PatchSweep& s, const Context& ctx) {
    // First line: a normalised effect that is not defined, and why (effect_claims.h).
    if (s.hasMetric && !s.corrupt.empty() && !s.effectDefined)
        std::printf("note: no normalised effect: %s\n", s.effectNote.c_str());
    // A column's piece as the window names it: clean/corrupted where the two prompts differ there.
    const auto cleanPieces = gwb::engine::pieceTexts(model, s.clean);
    const auto corruptPieces = s.corrupt.empty() ? cleanPieces : gwb::engine::pieceTexts(model, s.corrupt);
    auto pieceAt = [&](int64_t t) -> std::string {
        const auto at = [t](const std::vector<std::string>& p) {
            return t >= 0 && t < static_cast<int64_t>(p.size())
                       ? gwb::app::cli::terminalPiece(p[static_cast<size_t>(t)])
                       : std::string();
        };
        const std::string c = at(cleanPieces), k = at(corruptPieces);
        return c == k ? k : c + "/" + k;
    };
    const int64_t pos = s.metricPosition >= 0 ? s.metricPosition : s.T - 1;
    if (s.estimated)
        std::printf("attribution patching: every value below is a first-order estimate from one backward pass, not "
                    "an exact run\n");
    std::printf("%s (%s): site %s, mode %s, %lld tokens, %lld x %lld cells\n", model.displayName().c_str(),
                model.config().kind == ModelKind::Grassmann ? "Grassmann" : "Transformer", patchSiteName(s.site),
                patchModeName(s.mode), static_cast<long long>(s.T), static_cast<long long>(s.rows),
                static_cast<long long>(s.cols));
    // Which value ranks the cells: the effect, else the metric's change, else the mean delta log p.
    std::vector<double> score(static_cast<size_t>(s.rows * s.cols), std::nan(""));
    std::string what;
    if (s.hasMetric) {
        std::printf("metric logit['%s'] - logit['%s'] at token %lld ('%s'):\n",
                    gwb::app::cli::terminalPiece(ctx.answerText).c_str(),
                    gwb::app::cli::terminalPiece(ctx.wrongText).c_str(), static_cast<long long>(pos),
                    pieceAt(pos).c_str());
        std::printf("  clean metric %s, corrupted metric %s\n", number(s.cleanMetric).c_str(),
                    number(s.corruptMetric).c_str());
        if (!s.effectDefined && s.corrupt.empty()) {
            std::printf("  no corrupted prompt: the normalised effect is undefined (written as NaN); the cells are "
                        "ranked by the metric's change\n");
            for (size_t i = 0; i < score.size(); ++i)
                score[i] = s.metric[i] - s.cleanMetric;
            what = "|metric - clean metric|";
        } else if (!s.effectDefined) {
            const bool patching = s.mode == PatchMode::Patch;
            std::printf("  |clean - corrupted| = %s is below --min-difference %s: the normalised effect (metric - "
                        "corrupted) / (clean - corrupted) is not defined (written as NaN; effect_defined false); the "
                        "cells are ranked by the raw effect in logits\n",
                        number(std::abs(s.cleanMetric - s.corruptMetric)).c_str(), number(s.minDifference).c_str());
            const double base = patching ? s.corruptMetric : s.cleanMetric;
            for (size_t i = 0; i < score.size(); ++i)
                score[i] = s.metric[i] - base;
            what = patching ? "|raw effect| (metric - corrupted metric, logits)"
                            : "|raw effect| (metric - clean metric, logits)";
        } else {
            score = s.effect;
            what = "|effect|";
        }
    } else {
        score = s.meanDeltaLogprob;
        what = "|mean delta log p of the next token|";
    }
    std::vector<size_t> order;
    for (size_t i = 0; i < score.size(); ++i)
        if (std::isfinite(score[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::abs(score[a]) > std::abs(score[b]); });
    if (order.empty()) {
        std::printf("no cell has a defined value\n");
        return;
    }
    std::printf("top %zu cells by %s:\n", std::min<size_t>(5, order.size()), what.c_str());
    for (size_t k = 0; k < order.size() && k < 5; ++k) {
        const size_t i = order[k];
        const int64_t r = static_cast<int64_t>(i) / s.cols, c = static_cast<int64_t>(i) % s.cols;
        std::string col = s.colLabels[static_cast<size_t>(c)];
        if (s.site != PatchSite::Offset && s.site != PatchSite::Head &&
            c < static_cast<int64_t>(corruptPieces.size()) && s.cols == s.T)
            col += " '" + pieceAt(c) + "'";
        std::printf("  %s, %s:", s.rowLabels[static_cast<size_t>(r)].c_str(), col.c_str());
        if (s.hasMetric && !s.effectDefined && !s.corrupt.empty())
            std::printf(" raw effect %s logits, metric %s\n", number(score[i]).c_str(), number(s.metric[i]).c_str());
        else if (s.hasMetric)
            std::printf(" effect %s, metric %s\n", std::isnan(s.effect[i]) ? "undefined" : number(s.effect[i]).c_str(),
                        number(s.metric[i]).c_str());
        else
            std::printf(" mean delta log p %s nats\n", number(s.meanDeltaLogprob[i]).c_str());
    }
}

std::atomic<bool> g_stop{false};

bool attributionMethod(const QString& m) {
    if (m.isEmpty() || m == QLatin1String("exact")) return false;
    if (m == QLatin1String("attribution")) return true;
    throw std::invalid_argument("--method must be exact or attribution, got '" + m.toStdString() + "'");
}

int runPatchMergeCommand(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Merge the shards of one gwb patch --pairs run (--shard i/n) into one file: the per-pair arrays side by "
        "side, the mean and bootstrap interval over all pairs recomputed (--bootstrap and --seed default to the "
        "shards'). A pair in two files is an error; the result is complete when every usable pair is in."));
    p.addHelpOption();
    p.addPositionalArgument(QStringLiteral("shards"), QStringLiteral("gwb patch --pairs files to merge."),
                            QStringLiteral("A.npz B.npz ..."));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output .npz file."), QStringLiteral("FILE"));
    const std::vector<QCommandLineOption> causal =
        gwb::app::commandLineOptions(gwb::engine::causalOptions(), {"bootstrap", "seed"});
    p.addOption(out);
    for (const QCommandLineOption& o : causal)
        p.addOption(o);
    p.process(args);
    try {
        if (!p.isSet(out)) throw std::invalid_argument("--out FILE.npz is required");
        checkWritable(p.value(out), "--out");
        gwb::engine::CausalOptions co;
        gwb::app::readCommandLineOptions(p, causal, gwb::engine::causalOptions(), co);
        return gwb::app::runPatchMerge(p.positionalArguments(), p.value(out), co.bootstrap, co.seed, p.isSet(causal[1]),
                                       p.isSet(causal[0]));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb patch merge: %s\n", e.what());
        return 1;
    }
}

int runPatch(const QStringList& argsIn) {
    if (argsIn.size() > 1 && argsIn.at(1) == QLatin1String("merge")) {
        QStringList rest = argsIn;
        rest[0] = rest[0] + QStringLiteral(" merge");
        rest.removeAt(1);
        return runPatchMergeCommand(rest);
    }
    const QStringList& args = argsIn;
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Causal tests: activation patching and ablation over every layer and position (offset, head) of a site.\n"
        "Patching runs --corrupt with one site's value taken from the --clean run and reports the metric\n"
        "logit[answer] - logit[wrong] at the last token (or --position) and the normalised effect\n"
        "(patched - corrupted) / (clean - corrupted). --mode zero|mean ablates the site on --clean; without\n"
        "--corrupt it reports the change of log p of the actual next token at every position.\n"
        "Sites: resid (block input h^l, l = 0..N), mixer, gate (Grassmann), ffn, offset (Grassmann), head\n"
        "(Transformer). Writes effect, metric, clean_metric, corrupt_metric (and delta_logprob,\n"
        "mean_delta_logprob for an ablation without --corrupt) plus meta.json.\n"
        "Example: gwb patch --model grassmann --clean \"...\" --corrupt \"...\" --answer she --wrong he "
        "--site resid --out p.npz"));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption clean(QStringLiteral("clean"), QStringLiteral("Clean prompt text."),
                                   QStringLiteral("TEXT"));
    const QCommandLineOption corrupt(QStringLiteral("corrupt"),
                                     QStringLiteral("Corrupted prompt of the same token length."),
                                     QStringLiteral("TEXT"));
    const QCommandLineOption answer(QStringLiteral("answer"),
                                    QStringLiteral("Answer piece of the metric (one vocabulary piece, e.g. she)."),
                                    QStringLiteral("PIECE"));
    const QCommandLineOption wrong(QStringLiteral("wrong"), QStringLiteral("Wrong piece of the metric."),
                                   QStringLiteral("PIECE"));
    const QCommandLineOption site(QStringLiteral("site"),
                                  QStringLiteral("resid, mixer, gate, ffn, offset or head (offset/head: the model's "
                                                 "own of the two, as in the window and gwb figure)."),
                                  QStringLiteral("SITE"));
    const QCommandLineOption mode(QStringLiteral("mode"),
                                  QStringLiteral("patch (default with --corrupt), zero (default without) or mean."),
                                  QStringLiteral("MODE"));
    const QCommandLineOption position(
        QStringLiteral("position"), QStringLiteral("Metric position t (default the last token)."), QStringLiteral("t"));
    const QCommandLineOption layer(QStringLiteral("layer"), QStringLiteral("Compute only layer (row) L of the sweep."),
                                   QStringLiteral("L"));
    const QCommandLineOption offset(QStringLiteral("offset"),
                                    QStringLiteral("Site offset: compute only offset D (it must be in the layer)."),
                                    QStringLiteral("D"));
    const QCommandLineOption head(QStringLiteral("head"), QStringLiteral("Site head: compute only head H."),
                                  QStringLiteral("H"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output .npz file."), QStringLiteral("FILE"));
    const QCommandLineOption pairs(
        QStringLiteral("pairs"),
        QStringLiteral("Run the sweep for every pair of a pairs file (JSONL, or CSV with a header): fields clean, "
                       "corrupt, answer, wrong, optional position, anything else kept as tags. Unusable lines are "
                       "skipped and reported. Writes per-pair metric and effect (pairs x rows x columns, columns "
                       "aligned at each pair's metric position); first whether the pairs have anything to explain "
                       "(mean clean - corrupted with its paired-bootstrap interval, share of pairs in the answer's "
                       "direction), then per cell the ratio of means sum(p - k) / sum(c - k) (effect_mean, "
                       "effect_ci_low/high: 95% paired bootstrap), the raw effect, the mean of per-pair ratios "
                       "over the pairs above --min-difference, and Holm's marks over the sweep's cells."),
        QStringLiteral("FILE"));
    const QCommandLineOption method(
        QStringLiteral("method"),
        QStringLiteral("exact (default: a run per cell) or attribution: every cell estimated to first order, (source "
                       "value - changed value) . d metric / d value, from one backward pass (needs --answer/--wrong)."),
        QStringLiteral("exact|attribution"));
    // --min-difference, --bootstrap, --seed, --check: the engine's table of the causal commands' options.
    const std::vector<QCommandLineOption> causal = gwb::app::commandLineOptions(gwb::engine::causalOptions());
    const QCommandLineOption &minDifference = causal[0], &bootstrap = causal[1], &seed = causal[2], &check = causal[3];
    const QCommandLineOption shard(QStringLiteral("shard"),
                                   QStringLiteral("With --pairs: run the i-th of n blocks of the usable pairs; gwb "
                                                  "patch merge joins the shards."),
                                   QStringLiteral("i/n"));
    const QCommandLineOption resume(
        QStringLiteral("resume"),
        QStringLiteral("Carry on from a sweep stopped by Ctrl-C or SIGTERM (its file says complete: false): only the "
                       "cells it lacks are computed; --out may be the same file."),
        QStringLiteral("P.npz"));
    const QCommandLineOption data(QStringLiteral("data"),
                                  QStringLiteral("Also write a CSV, one row per cell (row, column, metric, effect or "
                                                 "mean delta log p)."),
                                  QStringLiteral("FILE.csv"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, clean, corrupt, answer, wrong, site, mode, position, layer, offset, head, out, resume, data,
                  device, threads, minDifference});
    p.addOptions({pairs, bootstrap, seed, shard, method, check});
    p.process(args);
    try {
        if (!p.positionalArguments().isEmpty())
            throw std::invalid_argument("unexpected argument '" + p.positionalArguments().first().toStdString() + "'");
        gwb::engine::CausalOptions co; // checked before anything loads
        gwb::app::readCommandLineOptions(p, causal, gwb::engine::causalOptions(), co);
        if (p.isSet(pairs)) {
            for (const QCommandLineOption* o : {&clean, &corrupt, &answer, &wrong, &resume})
                if (p.isSet(*o))
                    throw std::invalid_argument("--" + o->names().first().toStdString() +
                                                " does not go with --pairs: each pair of the file gives its own");
            if (!p.isSet(site))
                throw std::invalid_argument("--site is required (resid, mixer, gate, ffn, offset or head)");
            if (!p.isSet(out)) throw std::invalid_argument("--out FILE.npz is required");
            checkWritable(p.value(out), "--out");
            if (p.isSet(data)) checkWritable(p.value(data), "--data");
            setThreads(static_cast<int>(intValue(p, threads, "threads", 0)));
            gwb::app::PairsCliOptions cli;
            gwb::engine::PairsRunOptions& o = cli.run;
            o.modelFile = gwb::app::modelArgument(p.value(model)).toStdString();
            o.pairsPath = p.value(pairs).toStdString();
            o.site = p.value(site).toStdString();
            o.mode = p.value(mode).toStdString();
            o.position = intValue(p, position, "position", -1);
            o.layer = static_cast<int>(intValue(p, layer, "layer", -1));
            o.offset = static_cast<int>(intValue(p, offset, "offset", -1));
            o.head = static_cast<int>(intValue(p, head, "head", -1));
            o.bootstrap = co.bootstrap;
            o.seed = co.seed;
            o.minDifference = co.minDifference;
            if (p.isSet(shard)) {
                const QStringList sh = p.value(shard).split(QLatin1Char('/'));
                bool ok1 = false, ok2 = false;
                if (sh.size() == 2) {
                    o.shardIndex = sh[0].toInt(&ok1);
                    o.shardCount = sh[1].toInt(&ok2);
                }
                if (!ok1 || !ok2 || o.shardCount < 1 || o.shardIndex < 0 || o.shardIndex >= o.shardCount)
                    throw std::invalid_argument("--shard needs i/n with 0 <= i < n, e.g. 0/4; got '" +
                                                p.value(shard).toStdString() + "'");
            }
            cli.out = p.value(out);
            cli.data = p.value(data);
            cli.device = p.value(device);
            o.attribution = attributionMethod(p.value(method));
            o.check = co.check;
            if (o.check > 0 && !o.attribution) throw std::invalid_argument("--check goes with --method attribution");
            return gwb::app::runPatchPairs(cli);
        }
        if (p.isSet(bootstrap) || p.isSet(seed) || p.isSet(shard))
            throw std::invalid_argument("--bootstrap, --seed and --shard go with --pairs");
        if (!p.isSet(clean)) throw std::invalid_argument("--clean TEXT is required (or --pairs FILE)");
        if (!p.isSet(site)) throw std::invalid_argument("--site is required (resid, mixer, gate, ffn, offset or head)");
        if (!p.isSet(out)) throw std::invalid_argument("--out FILE.npz is required");
        if (p.isSet(corrupt) && p.value(corrupt).isEmpty())
            throw std::invalid_argument("--corrupt is empty: give the corrupted prompt's text");
        checkWritable(p.value(out), "--out");
        if (p.isSet(data)) checkWritable(p.value(data), "--data");
        setThreads(static_cast<int>(intValue(p, threads, "threads", 0)));
        const double minDiff = co.minDifference;

        Context ctx;
        ctx.file.modelFile = gwb::app::modelArgument(p.value(model)).toStdString();
        const Model m = gwb::engine::loadOrImportModel(ctx.file.modelFile, p.value(device).toStdString()).model;
        ctx.input.clean = p.value(clean).toStdString();
        ctx.input.corrupt = p.value(corrupt).toStdString();
        ctx.input.answer = p.value(answer).toStdString();
        ctx.input.wrong = p.value(wrong).toStdString();
        ctx.input.site = p.value(site).toStdString();
        ctx.input.mode = p.value(mode).toStdString();
        ctx.input.position = intValue(p, position, "position", -1);
        if (ctx.input.position < -1)
            throw std::invalid_argument("--position must be a token index >= 0, got " +
                                        std::to_string(ctx.input.position));
        PatchRequest req = gwb::engine::preparePatchRequest(m, ctx.input);
        req.minDifference = minDiff;
        ctx.file.cleanPrompt = ctx.input.clean;
        ctx.file.corruptPrompt = ctx.input.corrupt;
        ctx.file.answer = ctx.input.answer;
        ctx.file.wrong = ctx.input.wrong;
        ctx.file.answerId = req.answer;
        ctx.file.wrongId = req.wrong;
        if (req.answer >= 0) {
            ctx.answerText = gwb::engine::pieceTexts(m, {req.answer}).front();
            ctx.wrongText = gwb::engine::pieceTexts(m, {req.wrong}).front();
        }

        // A part of the sweep: only its cells are computed (the engine checks it against the model).
        PatchRequest part = req;
        auto selection = [&](const QCommandLineOption& o, const char* name, int& field) {
            if (!p.isSet(o)) return;
            const int64_t v = intValue(p, o, name, -1);
            if (v < 0 || v > 1'000'000)
                throw std::invalid_argument(std::string("--") + name + " must be an index >= 0, got " +
                                            p.value(o).toStdString());
            field = static_cast<int>(v);
            ctx.file.selection.emplace_back(name, v);
        };
        selection(layer, "layer", part.layer);
        selection(offset, "offset", part.offset);
        selection(head, "head", part.head);
        validatePatchRequest(m, part);

        // Ctrl-C and SIGTERM (a scheduler's time limit) stop the sweep between batches: what is
        // done is written, marked incomplete, and --resume carries on from it.
        g_stop = false;
        const gwb::app::StopSignals signals(g_stop);
        PatchFileCells earlier;
        if (p.isSet(resume)) {
            PatchSweep shape; // the sweep's labels and sizes, without computing a cell
            {
                PatchRequest none = part;
                none.partialOnCancel = true;
                shape = runPatchSweep(m, none, [](double) { return false; });
            }
            const std::string path = p.value(resume).toStdString();
            try {
                earlier = readPatchFile(path);
                checkPatchResume(shape, patchMetaJson(m, shape, ctx.file), earlier, path);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(std::string("--resume ") + e.what());
            }
            part.skip = earlier.computed;
            int64_t have = 0;
            for (uint8_t c : earlier.computed)
                have += c;
            std::fprintf(stderr, "resuming %s: %lld of %zu cells computed already\n", qPrintable(p.value(resume)),
                         static_cast<long long>(have), earlier.computed.size());
        }
        const bool attribution = attributionMethod(p.value(method));
        const int checkK = co.check;
        if (checkK > 0 && !attribution) throw std::invalid_argument("--check goes with --method attribution");
        if (attribution) {
            if (p.isSet(resume)) throw std::invalid_argument("--resume goes with exact sweeps");
            PatchSweep est = attributionSweep(m, part);
            if (checkK > 0) ctx.file.check = gwb::engine::checkAttribution(m, part, est, checkK, 0);
            const std::string outPath = p.value(out).toStdString();
            writePatchFile(outPath, m, est, ctx.file);
            if (p.isSet(data)) {
                const std::string csv = csvText(est);
                writeBytesAtomic(p.value(data).toStdString(), csv.data(), csv.size());
            }
            printSummary(m, est, ctx);
            if (!ctx.file.check.cells.empty())
                std::printf("check: %zu cells run exactly: Spearman %s, recall@%d %s\n", ctx.file.check.cells.size(),
                            number(ctx.file.check.spearman).c_str(), checkK, number(ctx.file.check.recallAtK).c_str());
            std::printf("wrote %s (estimates: --method attribution)\n", outPath.c_str());
            return 0;
        }
        part.partialOnCancel = true;
        gwb::app::ProgressLine line;
        const auto started = std::chrono::steady_clock::now();
        PatchSweep sweep = runPatchSweep(m, part, [&](double fraction) {
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            if (seconds > 2 && line.due(seconds)) {
                std::fprintf(stderr, "%ssweep %.0f%%  elapsed %.0f s%s", line.start(), fraction * 100, seconds,
                             line.end());
                std::fflush(stderr);
            }
            return !g_stop.load();
        });
        if (!earlier.computed.empty()) resumePatchSweep(sweep, earlier);
        if (!sweep.complete) ctx.file.stoppedBy = gwb::app::StopSignals::name();

        // Everything is computed: write the files (each atomically), then say what was found.
        const std::string outPath = p.value(out).toStdString();
        writePatchFile(outPath, m, sweep, ctx.file);
        if (p.isSet(data)) {
            const std::string csv = csvText(sweep);
            writeBytesAtomic(p.value(data).toStdString(), csv.data(), csv.size());
        }
        if (line.tty()) std::fprintf(stderr, "\r%60s\r", "");
        if (!sweep.complete) {
            int64_t have = 0;
            for (uint8_t c : sweep.computed)
                have += c;
            std::printf("stopped by %s after %lld of %zu cells: wrote the partial sweep %s (complete: false); "
                        "gwb patch ... --resume %s carries on\n",
                        ctx.file.stoppedBy.c_str(), static_cast<long long>(have), sweep.computed.size(),
                        outPath.c_str(), outPath.c_str());
            return gwb::app::StopSignals::exitCode(130);
        }
        printSummary(m, sweep, ctx);
        std::printf("wrote %s%s%s\n", outPath.c_str(), p.isSet(data) ? ", " : "",
                    p.isSet(data) ? p.value(data).toStdString().c_str() : "");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb patch: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kPatchCommand{"patch", "Causal tests: activation patching and ablation sweeps (NPZ, CSV)", runPatch,
                            false};
} // namespace gwb::app
