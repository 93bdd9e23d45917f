#pragma once
// gwb figure (cmd_figure.cpp): its options, and the views that need a run of their own before
// their figure (gate, saliency, features, patching, paths, graph, lens: kFillers in
// cmd_figure_views.cpp), one table entry each.

#include "runs/figure_request.h"
#include "runs/trace_job.h"

#include "common/command_registry.h"

#include "gwb/engine/prompt_file.h"

#include "gwb/views/selection.h"
#include "gwb/views/figure.h"

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QTextStream>

namespace gwb::app {

/// Every option of `gwb figure`, in the order --help lists them.
struct FigureCommandOptions {
    QCommandLineOption view{
        QStringLiteral("view"),
        QStringLiteral(
            "gate, plucker, angles, subspace, attention, compare, readout, lens, saliency, patching, "
            "paths, features (with --dictionary), graph (with --transcoders and/or --baseline-transcoders) or corpus "
            "(with --stats)."),
        QStringLiteral("ID")};
    QCommandLineOption model{QStringLiteral("model"),
                             QStringLiteral("Grassmann model (.gwb; default the bundled one)."),
                             QStringLiteral("FILE")};
    QCommandLineOption baseline{QStringLiteral("baseline"),
                                QStringLiteral("Transformer baseline (.gwb; default the bundled one)."),
                                QStringLiteral("FILE")};
    QCommandLineOption layer{QStringLiteral("layer"), QStringLiteral("Selected layer (default 0)."),
                             QStringLiteral("L"), QStringLiteral("0")};
    QCommandLineOption head{QStringLiteral("head"), QStringLiteral("Selected attention head (default 0)."),
                            QStringLiteral("H"), QStringLiteral("0")};
    QCommandLineOption token{
        QStringLiteral("token"),
        QStringLiteral("Selected token index (default: the first token with every offset valid, as the window, "
                       "else the last; for saliency without --target, the last but one)."),
        QStringLiteral("I")};
    QCommandLineOption target{
        QStringLiteral("target"),
        QStringLiteral("Saliency target: one vocabulary piece, or the contrast \"A - W\" (logit[A] - "
                       "logit[W]); default: the actual next token."),
        QStringLiteral("PIECE")};
    QCommandLineOption offset{QStringLiteral("offset"),
                              QStringLiteral("Selected offset D of the layer (default its first offset)."),
                              QStringLiteral("D")};
    QCommandLineOption prompt{QStringLiteral("prompt"), QStringLiteral("Prompt text."), QStringLiteral("TEXT")};
    QCommandLineOption promptFile{QStringLiteral("prompt-file"),
                                  QStringLiteral("File with the prompt: ") +
                                      QString::fromUtf8(gwb::engine::kPromptFileRule) + QStringLiteral("."),
                                  QStringLiteral("F")};
    QCommandLineOption out{QStringLiteral("out"), QStringLiteral("Output figure: .png, .svg or .pdf."),
                           QStringLiteral("FILE")};
    QCommandLineOption width{QStringLiteral("width"),
                             QStringLiteral("Figure width: 3.5in (one column, default), 7in (two), or mm/cm/pt."),
                             QStringLiteral("LEN"), QStringLiteral("3.5in")};
    QCommandLineOption dpi{QStringLiteral("dpi"), QStringLiteral("PNG resolution (default 300)."), QStringLiteral("N"),
                           QStringLiteral("300")};
    QCommandLineOption colormap{QStringLiteral("colormap"),
                                QStringLiteral("viridis, cividis, magma, or RdBu (diverging) (default: the view's)."),
                                QStringLiteral("NAME")};
    QCommandLineOption font{QStringLiteral("font-size"),
                            QStringLiteral("Body font size in points (default 8, or 9 at 6 in and wider)."),
                            QStringLiteral("PT")};
    QCommandLineOption noCaption{QStringLiteral("no-caption"), QStringLiteral("Leave out the caption line.")};
    QCommandLineOption noColorbar{QStringLiteral("no-colorbar"), QStringLiteral("Leave out the colour bar.")};
    QCommandLineOption showSelection{
        QStringLiteral("show-selection"),
        QStringLiteral("Outline the selected token column and layer row (as on screen); off by default.")};
    QCommandLineOption data{QStringLiteral("data"), gwb::app::dataHelp(), QStringLiteral("DIR/|STEM")};
    QCommandLineOption device = gwb::app::deviceOption();
    QCommandLineOption threads = gwb::app::threadsOption();
    QCommandLineOption continueN{
        QStringLiteral("continue"),
        QStringLiteral("First let the Grassmann model continue the prompt by N tokens (sampled, temperature 1, top-p "
                       "0.9, seed 0, as `gwb --continue N` and the window do; --greedy for greedy decoding), then "
                       "draw prompt + continuation (generated tokens are marked)."),
        QStringLiteral("N")};
    QCommandLineOption sample{QStringLiteral("sample"),
                              QStringLiteral("With --continue: sample (temperature 1, top-p 0.9; the default).")};
    QCommandLineOption greedy{QStringLiteral("greedy"), QStringLiteral("With --continue: greedy decoding.")};
    QCommandLineOption seed{QStringLiteral("seed"), QStringLiteral("With --continue: the sampling seed (default 0)."),
                            QStringLiteral("N"), QStringLiteral("0")};
    QCommandLineOption stats{QStringLiteral("stats"),
                             QStringLiteral("Corpus statistics (gwb stats) for --view corpus (no prompt)."),
                             QStringLiteral("S.npz")};
    QCommandLineOption quantity{
        QStringLiteral("quantity"),
        QStringLiteral("Corpus quantity, e.g. surprisal, gate_mean, attn_entropy (default surprisal)."),
        QStringLiteral("NAME")};
    QCommandLineOption shape{QStringLiteral("shape"), QStringLiteral("Corpus distributions: box or violin."),
                             QStringLiteral("box|violin")};
    QCommandLineOption scale{QStringLiteral("scale"),
                             QStringLiteral("Gates: the colour scale, data (the data's range, the default; the "
                                            "caption gives it) or unit (fixed 0 to 1, to compare prompts)."),
                             QStringLiteral("data|unit")};
    QCommandLineOption dictionary{QStringLiteral("dictionary"),
                                  QStringLiteral("Features: a dictionary folder (gwb features train)."),
                                  QStringLiteral("DIR")};
    QCommandLineOption feature{QStringLiteral("feature"),
                               QStringLiteral("Features: the feature whose dashboard is drawn (default: the "
                                              "most active at the token)."),
                               QStringLiteral("F")};
    QCommandLineOption lens{
        QStringLiteral("lens"),
        QStringLiteral("Lens: a lens folder (gwb lens fit), drawn beside the logit lens on the model "
                       "it was fitted on (or, fitted on neither, on each model it fits); repeat "
                       "for more."),
        QStringLiteral("DIR")};
    QCommandLineOption lensEval{
        QStringLiteral("lens-eval"),
        QStringLiteral("Lens: gwb lens eval's file (.npz), drawn as per-layer KL, cross-entropy, "
                       "top-1 agreement and rank; repeat for each model."),
        QStringLiteral("FILE")};
    QCommandLineOption transcoders{QStringLiteral("transcoders"),
                                   QStringLiteral("Graph: the Grassmann model's transcoder set (gwb features train "
                                                  "--transcoders)."),
                                   QStringLiteral("DIR")};
    QCommandLineOption baselineTranscoders{QStringLiteral("baseline-transcoders"),
                                           QStringLiteral("Graph: the Transformer's transcoder set."),
                                           QStringLiteral("DIR")};
    QCommandLineOption corrupt{QStringLiteral("corrupt"),
                               QStringLiteral("Patching: corrupted prompt of the same token length (without it, "
                                              "--mode zero|mean ablates the prompt)."),
                               QStringLiteral("TEXT")};
    QCommandLineOption answer{QStringLiteral("answer"), QStringLiteral("Patching: answer piece of the metric."),
                              QStringLiteral("PIECE")};
    QCommandLineOption wrong{QStringLiteral("wrong"), QStringLiteral("Patching: wrong piece of the metric."),
                             QStringLiteral("PIECE")};
    QCommandLineOption site{
        QStringLiteral("site"),
        QStringLiteral("Patching: resid (default), mixer, gate, ffn, or offset/head (Grassmann offsets, "
                       "Transformer heads; offset or head, as gwb patch spells them, mean the same)."),
        QStringLiteral("SITE")};
    QCommandLineOption mode{QStringLiteral("mode"),
                            QStringLiteral("Patching: patch (default with --corrupt), zero or mean."),
                            QStringLiteral("MODE")};
    QCommandLineOption senders{QStringLiteral("senders"),
                               QStringLiteral("Paths: all (default), offset/head, mixer, gate or ffn."),
                               QStringLiteral("KIND")};
    QCommandLineOption receivers{QStringLiteral("receivers"), QStringLiteral("Paths: all (default), logits or resid."),
                                 QStringLiteral("KIND")};
    QCommandLineOption senderToken{QStringLiteral("sender-token"),
                                   QStringLiteral("Paths: senders take their clean value at this token only."),
                                   QStringLiteral("t")};
    QCommandLineOption pairs{
        QStringLiteral("pairs"),
        QStringLiteral("Patching or paths over a pairs file (JSONL or CSV; as gwb patch/paths --pairs): whether the "
                       "pairs have anything to explain, each cell's ratio of means over the pairs with its paired "
                       "bootstrap interval and Holm's marks (patching: also the distribution of one cell and the "
                       "estimate against the exact change). The prompt defaults to the file's first clean prompt."),
        QStringLiteral("FILE")};
    QCommandLineOption method{QStringLiteral("method"),
                              QStringLiteral("With --pairs: exact (default; the first-order estimate beside it) "
                                             "or attribution."),
                              QStringLiteral("exact|attribution")};
    QCommandLineOption minDifference = minDifferenceOption(); ///< patching and paths (effect_claims.h)
    QCommandLineOption check{QStringLiteral("check"),
                             QStringLiteral("With --pairs --method attribution: K cells of largest |estimate| + K "
                                            "random ones per pair run exactly (default 5)."),
                             QStringLiteral("K")};

    /// Adds every option to `p` (in --help's order).
    void addTo(QCommandLineParser& p) const;
};

/// What a view's filler works from: the parsed command line, the traced prompt and the selection.
struct FigureRun {
    const QCommandLineParser& p;
    const FigureCommandOptions& o;
    const TraceRequest& request;
    const TraceOutcome& outcome;
    ModelCache& cache;
    const gwb::views::SelectionState& selection;
    QTextStream& err; ///< notes and per-model problems
};

/// Refuses the options of the views other than `viewId` (each with the message that names its
/// view), then gives the view what it draws when it needs a run of its own: a table of view id ->
/// filler (saliency, features, patching, paths); every other view draws the traces as they are.
/// Throws std::invalid_argument / std::runtime_error naming the problem.
void fillFigure(gwb::views::Figure& figure, const QString& viewId, FigureRun& run);

/// `gwb figure ARGS` (args[0] is the program's name): parses, runs, draws and writes, with its
/// messages on `out` (files written) and `err` (notes, problems); returns the exit status. Needs a
/// QGuiApplication (an offscreen one is enough); no window class.
int runFigureCommand(const QStringList& args, QTextStream& out, QTextStream& err);

/// Reads an integer option >= min; throws std::invalid_argument naming it.
int intOption(const QCommandLineParser& p, const QCommandLineOption& o, const char* name, int min);

} // namespace gwb::app
