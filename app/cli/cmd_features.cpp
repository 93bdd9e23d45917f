// gwb features train | eval | top | export: sparse dictionaries on a site of either model.

#include "cli/bundled_models.h"
#include "cli/command_registry.h"
#include "cli/stop_signals.h"

#include "gwb/engine/device.h"
#include "gwb/engine/features.h"
#include "gwb/engine/import.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/tokenizer.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QSaveFile>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace {

using namespace gwb::engine;

struct Common {
    QCommandLineOption model{QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE")};
    QCommandLineOption corpus{QStringLiteral("corpus"), QStringLiteral("UTF-8 text file (repeat for several)."),
                              QStringLiteral("FILE")};
    QCommandLineOption context{QStringLiteral("context"),
                               QStringLiteral("Tokens per window (default: the dictionary's, or 128)."),
                               QStringLiteral("T")};
    QCommandLineOption device = gwb::app::deviceOption();
    QCommandLineOption threads = gwb::app::threadsOption();
};

Model loadModel(const QCommandLineParser& p, const Common& c) {
    setThreads(p.value(c.threads).toInt());
    return loadOrImportModel(gwb::app::modelArgument(p.value(c.model)).toStdString(), p.value(c.device).toStdString())
        .model;
}

std::vector<std::string> corpusFiles(const QCommandLineParser& p, const Common& c) {
    std::vector<std::string> files;
    for (const QString& f : p.values(c.corpus))
        files.push_back(f.toStdString());
    if (files.empty()) throw std::invalid_argument("--corpus FILE is required (UTF-8 text, repeat for several)");
    return files;
}

int64_t positiveOption(const QCommandLineParser& p, const QCommandLineOption& o, const char* name) {
    bool ok = false;
    const qlonglong v = p.value(o).toLongLong(&ok);
    if (!ok || v < 1) throw std::invalid_argument(std::string("--") + name + " must be a positive whole number");
    return v;
}

double numberOption(const QCommandLineParser& p, const QCommandLineOption& o, const char* name) {
    bool ok = false;
    const double v = p.value(o).toDouble(&ok);
    if (!ok || !std::isfinite(v)) throw std::invalid_argument(std::string("--") + name + " must be a number");
    return v;
}

void writeText(const QString& path, const std::string& text) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), static_cast<qint64>(text.size())) < 0 || !f.commit())
        throw std::runtime_error("cannot write '" + path.toStdString() + "': " + f.errorString().toStdString());
}

int featuresTrain(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Train a sparse dictionary (SAE) on one site of a model, reading its activations from text files.\n"
        "Writes OUT/sae_weights.safetensors and OUT/cfg.json (SAELens's layout). Ctrl-C or SIGTERM stops after\n"
        "the current step and keeps the state in OUT/state (exit 130 or 143); --resume goes on from there and\n"
        "ends with the same weights as an uninterrupted run."));
    p.addHelpOption();
    Common c;
    const QCommandLineOption site(QStringLiteral("site"),
                                  QStringLiteral("Site: resid.L, mixer.L, gate.L, ffn.L, offset.L.D, head.L.H."),
                                  QStringLiteral("SITE"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Folder for the dictionary."),
                                 QStringLiteral("DIR"));
    const QCommandLineOption arch(QStringLiteral("architecture"),
                                  QStringLiteral("topk (default; AuxK for dead features) or relu (L1; dead "
                                                 "features resampled)."),
                                  QStringLiteral("A"), QStringLiteral("topk"));
    const QCommandLineOption dSae(QStringLiteral("d-sae"), QStringLiteral("Features (default 1024)."),
                                  QStringLiteral("M"), QStringLiteral("1024"));
    const QCommandLineOption k(QStringLiteral("k"), QStringLiteral("Active features per token, topk (default 32)."),
                               QStringLiteral("K"), QStringLiteral("32"));
    const QCommandLineOption l1(QStringLiteral("l1"),
                                QStringLiteral("L1 coefficient, relu, on activations scaled to mean norm "
                                               "sqrt(d_in) (default 1)."),
                                QStringLiteral("C"), QStringLiteral("1"));
    const QCommandLineOption tokens(QStringLiteral("tokens"),
                                    QStringLiteral("Activation rows to train on (default 2000000)."),
                                    QStringLiteral("N"), QStringLiteral("2000000"));
    const QCommandLineOption batch(QStringLiteral("batch"), QStringLiteral("Rows per step (default 4096)."),
                                   QStringLiteral("B"), QStringLiteral("4096"));
    const QCommandLineOption lr(QStringLiteral("lr"), QStringLiteral("Adam learning rate (default 0.002)."),
                                QStringLiteral("LR"), QStringLiteral("0.002"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Seed (default 0)."), QStringLiteral("S"),
                                  QStringLiteral("0"));
    const QCommandLineOption resume(QStringLiteral("resume"), QStringLiteral("Go on from OUT/state."));
    p.addOptions({c.model, site, c.corpus, out, arch, dSae, k, l1, tokens, batch, c.context, lr, seed, resume, c.device,
                  c.threads});
    p.process(args);
    if (!p.isSet(out)) throw std::invalid_argument("--out DIR is required");
    const QString dir = p.value(out);
    const std::string stateDir = QDir(dir).filePath(QStringLiteral("state")).toStdString();
    const Model m = loadModel(p, c);
    std::atomic<bool> stop{false};
    gwb::app::StopSignals signals(stop);
    gwb::app::ProgressLine line;
    auto progress = [&](const FeatureTrainProgress& pr) {
        if (line.due(pr.seconds, pr.step == pr.steps))
            std::fprintf(stderr, "%sstep %lld/%lld  mse %.4g  explained %.3f  L0 %.1f  dead %.1f%%  %.0f tokens/s%s",
                         line.start(), static_cast<long long>(pr.step), static_cast<long long>(pr.steps), pr.mse,
                         pr.explained, pr.l0, 100 * pr.deadFraction,
                         pr.seconds > 0 ? static_cast<double>(pr.tokens) / pr.seconds : 0.0, line.end());
        return true;
    };
    FeatureTrainResult r;
    if (p.isSet(resume)) {
        r = resumeDictionaryTraining(m, stateDir, progress, &stop);
    } else {
        if (!p.isSet(site)) throw std::invalid_argument("--site SITE is required (e.g. resid.3)");
        FeatureTrainOptions o;
        o.site = p.value(site).toStdString();
        o.files = corpusFiles(p, c);
        o.architecture = p.value(arch).toStdString();
        o.dSae = positiveOption(p, dSae, "d-sae");
        o.k = positiveOption(p, k, "k");
        o.l1 = numberOption(p, l1, "l1");
        o.tokens = positiveOption(p, tokens, "tokens");
        o.batch = positiveOption(p, batch, "batch");
        o.contextSize = p.isSet(c.context) ? positiveOption(p, c.context, "context") : 128;
        o.lr = numberOption(p, lr, "lr");
        bool seedOk = false;
        o.seed = p.value(seed).toULongLong(&seedOk);
        if (!seedOk) throw std::invalid_argument("--seed must be a whole number >= 0");
        o.device = p.value(c.device).toStdString();
        o.stateDir = stateDir;
        r = trainDictionary(m, o, progress, &stop);
    }
    if (line.tty()) std::fprintf(stderr, "\n");
    if (!r.complete) {
        std::fprintf(stderr,
                     "gwb features train: stopped by %s at step %lld; the state is in %s (go on with --resume)\n",
                     gwb::app::StopSignals::name(), static_cast<long long>(r.steps), stateDir.c_str());
        return gwb::app::StopSignals::exitCode(1);
    }
    saveDictionary(r.dictionary, dir.toStdString());
    std::error_code ec;
    std::filesystem::remove_all(stateDir, ec);
    std::printf("dictionary: %s (%lld features of %s, %s)\nsteps: %lld, %.1f s, %.0f tokens/s\n",
                dir.toStdString().c_str(), static_cast<long long>(r.dictionary.config.dSae),
                r.dictionary.config.site.c_str(), r.dictionary.config.architecture.c_str(),
                static_cast<long long>(r.steps), r.seconds, r.tokensPerSecond);
    return 0;
}

nlohmann::ordered_json qualityJson(const DictionaryQuality& q) {
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
    return {{"rows", q.rows},
            {"explained_variance", num(q.explainedVariance)},
            {"mse", num(q.mse)},
            {"l0", num(q.l0)},
            {"dead_fraction", num(q.deadFraction)},
            {"loss_clean", num(q.lossClean)},
            {"loss_spliced", num(q.lossSpliced)},
            {"loss_zero_ablation", num(q.lossZero)},
            {"loss_recovered", num(q.lossRecovered)},
            {"loss_tokens", q.lossTokens},
            {"definitions",
             {{"explained_variance", "1 - sum ||x - x^||^2 / sum ||x - mean x||^2 over the held-out rows"},
              {"l0", "mean number of features > 0 per row"},
              {"dead_fraction", "share of features > 0 on no held-out row"},
              {"loss_recovered",
               "(loss with the site zeroed - loss with x^ spliced in) / (loss zeroed - clean loss); next-token "
               "cross-entropy in nats"}}}};
}

int featuresEval(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "The standard quality figures of a dictionary on held-out text: explained variance, L0, the dead\n"
        "fraction, and the next-token loss with the reconstruction spliced in, against the clean loss and\n"
        "against zero ablation (the fraction of loss recovered)."));
    p.addHelpOption();
    Common c;
    const QCommandLineOption dict(QStringLiteral("dict"), QStringLiteral("Dictionary folder."), QStringLiteral("DIR"));
    const QCommandLineOption windows(QStringLiteral("windows"), QStringLiteral("Use at most N windows (default all)."),
                                     QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Also write the figures as JSON."),
                                  QStringLiteral("FILE"));
    p.addOptions({c.model, dict, c.corpus, c.context, windows, json, c.device, c.threads});
    p.process(args);
    if (!p.isSet(dict)) throw std::invalid_argument("--dict DIR is required");
    const Dictionary d = loadDictionary(p.value(dict).toStdString());
    const Model m = loadModel(p, c);
    const int64_t ctx = p.isSet(c.context) ? positiveOption(p, c.context, "context") : d.config.contextSize;
    const DictionaryQuality q = evaluateDictionary(m, d, corpusFiles(p, c), ctx, p.value(windows).toLongLong());
    std::printf("site: %s (%lld features, %s)\nrows: %lld\nexplained variance: %.4f\nL0: %.2f\ndead fraction: %.4f\n"
                "loss clean: %.4f nats\nloss spliced: %.4f nats\nloss zero-ablated: %.4f nats\nloss recovered: %.4f\n",
                d.config.site.c_str(), static_cast<long long>(d.config.dSae), d.config.architecture.c_str(),
                static_cast<long long>(q.rows), q.explainedVariance, q.l0, q.deadFraction, q.lossClean, q.lossSpliced,
                q.lossZero, q.lossRecovered);
    if (p.isSet(json)) writeText(p.value(json), qualityJson(q).dump(2) + "\n");
    return 0;
}

nlohmann::ordered_json summaryJson(const FeatureSummary& s, const Dictionary& d, const Tokenizer* tok) {
    auto piece = [&](int32_t id) { return tok ? tok->pieceText(id) : std::to_string(id); };
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (const FeatureContext& c : s.top) {
        nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
        for (int32_t id : c.ids)
            pieces.push_back(piece(id));
        top.push_back({{"activation", c.activation},
                       {"window", c.window},
                       {"position", c.position},
                       {"begin", c.begin},
                       {"ids", c.ids},
                       {"pieces", pieces},
                       {"activations", c.activations}});
    }
    auto reads = [&](const std::vector<std::pair<int32_t, float>>& v) {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const auto& [id, value] : v)
            a.push_back({{"piece", piece(id)}, {"id", id}, {"logit", value}});
        return a;
    };
    return {{"name", d.featureName(s.feature)},
            {"feature", s.feature},
            {"rows", s.rows},
            {"fired", s.fired},
            {"max_activation", s.maxActivation},
            {"top", top},
            {"histogram", {{"edges", s.histogramEdges}, {"counts", s.histogramCounts}}},
            {"promoted", reads(s.promoted)},
            {"suppressed", reads(s.suppressed)},
            {"reading_layer", s.readingLayer},
            {"reading_share",
             std::isfinite(s.readingShare) ? nlohmann::ordered_json(s.readingShare) : nlohmann::ordered_json(nullptr)}};
}

std::vector<int64_t> featureList(const QCommandLineParser& p, const QCommandLineOption& o) {
    std::vector<int64_t> out;
    for (const QString& v : p.values(o))
        for (const QString& part : v.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            const qlonglong f = part.trimmed().toLongLong(&ok);
            if (!ok || f < 0)
                throw std::invalid_argument("--feature takes feature numbers, not '" + part.toStdString() + "'");
            out.push_back(f);
        }
    return out;
}

int featuresTopOrExport(const QStringList& args, bool exportAll) {
    QCommandLineParser p;
    p.setApplicationDescription(
        exportAll
            ? QStringLiteral(
                  "Write the dashboard data of every feature (or the --feature ones) as JSON: top-activating\n"
                  "contexts with the activation on each token, activation histograms, the decoder\n"
                  "direction read through the unembedding, the reading-subspace share.")
            : QStringLiteral("Top-activating contexts of features over text files, with the activation on each token,\n"
                             "the histogram summary, the unembedding read and the reading-subspace share."));
    p.addHelpOption();
    Common c;
    const QCommandLineOption dict(QStringLiteral("dict"), QStringLiteral("Dictionary folder."), QStringLiteral("DIR"));
    const QCommandLineOption feature(QStringLiteral("feature"), QStringLiteral("Feature number (repeat, or 3,17,40)."),
                                     QStringLiteral("F"));
    const QCommandLineOption top(QStringLiteral("top"), QStringLiteral("Contexts per feature (default 10)."),
                                 QStringLiteral("N"), QStringLiteral("10"));
    const QCommandLineOption windows(QStringLiteral("windows"), QStringLiteral("Use at most N windows (default all)."),
                                     QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("JSON file to write."), QStringLiteral("FILE"));
    p.addOptions({c.model, dict, c.corpus, feature, top, c.context, windows, out, c.device, c.threads});
    p.process(args);
    if (!p.isSet(dict)) throw std::invalid_argument("--dict DIR is required");
    const std::vector<int64_t> feats = featureList(p, feature);
    if (!exportAll && feats.empty()) throw std::invalid_argument("--feature F is required");
    if (exportAll && !p.isSet(out)) throw std::invalid_argument("--out FILE is required");
    const Dictionary d = loadDictionary(p.value(dict).toStdString());
    const Model m = loadModel(p, c);
    const int64_t ctx = p.isSet(c.context) ? positiveOption(p, c.context, "context") : d.config.contextSize;
    const auto sums = summarizeFeatures(m, d, corpusFiles(p, c), feats, positiveOption(p, top, "top"), 8, 4, ctx,
                                        p.value(windows).toLongLong());
    const Tokenizer* tok = m.tokenizer().get();
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const FeatureSummary& s : sums) {
        all.push_back(summaryJson(s, d, tok));
        if (exportAll) continue;
        std::printf("%s: fired on %lld of %lld rows, max %.4g", d.featureName(s.feature).c_str(),
                    static_cast<long long>(s.fired), static_cast<long long>(s.rows), s.maxActivation);
        if (s.readingLayer >= 0)
            std::printf(", %.1f%% of its direction in row(W_red) of layer %d", 100 * s.readingShare, s.readingLayer);
        std::printf("\n");
        for (const FeatureContext& ctxs : s.top) {
            std::printf("  %8.4f  ", ctxs.activation);
            for (size_t i = 0; i < ctxs.ids.size(); ++i) {
                const std::string piece = tok ? tok->pieceText(ctxs.ids[i]) : std::to_string(ctxs.ids[i]);
                const bool here = ctxs.begin + static_cast<int64_t>(i) == ctxs.position;
                if (here)
                    std::printf("[[%s]]", piece.c_str());
                else if (ctxs.activations[i] > 0)
                    std::printf("[%s %.2g]", piece.c_str(), ctxs.activations[i]);
                else
                    std::printf("%s", piece.c_str());
            }
            std::printf("\n");
        }
        if (!s.promoted.empty()) {
            std::printf("  promotes:");
            for (const auto& [id, v] : s.promoted)
                std::printf(" %s (%.3g)", tok ? tok->pieceText(id).c_str() : std::to_string(id).c_str(), v);
            std::printf("\n  suppresses:");
            for (const auto& [id, v] : s.suppressed)
                std::printf(" %s (%.3g)", tok ? tok->pieceText(id).c_str() : std::to_string(id).c_str(), v);
            std::printf("\n");
        }
    }
    if (p.isSet(out)) {
        nlohmann::ordered_json doc = {{"format", "gwb-feature-dashboards"},
                                      {"version", 1},
                                      {"site", d.config.site},
                                      {"model", m.displayName()},
                                      {"dictionary", p.value(dict).toStdString()},
                                      {"features", all}};
        writeText(p.value(out), doc.dump(1) + "\n");
        if (exportAll) std::printf("features: %zu written to %s\n", sums.size(), p.value(out).toStdString().c_str());
    }
    return 0;
}

int featuresEdit(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "A feature as a causal test: ablate it (its part of the reconstruction removed), clamp it to --value or\n"
        "steer along it (--value times its decoder direction added) at every position or at --position, and\n"
        "read the metric logit[answer] - logit[wrong] at the last token, without and with the edit."));
    p.addHelpOption();
    Common c;
    const QCommandLineOption dict(QStringLiteral("dict"), QStringLiteral("Dictionary folder."), QStringLiteral("DIR"));
    const QCommandLineOption feature(QStringLiteral("feature"),
                                     QStringLiteral("Feature: its number, or its name feature.<site>.<n>."),
                                     QStringLiteral("F"));
    const QCommandLineOption mode(QStringLiteral("mode"), QStringLiteral("ablate (default), clamp or steer."),
                                  QStringLiteral("M"), QStringLiteral("ablate"));
    const QCommandLineOption value(QStringLiteral("value"), QStringLiteral("clamp: the activation; steer: the scale."),
                                   QStringLiteral("V"), QStringLiteral("0"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("The prompt."), QStringLiteral("TEXT"));
    const QCommandLineOption answer(QStringLiteral("answer"), QStringLiteral("The answer piece."), QStringLiteral("P"));
    const QCommandLineOption wrong(QStringLiteral("wrong"), QStringLiteral("The wrong piece."), QStringLiteral("P"));
    const QCommandLineOption position(QStringLiteral("position"),
                                      QStringLiteral("Edit only this position (default every one)."),
                                      QStringLiteral("N"), QStringLiteral("-1"));
    p.addOptions({c.model, dict, feature, mode, value, prompt, answer, wrong, position, c.device, c.threads});
    p.process(args);
    for (const auto* o : {&dict, &feature, &prompt, &answer, &wrong})
        if (!p.isSet(*o)) throw std::invalid_argument("--" + o->names().front().toStdString() + " is required");
    const Dictionary d = loadDictionary(p.value(dict).toStdString());
    FeatureEdit e;
    const QString f = p.value(feature);
    if (f.startsWith(QLatin1String("feature."))) {
        const auto [site, index] = parseFeatureName(f.toStdString());
        if (site != d.config.site)
            throw std::invalid_argument(f.toStdString() + " is a feature of site " + site + "; the dictionary reads " +
                                        d.config.site);
        e.feature = index;
    } else {
        bool ok = false;
        e.feature = f.toLongLong(&ok);
        if (!ok) throw std::invalid_argument("--feature takes a number or feature.<site>.<n>, not '" + f.toStdString() + "'");
    }
    e.mode = p.value(mode).toStdString();
    e.value = numberOption(p, value, "value");
    e.position = p.value(position).toLongLong();
    const Model m = loadModel(p, c);
    if (!m.tokenizer()) throw std::invalid_argument("the model has no tokenizer");
    const std::vector<int32_t> ids = m.tokenizer()->encodeIds(p.value(prompt).toStdString());
    const auto a = static_cast<int32_t>(pieceId(m, p.value(answer).toStdString(), "--answer"));
    const auto w = static_cast<int32_t>(pieceId(m, p.value(wrong).toStdString(), "--wrong"));
    const FeatureEditResult r = runFeatureEdit(m, d, e, ids, a, w);
    const Tokenizer& tok = *m.tokenizer();
    std::printf("%s, %s%s at %s; metric logit['%s'] - logit['%s'] at token %lld ('%s')\n", r.name.c_str(),
                e.mode.c_str(), e.mode == "ablate" ? "" : (" " + std::to_string(e.value)).c_str(),
                e.position < 0 ? "every position" : ("position " + std::to_string(e.position)).c_str(),
                tok.pieceText(a).c_str(), tok.pieceText(w).c_str(), static_cast<long long>(r.position),
                tok.pieceText(ids[static_cast<size_t>(r.position)]).c_str());
    std::printf("metric clean: %.4f\nmetric edited: %.4f\nchange: %+.4f\n", r.metricClean, r.metricEdited,
                r.metricEdited - r.metricClean);
    std::printf("activation by token:");
    for (size_t i = 0; i < r.activation.size(); ++i)
        if (r.activation[i] > 0) std::printf(" %s %.3g", tok.pieceText(ids[i]).c_str(), r.activation[i]);
    std::printf("\nnext pieces clean:");
    for (const auto& [id, pr] : r.topClean)
        std::printf(" %s %.3f", tok.pieceText(id).c_str(), pr);
    std::printf("\nnext pieces edited:");
    for (const auto& [id, pr] : r.topEdited)
        std::printf(" %s %.3f", tok.pieceText(id).c_str(), pr);
    std::printf("\n");
    return 0;
}

int runFeatures(const QStringList& args) {
    const QString sub = args.size() > 1 ? args.at(1) : QString();
    if (sub != QLatin1String("train") && sub != QLatin1String("eval") && sub != QLatin1String("top") &&
        sub != QLatin1String("export") && sub != QLatin1String("edit")) {
        std::fprintf(stderr,
                     "usage: gwb features train|eval|top|export|edit [options]  (gwb features <sub> --help for each)\n");
        return sub == QLatin1String("--help") || sub == QLatin1String("-h") ? 0 : 1;
    }
    QStringList rest = args;
    rest[0] = rest[0] + QLatin1Char(' ') + sub;
    rest.removeAt(1);
    try {
        if (sub == QLatin1String("train")) return featuresTrain(rest);
        if (sub == QLatin1String("eval")) return featuresEval(rest);
        if (sub == QLatin1String("edit")) return featuresEdit(rest);
        return featuresTopOrExport(rest, sub == QLatin1String("export"));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb features %s: %s\n", sub.toStdString().c_str(), e.what());
        return 1;
    }
}

} // namespace

GWB_REGISTER_COMMAND("features",
                     "Sparse dictionaries (SAEs): train, eval, top contexts, export dashboards, edit (ablate/steer)",
                     runFeatures, false);
