// gwb figure: the figure of one view for one prompt, without a window, exactly as the window's
// File > Export Figure makes it with the same settings (same trace job, same view, same export).

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "gui/corpus_figure.h"
#include "gui/figure_request.h"
#include "gui/patching_job.h"
#include "gui/patching_pairs_job.h"
#include "gui/paths_job.h"
#include "gui/features_job.h"
#include "gui/saliency_job.h"
#include "gui/trace_job.h"

#include "gwb/engine/sites.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/views/colormap.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/patching_view.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/features_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/selection.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/view.h"

#include <QCommandLineParser>
#include <QFile>
#include <QFileInfo>
#include <QTextStream>

#include <algorithm>
#include <stdexcept>

namespace {

using gwb::engine::ModelKind;

QString readPromptFile(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw std::runtime_error("cannot open prompt file '" + path.toStdString() +
                                 "': " + f.errorString().toStdString());
    const QByteArray bytes = f.readAll();
    try {
        gwb::engine::checkUtf8(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    } catch (const std::exception& e) {
        throw std::runtime_error("prompt file '" + path.toStdString() + "' is not UTF-8 text: " + e.what());
    }
    return QString::fromUtf8(bytes);
}

int intOption(const QCommandLineParser& p, const QCommandLineOption& o, const char* name, int min) {
    bool ok = false;
    const int v = p.value(o).toInt(&ok);
    if (!ok || v < min)
        throw std::invalid_argument(std::string("--") + name + " must be an integer >= " + std::to_string(min) +
                                    ", got '" + p.value(o).toStdString() + "'");
    return v;
}

/// Which models a view needs: the Grassmann model, the baseline, or both.
void modelsFor(const QString& view, bool& grassmann, bool& baseline) {
    grassmann = view != QLatin1String("attention");
    baseline = view == QLatin1String("attention") || view == QLatin1String("compare") ||
               view == QLatin1String("lens") || view == QLatin1String("saliency") ||
               view == QLatin1String("patching") || view == QLatin1String("paths") ||
               view == QLatin1String("features"); // a crosscoder reads both
}

int runFigure(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Make one view's figure for a prompt without a window (same figure as the window's Export Figure).\n"
        "Example: gwb figure --view gate --prompt \"It is a truth universally acknowledged\" --out gate.pdf\n"
        "Corpus statistics: gwb figure --stats S.npz --view corpus --quantity surprisal --out surprisal.pdf"));
    p.addHelpOption();
    const QCommandLineOption view(
        QStringLiteral("view"),
        QStringLiteral("gate, plucker, angles, subspace, attention, compare, readout, lens, saliency, patching, "
                       "paths, features (with --dictionary) or corpus (with --stats)."),
        QStringLiteral("ID"));
    const QCommandLineOption model(QStringLiteral("model"),
                                   QStringLiteral("Grassmann model (.gwb; default the bundled one)."),
                                   QStringLiteral("FILE"));
    const QCommandLineOption baseline(QStringLiteral("baseline"),
                                      QStringLiteral("Transformer baseline (.gwb; default the bundled one)."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption layer(QStringLiteral("layer"), QStringLiteral("Selected layer (default 0)."),
                                   QStringLiteral("L"), QStringLiteral("0"));
    const QCommandLineOption head(QStringLiteral("head"), QStringLiteral("Selected attention head (default 0)."),
                                  QStringLiteral("H"), QStringLiteral("0"));
    const QCommandLineOption token(
        QStringLiteral("token"),
        QStringLiteral("Selected token index (default: the first token with every offset valid, as the window)."),
        QStringLiteral("I"));
    const QCommandLineOption target(
        QStringLiteral("target"),
        QStringLiteral("Saliency target: one vocabulary piece (default: the actual next token)."),
        QStringLiteral("PIECE"));
    const QCommandLineOption offset(QStringLiteral("offset"),
                                    QStringLiteral("Selected offset D of the layer (default its first offset)."),
                                    QStringLiteral("D"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Prompt text."), QStringLiteral("TEXT"));
    const QCommandLineOption promptFile(QStringLiteral("prompt-file"), QStringLiteral("UTF-8 file with the prompt."),
                                        QStringLiteral("F"));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output figure: .png, .svg or .pdf."),
                                 QStringLiteral("FILE"));
    const QCommandLineOption width(QStringLiteral("width"),
                                   QStringLiteral("Figure width: 3.5in (one column, default), 7in (two), or mm/cm/pt."),
                                   QStringLiteral("LEN"), QStringLiteral("3.5in"));
    const QCommandLineOption dpi(QStringLiteral("dpi"), QStringLiteral("PNG resolution (default 300)."),
                                 QStringLiteral("N"), QStringLiteral("300"));
    const QCommandLineOption colormap(QStringLiteral("colormap"),
                                      QStringLiteral("viridis, cividis or magma (default: the view's)."),
                                      QStringLiteral("NAME"));
    const QCommandLineOption font(QStringLiteral("font-size"),
                                  QStringLiteral("Body font size in points (default 8, or 9 at 6 in and wider)."),
                                  QStringLiteral("PT"));
    const QCommandLineOption noCaption(QStringLiteral("no-caption"), QStringLiteral("Leave out the caption line."));
    const QCommandLineOption noColorbar(QStringLiteral("no-colorbar"), QStringLiteral("Leave out the colour bar."));
    const QCommandLineOption showSelection(
        QStringLiteral("show-selection"),
        QStringLiteral("Outline the selected token column and layer row (as on screen); off by default."));
    const QCommandLineOption data(
        QStringLiteral("data"),
        QStringLiteral("Also write the numbers: FILE.csv names the base; writes FILE_<table>.csv/.npy and FILE.json."),
        QStringLiteral("FILE.csv"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    const QCommandLineOption continueN(
        QStringLiteral("continue"),
        QStringLiteral("First let the Grassmann model continue the prompt by N tokens (sampled, temperature 1, top-p "
                       "0.9, seed 0, as `gwb --continue N` and the window do; --greedy for greedy decoding), then "
                       "draw prompt + continuation (generated tokens are marked)."),
        QStringLiteral("N"));
    const QCommandLineOption sample(QStringLiteral("sample"),
                                    QStringLiteral("With --continue: sample (temperature 1, top-p 0.9; the default)."));
    const QCommandLineOption greedy(QStringLiteral("greedy"), QStringLiteral("With --continue: greedy decoding."));
    const QCommandLineOption seed(QStringLiteral("seed"),
                                  QStringLiteral("With --continue: the sampling seed (default 0)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
    const QCommandLineOption stats(QStringLiteral("stats"),
                                   QStringLiteral("Corpus statistics (gwb stats) for --view corpus (no prompt)."),
                                   QStringLiteral("S.npz"));
    const QCommandLineOption quantity(
        QStringLiteral("quantity"),
        QStringLiteral("Corpus quantity, e.g. surprisal, gate_mean, attn_entropy (default surprisal)."),
        QStringLiteral("NAME"));
    const QCommandLineOption shape(QStringLiteral("shape"), QStringLiteral("Corpus distributions: box or violin."),
                                   QStringLiteral("box|violin"));
    p.addOptions({view,       model,  baseline, layer,  head,     token,    offset,    prompt,
                  promptFile, out,    width,    dpi,    colormap, font,     noCaption, noColorbar,
                  data,       device, threads,  target, stats,    quantity, shape});
    p.addOptions({continueN, sample, greedy, seed, showSelection});
    const QCommandLineOption dictionary(QStringLiteral("dictionary"),
                                        QStringLiteral("Features: a dictionary folder (gwb features train)."),
                                        QStringLiteral("DIR"));
    const QCommandLineOption feature(QStringLiteral("feature"),
                                     QStringLiteral("Features: the feature whose dashboard is drawn (default: the "
                                                    "most active at the token)."),
                                     QStringLiteral("F"));
    p.addOptions({dictionary, feature});
    const QCommandLineOption corrupt(QStringLiteral("corrupt"),
                                     QStringLiteral("Patching: corrupted prompt of the same token length (without it, "
                                                    "--mode zero|mean ablates the prompt)."),
                                     QStringLiteral("TEXT"));
    const QCommandLineOption answer(QStringLiteral("answer"), QStringLiteral("Patching: answer piece of the metric."),
                                    QStringLiteral("PIECE"));
    const QCommandLineOption wrong(QStringLiteral("wrong"), QStringLiteral("Patching: wrong piece of the metric."),
                                   QStringLiteral("PIECE"));
    const QCommandLineOption site(
        QStringLiteral("site"),
        QStringLiteral("Patching: resid (default), mixer, gate, ffn, or offset/head (Grassmann offsets, "
                       "Transformer heads; offset or head, as gwb patch spells them, mean the same)."),
        QStringLiteral("SITE"));
    const QCommandLineOption mode(QStringLiteral("mode"),
                                  QStringLiteral("Patching: patch (default with --corrupt), zero or mean."),
                                  QStringLiteral("MODE"));
    const QCommandLineOption senders(QStringLiteral("senders"),
                                     QStringLiteral("Paths: all (default), offset/head, mixer, gate or ffn."),
                                     QStringLiteral("KIND"));
    const QCommandLineOption receivers(
        QStringLiteral("receivers"), QStringLiteral("Paths: all (default), logits or resid."), QStringLiteral("KIND"));
    const QCommandLineOption senderToken(QStringLiteral("sender-token"),
                                         QStringLiteral("Paths: senders take their clean value at this token only."),
                                         QStringLiteral("t"));
    const QCommandLineOption pairs(
        QStringLiteral("pairs"),
        QStringLiteral("Patching over a pairs file (JSONL or CSV; as gwb patch --pairs): each cell's mean over the "
                       "pairs, the distribution of the cell of largest |mean|, and the estimate against the exact "
                       "change. The prompt defaults to the file's first clean prompt."),
        QStringLiteral("FILE"));
    const QCommandLineOption method(QStringLiteral("method"),
                                    QStringLiteral("With --pairs: exact (default; the first-order estimate beside it) "
                                                   "or attribution."),
                                    QStringLiteral("exact|attribution"));
    const QCommandLineOption check(
        QStringLiteral("check"),
        QStringLiteral("With --pairs --method attribution: K cells of largest |estimate| + K "
                       "random ones per pair run exactly (default 5)."),
        QStringLiteral("K"));
    p.addOptions({corrupt, answer, wrong, site, mode, senders, receivers, senderToken, pairs, method, check});
    p.process(args);
    QTextStream err(stderr);
    try {
        if (!p.positionalArguments().isEmpty())
            throw std::invalid_argument("unexpected argument '" + p.positionalArguments().first().toStdString() + "'");
        const QString viewId = p.value(view);
        if (!gwb::views::viewIds().contains(viewId))
            throw std::invalid_argument("--view must be one of " +
                                        gwb::views::viewIds().join(QStringLiteral(", ")).toStdString() +
                                        (viewId.isEmpty() ? std::string() : ", got '" + viewId.toStdString() + "'"));
        if (!p.isSet(out)) throw std::invalid_argument("--out FILE.(png|svg|pdf) is required");
        const QString outPath = p.value(out);
        if (gwb::app::figureFormat(outPath).isEmpty())
            throw std::invalid_argument("--out '" + outPath.toStdString() + "' must end in .png, .svg or .pdf");
        if (const QString e = gwb::app::checkWritableTarget(outPath); !e.isEmpty())
            throw std::runtime_error("cannot write '" + outPath.toStdString() + "': " + e.toStdString());
        QString dataBase;
        if (p.isSet(data)) {
            dataBase = p.value(data);
            if (dataBase.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) dataBase.chop(4);
            if (const QString e = gwb::app::checkWritableTarget(dataBase); !e.isEmpty())
                throw std::runtime_error("cannot write data '" + p.value(data).toStdString() + "': " + e.toStdString());
        }
        if (p.isSet(colormap) && !gwb::views::colormapNames().contains(p.value(colormap), Qt::CaseInsensitive))
            throw std::invalid_argument("--colormap must be one of " +
                                        gwb::views::colormapNames().join(QStringLiteral(", ")).toStdString());

        gwb::app::FigureSettings settings;
        settings.widthInches = gwb::app::parseLengthInches(p.value(width));
        settings.dpi = intOption(p, dpi, "dpi", 30);
        settings.colormap = p.value(colormap);
        if (p.isSet(font)) {
            bool ok = false;
            settings.fontPoints = p.value(font).toDouble(&ok);
            if (!ok || settings.fontPoints < 4 || settings.fontPoints > 30)
                throw std::invalid_argument("--font-size must be a number of points between 4 and 30");
        }
        settings.caption = !p.isSet(noCaption);
        settings.colorbar = !p.isSet(noColorbar);
        settings.selection = p.isSet(showSelection);

        const bool corpus = viewId == QLatin1String("corpus");
        if (corpus != p.isSet(stats))
            throw std::invalid_argument(corpus ? "--view corpus needs --stats S.npz (made by gwb stats)"
                                               : "--stats only applies to --view corpus");
        if (!corpus && (p.isSet(quantity) || p.isSet(shape)))
            throw std::invalid_argument("--quantity and --shape only apply to --view corpus");
        if (corpus) {
            if (p.isSet(prompt) || p.isSet(promptFile) || p.isSet(continueN))
                throw std::invalid_argument("--view corpus draws a statistics file: leave out --prompt and --continue");
            gwb::app::CorpusFigureRequest cr;
            cr.statsPath = p.value(stats);
            cr.quantity = p.value(quantity);
            cr.shape = p.value(shape);
            cr.outPath = outPath;
            cr.dataBase = dataBase;
            cr.settings = settings;
            const gwb::views::ExportResult res = gwb::app::writeCorpusFigure(cr);
            QTextStream(stdout) << "wrote " << res.files.join(QStringLiteral(", ")) << "\n";
            return 0;
        }
        if (p.isSet(pairs) && viewId != QLatin1String("patching"))
            throw std::invalid_argument("--pairs only applies to --view patching");
        if ((p.isSet(method) || p.isSet(check)) && !p.isSet(pairs))
            throw std::invalid_argument("--method and --check apply to --pairs");
        if (p.isSet(pairs) && (p.isSet(corrupt) || p.isSet(answer) || p.isSet(wrong)))
            throw std::invalid_argument("--pairs takes the prompts and pieces from the file: leave out --corrupt, "
                                        "--answer and --wrong");
        QString pairsPrompt; // the first usable clean prompt of the pairs file, when no prompt is given
        if (p.isSet(pairs) && !p.isSet(prompt) && !p.isSet(promptFile)) {
            const gwb::engine::PairsFile f = gwb::engine::readPairsFile(p.value(pairs).toStdString());
            if (f.pairs.empty()) throw std::invalid_argument("the pairs file has no usable line");
            pairsPrompt = QString::fromStdString(f.pairs.front().clean);
        }
        if (pairsPrompt.isEmpty() && p.isSet(prompt) == p.isSet(promptFile))
            throw std::invalid_argument("give exactly one of --prompt and --prompt-file");

        bool needG = false, needB = false;
        modelsFor(viewId, needG, needB);
        gwb::app::TraceRequest request;
        // Like the window, trace both models when both exist (a view may show the other model too);
        // a missing bundled model is an error only for a view that needs it.
        request.grassmannPath = p.isSet(model) ? p.value(model) : gwb::app::findBundledModel(ModelKind::Grassmann);
        request.baselinePath =
            p.isSet(baseline) ? p.value(baseline) : gwb::app::findBundledModel(ModelKind::Transformer);
        if (needG && request.grassmannPath.isEmpty())
            throw std::runtime_error(gwb::app::missingBundledModelMessage(ModelKind::Grassmann).toStdString() +
                                     " (or give --model FILE)");
        if (needB && request.baselinePath.isEmpty())
            throw std::runtime_error(gwb::app::missingBundledModelMessage(ModelKind::Transformer).toStdString() +
                                     " (or give --baseline FILE)");
        request.prompt = !pairsPrompt.isEmpty() ? pairsPrompt
                         : p.isSet(prompt)      ? p.value(prompt)
                                                : readPromptFile(p.value(promptFile));
        request.device = p.value(device);
        request.threads = intOption(p, threads, "threads", 0);
        // Only the Lens figure draws the logit lens (N + 1 passes through the T x V head).
        request.lensTopK = viewId == QLatin1String("lens") ? 5 : 0;
        if (p.isSet(sample) && p.isSet(greedy)) throw std::invalid_argument("give --sample or --greedy, not both");
        if (p.isSet(continueN)) { // one rule with `gwb --continue N` and the window: sampled, seed 0
            request.continuation = gwb::app::continueOptions(intOption(p, continueN, "continue", 1), !p.isSet(greedy),
                                                             static_cast<quint64>(intOption(p, seed, "seed", 0)));
        } else if (p.isSet(sample) || p.isSet(greedy)) {
            throw std::invalid_argument(std::string("--") + (p.isSet(sample) ? "sample" : "greedy") +
                                        " only applies with --continue N");
        }

        gwb::app::ModelCache cache = gwb::app::ModelCache::process();
        gwb::app::TraceJobState state;
        request.headless = true;
        const gwb::app::TraceOutcome outcome = gwb::app::runTraceJob(request, cache, state);
        if (outcome.status != gwb::app::TraceOutcome::Status::Ok)
            throw std::runtime_error(outcome.message.toStdString());
        for (const QString& n : outcome.notices)
            err << "gwb figure: note: " << n << "\n";
        if (outcome.continuationFrom >= 0)
            err << "gwb figure: continued the prompt by " << outcome.generated << " tokens ("
                << (request.continuation.greedy
                        ? QStringLiteral("greedy")
                        : QStringLiteral("sampled, seed %1").arg(static_cast<qulonglong>(request.continuation.seed)))
                << ", " << QString::number(outcome.tokensPerSecond, 'f', 1) << " tokens/s): \""
                << outcome.prompt.mid(outcome.continuationFrom) << "\"\n";
        err.flush();

        std::unique_ptr<gwb::views::View> v = gwb::views::createView(viewId);
        if (!v) throw std::runtime_error("view '" + viewId.toStdString() + "' is not available in this build");
        gwb::views::Selection selection;
        selection.setExtents(outcome.data);
        v->setSelection(&selection);
        v->setData(outcome.data);
        const int layerValue = intOption(p, layer, "layer", 0);
        if (layerValue >= selection.layerCount())
            throw std::invalid_argument("--layer " + std::to_string(layerValue) + " is out of range (the models have " +
                                        std::to_string(selection.layerCount()) + " layers)");
        selection.setLayer(layerValue);
        const int tokenValue =
            p.isSet(token) ? intOption(p, token, "token", 0) : std::max(0, gwb::views::defaultToken(outcome.data));
        if (tokenValue >= selection.tokenCount())
            throw std::invalid_argument("--token " + std::to_string(tokenValue) + " is out of range (the prompt has " +
                                        std::to_string(selection.tokenCount()) + " tokens)");
        selection.setToken(tokenValue);
        const int headValue = intOption(p, head, "head", 0);
        if (headValue > 0 && headValue >= selection.headCount())
            throw std::invalid_argument("--head " + std::to_string(headValue) + " is out of range (the baseline has " +
                                        std::to_string(selection.headCount()) + " heads)");
        selection.setHead(headValue);
        if (p.isSet(offset)) {
            const int d = intOption(p, offset, "offset", 1);
            const auto& g = outcome.data.grassmann;
            std::vector<int> offsets;
            if (g && layerValue < static_cast<int>(g->layers.size()) &&
                g->layers[static_cast<size_t>(layerValue)].grassmann)
                offsets = g->layers[static_cast<size_t>(layerValue)].grassmann->offsets;
            const auto it = std::find(offsets.begin(), offsets.end(), d);
            if (it == offsets.end()) {
                QStringList have;
                for (int o : offsets)
                    have << QString::number(o);
                throw std::invalid_argument(
                    "--offset " + std::to_string(d) + " is not an offset of layer " + std::to_string(layerValue) +
                    " (it has " +
                    (have.isEmpty() ? std::string("none") : have.join(QStringLiteral(", ")).toStdString()) + ")");
            }
            selection.setOffsetIndex(static_cast<int>(it - offsets.begin()));
        }

        if (auto* sv = qobject_cast<gwb::views::SaliencyView*>(v.get())) {
            if (p.isSet(target)) sv->setTarget(p.value(target));
            gwb::app::SaliencyRequest sr;
            sr.grassmannPath = request.grassmannPath;
            sr.baselinePath = request.baselinePath;
            sr.device = request.device;
            sr.data = outcome.data;
            sr.token = selection.token();
            sr.target = sv->target();
            const gwb::engine::SaliencyResult res = gwb::app::computeSaliency(cache, sr);
            for (const std::string& e : {res.grassmannError, res.baselineError})
                if (!e.empty()) err << "gwb figure: saliency: " << QString::fromStdString(e) << "\n";
            err.flush();
            if (res.grassmann.empty() && res.baseline.empty())
                throw std::runtime_error("no saliency could be computed (see above)");
            sv->setSaliency(res);
        } else if (p.isSet(target)) {
            throw std::invalid_argument("--target only applies to --view saliency");
        }
        if (auto* fv = qobject_cast<gwb::views::FeaturesView*>(v.get())) {
            if (!p.isSet(dictionary))
                throw std::invalid_argument(
                    "--view features needs --dictionary DIR (a folder gwb features train wrote)");
            const auto dict = std::make_shared<const gwb::engine::Dictionary>(
                gwb::engine::loadDictionary(p.value(dictionary).toStdString()));
            gwb::app::FeaturesContext fc;
            fc.grassmannPath = request.grassmannPath;
            fc.baselinePath = request.baselinePath;
            fc.device = request.device;
            fc.data = outcome.data;
            const gwb::views::FeatureDataPtr fd = gwb::app::computeFeatureData(cache, p.value(dictionary), dict, fc);
            if (!fd->error.isEmpty()) throw std::runtime_error(fd->error.toStdString());
            fv->setFeatures(fd);
            int64_t chosen = -1;
            if (p.isSet(feature)) {
                bool ok = false;
                chosen = p.value(feature).toLongLong(&ok);
                if (!ok || chosen < 0 || chosen >= fd->dSae)
                    throw std::invalid_argument("--feature must be a feature number 0.." +
                                                std::to_string(fd->dSae - 1));
            } else {
                const auto listed = fv->listedFeatures();
                if (!listed.empty()) chosen = listed.front().first;
            }
            if (chosen >= 0) {
                fv->chooseFeature(chosen);
                const gwb::views::FeatureDashboard dash = gwb::app::computeDashboard(cache, dict, chosen, fc);
                if (!dash.error.isEmpty()) err << "gwb figure: features: " << dash.error << "\n";
                err.flush();
                fv->setDashboard(dash);
            }
        } else if (p.isSet(dictionary) || p.isSet(feature)) {
            throw std::invalid_argument("--dictionary and --feature only apply to --view features");
        }
        auto* pv = qobject_cast<gwb::views::PatchingView*>(v.get());
        // --site as the Patching view spells it: offset and head (gwb patch's words) are offset/head.
        const auto viewSite = [&] {
            const std::string s = p.isSet(site) ? p.value(site).toStdString() : std::string("resid");
            return s == "offset" || s == "head" ? std::string(gwb::engine::kUnitAlias) : s;
        };
        if (pv && p.isSet(pairs)) {
            gwb::views::PairsInputs in;
            in.file = p.value(pairs).toStdString();
            in.site = viewSite();
            in.mode = p.isSet(mode) ? p.value(mode).toStdString() : std::string("patch");
            in.method = p.isSet(method) ? p.value(method).toStdString() : std::string("exact");
            if (in.method != "exact" && in.method != "attribution")
                throw std::invalid_argument("--method must be exact or attribution, got '" + in.method + "'");
            if (p.isSet(check)) {
                if (in.method != "attribution") throw std::invalid_argument("--check applies to --method attribution");
                in.check = intOption(p, check, "check", 0);
            }
            gwb::views::PatchingInputs fields;
            fields.site = in.site;
            fields.mode = in.mode;
            pv->setInputs(fields);
            pv->setPairsMethod(QString::fromStdString(in.method));
            gwb::app::PatchingJobRequest pr;
            pr.grassmannPath = request.grassmannPath;
            pr.baselinePath = request.baselinePath;
            pr.device = request.device;
            const gwb::views::PairsData res = gwb::app::computePatchingPairs(cache, pr, in);
            if (!res.error.empty()) throw std::invalid_argument(res.error);
            for (const auto* g : {&res.grassmann, &res.transformer}) {
                const QString model = QString::fromStdString(g->model);
                if (!g->error.empty())
                    err << "gwb figure: patching: " << model << ": " << QString::fromStdString(g->error) << "\n";
                for (const std::string& s : g->skipped)
                    err << "gwb figure: patching: " << model << ": skipped " << QString::fromStdString(s) << "\n";
            }
            err.flush();
            if (!res.hasGrid()) throw std::runtime_error("no model could run the pairs file (see above)");
            pv->setPairsResult(res);
        } else if (pv) {
            gwb::views::PatchingInputs in;
            in.clean = outcome.data.prompt().toStdString();
            in.corrupt = p.value(corrupt).toStdString();
            in.answer = p.value(answer).toStdString();
            in.wrong = p.value(wrong).toStdString();
            in.site = viewSite();
            in.mode = p.isSet(mode)        ? p.value(mode).toStdString()
                      : in.corrupt.empty() ? std::string("zero")
                                           : std::string("patch");
            if (const QString problem = pv->checkInputs(in); !problem.isEmpty())
                throw std::invalid_argument(problem.toStdString());
            pv->setInputs(in);
            gwb::app::PatchingJobRequest pr;
            pr.grassmannPath = request.grassmannPath;
            pr.baselinePath = request.baselinePath;
            pr.device = request.device;
            pr.inputs = in;
            const gwb::views::PatchingData res = gwb::app::computePatching(cache, pr);
            if (!res.error.empty()) throw std::invalid_argument(res.error);
            for (const auto* g : {&res.grassmann, &res.transformer})
                if (!g->error.empty())
                    err << "gwb figure: patching: " << QString::fromStdString(g->model) << ": "
                        << QString::fromStdString(g->error) << "\n";
            for (const auto* g : {&res.grassmann, &res.transformer})
                if (g->hasGrid() && g->hasMetric && !g->effectDefined)
                    err << "gwb figure: patching: " << QString::fromStdString(g->model)
                        << ": the clean and corrupted metrics are equal (" << g->cleanMetric
                        << "): the normalised effect is undefined; the figure shows the change of the metric\n";
            err.flush();
            pv->setResult(res);
        } else if (auto* paths = qobject_cast<gwb::views::PathsView*>(v.get())) {
            gwb::views::PathsInputs in;
            in.clean = outcome.data.prompt().toStdString();
            in.corrupt = p.value(corrupt).toStdString();
            in.answer = p.value(answer).toStdString();
            in.wrong = p.value(wrong).toStdString();
            in.senders = p.isSet(senders) ? p.value(senders).toStdString() : std::string("all");
            if (in.senders == "offset" || in.senders == "head") in.senders = gwb::engine::kUnitAlias;
            in.receivers = p.isSet(receivers) ? p.value(receivers).toStdString() : std::string("all");
            in.position = p.isSet(senderToken) ? intOption(p, senderToken, "sender-token", 0) : -1;
            if (p.isSet(site) || p.isSet(mode))
                throw std::invalid_argument("--site and --mode apply to --view patching");
            if (const QString problem = paths->checkInputs(in); !problem.isEmpty())
                throw std::invalid_argument(problem.toStdString());
            paths->setInputs(in);
            gwb::app::PathsJobRequest pr;
            pr.grassmannPath = request.grassmannPath;
            pr.baselinePath = request.baselinePath;
            pr.device = request.device;
            pr.inputs = in;
            const gwb::views::PathsData res = gwb::app::computePaths(cache, pr);
            if (!res.error.empty()) throw std::invalid_argument(res.error);
            for (const auto* g : {&res.grassmann, &res.transformer})
                if (!g->error.empty())
                    err << "gwb figure: paths: " << QString::fromStdString(g->model) << ": "
                        << QString::fromStdString(g->error) << "\n";
            err.flush();
            paths->setResult(res);
        } else if (p.isSet(corrupt) || p.isSet(answer) || p.isSet(wrong) || p.isSet(site) || p.isSet(mode)) {
            throw std::invalid_argument(
                "--corrupt, --answer, --wrong, --site and --mode only apply to --view patching (and the first three "
                "to --view paths)");
        }
        if (viewId != QLatin1String("paths") && (p.isSet(senders) || p.isSet(receivers) || p.isSet(senderToken)))
            throw std::invalid_argument("--senders, --receivers and --sender-token only apply to --view paths");

        const gwb::views::ExportResult fig = gwb::views::exportFigure(*v, gwb::app::figureOptions(settings), outPath);
        if (!fig.ok) throw std::runtime_error(fig.message.toStdString());
        QTextStream(stdout) << "wrote " << fig.files.join(QStringLiteral(", ")) << "\n";
        if (!dataBase.isEmpty()) {
            const gwb::views::ExportResult d = gwb::views::exportData(*v, dataBase);
            if (!d.ok) throw std::runtime_error(d.message.toStdString());
            QTextStream(stdout) << "wrote " << d.files.join(QStringLiteral(", ")) << "\n";
        }
        return 0;
    } catch (const std::exception& e) {
        err << "gwb figure: " << QString::fromUtf8(e.what()) << "\n";
        return 1;
    }
}

} // namespace

GWB_REGISTER_COMMAND("figure", "Make a view's figure (PNG/SVG/PDF) for a prompt without a window", runFigure, true);
