// gwb features train | eval | top | export: sparse dictionaries on a site of either model.

#include "common/bundled_models.h"
#include "cli/cli_args.h"
#include "cli/features_transcoders.h"
#include "common/command_registry.h"
#include "common/option_table.h"
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
#include <map>
#include <optional>

namespace {

using namespace gwb::engine;
using gwb::app::cli::checkFolderWritable;
using gwb::app::cli::checkWritable;
using gwb::app::cli::processSubcommand;
using gwb::app::cli::terminalPiece;

struct Common {
    QCommandLineOption model{QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE")};
    QCommandLineOption corpus{QStringLiteral("corpus"), QStringLiteral("UTF-8 text file (repeat for several)."),
                              QStringLiteral("FILE")};
    QCommandLineOption context{QStringLiteral("context"),
                               QStringLiteral("Tokens per window (default: the dictionary's, or 128)."),
                               QStringLiteral("T")};
    QCommandLineOption second{QStringLiteral("second"),
                              QStringLiteral("Crosscoders: the second model (default: the bundled Transformer)."),
                              QStringLiteral("FILE"), QStringLiteral("transformer")};
    QCommandLineOption device = gwb::app::deviceOption();
    QCommandLineOption threads = gwb::app::threadsOption();
};

Model loadSecond(const QCommandLineParser& p, const Common& c) {
    return loadOrImportModel(gwb::app::modelArgument(p.value(c.second)).toStdString(), p.value(c.device).toStdString())
        .model;
}

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

/// Whether a stopped run's state (OUT/state/state.json) is a crosscoder's.
bool readStateSecondSite(const std::string& stateDir) {
    QFile f(QString::fromStdString(stateDir + "/state.json"));
    if (!f.open(QIODevice::ReadOnly)) return false;
    try {
        const auto j = nlohmann::json::parse(f.readAll().toStdString());
        return !j.at("options").value("second_site", std::string()).empty();
    } catch (const std::exception&) {
        return false;
    }
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
    const std::vector<QCommandLineOption> valued = gwb::app::commandLineOptions(featureTrainOptions());
    const QCommandLineOption resume(QStringLiteral("resume"), QStringLiteral("Go on from OUT/state."));
    const QCommandLineOption secondSite(
        QStringLiteral("second-site"),
        QStringLiteral("Train a crosscoder: this site of the --second model, on the same tokens (one dictionary, a "
                       "decoder part per model)."),
        QStringLiteral("SITE"));
    const QCommandLineOption targetSite(
        QStringLiteral("target-site"),
        QStringLiteral("Train a transcoder: read --site (e.g. ffn_in.2, the FFN's input) and reconstruct this site "
                       "(e.g. ffn.2, its output)."),
        QStringLiteral("SITE"));
    const QCommandLineOption transcoders(
        QStringLiteral("transcoders"),
        QStringLiteral("Train the model's transcoder set (attribution graphs): one transcoder per block, ffn_in.L -> "
                       "ffn.L, each in OUT/ffn.L, listed in OUT/transcoders.json. Ctrl-C keeps the layer's state; "
                       "--resume goes on from the layer it stopped at."));
    p.addOptions({c.model, site, c.corpus, out});
    for (const QCommandLineOption& o : valued)
        p.addOption(o);
    p.addOptions({resume, secondSite, targetSite, transcoders, c.second, c.device, c.threads});
    processSubcommand(p, args);
    FeatureTrainOptions given; // the table's options, checked before anything loads
    gwb::app::readCommandLineOptions(p, valued, featureTrainOptions(), given);
    if (!p.isSet(out)) throw std::invalid_argument("--out DIR is required");
    const QString dir = p.value(out);
    checkFolderWritable(dir, "--out");
    if (p.isSet(transcoders) && (p.isSet(site) || p.isSet(targetSite) || p.isSet(secondSite)))
        throw std::invalid_argument("--transcoders trains every block's ffn_in.L -> ffn.L: leave out --site, "
                                    "--target-site and --second-site");
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
    // A crosscoder's second model: named on the command line, or (resuming) when the state has a second site.
    std::optional<Model> second;
    const bool crosscoder =
        p.isSet(secondSite) ||
        (p.isSet(resume) && std::filesystem::exists(stateDir + "/state.json") && readStateSecondSite(stateDir));
    if (crosscoder) second = loadSecond(p, c);
    auto options = [&] {
        FeatureTrainOptions o = given;
        o.files = corpusFiles(p, c);
        o.device = p.value(c.device).toStdString();
        o.stateDir = stateDir;
        return o;
    };
    if (p.isSet(transcoders)) return gwb::app::cli::trainTranscoders(m, options(), dir, p.isSet(resume), stop);
    FeatureTrainResult r;
    if (p.isSet(resume)) {
        r = resumeDictionaryTraining(m, stateDir, progress, &stop, second ? &*second : nullptr);
    } else {
        if (!p.isSet(site)) throw std::invalid_argument("--site SITE is required (e.g. resid.3)");
        FeatureTrainOptions o = options();
        o.site = p.value(site).toStdString();
        if (p.isSet(targetSite)) o.targetSite = p.value(targetSite).toStdString();
        if (second) {
            o.secondSite = p.value(secondSite).toStdString();
            r = trainCrosscoder(m, *second, o, progress, &stop);
        } else {
            r = trainDictionary(m, o, progress, &stop);
        }
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
    std::printf(
        "dictionary: %s (%lld features of %s%s, %s)\nsteps: %lld, %.1f s, %.0f tokens/s\n", dir.toStdString().c_str(),
        static_cast<long long>(r.dictionary.config.dSae), r.dictionary.config.site.c_str(),
        r.dictionary.config.crosscoder()
            ? (" and " + r.dictionary.config.secondSite + " of " + r.dictionary.config.secondModelName).c_str()
        : r.dictionary.config.transcoder() ? (" -> " + r.dictionary.config.targetSite + ", a transcoder").c_str()
                                           : "",
        r.dictionary.config.architecture.c_str(), static_cast<long long>(r.steps), r.seconds, r.tokensPerSecond);
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
            {"loss_ablated", num(q.lossAblated)},
            {"ablation", DictionaryQuality::kAblation},
            {"ablation_note", q.ablationNote},
            {"loss_recovered", num(q.lossRecovered)},
            {"loss_tokens", q.lossTokens},
            {"definitions",
             {{"explained_variance", "1 - sum ||x - x^||^2 / sum ||x - mean x||^2 over the held-out rows"},
              {"l0", "mean number of features > 0 per row"},
              {"dead_fraction", "share of features > 0 on no held-out row"},
              {"ablation", DictionaryQuality::kAblationDefinition},
              {"loss_ablated", "next-token cross-entropy (nats) with the site ablated as \"ablation\" says; null "
                               "where the hook check finds a Grassmann block's pair planes made of nearly parallel "
                               "vectors after it (ablation_note says so): such a loss is rounding noise"},
              {"loss_recovered",
               "(loss_ablated - loss with x^ spliced in) / (loss_ablated - clean loss); null when the ablated loss is "
               "not defined or does not exceed the clean loss (nothing to recover)"}}}};
}

/// A crosscoder's relative decoder norms (the engine's relativeNormsJson), with their text
/// histogram (20 bins over [0, 1]) and kinds printed when `print`.
nlohmann::ordered_json relativeNormJson(const Dictionary& d, bool print) {
    nlohmann::ordered_json rel = nlohmann::ordered_json::parse(relativeNormsJson(d));
    if (print) {
        const std::vector<int64_t> bins = rel["histogram_counts"].get<std::vector<int64_t>>();
        std::printf("relative decoder norm ||d_2|| / (||d_1|| + ||d_2||): 0 = %s only, 1 = %s only\n",
                    d.config.modelName.c_str(), d.config.secondModelName.c_str());
        const int64_t most = std::max<int64_t>(1, *std::max_element(bins.begin(), bins.end()));
        for (size_t b = 0; b < bins.size(); ++b)
            std::printf("  %.2f-%.2f %6lld %s\n", b / 20.0, (b + 1) / 20.0, static_cast<long long>(bins[b]),
                        std::string(static_cast<size_t>(50 * bins[b] / most), '#').c_str());
        const auto& kinds = rel["kinds"];
        std::printf("features: %lld of the first model (< 0.3), %lld shared (0.3-0.7), %lld of the second (> 0.7)\n",
                    static_cast<long long>(kinds["first"].get<int64_t>()),
                    static_cast<long long>(kinds["shared"].get<int64_t>()),
                    static_cast<long long>(kinds["second"].get<int64_t>()));
    }
    return rel;
}

int crosscoderEval(const QCommandLineParser& p, const Common& c, const Dictionary& d, const Model& m, int64_t ctx,
                   int64_t windows, const QCommandLineOption& json) {
    const Model second = loadSecond(p, c);
    const std::vector<DictionaryQuality> qs = evaluateCrosscoder(m, second, d, corpusFiles(p, c), ctx, windows);
    std::printf("crosscoder: %s of %s and %s of %s (%lld features, %s)\nrows: %lld\nL0: %.2f\ndead fraction: %.4f\n",
                d.config.site.c_str(), d.config.modelName.c_str(), d.config.secondSite.c_str(),
                d.config.secondModelName.c_str(), static_cast<long long>(d.config.dSae), d.config.architecture.c_str(),
                static_cast<long long>(qs[0].rows), qs[0].l0, qs[0].deadFraction);
    const std::string names[] = {d.config.modelName, d.config.secondModelName};
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < 2; ++i) {
        const DictionaryQuality& q = qs[i];
        std::printf("%s: explained variance %.4f, loss clean %.4f, spliced %.4f, ablated (%s) %.4f, recovered %.4f\n",
                    names[i].c_str(), q.explainedVariance, q.lossClean, q.lossSpliced, DictionaryQuality::kAblation,
                    q.lossAblated, q.lossRecovered);
        if (!q.ablationNote.empty()) std::printf("  note: %s\n", q.ablationNote.c_str());
        nlohmann::ordered_json qj = qualityJson(q);
        qj["model"] = names[i];
        out.push_back(qj);
    }
    const nlohmann::ordered_json rel = relativeNormJson(d, true);
    if (p.isSet(json))
        writeText(p.value(json), nlohmann::ordered_json{{"models", out}, {"relative_norms", rel}}.dump(2) + "\n");
    return 0;
}

int featuresEval(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "The standard quality figures of a dictionary on held-out text: explained variance, L0, the dead\n"
        "fraction, and the next-token loss with the reconstruction spliced in, against the clean loss and\n"
        "against an ablation that replaces each position by its mean at that position over the held-out\n"
        "windows (the fraction of loss recovered)."));
    p.addHelpOption();
    Common c;
    const QCommandLineOption dict(QStringLiteral("dict"), QStringLiteral("Dictionary folder."), QStringLiteral("DIR"));
    const QCommandLineOption windows(QStringLiteral("windows"), QStringLiteral("Use at most N windows (default all)."),
                                     QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Also write the figures as JSON."),
                                  QStringLiteral("FILE"));
    p.addOptions({c.model, c.second, dict, c.corpus, c.context, windows, json, c.device, c.threads});
    processSubcommand(p, args);
    if (!p.isSet(dict)) throw std::invalid_argument("--dict DIR is required");
    if (p.isSet(json)) checkWritable(p.value(json), "--json");
    const Dictionary d = loadDictionary(p.value(dict).toStdString());
    const Model m = loadModel(p, c);
    const int64_t ctx = p.isSet(c.context) ? positiveOption(p, c.context, "context") : d.config.contextSize;
    if (d.config.crosscoder()) return crosscoderEval(p, c, d, m, ctx, p.value(windows).toLongLong(), json);
    const DictionaryQuality q = evaluateDictionary(m, d, corpusFiles(p, c), ctx, p.value(windows).toLongLong());
    std::printf("site: %s (%lld features, %s)\nrows: %lld\nexplained variance: %.4f\nL0: %.2f\ndead fraction: %.4f\n"
                "loss clean: %.4f nats\nloss spliced: %.4f nats\nloss ablated (%s): %.4f nats\nloss recovered: %.4f\n",
                d.config.site.c_str(), static_cast<long long>(d.config.dSae), d.config.architecture.c_str(),
                static_cast<long long>(q.rows), q.explainedVariance, q.l0, q.deadFraction, q.lossClean, q.lossSpliced,
                DictionaryQuality::kAblation, q.lossAblated, q.lossRecovered);
    if (!q.ablationNote.empty()) std::printf("note: %s\n", q.ablationNote.c_str());
    if (p.isSet(json)) writeText(p.value(json), qualityJson(q).dump(2) + "\n");
    return 0;
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
    p.addOptions({c.model, c.second, dict, c.corpus, feature, top, c.context, windows, out, c.device, c.threads});
    processSubcommand(p, args);
    if (!p.isSet(dict)) throw std::invalid_argument("--dict DIR is required");
    const std::vector<int64_t> feats = featureList(p, feature);
    if (!exportAll && feats.empty()) throw std::invalid_argument("--feature F is required");
    if (exportAll && !p.isSet(out)) throw std::invalid_argument("--out FILE is required");
    if (p.isSet(out)) checkWritable(p.value(out), "--out");
    const Dictionary d = loadDictionary(p.value(dict).toStdString());
    const Model m = loadModel(p, c);
    const int64_t ctx = p.isSet(c.context) ? positiveOption(p, c.context, "context") : d.config.contextSize;
    std::optional<Model> second;
    if (d.config.crosscoder()) second = loadSecond(p, c);
    const auto sums = summarizeFeatures(m, d, corpusFiles(p, c), feats, positiveOption(p, top, "top"), 8, 4, ctx,
                                        p.value(windows).toLongLong(), nullptr, second ? &*second : nullptr);
    const Tokenizer* tok = m.tokenizer().get();
    for (const FeatureSummary& s : sums) {
        if (exportAll) continue;
        std::printf("%s: fired on %lld of %lld rows, max %.4g", d.featureName(s.feature).c_str(),
                    static_cast<long long>(s.fired), static_cast<long long>(s.rows), s.maxActivation);
        if (s.readingLayer >= 0)
            std::printf(", %.1f%% of its direction in row(W_red) of layer %d", 100 * s.readingShare, s.readingLayer);
        if (std::isfinite(s.relativeNorm))
            std::printf(", relative decoder norm %.2f (%s)", s.relativeNorm,
                        relativeNormKind(s.relativeNorm) == "first"    ? d.config.modelName.c_str()
                        : relativeNormKind(s.relativeNorm) == "second" ? d.config.secondModelName.c_str()
                                                                       : "shared");
        std::printf("\n");
        for (const FeatureContext& ctxs : s.top) {
            std::printf("  %8.4f  ", ctxs.activation);
            for (size_t i = 0; i < ctxs.ids.size(); ++i) {
                const std::string piece =
                    tok ? terminalPiece(tok->pieceText(ctxs.ids[i])) : std::to_string(ctxs.ids[i]);
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
                std::printf(" %s (%.3g)", tok ? terminalPiece(tok->pieceText(id)).c_str() : std::to_string(id).c_str(),
                            v);
            std::printf("\n  suppresses:");
            for (const auto& [id, v] : s.suppressed)
                std::printf(" %s (%.3g)", tok ? terminalPiece(tok->pieceText(id)).c_str() : std::to_string(id).c_str(),
                            v);
            std::printf("\n");
        }
    }
    if (p.isSet(out)) {
        const std::string doc =
            featureDashboardsJson(featureDashboards(m, d, sums), d, m.displayName(), p.value(dict).toStdString(),
                                  second ? second->displayName() : std::string());
        writeText(p.value(out), doc);
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
    p.addOptions({c.model, c.second, dict, feature, mode, value, prompt, answer, wrong, position, c.device, c.threads});
    processSubcommand(p, args);
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
        if (!ok)
            throw std::invalid_argument("--feature takes a number or feature.<site>.<n>, not '" + f.toStdString() +
                                        "'");
    }
    e.mode = p.value(mode).toStdString();
    e.value = numberOption(p, value, "value");
    e.position = p.value(position).toLongLong();
    const Model m = loadModel(p, c);
    if (!m.tokenizer()) throw std::invalid_argument("the model has no tokenizer");
    const std::vector<int32_t> ids = m.tokenizer()->encodeIds(p.value(prompt).toStdString());
    const auto a = static_cast<int32_t>(pieceId(m, p.value(answer).toStdString(), "--answer"));
    const auto w = static_cast<int32_t>(pieceId(m, p.value(wrong).toStdString(), "--wrong"));
    std::vector<FeatureEditResult> results;
    std::vector<std::string> names{m.displayName()};
    if (d.config.crosscoder()) {
        const Model second = loadSecond(p, c);
        results = runCrosscoderEdit(m, second, d, e, ids, a, w);
        names.push_back(second.displayName());
    } else {
        results = {runFeatureEdit(m, d, e, ids, a, w)};
    }
    const Tokenizer& tok = *m.tokenizer();
    for (size_t i = 0; i < results.size(); ++i) {
        const FeatureEditResult& r = results[i];
        if (results.size() > 1) std::printf("%s%s:\n", i ? "\n" : "", names[i].c_str());
        std::printf("%s, %s%s at %s; metric logit['%s'] - logit['%s'] at token %lld ('%s')\n", r.name.c_str(),
                    e.mode.c_str(), e.mode == "ablate" ? "" : (" " + std::to_string(e.value)).c_str(),
                    e.position < 0 ? "every position" : ("position " + std::to_string(e.position)).c_str(),
                    terminalPiece(tok.pieceText(a)).c_str(), terminalPiece(tok.pieceText(w)).c_str(),
                    static_cast<long long>(r.position),
                    terminalPiece(tok.pieceText(ids[static_cast<size_t>(r.position)])).c_str());
        std::printf("metric clean: %.4f\nmetric edited: %.4f\nchange: %+.4f\n", r.metricClean, r.metricEdited,
                    r.metricEdited - r.metricClean);
        std::printf("activation by token:");
        bool fired = false;
        for (size_t i = 0; i < r.activation.size(); ++i)
            if (r.activation[i] > 0) {
                std::printf(" %s %.3g", terminalPiece(tok.pieceText(ids[i])).c_str(), r.activation[i]);
                fired = true;
            }
        if (!fired) std::printf(" none (the feature does not fire on this prompt)");
        std::printf("\nnext pieces clean:");
        for (const auto& [id, pr] : r.topClean)
            std::printf(" %s %.3f", terminalPiece(tok.pieceText(id)).c_str(), pr);
        std::printf("\nnext pieces edited:");
        for (const auto& [id, pr] : r.topEdited)
            std::printf(" %s %.3f", terminalPiece(tok.pieceText(id)).c_str(), pr);
        std::printf("\n");
    }
    return 0;
}

int runFeatures(const QStringList& args) {
    const QString sub = args.size() > 1 ? args.at(1) : QString();
    if (sub != QLatin1String("train") && sub != QLatin1String("eval") && sub != QLatin1String("top") &&
        sub != QLatin1String("export") && sub != QLatin1String("edit")) {
        std::fprintf(
            stderr, "usage: gwb features train|eval|top|export|edit [options]  (gwb features <sub> --help for each)\n");
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

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kFeaturesCommand{
    "features", "Sparse dictionaries (SAEs): train, eval, top contexts, export dashboards, edit (ablate/steer)",
    runFeatures, false};
} // namespace gwb::app
