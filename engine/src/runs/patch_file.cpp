#include "gwb/engine/patch_file.h"

#include "gwb/engine/config.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_input.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace gwb::engine {

namespace {

using nlohmann::json;

/// Names of the sweep's axes for meta.json.
std::pair<std::string, std::string> axisNames(PatchSite site) {
    switch (site) {
    case PatchSite::Resid:
        return {"layer (block input h^l; h^N = final state)", "position"};
    case PatchSite::Offset:
        return {"layer", "offset D"};
    case PatchSite::Head:
        return {"layer", "head"};
    default:
        return {"layer", "position"};
    }
}

json tokensJson(const Model& model, const std::vector<int64_t>& ids) {
    json out = json::array();
    const auto pieces = pieceTexts(model, ids);
    for (size_t i = 0; i < ids.size(); ++i)
        out.push_back({{"id", ids[i]}, {"piece", pieces[i]}});
    return out;
}

} // namespace

std::string patchMetaJson(const Model& model, const PatchSweep& s, const PatchFileContext& ctx) {
    const auto [rowAxis, colAxis] = axisNames(s.site);
    json meta;
    meta["model_file"] = ctx.modelFile;
    meta["model_name"] = model.displayName();
    meta["model_kind"] = model.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer";
    meta["site"] = patchSiteName(s.site);
    meta["mode"] = patchModeName(s.mode);
    meta["row_axis"] = rowAxis;
    meta["column_axis"] = colAxis;
    meta["row_labels"] = s.rowLabels;
    meta["column_labels"] = s.colLabels;
    meta["clean_prompt"] = ctx.cleanPrompt;
    meta["clean_tokens"] = tokensJson(model, s.clean);
    if (!s.corrupt.empty()) {
        meta["corrupt_prompt"] = ctx.corruptPrompt;
        meta["corrupt_tokens"] = tokensJson(model, s.corrupt);
    }
    meta["tokens"] = s.T;
    meta["metric_position"] = s.metricPosition;
    if (s.hasMetric) {
        auto piece = [&model](int64_t id) { return id >= 0 ? pieceTexts(model, {id}).front() : std::string(); };
        meta["answer"] = {{"typed", ctx.answer}, {"piece", piece(ctx.answerId)}, {"id", ctx.answerId}};
        meta["wrong"] = {{"typed", ctx.wrong}, {"piece", piece(ctx.wrongId)}, {"id", ctx.wrongId}};
        meta["clean_metric"] = s.cleanMetric;
        meta["corrupt_metric"] = s.corruptMetric;
        meta["effect_defined"] = s.effectDefined;
        meta["min_difference"] = s.minDifference;
        if (!s.effectNote.empty()) meta["effect_note"] = s.effectNote;
    }
    if (!ctx.selection.empty()) {
        json selection = json::object();
        for (const auto& [name, value] : ctx.selection)
            selection[name] = value;
        meta["selection"] = selection;
    }
    int64_t done = 0;
    for (uint8_t c : s.computed)
        done += c;
    meta["complete"] = s.complete;
    meta["method"] = s.estimated ? "attribution" : "exact";
    if (s.estimated) {
        meta["attribution"] = "rows x columns  first-order estimate of the metric's change: (value in the source run - "
                              "value in the changed run) . d metric / d value, the gradient taken on the changed run "
                              "(the corrupted run when patching); estimated_metric = the changed run's metric + it; "
                              "flagged = 1 where the estimate passes a saturated Grassmann gate (AtP*)";
        if (!ctx.check.cells.empty()) {
            meta["check"] = {{"spearman", ctx.check.spearman},
                             {"recall_at_k", ctx.check.recallAtK},
                             {"k", ctx.check.cells.size() / 2},
                             {"cells", "check_cells: flat index row * columns + column; the K largest |estimate| "
                                       "first, then K at random; check_exact = the exact metric change"}};
        }
    }
    meta["cells_computed"] = done;
    if (!s.complete) meta["stopped_by"] = ctx.stoppedBy;
    meta["definitions"] = {
        {"words", patchDefinitions()},
        {"effect", "rows x columns  normalised effect (metric - corrupt_metric) / (clean_metric - corrupt_metric); "
                   "NaN where undefined, and everywhere when |clean_metric - corrupt_metric| < min_difference "
                   "(effect_defined false; effect_note says why)"},
        {"raw_effect", "rows x columns  metric - the changed run's own metric (corrupt_metric when patching, "
                       "clean_metric when ablating), logits: what is defined whatever the difference"},
        {"metric", "rows x columns  logit[answer] - logit[wrong] at the metric position of the changed run; NaN "
                   "where the cell does not exist"},
        {"clean_metric", "scalar  the metric of the clean run"},
        {"corrupt_metric", "scalar  the metric of the corrupted run (the clean one when there is no corrupted prompt)"},
        {"defined",
         "rows x columns  1 where the cell exists (an offset the layer has that reaches a real token: D < T), else 0"},
        {"delta_logprob", "rows x columns x T  log p(x_{t+1}) of the ablated run minus the unchanged run's, nats; NaN "
                          "at t = T-1 and in cells that do not exist"},
        {"mean_delta_logprob", "rows x columns  mean of delta_logprob over t < T-1, nats"},
        {"clean_ids", "T  token ids of the clean prompt"},
        {"corrupt_ids", "T  token ids of the corrupted prompt"},
        {"computed", "rows x columns  1 where the cell's values are in this file; 0 where a stopped sweep (complete: "
                     "false) did not reach it: gwb patch --resume FILE computes those, and only those"}};
    return meta.dump(2);
}

void writePatchFile(const std::string& path, const Model& model, const PatchSweep& s, const PatchFileContext& ctx) {
    NpzWriter npz;
    for (const NpzMember& m : patchSweepArrays(s))
        npz.add(m);
    if (s.estimated && !ctx.check.cells.empty()) {
        std::vector<int64_t> cells(ctx.check.cells.begin(), ctx.check.cells.end());
        const auto k = static_cast<int64_t>(cells.size());
        npz.add("check_cells", Array<int64_t>({k}, cells));
        npz.add("check_estimate", Array<double>({k}, ctx.check.estimate));
        npz.add("check_exact", Array<double>({k}, ctx.check.exact));
    }
    npz.addFile("meta.json", patchMetaJson(model, s, ctx));
    npz.write(path);
}

void resumePatchSweep(PatchSweep& s, const PatchFileCells& e) {
    const size_t n = s.computed.size(), T = static_cast<size_t>(s.T);
    if (e.computed.size() != n) throw std::invalid_argument("resumePatchSweep: the earlier file is another sweep");
    for (size_t i = 0; i < n; ++i) {
        if (!e.computed[i] || s.computed[i]) continue;
        if (s.hasMetric) s.metric[i] = e.metric[i];
        if (!s.meanDeltaLogprob.empty()) {
            s.meanDeltaLogprob[i] = e.meanDeltaLogprob[i];
            for (size_t t = 0; t < T && (i + 1) * T <= e.deltaLogprob.size(); ++t)
                s.deltaLogprob[i * T + t] = e.deltaLogprob[i * T + t];
        }
        s.computed[i] = 1;
    }
    patchEffects(s);
    s.complete = std::all_of(s.computed.begin(), s.computed.end(), [](uint8_t c) { return c != 0; });
}

} // namespace gwb::engine
