// gwb graph: the attribution graph of a prompt (gwb/engine/graph_run.h) in circuit-tracer's JSON
// format, with an NPZ of the whole unpruned adjacency.

#include "cli/cli_args.h"
#include "cli/stop_signals.h"
#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "common/option_table.h"

#include "gwb/engine/device.h"
#include "gwb/engine/graph_run.h"
#include "gwb/engine/import.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/tokenizer.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace {

using namespace gwb::engine;
using gwb::app::cli::checkWritable;
using gwb::app::cli::processSubcommand;
using gwb::app::cli::shown;
using gwb::app::cli::terminalPiece;

/// "feature 2/17 at 'cat'", "error 3 at 'cat'", "token 'cat'", "logit 'mat'".
std::string describe(const AttributionGraph& g, int64_t i) {
    const GraphNode& n = g.nodes[static_cast<size_t>(i)];
    const std::string at = n.position < static_cast<int64_t>(g.pieces.size())
                               ? " at " + std::to_string(n.position) + " '" +
                                     terminalPiece(g.pieces[static_cast<size_t>(n.position)]) + "'"
                               : "";
    switch (n.kind) {
    case GraphNodeKind::Feature:
        return "feature " + std::to_string(n.layer) + "/" + std::to_string(n.index) + at;
    case GraphNodeKind::Error:
        return "error " + std::to_string(n.layer) + at;
    case GraphNodeKind::Token:
        return "token" + at;
    case GraphNodeKind::Logit: // a custom target's label names itself ("logit(▁she) - logit(▁he)")
        return n.label.rfind("logit(", 0) == 0 ? "target " + terminalPiece(n.label)
                                               : "logit '" + terminalPiece(n.label) + "'";
    }
    return "";
}

int runGraph(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "The attribution graph of a prompt: which transcoder features, at which positions, make the next token,\n"
        "and through which offsets (Grassmann) or heads (Transformer). The model's local replacement freezes its\n"
        "norms, gates, Plücker normalisers or attention patterns at the prompt, puts the transcoders in place of\n"
        "its FFNs with an error node for what they miss, and gives every direct effect as an edge; the graph is\n"
        "pruned by influence on the logits as circuit-tracer prunes. Writes circuit-tracer's graph JSON (--out)\n"
        "and, with --npz, the whole unpruned adjacency. docs/attribution-graphs.md says what is computed."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("The prompt."), QStringLiteral("TEXT"));
    const QCommandLineOption transcoders(
        QStringLiteral("transcoders"),
        QStringLiteral("The model's transcoder set (gwb features train --transcoders, or per-layer SAELens folders)."),
        QStringLiteral("DIR"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Graph JSON to write."), QStringLiteral("FILE"));
    const QCommandLineOption npz(QStringLiteral("npz"), QStringLiteral("Also write the unpruned graph as an NPZ."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption slug(
        QStringLiteral("slug"), QStringLiteral("The graph's name (default: the JSON's stem)."), QStringLiteral("NAME"));
    // The numeric options, from the engine's table (graphOptions: help, default, range).
    const std::vector<QCommandLineOption> numeric = gwb::app::commandLineOptions(graphOptions());
    auto numericSet = [&](const char* flag) {
        for (const QCommandLineOption& o : numeric)
            if (o.names().front() == QLatin1String(flag)) return p.isSet(o);
        return false;
    };
    const QCommandLineOption single(QStringLiteral("float32"),
                                    QStringLiteral("Run the replacement in float32 (default float64: completeness to "
                                                   "~1e-12)."));
    const QCommandLineOption noLoadings(QStringLiteral("no-loadings"),
                                        QStringLiteral("Do not split the pruned edges across offsets or heads."));
    const QCommandLineOption answer(
        QStringLiteral("answer"),
        QStringLiteral("With --wrong: explain logit[answer] - logit[wrong] (one target node, the metric gwb patch "
                       "uses) instead of the top logits."),
        QStringLiteral("PIECE"));
    const QCommandLineOption wrong(QStringLiteral("wrong"), QStringLiteral("The wrong piece of --answer's contrast."),
                                   QStringLiteral("PIECE"));
    const QCommandLineOption target(QStringLiteral("target"),
                                    QStringLiteral("Explain one piece's (demeaned) logit instead of the top logits."),
                                    QStringLiteral("PIECE"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, prompt, transcoders, out, npz, slug});
    for (const QCommandLineOption& o : numeric)
        p.addOption(o);
    p.addOptions({single, noLoadings, answer, wrong, target, device, threads});
    try {
        processSubcommand(p, args);
        for (const auto* o : {&prompt, &out})
            if (!p.isSet(*o)) throw std::invalid_argument("--" + o->names().front().toStdString() + " is required");
        if (!p.isSet(transcoders))
            throw std::invalid_argument("--transcoders DIR is required: the model's transcoder set, trained with gwb "
                                        "features train --transcoders --model M --corpus FILE --out DIR");
        checkWritable(p.value(out), "the graph");
        if (p.isSet(npz)) checkWritable(p.value(npz), "the NPZ");
        GraphRequest r;
        gwb::app::readCommandLineOptions(p, numeric, graphOptions(), r);
        r.doublePrecision = !p.isSet(single);
        r.loadings = !p.isSet(noLoadings);
        const bool contrast = p.isSet(answer) || p.isSet(wrong);
        if (contrast && !(p.isSet(answer) && p.isSet(wrong)))
            throw std::invalid_argument("--answer and --wrong go together: the target is logit[answer] - logit[wrong]");
        if (contrast && p.isSet(target)) throw std::invalid_argument("give --answer/--wrong or --target, not both");
        if ((contrast || p.isSet(target)) && (numericSet("max-logits") || numericSet("logit-probability")))
            throw std::invalid_argument("--max-logits and --logit-probability choose the top logits; they do not go "
                                        "with --answer/--wrong or --target");

        setThreads(p.value(threads).toInt());
        const Model m =
            loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(), p.value(device).toStdString())
                .model;
        if (!m.tokenizer()) throw std::invalid_argument("the model has no tokenizer");
        const TranscoderSet set = loadTranscoderSet(p.value(transcoders).toStdString(), &m);
        r.prompt = p.value(prompt).toStdString();
        r.ids = m.tokenizer()->encodeIds(r.prompt);
        if (contrast)
            r.targets = {contrastTarget(m, pieceId(m, p.value(answer).toStdString(), "the answer piece"),
                                        pieceId(m, p.value(wrong).toStdString(), "the wrong piece"))};
        else if (p.isSet(target))
            r.targets = {tokenTarget(m, pieceId(m, p.value(target).toStdString(), "the target piece"))};

        std::atomic<bool> stop{false};
        gwb::app::StopSignals signals(stop);
        gwb::app::ProgressLine line;
        const auto started = std::chrono::steady_clock::now();
        r.stop = &stop;
        r.progress = [&](double f, const std::string& stage) {
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            if (line.due(s, f >= 1.0))
                std::fprintf(stderr, "%s%s %3.0f%%%s", line.start(), stage.c_str(), 100 * f, line.end());
            return true;
        };
        AttributionGraph g;
        GraphPruning pruning;
        try {
            PrunedGraph pruned = attributeAndPrune(m, set, r);
            g = std::move(pruned.graph);
            pruning = std::move(pruned.pruning);
        } catch (const std::runtime_error& e) {
            if (gwb::app::StopSignals::received()) {
                std::fprintf(stderr, "\ngwb graph: stopped by %s; nothing written\n", gwb::app::StopSignals::name());
                return gwb::app::StopSignals::exitCode(1);
            }
            throw;
        }
        if (line.tty()) std::fprintf(stderr, "\n");
        const std::string name =
            p.isSet(slug) ? p.value(slug).toStdString() : QFileInfo(p.value(out)).completeBaseName().toStdString();
        writeGraphJson(p.value(out).toStdString(), g, pruning, name, r.nodeThreshold);
        if (p.isSet(npz)) writeGraphNpz(p.value(npz).toStdString(), g, pruning);

        const GraphScores& scores = g.scores;
        const double worst =
            g.completeness.empty() ? 0.0 : *std::max_element(g.completeness.begin(), g.completeness.end());
        std::printf("model: %s (%s)\ntokens: %lld\n", g.modelName.c_str(), g.architecture.c_str(),
                    static_cast<long long>(g.tokens));
        std::printf("active features: %lld (rows computed for %lld)\n", static_cast<long long>(g.activeFeatures),
                    static_cast<long long>(g.features));
        std::printf("nodes: %lld, kept %lld; edges kept: %lld\n", static_cast<long long>(g.nodeCount()),
                    static_cast<long long>(pruning.keptNodes), static_cast<long long>(pruning.keptEdges));
        std::printf("replacement score: %.4f\ncompleteness score: %.4f\n", scores.replacement, scores.completeness);
        std::printf("completeness error (max over rows): %.3g\nlogits reproduced within: %.3g\n", worst,
                    g.maxLogitError);
        std::printf("time: %.2f s\n", g.seconds);
        // The top logit's strongest kept inputs, each split across the mixers it crosses.
        const int64_t top = g.nodeCount() - g.logits;
        if (r.targets.empty())
            std::printf("\n%s (p = %.3f), its strongest inputs:\n", describe(g, top).c_str(),
                        g.nodes[static_cast<size_t>(top)].probability);
        else
            std::printf("\n%s = %.4f (demeaned logits), its strongest inputs:\n", describe(g, top).c_str(),
                        g.nodes[static_cast<size_t>(top)].value);
        const auto rowIt = std::find(g.rowNodes.begin(), g.rowNodes.end(), top);
        const auto row = static_cast<size_t>(rowIt - g.rowNodes.begin());
        const auto n = static_cast<size_t>(g.nodeCount());
        // Same-position inputs first as they come; then the strongest from earlier positions, which
        // only the mixers carry (their split says which offsets or heads).
        auto list = [&](bool earlier, size_t most) {
            std::vector<size_t> kept;
            for (size_t j = 0; j < n; ++j)
                if (pruning.edgeKept[row * n + j] &&
                    (g.nodes[j].position < g.nodes[static_cast<size_t>(top)].position) == earlier)
                    kept.push_back(j);
            std::sort(kept.begin(), kept.end(), [&](size_t a, size_t b) {
                return std::abs(g.rows.data[row * n + a]) > std::abs(g.rows.data[row * n + b]);
            });
            kept.resize(std::min<size_t>(kept.size(), most));
            for (size_t j : kept) {
                std::printf("  %+.4g  %s\n", static_cast<double>(g.rows.data[row * n + j]),
                            describe(g, static_cast<int64_t>(j)).c_str());
                for (const EdgeLoading& e : g.loadings) {
                    if (e.target != top || e.source != static_cast<int64_t>(j)) continue;
                    std::string parts = "skip " + shown(e.skip);
                    for (size_t u = 0; u < e.units.size(); ++u)
                        parts += ", " + g.units[static_cast<size_t>(e.layer)][u] + " " + shown(e.units[u]);
                    std::printf("           block %d: %s\n", e.layer, parts.c_str());
                }
            }
            if (kept.empty()) std::printf("  (none kept)\n");
        };
        list(false, 4);
        std::printf("from earlier positions (through the mixers):\n");
        list(true, 4);
        std::printf("\nwritten: %s%s%s\n", p.value(out).toStdString().c_str(), p.isSet(npz) ? ", " : "",
                    p.isSet(npz) ? p.value(npz).toStdString().c_str() : "");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb graph: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kGraphCommand{"graph",
                            "Attribution graph of a prompt: features, offsets or heads to the next token (JSON, NPZ)",
                            runGraph, false};
} // namespace gwb::app
