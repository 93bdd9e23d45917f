// gwb figure: the figure of one view for one prompt, without a window, exactly as the window's
// File > Export Figure makes it with the same settings: the same run, the same figure (the view's,
// from the figure library: no widget) and the same export.

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "figure/corpus_figure_cmd.h"
#include "runs/figure_request.h"
#include "figure/cmd_figure_options.h"
#include "runs/trace_job.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/views/colormap.h"
#include "gwb/views/figure_export.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/prompt_file.h"
#include "gwb/views/selection.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/figure.h"
#include "gwb/views/gate_figure.h"

#include <QCommandLineParser>
#include <QFile>
#include <QFileInfo>
#include <QTextStream>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace {

using gwb::engine::ModelKind;

/// The prompt of a file: the engine's rule for its final line end (gwb/engine/prompt_file.h).
QString readPromptFile(const QString& path) {
    return QString::fromStdString(gwb::engine::readPromptFile(path.toStdString()));
}

/// Which models a view needs: the Grassmann model, the baseline, or both.
void modelsFor(const QString& view, bool& grassmann, bool& baseline) {
    grassmann = view != gwb::views::view_id::kAttention;
    baseline = view == gwb::views::view_id::kAttention || view == gwb::views::view_id::kCompare ||
               view == gwb::views::view_id::kLens || view == gwb::views::view_id::kSaliency ||
               view == gwb::views::view_id::kPatching || view == gwb::views::view_id::kPaths ||
               view == gwb::views::view_id::kFeatures; // a crosscoder reads both
}

} // namespace

namespace gwb::app {

int runFigureCommand(const QStringList& args, QTextStream& out, QTextStream& err) {
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral(
        "Make one view's figure for a prompt without a window (same figure as the window's Export Figure).\n"
        "Example: gwb figure --view gate --prompt \"It is a truth universally acknowledged\" --out gate.pdf\n"
        "Corpus statistics: gwb figure --stats S.npz --view corpus --quantity surprisal --out surprisal.pdf"));
    p.addHelpOption();
    const gwb::app::FigureCommandOptions o;
    o.addTo(p);
    // parse, not process: process() exits the process on --help and on a bad option, and this
    // also runs inside Python (gwb.figure).
    if (!p.parse(args)) {
        err << "gwb figure: " << p.errorText() << "\n";
        return 1;
    }
    if (p.isSet(QStringLiteral("help"))) {
        out << p.helpText();
        return 0;
    }
    try {
        if (!p.positionalArguments().isEmpty())
            throw std::invalid_argument("unexpected argument '" + p.positionalArguments().first().toStdString() + "'");
        const QString viewId = p.value(o.view);
        if (!gwb::views::figureIds().contains(viewId))
            throw std::invalid_argument("--view must be one of " +
                                        gwb::views::figureIds().join(QStringLiteral(", ")).toStdString() +
                                        (viewId.isEmpty() ? std::string() : ", got '" + viewId.toStdString() + "'"));
        if (!p.isSet(o.out)) throw std::invalid_argument("--out FILE.(png|svg|pdf) is required");
        const QString outPath = p.value(o.out);
        if (gwb::app::figureFormat(outPath).isEmpty())
            throw std::invalid_argument("--out '" + outPath.toStdString() + "' must end in .png, .svg or .pdf");
        if (const QString e = gwb::app::checkWritableTarget(outPath); !e.isEmpty())
            throw std::runtime_error("cannot write '" + outPath.toStdString() + "': " + e.toStdString());
        QString dataBase;
        if (p.isSet(o.data)) {
            dataBase = gwb::app::dataStem(p.value(o.data), viewId);
        }
        if (p.isSet(o.scale)) {
            if (viewId != gwb::views::view_id::kGate)
                throw std::invalid_argument("--scale only applies to --view gate");
            gwb::views::GateFigure::scaleFromName(p.value(o.scale)); // refused before any work
        }
        if (p.isSet(o.colormap) && !gwb::views::colormapNames().contains(p.value(o.colormap), Qt::CaseInsensitive))
            throw std::invalid_argument("--colormap must be one of " +
                                        gwb::views::colormapNames().join(QStringLiteral(", ")).toStdString());

        gwb::app::FigureSettings settings;
        settings.widthInches = gwb::app::parseLengthInches(p.value(o.width));
        settings.dpi = gwb::app::intOption(p, o.dpi, "dpi", 30);
        settings.colormap = p.value(o.colormap);
        if (p.isSet(o.font)) {
            bool ok = false;
            settings.fontPoints = p.value(o.font).toDouble(&ok);
            if (!ok || settings.fontPoints < 4 || settings.fontPoints > 30)
                throw std::invalid_argument("--font-size must be a number of points between 4 and 30");
        }
        settings.caption = !p.isSet(o.noCaption);
        settings.colorbar = !p.isSet(o.noColorbar);
        settings.selection = p.isSet(o.showSelection);

        const bool corpus = viewId == gwb::views::view_id::kCorpus;
        if (corpus != p.isSet(o.stats))
            throw std::invalid_argument(corpus ? "--view corpus needs --stats S.npz (made by gwb stats)"
                                               : "--stats only applies to --view corpus");
        if (!corpus && (p.isSet(o.quantity) || p.isSet(o.shape)))
            throw std::invalid_argument("--quantity and --shape only apply to --view corpus");
        if (corpus) {
            if (p.isSet(o.prompt) || p.isSet(o.promptFile) || p.isSet(o.continueN))
                throw std::invalid_argument("--view corpus draws a statistics file: leave out --prompt and --continue");
            gwb::app::CorpusFigureRequest cr;
            cr.statsPath = p.value(o.stats);
            cr.quantity = p.value(o.quantity);
            cr.shape = p.value(o.shape);
            cr.outPath = outPath;
            cr.dataBase = dataBase;
            cr.settings = settings;
            const gwb::views::ExportResult res = gwb::app::writeCorpusFigure(cr);
            out << "wrote " << res.files.join(QStringLiteral(", ")) << "\n";
            return 0;
        }
        if (p.isSet(o.pairs) && viewId != gwb::views::view_id::kPatching && viewId != gwb::views::view_id::kPaths)
            throw std::invalid_argument("--pairs only applies to --view patching and --view paths");
        if ((p.isSet(o.method) || p.isSet(o.check)) && (!p.isSet(o.pairs) || viewId != gwb::views::view_id::kPatching))
            throw std::invalid_argument("--method and --check apply to --view patching --pairs");
        if (p.isSet(o.pairs) && (p.isSet(o.corrupt) || p.isSet(o.answer) || p.isSet(o.wrong)))
            throw std::invalid_argument("--pairs takes the prompts and pieces from the file: leave out --corrupt, "
                                        "--answer and --wrong");
        QString pairsPrompt; // the first usable clean prompt of the pairs file, when no prompt is given
        if (p.isSet(o.pairs) && !p.isSet(o.prompt) && !p.isSet(o.promptFile)) {
            const gwb::engine::PairsFile f = gwb::engine::readPairsFile(p.value(o.pairs).toStdString());
            if (f.pairs.empty()) throw std::invalid_argument("the pairs file has no usable line");
            pairsPrompt = QString::fromStdString(f.pairs.front().clean);
        }
        if (pairsPrompt.isEmpty() && p.isSet(o.prompt) == p.isSet(o.promptFile))
            throw std::invalid_argument("give exactly one of --prompt and --prompt-file");

        bool needG = false, needB = false;
        modelsFor(viewId, needG, needB);
        gwb::app::TraceRequest request;
        // Like the window, trace both models when both exist (a view may show the other model too);
        // a missing bundled model is an error only for a view that needs it.
        request.grassmannPath = p.isSet(o.model) ? p.value(o.model) : gwb::app::findBundledModel(ModelKind::Grassmann);
        request.baselinePath =
            p.isSet(o.baseline) ? p.value(o.baseline) : gwb::app::findBundledModel(ModelKind::Transformer);
        if (needG && request.grassmannPath.isEmpty())
            throw std::runtime_error(gwb::app::missingBundledModelMessage(ModelKind::Grassmann).toStdString() +
                                     " (or give --model FILE)");
        if (needB && request.baselinePath.isEmpty())
            throw std::runtime_error(gwb::app::missingBundledModelMessage(ModelKind::Transformer).toStdString() +
                                     " (or give --baseline FILE)");
        request.prompt = !pairsPrompt.isEmpty() ? pairsPrompt
                         : p.isSet(o.prompt)    ? p.value(o.prompt)
                                                : readPromptFile(p.value(o.promptFile));
        request.device = p.value(o.device);
        request.threads = gwb::app::intOption(p, o.threads, "threads", 0);
        // Only the Lens figure draws the logit lens (N + 1 passes through the T x V head).
        request.lensTopK = viewId == gwb::views::view_id::kLens ? 5 : 0;
        if (p.isSet(o.sample) && p.isSet(o.greedy)) throw std::invalid_argument("give --sample or --greedy, not both");
        if (p.isSet(o.continueN)) { // one rule with `gwb --continue N` and the window: sampled, seed 0
            request.continuation =
                gwb::app::continueOptions(gwb::app::intOption(p, o.continueN, "continue", 1), !p.isSet(o.greedy),
                                          static_cast<quint64>(gwb::app::intOption(p, o.seed, "seed", 0)));
        } else if (p.isSet(o.sample) || p.isSet(o.greedy) || p.isSet(o.seed)) {
            throw std::invalid_argument(std::string("--") +
                                        (p.isSet(o.sample)   ? "sample"
                                         : p.isSet(o.greedy) ? "greedy"
                                                             : "seed") +
                                        " only applies with --continue N");
        }
        // The selection's numbers are read before anything runs (a typo costs no trace); their
        // ranges are checked against the traces below.
        const int layerValue = gwb::app::intOption(p, o.layer, "layer", 0);
        const int headValue = gwb::app::intOption(p, o.head, "head", 0);
        const std::optional<int> tokenOption =
            p.isSet(o.token) ? std::optional<int>(gwb::app::intOption(p, o.token, "token", 0)) : std::nullopt;
        const std::optional<int> offsetOption =
            p.isSet(o.offset) ? std::optional<int>(gwb::app::intOption(p, o.offset, "offset", 1)) : std::nullopt;

        gwb::app::ModelCache cache = gwb::app::ModelCache::process();
        gwb::app::TraceJobState state;
        request.headless = true;
        const gwb::app::TraceOutcome outcome = gwb::app::runTraceJob(request, cache, state);
        if (outcome.status != gwb::app::TraceOutcome::Status::Ok)
            throw std::runtime_error(outcome.message.toStdString());
        // Each figure's notes are about what it draws: the trace's analysis warnings (a prompt
        // subspace's rank, ...) only for the views that draw that analysis.
        const bool drawsAnalysis = viewId != gwb::views::view_id::kPatching && viewId != gwb::views::view_id::kPaths &&
                                   viewId != gwb::views::view_id::kGraph && viewId != gwb::views::view_id::kFeatures &&
                                   viewId != gwb::views::view_id::kCorpus;
        for (qsizetype i = 0; i < outcome.notices.size(); ++i)
            if (drawsAnalysis || !outcome.analysisNotice.value(i, false))
                err << "gwb figure: note: " << outcome.notices[i] << "\n";
        if (outcome.continuationFrom >= 0)
            err << "gwb figure: continued the prompt by " << outcome.generated << " tokens ("
                << (request.continuation.greedy
                        ? QStringLiteral("greedy")
                        : QStringLiteral("sampled, seed %1").arg(static_cast<qulonglong>(request.continuation.seed)))
                << ", " << QString::number(outcome.tokensPerSecond, 'f', 1) << " tokens/s): \""
                << outcome.prompt.mid(outcome.continuationFrom) << "\"\n";
        err.flush();

        std::unique_ptr<gwb::views::Figure> figure = gwb::views::createFigure(viewId);
        if (!figure) throw std::runtime_error("view '" + viewId.toStdString() + "' is not available in this build");
        gwb::views::Selection selection; // clamps to the data as the window's selection does
        selection.setExtents(outcome.data);
        figure->setData(outcome.data);
        if (layerValue >= selection.layerCount())
            throw std::invalid_argument("--layer " + std::to_string(layerValue) + " is out of range (the models have " +
                                        std::to_string(selection.layerCount()) + " layers)");
        selection.setLayer(layerValue);
        int tokenValue = tokenOption ? *tokenOption : std::max(0, gwb::views::defaultToken(outcome.data));
        // Saliency explains the next token: by default a token that has one (the last has none
        // unless --target names a piece).
        if (!tokenOption && viewId == gwb::views::view_id::kSaliency && !p.isSet(o.target) &&
            tokenValue >= selection.tokenCount() - 1)
            tokenValue = std::max(0, selection.tokenCount() - 2);
        if (tokenValue >= selection.tokenCount())
            throw std::invalid_argument("--token " + std::to_string(tokenValue) + " is out of range (the prompt has " +
                                        std::to_string(selection.tokenCount()) + " tokens)");
        selection.setToken(tokenValue);
        if (headValue > 0 && headValue >= selection.headCount())
            throw std::invalid_argument("--head " + std::to_string(headValue) + " is out of range (the baseline has " +
                                        std::to_string(selection.headCount()) + " heads)");
        selection.setHead(headValue);
        if (offsetOption) {
            const int d = *offsetOption;
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

        const gwb::views::SelectionState chosen = selection.state();
        figure->setSelection(chosen);
        gwb::app::FigureRun run{p, o, request, outcome, cache, chosen, err};
        gwb::app::fillFigure(*figure, viewId, run);

        const gwb::views::ExportResult fig =
            gwb::views::exportFigure(*figure, gwb::app::figureOptions(settings), outPath);
        if (!fig.ok) throw std::runtime_error(fig.message.toStdString());
        out << "wrote " << fig.files.join(QStringLiteral(", ")) << "\n";
        if (!dataBase.isEmpty()) {
            const gwb::views::ExportResult d = gwb::views::exportData(*figure, dataBase);
            if (!d.ok) throw std::runtime_error(d.message.toStdString());
            out << "wrote " << d.files.join(QStringLiteral(", ")) << "\n";
        }
        return 0;
    } catch (const std::exception& e) {
        err << "gwb figure: " << QString::fromUtf8(e.what()) << "\n";
        return 1;
    }
}

void FigureCommandOptions::addTo(QCommandLineParser& p) const {
    p.addOptions({view,       model,  baseline, layer,  head,     token,    offset,    prompt,
                  promptFile, out,    width,    dpi,    colormap, font,     noCaption, noColorbar,
                  data,       device, threads,  target, stats,    quantity, shape,     scale});
    p.addOptions({continueN, sample, greedy, seed, showSelection});
    p.addOptions({dictionary, feature, transcoders, baselineTranscoders, lens, lensEval});
    p.addOptions(
        {corrupt, answer, wrong, site, mode, senders, receivers, senderToken, pairs, method, check, minDifference});
}

} // namespace gwb::app

namespace {

int runFigure(const QStringList& args) {
    QTextStream out(stdout), err(stderr);
    return gwb::app::runFigureCommand(args, out, err);
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kFigureCommand{"figure", "Make a view's figure (PNG/SVG/PDF) for a prompt without a window", runFigure,
                             true};
} // namespace gwb::app
