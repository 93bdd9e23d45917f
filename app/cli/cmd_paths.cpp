// gwb paths: path patching and direct effects (gwb/engine/patching.h, pathPatching): which part
// writes the answer itself and which feeds a later layer that does.

#include "common/bundled_models.h"
#include "cli/cli_args.h"
#include "common/command_registry.h"
#include "cli/patch_pairs_run.h"
#include "common/patch_setup.h"

#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <nlohmann/json.hpp>

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
using nlohmann::json;

const char* kDefinitions[][2] = {
    {"components",
     "Grassmann layer l: offset.l.D (offset D's normalised Plucker vectors), mixer.l (g after the empty rule), "
     "gate.l (a), ffn.l (the FFN output); Transformer layer l: head.l.H (the head's context slice, the input of "
     "out_proj), mixer.l (the attention output after out_proj), ffn.l. Norms and skip paths (residual additions, the "
     "gate's products) are not components: they are always recomputed."},
    {"logits",
     "direct effect of sender S: the corrupted prompt runs with S at its clean value; what in S's own sublayer "
     "depends on S is recomputed from it (offset -> B_t -> g -> gate and mix; mixer -> gate and mix; gate -> mix; "
     "head -> out_proj); every other component keeps its value from the plain corrupted run (every other layer's "
     "offsets, mixer, gate and heads, and every FFN, S's own layer's included). The metric of that run."},
    {"resid.M",
     "effect of S through block input h^M (M > S's layer): h^M is recorded in the run above; the corrupted prompt "
     "then runs normally with only h^M replaced by it; the metric of that run. NaN at or before S's layer."},
    {"metric", "senders x receivers  logit[answer] - logit[wrong] at the metric position"},
    {"effect",
     "senders x receivers  (metric - corrupt_metric) / (clean_metric - corrupt_metric); NaN where undefined"}};

/// --pairs FILE: the senders x receivers matrix of every usable pair, with the mean effect over
/// pairs and its bootstrap interval (the pairs file and its rules as gwb patch --pairs has them).
int runPathsPairs(const Model& m, const std::string& modelFile, const QString& pairsPath, const PathRequest& shape,
                  int bootstrap, uint64_t seed, const QString& outPath, const QString& dataPath) {
    PairsFile file;
    try {
        file = readPairsFile(pairsPath.toStdString());
    } catch (const std::exception& e) {
        throw std::invalid_argument(e.what());
    }
    std::vector<SkippedLine> skipped = file.skipped;
    std::vector<PathResult> results;
    json pairsMeta = json::array();
    std::vector<int64_t> lines;
    for (const PatchPair& pair : file.pairs) {
        try {
            const PatchRequest req = gwb::engine::pairRequest(m, pair, "resid", "patch", -1);
            PathRequest q = shape;
            q.clean = req.clean;
            q.corrupt = req.corrupt;
            q.answer = req.answer;
            q.wrong = req.wrong;
            q.position = req.position;
            results.push_back(pathPatching(m, q));
            lines.push_back(pair.line);
            json entry = gwb::engine::pairJson(m, pair, req);
            entry["metric_position"] = results.back().metricPosition;
            entry["clean_metric"] = results.back().cleanMetric;
            entry["corrupt_metric"] = results.back().corruptMetric;
            pairsMeta.push_back(std::move(entry));
        } catch (const std::invalid_argument& e) {
            skipped.push_back({pair.line, e.what()});
        }
    }
    gwb::engine::sortSkippedOrRefuse(skipped, results.size());
    const PathResult& first = results.front();
    const int64_t P = static_cast<int64_t>(results.size()), S = static_cast<int64_t>(first.senderLabels.size()),
                  R = static_cast<int64_t>(first.receiverLabels.size());
    std::vector<double> metric, effect, clean, corrupt;
    for (const PathResult& r : results) {
        metric.insert(metric.end(), r.metric.begin(), r.metric.end());
        effect.insert(effect.end(), r.effect.begin(), r.effect.end());
        clean.push_back(r.cleanMetric);
        corrupt.push_back(r.corruptMetric);
    }
    const CellSummary sum = summarizeOverPairs(effect, P, S * R, bootstrap, seed);
    json meta;
    meta["model_file"] = modelFile;
    meta["model_name"] = m.displayName();
    meta["sender_labels"] = first.senderLabels;
    meta["receiver_labels"] = first.receiverLabels;
    meta["pairs_file"] = pairsPath.toStdString();
    meta["pairs"] = pairsMeta;
    json sk = json::array();
    for (const SkippedLine& s : skipped)
        sk.push_back({{"line", s.line}, {"reason", s.reason}});
    meta["skipped"] = sk;
    meta["bootstrap"] = bootstrap;
    meta["seed"] = seed;
    json defs;
    for (const auto& d : kDefinitions)
        defs[d[0]] = d[1];
    defs["effect_mean"] = "senders x receivers  mean of the pairs' effects where defined";
    defs["effect_ci_low"] = "senders x receivers  2.5th percentile of the mean over bootstrap resamples of the pairs";
    defs["effect_ci_high"] = "senders x receivers  97.5th percentile of the same";
    defs["effect_n"] = "senders x receivers  pairs with a defined effect";
    meta["definitions"] = defs;
    NpzWriter npz;
    npz.add("metric", Array<double>({P, S, R}, metric));
    npz.add("effect", Array<double>({P, S, R}, effect));
    npz.add("clean_metric", Array<double>({P}, clean));
    npz.add("corrupt_metric", Array<double>({P}, corrupt));
    npz.add("line", Array<int64_t>({P}, lines));
    npz.add("effect_mean", Array<double>({S, R}, sum.mean));
    npz.add("effect_ci_low", Array<double>({S, R}, sum.low));
    npz.add("effect_ci_high", Array<double>({S, R}, sum.high));
    npz.add("effect_n", Array<int64_t>({S, R}, sum.n));
    npz.addFile("meta.json", meta.dump(2));
    npz.write(outPath.toStdString());
    if (!dataPath.isEmpty()) {
        std::string csv = "sender,receiver,mean,ci_low,ci_high,n\n";
        for (int64_t i = 0; i < S * R; ++i)
            csv += first.senderLabels[static_cast<size_t>(i / R)] + "," +
                   first.receiverLabels[static_cast<size_t>(i % R)] + "," + number(sum.mean[static_cast<size_t>(i)]) +
                   "," + number(sum.low[static_cast<size_t>(i)]) + "," + number(sum.high[static_cast<size_t>(i)]) +
                   "," + std::to_string(sum.n[static_cast<size_t>(i)]) + "\n";
        writeBytesAtomic(dataPath.toStdString(), csv.data(), csv.size());
    }
    std::printf("%s: %lld pairs used of %lld lines (%zu skipped); %lld senders x %lld receivers\n",
                m.displayName().c_str(), static_cast<long long>(P), static_cast<long long>(file.lines), skipped.size(),
                static_cast<long long>(S), static_cast<long long>(R));
    for (const SkippedLine& s : skipped)
        std::printf("  skipped line %lld: %s\n", static_cast<long long>(s.line), s.reason.c_str());
    // The largest mean effects, as `gwb patch --pairs` prints its cells.
    std::vector<size_t> order;
    for (size_t i = 0; i < sum.mean.size(); ++i)
        if (std::isfinite(sum.mean[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::abs(sum.mean[a]) > std::abs(sum.mean[b]); });
    if (order.empty()) {
        std::printf("no sender has a defined effect in any pair\n");
    } else {
        std::printf("top %zu paths by |mean effect| (95%% bootstrap interval over pairs, n):\n",
                    std::min<size_t>(5, order.size()));
        for (size_t k = 0; k < order.size() && k < 5; ++k) {
            const size_t i = order[k];
            std::printf("  %s -> %s: %s [%s, %s], n = %lld\n", first.senderLabels[i / static_cast<size_t>(R)].c_str(),
                        first.receiverLabels[i % static_cast<size_t>(R)].c_str(), shown(sum.mean[i]).c_str(),
                        shown(sum.low[i]).c_str(), shown(sum.high[i]).c_str(), static_cast<long long>(sum.n[i]));
        }
    }
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
    const QCommandLineOption bootstrap(QStringLiteral("bootstrap"), QStringLiteral("With --pairs: resamples (1000)."),
                                       QStringLiteral("B"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("With --pairs: the bootstrap's seed (0)."),
                                  QStringLiteral("S"));
    const QCommandLineOption linear(
        QStringLiteral("linear"),
        QStringLiteral(
            "Pre-norm models: also the direct logit attribution of every write to the residual stream at the "
            "metric position (embed, offset.l.D / head.l.H, biases, the gate's skip, ffn.l), with the final "
            "LayerNorm's scale frozen at the corrupted run's value; Grassmann offsets also per read-out "
            "channel. Refused, with the reason, for post-norm models."));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
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
        const std::string modelFile = gwb::app::modelArgument(p.value(model)).toStdString();
        const Model m = gwb::engine::loadOrImportModel(modelFile, p.value(device).toStdString()).model;
        if (withPairs) {
            PathRequest shape;
            const QString rk0 = p.isSet(receiver) ? p.value(receiver) : QStringLiteral("all");
            if (rk0 != QLatin1String("all") && rk0 != QLatin1String("logits") && rk0 != QLatin1String("resid"))
                throw std::invalid_argument("--receiver must be logits, resid or all, got '" + rk0.toStdString() + "'");
            shape.logits = rk0 != QLatin1String("resid");
            shape.resid = rk0 != QLatin1String("logits");
            if (p.isSet(senders))
                for (const QString& s : p.value(senders).split(QLatin1Char(','), Qt::SkipEmptyParts))
                    shape.senders.push_back(s.trimmed().toStdString());
            return runPathsPairs(m, modelFile, p.value(pairs), shape,
                                 static_cast<int>(intValue(p, bootstrap, "bootstrap", 1000)),
                                 static_cast<uint64_t>(intValue(p, seed, "seed", 0)), p.value(out), p.value(data));
        }
        // The prompts and pieces as gwb patch reads them, with its messages.
        gwb::app::PatchInput in;
        in.clean = p.value(clean);
        in.corrupt = p.value(corrupt);
        in.answer = p.value(answer);
        in.wrong = p.value(wrong);
        in.site = QStringLiteral("resid");
        in.mode = QStringLiteral("patch");
        in.position = intValue(p, metricPosition, "metric-position", -1);
        const PatchRequest req = gwb::app::preparePatchRequest(m, in);
        PathRequest q;
        q.clean = req.clean;
        q.corrupt = req.corrupt;
        q.answer = req.answer;
        q.wrong = req.wrong;
        q.position = req.position;
        q.senderPosition = intValue(p, position, "position", -1);
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
        const auto answerText = gwb::app::pieceTexts(m, {q.answer}).front();
        const auto wrongText = gwb::app::pieceTexts(m, {q.wrong}).front();
        json meta;
        meta["model_file"] = modelFile;
        meta["model_name"] = m.displayName();
        meta["model_kind"] = m.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer";
        meta["sender_labels"] = r.senderLabels;
        meta["receiver_labels"] = r.receiverLabels;
        meta["clean_prompt"] = in.clean.toStdString();
        meta["corrupt_prompt"] = in.corrupt.toStdString();
        meta["metric_position"] = r.metricPosition;
        meta["sender_position"] = q.senderPosition;
        meta["answer"] = {{"typed", in.answer.toStdString()}, {"piece", answerText}, {"id", q.answer}};
        meta["wrong"] = {{"typed", in.wrong.toStdString()}, {"piece", wrongText}, {"id", q.wrong}};
        meta["clean_metric"] = r.cleanMetric;
        meta["corrupt_metric"] = r.corruptMetric;
        meta["effect_defined"] = r.effectDefined;
        json defs;
        for (const auto& d : kDefinitions)
            defs[d[0]] = d[1];
        meta["definitions"] = defs;
        NpzWriter npz;
        npz.add("metric", Array<double>({S, R}, r.metric));
        npz.add("effect", Array<double>({S, R}, r.effect));
        npz.add("clean_metric", Array<double>({}, {r.cleanMetric}));
        npz.add("corrupt_metric", Array<double>({}, {r.corruptMetric}));
        if (p.isSet(linear)) {
            const int64_t K = static_cast<int64_t>(lin.labels.size());
            std::vector<double> delta(lin.clean.size());
            for (size_t i = 0; i < delta.size(); ++i)
                delta[i] = lin.clean[i] - lin.corrupt[i];
            npz.add("linear_corrupt", Array<double>({K}, lin.corrupt));
            npz.add("linear_clean", Array<double>({K}, lin.clean));
            npz.add("linear_delta", Array<double>({K}, delta));
            npz.add("linear_bias", Array<double>({}, {lin.bias}));
            if (lin.channels > 0) {
                const int64_t N = static_cast<int64_t>(lin.channelCorrupt.size()) / lin.channels;
                npz.add("linear_channel_corrupt", Array<double>({N, lin.channels}, lin.channelCorrupt));
                npz.add("linear_channel_clean", Array<double>({N, lin.channels}, lin.channelClean));
            }
            meta["linear_labels"] = lin.labels;
            meta["definitions"]["linear"] =
                "direct logit attribution at the metric position of a pre-norm model: h^N_m = embed + every block's "
                "writes, read through the final LayerNorm with its scale sigma frozen at the corrupted run's value: "
                "term = write . P(gamma * (E[answer] - E[wrong])) / sigma (P subtracts the mean); linear_corrupt: "
                "the corrupted run's terms, which sum with linear_bias = beta . (E[answer] - E[wrong]) to "
                "corrupt_metric; linear_clean: the clean run's writes read the same way; linear_delta = clean - "
                "corrupt. Terms: embed; Grassmann offset.l.D = the gate's share of offset D's read-out ((1 - a) W_plu "
                "p_D / |W_m|), mixer_bias.l = (1 - a) b_plu, gate_skip.l = a LN1(h); attention head.l.H = out_proj's "
                "columns of head H times its context row, attn_bias.l; ln_mix_bias.l (mixer writes pass LN_mix with "
                "its scale frozen too); ffn.l. linear_channel_*: blocks x d, the offsets' terms of each block split "
                "by read-out channel (row c of W_plu)";
        }
        npz.addFile("meta.json", meta.dump(2));
        npz.write(p.value(out).toStdString());
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
        std::printf("%s: %lld senders x %lld receivers; metric logit['%s'] - logit['%s'] at token %lld: clean %s, "
                    "corrupted %s\n",
                    m.displayName().c_str(), static_cast<long long>(S), static_cast<long long>(R), answerText.c_str(),
                    wrongText.c_str(), static_cast<long long>(r.metricPosition), number(r.cleanMetric).c_str(),
                    number(r.corruptMetric).c_str());
        if (q.logits && r.effectDefined) {
            std::vector<int64_t> order(static_cast<size_t>(S));
            for (int64_t s = 0; s < S; ++s)
                order[static_cast<size_t>(s)] = s;
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                return std::abs(r.effect[static_cast<size_t>(a * R)]) > std::abs(r.effect[static_cast<size_t>(b * R)]);
            });
            std::printf("largest direct effects (receiver logits):\n");
            for (size_t k = 0; k < order.size() && k < 5; ++k)
                std::printf("  %s: effect %s\n", r.senderLabels[static_cast<size_t>(order[k])].c_str(),
                            number(r.effect[static_cast<size_t>(order[k] * R)]).c_str());
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

GWB_REGISTER_COMMAND("paths", "Path patching and direct effects: which component writes the answer itself (NPZ, CSV)",
                     runPaths, false);
