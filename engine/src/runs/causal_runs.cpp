#include "gwb/engine/causal_runs.h"

#include "gwb/engine/model_store.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patch_pairs_run.h"
#include "gwb/engine/path_file.h"
#include "gwb/engine/sites.h"
#include "gwb/engine/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace gwb::engine {

namespace {

/// "Grassmann: why; Transformer: why" of the grids that failed.
template <class Grid> std::string gridErrors(Grid* const (&grids)[2]) {
    std::string out;
    for (int m = 0; m < 2; ++m)
        if (!grids[m]->error.empty()) out += (out.empty() ? "" : "; ") + causalModelWord(m) + ": " + grids[m]->error;
    return out;
}

/// Opens both models: each grid gets its model's word; a missing path or a model that fails to
/// load becomes that grid's error (the other model still runs).
template <class Grid>
void openCausalModels(const ModelOpener& open, const CausalModels& models, Model (&out)[2], Grid* const (&grids)[2]) {
    for (int m = 0; m < 2; ++m) {
        grids[m]->model = causalModelWord(m);
        if (models.paths[m].empty()) {
            grids[m]->error = "no " + causalModelWord(m) + " model loaded";
            continue;
        }
        try {
            out[m] = open(models.paths[m], models.device);
        } catch (const std::exception& e) {
            grids[m]->error = e.what();
        }
    }
}

/// The two-model scaffolding of a causal run (patching sweep, paths): opens both models; asks
/// prepare(m, model, grid) for each opened model's checked request (a throw refuses the whole run
/// with "<Model> model: why"; nullopt leaves the model out, its grid's error set by prepare); then
/// run(m, model, request, out, progress) for each with its share of the progress. A cancel gives a
/// result with the inputs only and kCancelledKeepsPrevious (and empty `runs`); a model that fails on
/// its own gets its grid's error.
template <class Data, class Request, class Runs, class Prepare, class Run>
Data runCausalModels(const ModelOpener& open, const CausalModels& models, const decltype(Data::inputs)& inputs,
                     const RunProgress& progress, Runs* runs, Prepare prepare, Run run) {
    Data out;
    out.inputs = inputs;
    if (runs) {
        *runs = Runs{};
        runs->device = models.device;
    }
    if (models.paths[0].empty() && models.paths[1].empty()) {
        out.error = "No model is loaded: open a model and run a prompt first.";
        return out;
    }
    // First check both models' requests (cheap), so that bad input refuses the whole run.
    Model opened[2];
    std::optional<Request> requests[2];
    decltype(&out.grassmann) const grids[2] = {&out.grassmann, &out.transformer};
    openCausalModels(open, models, opened, grids);
    for (int m = 0; m < 2; ++m) {
        if (!grids[m]->error.empty()) continue;
        try {
            requests[m] = prepare(m, opened[m], *grids[m]);
        } catch (const std::exception& e) {
            out.error = causalModelWord(m) + " model: " + e.what();
            return out;
        }
    }
    const int planned = int(requests[0].has_value()) + int(requests[1].has_value());
    if (planned == 0) {
        out.error = "Nothing to run (" + gridErrors(grids) + ").";
        return out;
    }
    int done = 0;
    for (int m = 0; m < 2; ++m) {
        if (!requests[m]) continue;
        const double base = static_cast<double>(done) / planned;
        try {
            run(m, opened[m], *requests[m], out, [&](double f) { return !progress || progress(base + f / planned); });
            if (runs) {
                runs->paths[m] = models.paths[m];
                runs->requests[m] = requests[m];
            }
        } catch (const PatchCancelled&) {
            out = Data{};
            out.inputs = inputs;
            out.error = kCancelledKeepsPrevious;
            if (runs) *runs = Runs{};
            return out;
        } catch (const std::exception& e) {
            grids[m]->error = e.what();
        }
        ++done;
    }
    if (!out.hasGrid()) out.error = gridErrors(grids);
    return out;
}

/// The engine's sweep as the view draws it.
PatchingGrid toGrid(const Model& model, const PatchSweep& s, int which) {
    PatchingGrid g;
    g.model = causalModelWord(which);
    g.modelName = model.displayName();
    g.site = patchSiteName(s.site);
    g.rows = s.rows;
    g.cols = s.cols;
    g.rowLabels = s.rowLabels;
    const bool positions = s.site != PatchSite::Offset && s.site != PatchSite::Head && s.cols == s.T;
    if (positions) {
        const std::vector<std::string> clean = pieceTexts(model, s.clean);
        const std::vector<std::string> corrupt =
            s.corrupt.empty() ? std::vector<std::string>() : pieceTexts(model, s.corrupt);
        for (int64_t c = 0; c < s.cols; ++c) {
            const size_t i = static_cast<size_t>(c);
            g.colLabels.push_back(corrupt.empty() || corrupt[i] == clean[i] ? clean[i] : clean[i] + "/" + corrupt[i]);
        }
    } else {
        g.colLabels = s.colLabels;
    }
    g.rowTitle = s.site == PatchSite::Resid ? "block input" : "layer";
    g.colTitle = s.site == PatchSite::Offset ? "offset" : s.site == PatchSite::Head ? "head" : "position";
    g.defined = s.defined;
    g.tokens = s.T;
    g.hasMetric = s.hasMetric;
    if (s.hasMetric) {
        g.cleanMetric = s.cleanMetric;
        g.corruptMetric = s.corruptMetric;
    }
    g.effectDefined = s.hasMetric && s.effectDefined;
    g.minDifference = s.minDifference;
    g.effectNote = s.effectNote;
    g.ablation = s.mode != PatchMode::Patch;
    g.metric = s.metric;
    g.effect = s.effect;
    g.meanDelta = s.meanDeltaLogprob;
    return g;
}

/// The pairs view's grid of one model's run.
void fillPairsGrid(const PairsResult& r, int bootstrap, uint64_t seed, PairsGrid& g) {
    const int64_t P = r.pairs(), cells = r.rows * r.cols;
    const std::string& site = r.site;
    g.site = site;
    g.modelName = r.modelName;
    g.rows = r.rows;
    g.cols = r.cols;
    g.rowLabels = r.rowLabels;
    g.colLabels = r.colLabels;
    g.rowTitle = site == "resid" ? "block input" : "layer";
    g.colTitle = site == "offset" ? "offset" : site == "head" ? "head" : "position";
    g.estimated = r.estimated;
    g.lines = r.lines;
    g.flagged = r.flagged;
    g.estimates = estimatePairs(r.metric, r.clean, r.corrupt, r.patchMode, P, cells, r.minDifference, bootstrap, seed);
    const PairsEstimates& e = g.estimates;
    // The ratio of means is shown only where the pairs have something to explain (exact runs);
    // otherwise the raw effect in logits, what the data define.
    const bool ratio = !r.estimated && e.difference.effect;
    g.shownEstimate = ratio ? PairsEstimates::kEstimator : "mean raw effect (logits)";
    g.mean = ratio ? e.ratio : e.raw;
    g.low = ratio ? e.ratioLow : e.rawLow;
    g.high = ratio ? e.ratioHigh : e.rawHigh;
    g.n = e.n;
    if (ratio) {
        g.values = r.primary;
    } else {
        g.values.assign(r.metric.size(), std::numeric_limits<double>::quiet_NaN());
        for (int64_t p = 0; p < P; ++p)
            for (int64_t i = 0; i < cells; ++i) {
                const size_t k = static_cast<size_t>(p * cells + i);
                g.values[k] = r.metric[k] - r.baseline(p);
            }
    }
    if (!r.estimate.empty()) { // exact run: every pair x cell's estimate against its exact change
        for (int64_t p = 0; p < P; ++p)
            for (int64_t i = 0; i < cells; ++i) {
                const size_t k = static_cast<size_t>(p * cells + i);
                const double exact = r.metric[k] - r.baseline(p);
                if (std::isfinite(r.estimate[k]) && std::isfinite(exact)) {
                    g.scatterEstimate.push_back(r.estimate[k]);
                    g.scatterExact.push_back(exact);
                }
            }
    } else if (r.checkWidth > 0) { // attribution: the checked cells
        for (size_t k = 0; k < r.checkCells.size(); ++k)
            if (r.checkCells[k] >= 0 && std::isfinite(r.checkEstimate[k]) && std::isfinite(r.checkExact[k])) {
                g.scatterEstimate.push_back(r.checkEstimate[k]);
                g.scatterExact.push_back(r.checkExact[k]);
            }
    }
    g.spearman = spearmanCorrelation(g.scatterEstimate, g.scatterExact);
    g.pearson = pearsonCorrelation(g.scatterEstimate, g.scatterExact);
    for (const SkippedLine& sk : r.skipped)
        g.skipped.push_back("line " + std::to_string(sk.line) + ": " + sk.reason);
    g.usable = r.usable;
    g.complete = r.complete;
}

/// A top-K reply without pieces, saying why.
PatchingTopK failedTopK(const PatchingTopK& asked, const std::string& why) {
    PatchingTopK out;
    out.model = asked.model;
    out.row = asked.row;
    out.col = asked.col;
    out.error = why;
    return out;
}

} // namespace

ModelOpener plainModelOpener(ModelStore& store) {
    return [&store](const std::string& path, const std::string& device) { return store.get(path, device).model; };
}

std::string siteFor(const std::string& viewSite, ModelKind kind) {
    // The view's offset/head (and gwb figure's offset or head) is each model's own unit (sites.h).
    if (viewSite == "offset" || viewSite == "head") return unitSiteWord(kind);
    if (viewSite == "gate" && kind != ModelKind::Grassmann) return {};
    return resolveUnitAlias(viewSite, kind);
}

void fillTopK(const Model& m, const std::vector<float>& logits, int k, PatchingTopK& out) {
    if (logits.empty()) throw std::runtime_error("the engine returned no logits");
    const double top = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (float v : logits)
        z += std::exp(static_cast<double>(v) - top);
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 1)), order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(n), order.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    const auto tok = m.tokenizer();
    for (size_t j = 0; j < n; ++j) {
        const int32_t id = order[j];
        const double lg = logits[static_cast<size_t>(id)];
        out.pieces.push_back(tok ? tok->pieceText(id) : std::to_string(id));
        out.logits.push_back(lg);
        out.probs.push_back(std::exp(lg - top) / z);
    }
}

PatchingData runPatchingModels(const ModelOpener& open, const CausalModels& models, const PatchingInputs& in,
                               const RunProgress& progress, PatchingRuns* runs) {
    auto prepare = [&in](int, const Model& model, PatchingGrid& grid) -> std::optional<PatchRequest> {
        const std::string site = siteFor(in.site, model.config().kind);
        if (site.empty()) {
            grid.error = "'" + in.site + "' is a Grassmann site: a Transformer has no gate";
            return std::nullopt;
        }
        grid.site = site;
        PatchText t;
        t.clean = in.clean;
        t.corrupt = in.corrupt;
        t.answer = in.answer;
        t.wrong = in.wrong;
        t.site = site;
        t.mode = in.mode;
        PatchRequest r = preparePatchRequest(model, t);
        r.minDifference = in.minDifference;
        checkMinDifference(r.minDifference);
        return r;
    };
    auto run = [runs](int m, const Model& model, const PatchRequest& request, PatchingData& out,
                      const RunProgress& share) {
        const PatchSweep s = runPatchSweep(model, request, share);
        (m == 0 ? out.grassmann : out.transformer) = toGrid(model, s, m);
        if (out.cleanTokens.empty()) {
            out.cleanTokens = pieceTexts(model, s.clean);
            out.corruptTokens = pieceTexts(model, s.corrupt);
            out.metricPosition = s.metricPosition >= 0 ? s.metricPosition : s.T - 1;
            if (request.answer >= 0) {
                out.answerPiece = pieceTexts(model, {request.answer}).front();
                out.wrongPiece = pieceTexts(model, {request.wrong}).front();
            }
        }
        if (runs) {
            runs->cells[m] = s.cells;
            runs->cols[m] = s.cols;
        }
    };
    return runCausalModels<PatchingData, PatchRequest>(open, models, in, progress, runs, prepare, run);
}

PatchingTopK patchingTopK(const ModelOpener& open, const PatchingRuns& runs, int model, int64_t row, int64_t col,
                          int k) {
    PatchingTopK out;
    out.model = model;
    out.row = row;
    out.col = col;
    if (model < 0 || model > 1 || !runs.requests[model]) {
        out.error = "no sweep of this model";
        return out;
    }
    const int64_t i = row * runs.cols[model] + col;
    if (row < 0 || col < 0 || col >= runs.cols[model] || i >= static_cast<int64_t>(runs.cells[model].size())) {
        out.error = "no such cell";
        return out;
    }
    try {
        const Model m = open(runs.paths[model], runs.device);
        const PatchRequest& req = *runs.requests[model];
        const int64_t pos = req.position >= 0 ? req.position : static_cast<int64_t>(req.clean.size()) - 1;
        fillTopK(m, interventionLogits(m, req, runs.cells[model][static_cast<size_t>(i)], pos), k, out);
    } catch (const std::exception& e) {
        out = failedTopK(out, e.what());
    }
    return out;
}

PathRequest pathsRequestFor(const Model& model, const PathsInputs& in) {
    PatchText p;
    p.clean = in.clean;
    p.corrupt = in.corrupt;
    p.answer = in.answer;
    p.wrong = in.wrong;
    p.site = "resid";
    p.mode = "patch";
    const PatchRequest r = preparePatchRequest(model, p);
    PathRequest q;
    q.clean = r.clean;
    q.corrupt = r.corrupt;
    q.answer = r.answer;
    q.wrong = r.wrong;
    q.position = r.position;
    if (in.position >= static_cast<int>(r.clean.size()))
        throw std::invalid_argument("token " + std::to_string(in.position) + " is outside the prompt (tokens 0.." +
                                    std::to_string(r.clean.size() - 1) + ")");
    q.senderPosition = in.position;
    if (in.senders != "all") q.senders = {resolveUnitAlias(in.senders, model.config().kind)};
    q.logits = in.receivers != "resid";
    q.resid = in.receivers != "logits";
    checkMinDifference(in.minDifference);
    q.minDifference = in.minDifference;
    return q;
}

PathsData runPathsModels(const ModelOpener& open, const CausalModels& models, const PathsInputs& in,
                         const RunProgress& progress, PathsRuns* runs) {
    auto prepare = [&in](int, const Model& model, PathsGrid& grid) -> std::optional<PathRequest> {
        if (in.senders == "gate" && model.config().kind != ModelKind::Grassmann) {
            grid.error = "'gate' is a Grassmann sender: a Transformer has no gate";
            return std::nullopt;
        }
        return pathsRequestFor(model, in);
    };
    auto run = [](int m, const Model& model, const PathRequest& request, PathsData& out, const RunProgress& share) {
        const PathResult res = pathPatching(model, request, share);
        PathsGrid& g = m == 0 ? out.grassmann : out.transformer;
        g.modelName = model.displayName();
        g.senders = res.senderLabels;
        g.receivers = res.receiverLabels;
        g.senderLayers = res.senderLayers;
        g.cleanMetric = res.cleanMetric;
        g.corruptMetric = res.corruptMetric;
        g.effectDefined = res.effectDefined;
        g.minDifference = res.minDifference;
        g.effectNote = res.effectNote;
        g.metric = res.metric;
        g.effect = res.effect;
        if (out.metricPosition < 0) {
            out.metricPosition = res.metricPosition;
            out.answerPiece = pieceTexts(model, {request.answer}).front();
            out.wrongPiece = pieceTexts(model, {request.wrong}).front();
        }
    };
    return runCausalModels<PathsData, PathRequest>(open, models, in, progress, runs, prepare, run);
}

PatchingTopK pathsTopK(const ModelOpener& open, const PathsRuns& runs, int model, const std::string& sender,
                       const std::string& receiver, int k) {
    PatchingTopK out;
    out.model = model;
    if (model < 0 || model > 1 || !runs.requests[model]) {
        out.error = "no result of this model";
        return out;
    }
    try {
        const Model m = open(runs.paths[model], runs.device);
        fillTopK(m, pathCellLogits(m, *runs.requests[model], sender, receiver), k, out);
    } catch (const std::exception& e) {
        out = failedTopK(out, e.what());
    }
    return out;
}

PairsData runPairsModels(const ModelOpener& open, const CausalModels& models, const PairsInputs& inputs,
                         const RunProgress& progress, int bootstrap, uint64_t seed) {
    PairsData out;
    out.inputs = inputs;
    out.bootstrap = bootstrap;
    out.seed = seed;
    PairsFile file;
    try {
        file = readPairsFile(inputs.file);
    } catch (const std::exception& e) {
        out.error = e.what();
        return out;
    }
    out.format = file.format;
    out.lines = file.lines;
    Model opened[2];
    PairsGrid* const grids[2] = {&out.grassmann, &out.transformer};
    openCausalModels(open, models, opened, grids);
    int toRun = 0;
    for (int m = 0; m < 2; ++m)
        toRun += grids[m]->error.empty();
    int ran = 0;
    std::atomic<bool> cancelled{false};
    for (int m = 0; m < 2; ++m) {
        PairsGrid& g = *grids[m];
        if (!g.error.empty()) continue;
        if (cancelled) {
            g.error = "cancelled before this model ran";
            continue;
        }
        const std::string site = siteFor(inputs.site, opened[m].config().kind);
        if (site.empty()) {
            std::string word = causalModelWord(m);
            std::transform(word.begin(), word.end(), word.begin(), [](unsigned char c) { return std::tolower(c); });
            g.error = "a " + word + " model has no site " + inputs.site;
            continue;
        }
        PairsRunOptions o;
        o.modelFile = models.paths[m];
        o.pairsPath = inputs.file;
        o.site = site;
        o.mode = inputs.mode;
        o.attribution = inputs.method == "attribution";
        o.check = o.attribution ? inputs.check : 0;
        o.alsoEstimate = !o.attribution;
        o.bootstrap = bootstrap;
        o.seed = seed;
        o.minDifference = inputs.minDifference;
        try {
            const PairsResult r = computePairs(opened[m], file, o, [&](double f) {
                const bool go = !progress || progress((ran + f) / std::max(1, toRun));
                if (!go) cancelled = true;
                return go;
            });
            fillPairsGrid(r, bootstrap, seed, g);
            if (!r.complete) cancelled = true;
        } catch (const std::exception& e) {
            g.error = cancelled ? std::string("cancelled before the first pair") : std::string(e.what());
        }
        ++ran;
    }
    return out;
}

PathsPairsData runPathsPairsModels(const ModelOpener& open, const CausalModels& models, const PathsPairsInputs& inputs,
                                   const RunProgress& progress, int bootstrap, uint64_t seed) {
    PathsPairsData out;
    out.inputs = inputs;
    out.bootstrap = bootstrap;
    out.seed = seed;
    PairsFile file;
    try {
        checkMinDifference(inputs.minDifference);
        if (inputs.receivers != "all" && inputs.receivers != "logits" && inputs.receivers != "resid")
            throw std::invalid_argument("receivers must be all, logits or resid, got '" + inputs.receivers + "'");
        file = readPairsFile(inputs.file);
    } catch (const std::exception& e) {
        out.error = e.what();
        return out;
    }
    out.format = file.format;
    out.lines = file.lines;
    Model opened[2];
    PairsGrid* const grids[2] = {&out.grassmann, &out.transformer};
    openCausalModels(open, models, opened, grids);
    int toRun = 0;
    for (int m = 0; m < 2; ++m)
        toRun += grids[m]->error.empty();
    int ran = 0;
    bool cancelled = false;
    for (int m = 0; m < 2; ++m) {
        PairsGrid& g = *grids[m];
        if (!g.error.empty()) continue;
        if (cancelled) {
            g.error = "cancelled before this model ran";
            continue;
        }
        if (inputs.senders == "gate" && opened[m].config().kind != ModelKind::Grassmann) {
            g.error = "'gate' is a Grassmann sender: a Transformer has no gate";
            continue;
        }
        PathRequest shape;
        if (inputs.senders != "all") shape.senders = {resolveUnitAlias(inputs.senders, opened[m].config().kind)};
        shape.logits = inputs.receivers != "resid";
        shape.resid = inputs.receivers != "logits";
        shape.minDifference = inputs.minDifference;
        try {
            const PathPairsResult r = computePathPairs(opened[m], file, shape, bootstrap, seed, [&](double f) {
                const bool go = !progress || progress((ran + f) / std::max(1, toRun));
                if (!go) cancelled = true;
                return go;
            });
            // The grid: senders x receivers, every estimator of the pairs (effect_claims.h).
            const PairsEstimates& e = r.estimates;
            const int64_t P = r.pairs, S = static_cast<int64_t>(r.senderLabels.size()),
                          R = static_cast<int64_t>(r.receiverLabels.size());
            g.modelName = opened[m].displayName();
            g.site = "paths";
            g.rows = S;
            g.cols = R;
            g.rowLabels = r.senderLabels;
            g.colLabels = r.receiverLabels;
            g.rowTitle = "sender";
            g.colTitle = "receiver";
            g.lines = r.lines;
            g.estimates = e;
            const bool ratio = e.difference.effect;
            g.shownEstimate = ratio ? PairsEstimates::kEstimator : "mean raw effect (logits)";
            g.mean = ratio ? e.ratio : e.raw;
            g.low = ratio ? e.ratioLow : e.rawLow;
            g.high = ratio ? e.ratioHigh : e.rawHigh;
            g.n = e.n;
            g.values.assign(static_cast<size_t>(P * S * R), std::numeric_limits<double>::quiet_NaN());
            for (int64_t p = 0; p < P; ++p)
                for (int64_t i = 0; i < S * R; ++i) {
                    const size_t k = static_cast<size_t>(p * S * R + i);
                    g.values[k] = ratio ? r.effect[k] : r.metric[k] - r.corruptMetric[static_cast<size_t>(p)];
                }
            for (const SkippedLine& sk : r.skipped)
                g.skipped.push_back("line " + std::to_string(sk.line) + ": " + sk.reason);
            g.usable = P;
            g.complete = true;
        } catch (const PatchCancelled&) {
            g.error = "cancelled: press Pairs file… again for this model's matrix";
        } catch (const std::exception& e) {
            g.error = cancelled ? std::string("cancelled before the first pair") : std::string(e.what());
        }
        ++ran;
    }
    return out;
}

std::vector<double> quickAblation(const Model& m, const std::vector<int64_t>& ids, const Intervention& iv) {
    if (ids.size() < 2) throw std::runtime_error("the prompt needs at least 2 tokens");
    if (iv.layer < 0 || iv.layer >= m.config().nLayers)
        throw std::invalid_argument("layer " + std::to_string(iv.layer) + " is out of range (the model has " +
                                    std::to_string(m.config().nLayers) + " layers)");
    if (iv.site == PatchSite::Offset) {
        const std::vector<int> offsets = layerOffsets(m, iv.layer);
        if (std::find(offsets.begin(), offsets.end(), iv.offset) == offsets.end())
            throw std::invalid_argument("offset " + std::to_string(iv.offset) + " is not an offset of layer " +
                                        std::to_string(iv.layer));
    }
    if (iv.site == PatchSite::Head && (iv.head < 0 || iv.head >= m.config().nHeads))
        throw std::invalid_argument("head " + std::to_string(iv.head) + " is out of range (the model has " +
                                    std::to_string(m.config().nHeads) + " heads)");
    return ablationDeltaLogprob(m, ids, iv);
}

} // namespace gwb::engine
