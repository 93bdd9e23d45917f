// gwb figure's views that need a run of their own before their figure: a table of view id ->
// filler (saliency, features, patching, paths). Each filler takes the command line's options for
// its view, runs what the window's runner would (the same engine runs) and hands the figure the
// result; the options of the other views are refused first, each naming its view.

#include "figure/cmd_figure_options.h"

#include "runs/causal_adapter.h"
#include "runs/features_adapter.h"
#include "runs/graph_adapter.h"
#include "runs/lens_adapter.h"
#include "runs/saliency_adapter.h"

#include "gwb/engine/lens.h"
#include "gwb/engine/sites.h"
#include "gwb/views/features_figure.h"
#include "gwb/views/gate_figure.h"
#include "gwb/views/graph_figure.h"
#include "gwb/views/lens_figure.h"
#include "gwb/views/patching_figure.h"
#include "gwb/views/paths_figure.h"
#include "gwb/views/saliency_figure.h"

#include <stdexcept>

namespace gwb::app {

int intOption(const QCommandLineParser& p, const QCommandLineOption& o, const char* name, int min) {
    bool ok = false;
    const int v = p.value(o).toInt(&ok);
    if (!ok || v < min)
        throw std::invalid_argument(std::string("--") + name + " must be an integer >= " + std::to_string(min) +
                                    ", got '" + p.value(o).toStdString() + "'");
    return v;
}

namespace {

void fillSaliency(gwb::views::Figure& figure, FigureRun& run) {
    auto* sv = dynamic_cast<gwb::views::SaliencyFigure*>(&figure);
    if (!sv) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    if (p.isSet(o.target)) sv->setTarget(p.value(o.target));
    SaliencyRequest sr;
    sr.grassmannPath = request.grassmannPath;
    sr.baselinePath = request.baselinePath;
    sr.device = request.device;
    sr.data = outcome.data;
    sr.token = selection.token;
    sr.target = sv->target();
    const gwb::engine::SaliencyResult res = computeSaliency(cache, sr);
    for (const std::string& e : {res.grassmannError, res.baselineError})
        if (!e.empty()) err << "gwb figure: saliency: " << QString::fromStdString(e) << "\n";
    err.flush();
    if (res.grassmann.empty() && res.baseline.empty())
        throw std::runtime_error("no saliency could be computed (see above)");
    sv->setSaliency(res);
}

void fillFeatures(gwb::views::Figure& figure, FigureRun& run) {
    auto* fv = dynamic_cast<gwb::views::FeaturesFigure*>(&figure);
    if (!fv) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    if (!p.isSet(o.dictionary))
        throw std::invalid_argument("--view features needs --dictionary DIR (a folder gwb features train wrote)");
    const auto dict = std::make_shared<const gwb::engine::Dictionary>(
        gwb::engine::loadDictionary(p.value(o.dictionary).toStdString()));
    FeaturesContext fc;
    fc.grassmannPath = request.grassmannPath;
    fc.baselinePath = request.baselinePath;
    fc.device = request.device;
    fc.data = outcome.data;
    const gwb::views::FeatureDataPtr fd = computeFeatureData(cache, p.value(o.dictionary), dict, fc);
    if (!fd->error.empty()) throw std::runtime_error(fd->error);
    fv->setFeatures(fd);
    int64_t chosen = -1;
    if (p.isSet(o.feature)) {
        bool ok = false;
        chosen = p.value(o.feature).toLongLong(&ok);
        if (!ok || chosen < 0 || chosen >= fd->dSae)
            throw std::invalid_argument("--feature must be a feature number 0.." + std::to_string(fd->dSae - 1));
    } else {
        const auto listed = fv->listedFeatures();
        if (!listed.empty()) chosen = listed.front().first;
    }
    if (chosen >= 0) {
        fv->chooseFeature(chosen);
        const gwb::views::FeatureDashboard dash = computeDashboard(cache, dict, chosen, fc);
        if (!dash.error.empty()) err << "gwb figure: features: " << QString::fromStdString(dash.error) << "\n";
        err.flush();
        fv->setDashboard(dash);
    }
}

void fillGraph(gwb::views::Figure& figure, FigureRun& run) {
    auto* gv = dynamic_cast<gwb::views::GraphFigure*>(&figure);
    if (!gv) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    if (!p.isSet(o.transcoders) && !p.isSet(o.baselineTranscoders))
        throw std::invalid_argument("--view graph needs --transcoders DIR and/or --baseline-transcoders DIR (sets "
                                    "gwb features train --transcoders wrote)");
    GraphContext gc;
    gc.grassmannPath = request.grassmannPath;
    gc.baselinePath = request.baselinePath;
    gc.device = request.device;
    gc.data = outcome.data;
    gc.transcoders[0] = p.value(o.transcoders);
    gc.transcoders[1] = p.value(o.baselineTranscoders);
    gc.answer = p.value(o.answer).trimmed();
    gc.wrong = p.value(o.wrong).trimmed();
    if (gc.answer.isEmpty() != gc.wrong.isEmpty())
        throw std::invalid_argument("--answer and --wrong go together: the graph's target is logit[answer] - "
                                    "logit[wrong]");
    for (int m = 0; m < 2; ++m)
        gv->setTranscoders(m, gc.transcoders[m]);
    const gwb::views::GraphPairPtr graphs = computeGraphs(cache, gc);
    if (!graphs) throw std::runtime_error("the graphs were not computed");
    for (int m = 0; m < 2; ++m)
        if (!graphs->errors[m].empty())
            err << "gwb figure: graph: " << (m == 0 ? "Grassmann: " : "Transformer: ")
                << QString::fromStdString(graphs->errors[m]) << "\n";
    err.flush();
    gv->setGraphs(graphs);
    if (!gv->hasContent()) throw std::runtime_error("no graph could be computed (see above)");
}

/// --site as the Patching view spells it: offset and head (gwb patch's words) are offset/head.
std::string viewSite(const QCommandLineParser& p, const FigureCommandOptions& o) {
    const std::string s = p.isSet(o.site) ? p.value(o.site).toStdString() : std::string("resid");
    return s == "offset" || s == "head" ? std::string(gwb::engine::kUnitAlias) : s;
}

void fillPatching(gwb::views::Figure& figure, FigureRun& run) {
    auto* pv = dynamic_cast<gwb::views::PatchingFigure*>(&figure);
    if (!pv) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    if (p.isSet(o.pairs)) {
        gwb::views::PairsInputs in;
        in.file = p.value(o.pairs).toStdString();
        in.site = viewSite(p, o);
        in.mode = p.isSet(o.mode) ? p.value(o.mode).toStdString() : std::string("patch");
        in.method = p.isSet(o.method) ? p.value(o.method).toStdString() : std::string("exact");
        if (in.method != "exact" && in.method != "attribution")
            throw std::invalid_argument("--method must be exact or attribution, got '" + in.method + "'");
        if (p.isSet(o.check)) {
            if (in.method != "attribution") throw std::invalid_argument("--check applies to --method attribution");
            in.check = intOption(p, o.check, "check", 0);
        }
        in.minDifference = minDifferenceValue(p, o.minDifference);
        gwb::views::PatchingInputs fields;
        fields.site = in.site;
        fields.mode = in.mode;
        pv->setInputs(fields);
        pv->setPairsMethod(QString::fromStdString(in.method));
        PatchingJobRequest pr;
        pr.grassmannPath = request.grassmannPath;
        pr.baselinePath = request.baselinePath;
        pr.device = request.device;
        const gwb::views::PairsData res = computePatchingPairs(cache, pr, in);
        if (!res.error.empty()) throw std::invalid_argument(res.error);
        for (const auto* g : {&res.grassmann, &res.transformer}) {
            const QString model = QString::fromStdString(g->model);
            if (!g->error.empty())
                err << "gwb figure: patching: " << model << ": " << QString::fromStdString(g->error) << "\n";
            for (const std::string& s : g->skipped)
                err << "gwb figure: patching: " << model << ": skipped " << QString::fromStdString(s) << "\n";
            if (g->hasGrid() && !g->estimates.difference.effect)
                err << "note: patching: " << model << ": " << QString::fromStdString(g->estimates.difference.verdict)
                    << "\n";
        }
        err.flush();
        if (!res.hasGrid()) throw std::runtime_error("no model could run the pairs file (see above)");
        pv->setPairsResult(res);
        return;
    }
    gwb::views::PatchingInputs in;
    in.clean = outcome.data.prompt();
    in.corrupt = p.value(o.corrupt).toStdString();
    in.minDifference = minDifferenceValue(p, o.minDifference);
    in.answer = p.value(o.answer).toStdString();
    in.wrong = p.value(o.wrong).toStdString();
    in.site = viewSite(p, o);
    in.mode = p.isSet(o.mode)      ? p.value(o.mode).toStdString()
              : in.corrupt.empty() ? std::string("zero")
                                   : std::string("patch");
    if (const QString problem = pv->checkInputs(in); !problem.isEmpty())
        throw std::invalid_argument(problem.toStdString());
    pv->setInputs(in);
    PatchingJobRequest pr;
    pr.grassmannPath = request.grassmannPath;
    pr.baselinePath = request.baselinePath;
    pr.device = request.device;
    pr.inputs = in;
    const gwb::views::PatchingData res = computePatching(cache, pr);
    if (!res.error.empty()) throw std::invalid_argument(res.error);
    for (const auto* g : {&res.grassmann, &res.transformer})
        if (!g->error.empty())
            err << "gwb figure: patching: " << QString::fromStdString(g->model) << ": "
                << QString::fromStdString(g->error) << "\n";
    for (const auto* g : {&res.grassmann, &res.transformer})
        if (g->hasGrid() && g->hasMetric && !g->effectDefined && !in.corrupt.empty()) // an ablation has no effect
            err << "note: patching: " << QString::fromStdString(g->model)
                << ": no normalised effect: " << QString::fromStdString(g->effectNote) << "\n";
    err.flush();
    pv->setResult(res);
}

void fillPaths(gwb::views::Figure& figure, FigureRun& run) {
    auto* paths = dynamic_cast<gwb::views::PathsFigure*>(&figure);
    if (!paths) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    gwb::views::PathsInputs in;
    in.clean = outcome.data.prompt();
    in.corrupt = p.value(o.corrupt).toStdString();
    in.answer = p.value(o.answer).toStdString();
    in.wrong = p.value(o.wrong).toStdString();
    in.senders = p.isSet(o.senders) ? p.value(o.senders).toStdString() : std::string("all");
    if (in.senders == "offset" || in.senders == "head") in.senders = gwb::engine::kUnitAlias;
    in.receivers = p.isSet(o.receivers) ? p.value(o.receivers).toStdString() : std::string("all");
    in.position = p.isSet(o.senderToken) ? intOption(p, o.senderToken, "sender-token", 0) : -1;
    in.minDifference = minDifferenceValue(p, o.minDifference);
    if (p.isSet(o.site) || p.isSet(o.mode)) throw std::invalid_argument("--site and --mode apply to --view patching");
    PathsJobRequest pr;
    pr.grassmannPath = request.grassmannPath;
    pr.baselinePath = request.baselinePath;
    pr.device = request.device;
    if (p.isSet(o.pairs)) { // each pair of the file through path patching, with the estimators over pairs
        if (p.isSet(o.senderToken)) throw std::invalid_argument("--sender-token is for one pair, not --pairs");
        paths->setInputs(in);
        gwb::views::PathsPairsInputs pin;
        pin.file = p.value(o.pairs).toStdString();
        pin.senders = in.senders;
        pin.receivers = in.receivers;
        pin.minDifference = in.minDifference;
        const gwb::views::PathsPairsData res = computePathsPairs(cache, pr, pin);
        if (!res.error.empty()) throw std::invalid_argument(res.error);
        for (const auto* g : {&res.grassmann, &res.transformer}) {
            const QString model = QString::fromStdString(g->model);
            if (!g->error.empty())
                err << "gwb figure: paths: " << model << ": " << QString::fromStdString(g->error) << "\n";
            for (const std::string& s : g->skipped)
                err << "gwb figure: paths: " << model << ": skipped " << QString::fromStdString(s) << "\n";
            if (g->hasGrid() && !g->estimates.difference.effect)
                err << "note: paths: " << model << ": " << QString::fromStdString(g->estimates.difference.verdict)
                    << "\n";
        }
        err.flush();
        if (!res.hasGrid()) throw std::runtime_error("no model could run the pairs file (see above)");
        paths->setPairsResult(res);
        return;
    }
    if (const QString problem = paths->checkInputs(in); !problem.isEmpty())
        throw std::invalid_argument(problem.toStdString());
    paths->setInputs(in);
    pr.inputs = in;
    const gwb::views::PathsData res = computePaths(cache, pr);
    if (!res.error.empty()) throw std::invalid_argument(res.error);
    for (const auto* g : {&res.grassmann, &res.transformer})
        if (!g->error.empty())
            err << "gwb figure: paths: " << QString::fromStdString(g->model) << ": " << QString::fromStdString(g->error)
                << "\n";
    for (const auto* g : {&res.grassmann, &res.transformer})
        if (g->hasGrid() && !g->effectDefined)
            err << "note: paths: " << QString::fromStdString(g->model)
                << ": no normalised effect: " << QString::fromStdString(g->effectNote) << "\n";
    err.flush();
    paths->setResult(res);
}

void fillLens(gwb::views::Figure& figure, FigureRun& run) {
    auto* lv = dynamic_cast<gwb::views::LensFigure*>(&figure);
    if (!lv) return;
    auto& [p, o, request, outcome, cache, selection, err] = run;
    if (p.isSet(o.lens) && p.isSet(o.lensEval))
        throw std::invalid_argument("--lens and --lens-eval draw different figures: give one of them");
    if (p.isSet(o.lensEval)) {
        std::vector<gwb::engine::LensEvalPtr> evals;
        for (const QString& f : p.values(o.lensEval))
            evals.push_back(
                std::make_shared<const gwb::engine::LensEvalResult>(gwb::engine::readLensEval(f.toStdString())));
        lv->setEvalSummaries(std::move(evals));
        return;
    }
    if (!p.isSet(o.lens)) return; // the logit lens of the traces
    LensRunRequest lr;
    lr.grassmannPath = request.grassmannPath;
    lr.baselinePath = request.baselinePath;
    lr.device = request.device;
    lr.data = outcome.data;
    lr.lensFolders = p.values(o.lens);
    auto comparison = std::make_shared<const gwb::engine::LensComparison>(computeLensComparison(cache, lr));
    for (const std::string& n : comparison->notes)
        err << "gwb figure: lens: " << QString::fromStdString(n) << "\n";
    for (bool g : {true, false})
        for (const gwb::engine::LensReadout& r : comparison->of(g))
            if (!r.sameModel)
                err << "note: lens: the " << QString::fromStdString(r.lens) << " lens in "
                    << QString::fromStdString(r.folder) << " was fitted on " << QString::fromStdString(r.fittedOn)
                    << ", drawn on " << QString::fromStdString(r.modelName) << "\n";
    err.flush();
    if (comparison->empty()) throw std::runtime_error("no lens could be read out (see above)");
    lv->setComparison(comparison);
}

/// One entry a view that needs a run of its own.
struct Filler {
    QLatin1String view;
    void (*fill)(gwb::views::Figure&, FigureRun&);
};
void fillGate(gwb::views::Figure& figure, FigureRun& run) {
    if (run.p.isSet(run.o.scale))
        static_cast<gwb::views::GateFigure&>(figure).setScale(
            gwb::views::GateFigure::scaleFromName(run.p.value(run.o.scale)));
}

namespace ids = gwb::views::view_id;
constexpr Filler kFillers[] = {{ids::kGate, fillGate},         {ids::kSaliency, fillSaliency},
                               {ids::kFeatures, fillFeatures}, {ids::kPatching, fillPatching},
                               {ids::kPaths, fillPaths},       {ids::kGraph, fillGraph},
                               {ids::kLens, fillLens}};

/// The options of views other than `viewId`, refused with the message that names their view.
void refuseOtherViewsOptions(const QString& viewId, const QCommandLineParser& p, const FigureCommandOptions& o) {
    if (viewId != gwb::views::view_id::kSaliency && p.isSet(o.target))
        throw std::invalid_argument("--target only applies to --view saliency");
    if (viewId != gwb::views::view_id::kFeatures && (p.isSet(o.dictionary) || p.isSet(o.feature)))
        throw std::invalid_argument("--dictionary and --feature only apply to --view features");
    if (viewId != gwb::views::view_id::kLens && (p.isSet(o.lens) || p.isSet(o.lensEval)))
        throw std::invalid_argument("--lens and --lens-eval only apply to --view lens");
    if (viewId != gwb::views::view_id::kGraph && (p.isSet(o.transcoders) || p.isSet(o.baselineTranscoders)))
        throw std::invalid_argument("--transcoders and --baseline-transcoders only apply to --view graph");
    const bool metric = p.isSet(o.corrupt) || p.isSet(o.answer) || p.isSet(o.wrong);
    const bool graphContrast = viewId == gwb::views::view_id::kGraph && !p.isSet(o.corrupt);
    if (viewId != gwb::views::view_id::kPatching && viewId != gwb::views::view_id::kPaths &&
        ((metric && !graphContrast) || p.isSet(o.site) || p.isSet(o.mode)))
        throw std::invalid_argument("--corrupt, --answer, --wrong, --site and --mode only apply to --view patching "
                                    "(the first three to --view paths, --answer and --wrong to --view graph)");
    if (viewId != gwb::views::view_id::kPatching && viewId != gwb::views::view_id::kPaths && p.isSet(o.minDifference))
        throw std::invalid_argument("--min-difference only applies to --view patching and --view paths");
    if (viewId != gwb::views::view_id::kPaths && (p.isSet(o.senders) || p.isSet(o.receivers) || p.isSet(o.senderToken)))
        throw std::invalid_argument("--senders, --receivers and --sender-token only apply to --view paths");
}

} // namespace

void fillFigure(gwb::views::Figure& figure, const QString& viewId, FigureRun& run) {
    refuseOtherViewsOptions(viewId, run.p, run.o);
    for (const Filler& f : kFillers)
        if (viewId == f.view) f.fill(figure, run);
}

} // namespace gwb::app
