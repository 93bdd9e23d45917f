#pragma once
// The causal figures' runs in the window's Qt words (gwb/engine/causal_runs.h): both models'
// patching sweeps, a pairs file's sweeps, path patching, a cell's top next pieces and the quick
// ablations. The window's runners and `gwb figure --view patching|paths` call them. Never throw.
// Qt Core + engine.

#include "runs/trace_job.h"

#include "gwb/engine/causal_results.h"
#include "gwb/engine/causal_runs.h"
#include "gwb/engine/patching.h"

#include <QString>

#include <functional>
#include <optional>
#include <vector>

namespace gwb::app {

/// A causal run of both models for a view: the models (as the window has them, with the import
/// choices) and what the person typed (PatchingInputs or PathsInputs).
template <class Inputs> struct CausalJobRequest {
    QString grassmannPath; ///< "" = leave out
    QString baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice;
    std::optional<ImportChoice> baselineChoice;
    Inputs inputs;
};
/// A patching sweep (or, with its inputs ignored, a pairs file's models).
using PatchingJobRequest = CausalJobRequest<gwb::engine::PatchingInputs>;
/// A path-patching run.
using PathsJobRequest = CausalJobRequest<gwb::engine::PathsInputs>;

/// The models of a causal request (PatchingJobRequest, PathsJobRequest) as the engine's runs take them.
template <class Request> gwb::engine::CausalModels causalModelsOf(const Request& r) {
    gwb::engine::CausalModels m;
    m.paths[0] = r.grassmannPath.toStdString();
    m.paths[1] = r.baselinePath.toStdString();
    m.device = r.device.toStdString();
    return m;
}

/// What a clicked cell's top-K needs again (the engine's: per model the checked request and cells).
using gwb::engine::PatchingRuns;

/// Both models' sweeps (gwb::engine::runPatchingModels) with the models of the request from the
/// cache (the window's import choices). Never throws; `progress` returns false to cancel.
gwb::engine::PatchingData computePatching(ModelCache& cache, const PatchingJobRequest& request,
                                          const std::function<bool(double)>& progress = {},
                                          PatchingRuns* runs = nullptr);

/// The changed run of cell (row, col) of model 0/1: its k most probable next pieces
/// (gwb::engine::patchingTopK). Never throws.
gwb::engine::PatchingTopK computePatchingTopK(ModelCache& cache, const PatchingRuns& runs, int model, int64_t row,
                                              int64_t col, int k = 10);

/// Runs `inputs` (file, site, mode, method) on the models of `models` (its inputs are ignored):
/// gwb::engine::runPairsModels with the models from the cache.
/// Never throws: a file that cannot be read is the result's error; a model that cannot run it
/// (no such site, no usable pair for its vocabulary) that grid's error, with the other model still
/// run. `progress` gets the fraction done and returns false to cancel: the pairs done by then are
/// kept (the grid says it is incomplete).
gwb::engine::PairsData computePatchingPairs(ModelCache& cache, const PatchingJobRequest& models,
                                            const gwb::engine::PairsInputs& inputs,
                                            const std::function<bool(double)>& progress = {}, int bootstrap = 1000,
                                            uint64_t seed = 0);

/// What a clicked cell's top pieces need again (the engine's: per model the checked request).
using gwb::engine::PathsRuns;

/// A pairs file's path patching on both models (gwb paths --pairs for the window and gwb figure).
gwb::engine::PathsPairsData computePathsPairs(ModelCache& cache, const PathsJobRequest& models,
                                              const gwb::engine::PathsPairsInputs& inputs,
                                              const std::function<bool(double)>& progress = {}, int bootstrap = 1000,
                                              uint64_t seed = 0);

/// Both models' matrices (gwb::engine::runPathsModels) with the models of the request from the
/// cache. Never throws: bad input comes back as the result's error; a model that fails on its own
/// as its grid's error. `progress` returns false to cancel.
gwb::engine::PathsData computePaths(ModelCache& cache, const PathsJobRequest& request,
                                    const std::function<bool(double)>& progress = {}, PathsRuns* runs = nullptr);

/// The run of cell (sender, receiver) of model 0/1: its k most probable next pieces.
gwb::engine::PatchingTopK computePathsTopK(ModelCache& cache, const PathsRuns& runs, int model, const QString& sender,
                                           const QString& receiver, int k = 10);

/// A quick ablation from the Plücker view (offset D of layer l) or an Attention head.
struct AblationRequest {
    QString path; ///< the model's file
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> choice;
    std::vector<int64_t> ids; ///< the traced prompt's token ids
    gwb::engine::Intervention intervention;
    QString label; ///< e.g. "offset 2 of layer 3 (zero)"
};

/// log p(next token) with the ablation minus without, T values (NaN at T-1); on failure empty,
/// with the reason in `error`.
std::vector<double> computeAblation(ModelCache& cache, const AblationRequest& request, QString* error);

} // namespace gwb::app
