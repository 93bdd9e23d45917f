// gwb paths: path patching and direct effects (gwb/engine/patching.h, pathPatching): which part
// writes the answer itself and which feeds a later layer that does.

#include "common/bundled_models.h"
#include "cli/cli_args.h"
#include "cli/pairs_summary.h"
#include "common/command_registry.h"
#include "cli/patch_pairs_cli.h"
#include "gwb/engine/patch_input.h"

#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/path_file.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace {

using namespace gwb::engine;
using gwb::app::cli::checkWritable;
using gwb::app::cli::intValue;
using gwb::app::cli::number;
using gwb::app::cli::shown;

/// --pairs FILE: the senders x receivers matrix of every usable pair, with the mean effect over
/// pairs and its bootstrap interval (computePathPairs; the pairs file and its rules as gwb patch
/// --pairs has them).
int runPathsPairs(const Model& m, const std::string& modelFile, const QString& pairsPath, const PathRequest& shape,
                  int bootstrap, uint64_t seed, const QString& outPath, const QString& dataPath) {
    PairsFile file;
    try {
        file = readPairsFile(pairsPath.toStdString());
    } catch (const std::exception& e) {
        throw std::invalid_argument(e.what());
    }
    const PathPairsResult r = computePathPairs(m, file, shape, bootstrap, seed);
    writePathPairsFile(outPath.toStdString(), m, r, modelFile, pairsPath.toStdString());
    const PairsEstimates& e = r.estimates;
    const auto S = static_cast<int64_t>(r.senderLabels.size()), R = static_cast<int64_t>(r.receiverLabels.size());
    if (!dataPath.isEmpty()) {
        std::string csv = "sender,receiver,ratio_of_means,ci_low,ci_high,n,raw_mean,raw_ci_low,raw_ci_high,"
                          "mean_of_ratios,mean_of_ratios_n,p_value,holm_marked\n";
        for (int64_t i = 0; i < S * R; ++i) {
            const size_t k = static_cast<size_t>(i);
            csv += r.senderLabels[static_cast<size_t>(i / R)] + "," + r.receiverLabels[static_cast<size_t>(i % R)] +
                   "," + number(e.ratio[k]) + "," + number(e.ratioLow[k]) + "," + number(e.ratioHigh[k]) + "," +
                   std::to_string(e.n[k]) + "," + number(e.raw[k]) + "," + number(e.rawLow[k]) + "," +
                   number(e.rawHigh[k]) + "," + number(e.meanOfRatios[k]) + "," + std::to_string(e.meanOfRatiosN[k]) +
                   "," + number(e.pValue[k]) + "," + std::to_string(e.marked[k]) + "\n";
        }
        writeBytesAtomic(dataPath.toStdString(), csv.data(), csv.size());
    }
    std::printf("%s: %lld pairs used of %lld lines (%zu skipped); %lld senders x %lld receivers\n",
                m.displayName().c_str(), static_cast<long long>(r.pairs), static_cast<long long>(r.fileLines),
                r.skipped.size(), static_cast<long long>(S), static_cast<long long>(R));
    for (const SkippedLine& s : r.skipped)
        std::printf("  skipped line %lld: %s\n", static_cast<long long>(s.line), s.reason.c_str());
    gwb::app::printPairsEstimates(
        e,
        [&](size_t i) {
            return r.senderLabels[i / static_cast<size_t>(R)] + " -> " + r.receiverLabels[i % static_cast<size_t>(R)];
        },
        false);
    std::printf("wrote %s%s%s\n", qPrintable(outPath), dataPath.isEmpty() ? "" : ", ", qPrintable(dataPath));
    return 0;
}

int runPaths(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Path patching and direct effects: for every sender component (offset.l.D, mixer.l, gate.l, ffn.l; head.l.H "
        "in a Transformer) the metric logit[answer] - logit[wrong] when only that component takes its clean value "
        "and every other component keeps its corrupted value (receiver logits: the direct effect), and through each "
        "later block input h^M (receivers resid.M). Writes metric and effect (senders x receivers) plus meta.json "
        "with the labels and definitions.\n"
        "Example: gwb paths --model grassmann --clean \"They could not help laughing, and\" --corrupt \"She could not "
        "help laughing, and\" --answer they --wrong she --out paths.npz"));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption clean(QStringLiteral("clean"), QStringLiteral("Clean prompt."), QStringLiteral("TEXT"));
    const QCommandLineOption corrupt(QStringLiteral("corrupt"),
                                     QStringLiteral("Corrupted prompt of the same token length."),
                                     QStringLiteral("TEXT"));
    const QCommandLineOption answer(QStringLiteral("answer"), QStringLiteral("Answer piece."), QStringLiteral("PIECE"));
    const QCommandLineOption wrong(QStringLiteral("wrong"), QStringLiteral("Wrong piece."), QStringLiteral("PIECE"));
    const QCommandLineOption receiver(QStringLiteral("receiver"), QStringLiteral("logits, resid or all (default)."),
                                      QStringLiteral("KIND"));
    const QCommandLineOption senders(
        QStringLiteral("senders"),
        QStringLiteral("Sender kinds, comma-separated (offset, mixer, gate, ffn; head, mixer, ffn): default all."),
        QStringLiteral("KINDS"));
    const QCommandLineOption position(QStringLiteral("position"),
                                      QStringLiteral("A sender takes its clean value at this position only."),
                                      QStringLiteral("t"));
    const QCommandLineOption metricPosition(QStringLiteral("metric-position"),
                                            QStringLiteral("Metric position (default the last token)."),
                                            QStringLiteral("t"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output .npz file."), QStringLiteral("FILE"));
    const QCommandLineOption data(QStringLiteral("data"),
                                  QStringLiteral("Also write a CSV, one row per sender x receiver."),
                                  QStringLiteral("FILE.csv"));
    const QCommandLineOption pairs(QStringLiteral("pairs"),
                                   QStringLiteral("Every usable pair of a JSONL/CSV pairs file (as gwb patch --pairs): "
                                                  "per-pair matrices, effect_mean and a 95% bootstrap interval."),
                                   QStringLiteral("FILE"));
    // --min-difference, --bootstrap, --seed: the engine's table of the causal commands' options.
    const std::vector<QCommandLineOption> causal =
        gwb::app::commandLineOptions(causalOptions(), {"min_difference", "bootstrap", "seed"});
    const QCommandLineOption &minDifference = causal[0], &bootstrap = causal[1], &seed = causal[2];
    const QCommandLineOption linear(
        QStringLiteral("linear"),
        QStringLiteral(
            "Pre-norm models: also the direct logit attribution of every write to the residual stream at the "
            "metric position (embed, offset.l.D / head.l.H, biases, the gate's skip, ffn.l), with the final "
            "LayerNorm's scale frozen at the corrupted run's value; Grassmann offsets also per read-out "
            "channel. Refused, with the reason, for post-norm models."));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOption(minDifference);
    p.addOptions({model, clean, corrupt, answer, wrong, receiver, senders, position, metricPosition, out, data, device,
                  threads, pairs, bootstrap, seed, linear});
    p.process(args);
    try {
        if (!p.positionalArguments().isEmpty())
            throw std::invalid_argument("unexpected argument '" + p.positionalArguments().first().toStdString() + "'");
        const bool withPairs = p.isSet(pairs);
        for (const auto* o : {&clean, &corrupt, &answer, &wrong, &out})
            if (!withPairs && !p.isSet(*o))
                throw std::invalid_argument("--" + o->names().first().toStdString() + " is required (or --pairs FILE)");
        if (withPairs)
            for (const auto* o : {&clean, &corrupt, &answer, &wrong, &position, &metricPosition, &linear})
                if (p.isSet(*o))
                    throw std::invalid_argument("--" + o->names().first().toStdString() +
                                                (o == &linear ? std::string(" is for one pair, not --pairs")
                                                              : std::string(" does not go with --pairs: each pair of "
                                                                            "the file gives its own")));
        if (!p.isSet(out)) throw std::invalid_argument("--out is required");
        checkWritable(p.value(out), "--out");
        if (p.isSet(data)) checkWritable(p.value(data), "--data");
        setThreads(static_cast<int>(intValue(p, threads, "threads", 0)));
        CausalOptions co; // checked before the model loads
        gwb::app::readCommandLineOptions(p, causal, causalOptions(), co);
        if (!withPairs && (p.isSet(bootstrap) || p.isSet(seed)))
            throw std::invalid_argument("--bootstrap and --seed go with --pairs");
        const double minDiff = co.minDifference;
        const std::string modelFile = gwb::app::modelArgument(p.value(model)).toStdString();
        const Model m = gwb::engine::loadOrImportModel(modelFile, p.value(device).toStdString()).model;
        if (withPairs) {
            PathRequest shape;
            const QString rk0 = p.isSet(receiver) ? p.value(receiver) : QStringLiteral("all");
            if (rk0 != QLatin1String("all") && rk0 != QLatin1String("logits") && rk0 != QLatin1String("resid"))
                throw std::invalid_argument("--receiver must be logits, resid or all, got '" + rk0.toStdString() + "'");
            shape.logits = rk0 != QLatin1String("resid");
            shape.resid = rk0 != QLatin1String("logits");
            shape.minDifference = minDiff;
            if (p.isSet(senders))
                for (const QString& s : p.value(senders).split(QLatin1Char(','), Qt::SkipEmptyParts))
                    shape.senders.push_back(s.trimmed().toStdString());
            return runPathsPairs(m, modelFile, p.value(pairs), shape, co.bootstrap, co.seed, p.value(out),
                                 p.value(data));
        }
        // The prompts and pieces as gwb patch reads them, with its messages.
        gwb::engine::PatchText in;
        in.clean = p.value(clean).toStdString();
        in.corrupt = p.value(corrupt).toStdString();
        in.answer = p.value(answer).toStdString();
        in.wrong = p.value(wrong).toStdString();
        in.site = "resid";
        in.mode = "patch";
        in.position = intValue(p, metricPosition, "metric-position", -1);
        const PatchRequest req = gwb::engine::preparePatchRequest(m, in);
        PathRequest q;
        q.clean = req.clean;
        q.corrupt = req.corrupt;
        q.answer = req.answer;
        q.wrong = req.wrong;
        q.position = req.position;
        q.senderPosition = intValue(p, position, "position", -1);
        q.minDifference = minDiff;
        if (q.senderPosition < -1) throw std::invalid_argument("--position must be a token index >= 0");
        const QString rk = p.isSet(receiver) ? p.value(receiver) : QStringLiteral("all");
        if (rk != QLatin1String("all") && rk != QLatin1String("logits") && rk != QLatin1String("resid"))
            throw std::invalid_argument("--receiver must be logits, resid or all, got '" + rk.toStdString() + "'");
        q.logits = rk != QLatin1String("resid");
        q.resid = rk != QLatin1String("logits");
        if (p.isSet(senders))
            for (const QString& s : p.value(senders).split(QLatin1Char(','), Qt::SkipEmptyParts))
                q.senders.push_back(s.trimmed().toStdString());
        // --linear first: a model it does not fit is refused before anything runs or is written.
        LinearResult lin;
        if (p.isSet(linear)) lin = linearAttribution(m, q);
        const PathResult r = pathPatching(m, q);

        const int64_t S = static_cast<int64_t>(r.senderLabels.size()),
                      R = static_cast<int64_t>(r.receiverLabels.size());
        const auto answerText = gwb::engine::pieceTexts(m, {q.answer}).front();
        const auto wrongText = gwb::engine::pieceTexts(m, {q.wrong}).front();
        PathFileContext context;
        context.modelFile = modelFile;
        context.cleanPrompt = in.clean;
        context.corruptPrompt = in.corrupt;
        context.answer = in.answer;
        context.wrong = in.wrong;
        writePathFile(p.value(out).toStdString(), m, q, r, context, p.isSet(linear) ? &lin : nullptr);
        if (p.isSet(data)) {
            std::string csv = "sender,receiver,metric,effect\n";
            for (int64_t s = 0; s < S; ++s)
                for (int64_t k = 0; k < R; ++k) {
                    const size_t i = static_cast<size_t>(s * R + k);
                    csv += r.senderLabels[static_cast<size_t>(s)] + "," + r.receiverLabels[static_cast<size_t>(k)] +
                           "," + number(r.metric[i]) + "," + number(r.effect[i]) + "\n";
                }
            writeBytesAtomic(p.value(data).toStdString(), csv.data(), csv.size());
        }
        if (!r.effectDefined) std::printf("note: no normalised effect: %s\n", r.effectNote.c_str());
        std::printf("%s: %lld senders x %lld receivers; metric logit['%s'] - logit['%s'] at token %lld: clean %s, "
                    "corrupted %s\n",
                    m.displayName().c_str(), static_cast<long long>(S), static_cast<long long>(R),
                    gwb::app::cli::terminalPiece(answerText).c_str(), gwb::app::cli::terminalPiece(wrongText).c_str(),
                    static_cast<long long>(r.metricPosition), number(r.cleanMetric).c_str(),
                    number(r.corruptMetric).c_str());
        if (q.logits) {
            // The normalised effect where defined, else the raw effect p - k in logits.
            auto value = [&](int64_t s) {
                const size_t i = static_cast<size_t>(s * R);
                return r.effectDefined ? r.effect[i] : r.metric[i] - r.corruptMetric;
            };
            std::vector<int64_t> order(static_cast<size_t>(S));
            for (int64_t s = 0; s < S; ++s)
                order[static_cast<size_t>(s)] = s;
            std::stable_sort(order.begin(), order.end(),
                             [&](int64_t a, int64_t b) { return std::abs(value(a)) > std::abs(value(b)); });
            std::printf("largest direct effects (receiver logits; %s):\n",
                        r.effectDefined ? "normalised effect (p - k) / (c - k)" : "raw effect p - k, logits");
            for (size_t k = 0; k < order.size() && k < 5; ++k)
                std::printf("  %s: %s %s\n", r.senderLabels[static_cast<size_t>(order[k])].c_str(),
                            r.effectDefined ? "effect" : "raw effect", number(value(order[k])).c_str());
        }
        if (p.isSet(linear)) {
            std::vector<size_t> order(lin.labels.size());
            for (size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
                return std::abs(lin.clean[a] - lin.corrupt[a]) > std::abs(lin.clean[b] - lin.corrupt[b]);
            });
            std::printf("largest direct logit attribution differences (clean - corrupted, corrupted run's scale):\n");
            for (size_t k = 0; k < order.size() && k < 5; ++k)
                std::printf("  %s: %s\n", lin.labels[order[k]].c_str(),
                            number(lin.clean[order[k]] - lin.corrupt[order[k]]).c_str());
        }
        std::printf("wrote %s%s%s\n", qPrintable(p.value(out)), p.isSet(data) ? ", " : "",
                    p.isSet(data) ? qPrintable(p.value(data)) : "");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb paths: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kPathsCommand{
    "paths", "Path patching and direct effects: which component writes the answer itself (NPZ, CSV)", runPaths, false};
} // namespace gwb::app
