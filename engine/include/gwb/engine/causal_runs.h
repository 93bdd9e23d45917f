#pragma once
// The two-model causal runs (the runs layer): a patching sweep, path patching and a pairs
// file run on the Grassmann model and the baseline Transformer in one call, with one progress and
// cancel for both, each model's failure kept to its own grid; a clicked cell's top next pieces and
// a quick ablation. The window's Patching and Paths views (through app/gui's runners) and
// `gwb figure --view patching|paths` call these; the results are causal_results.h's plain data.
// Std-only.

#include "gwb/engine/causal_results.h"
#include "gwb/engine/config.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

/// Opens a model file on a device for a run (throws std::runtime_error naming the file and the
/// problem). The window passes its model store with the import choices the person made
/// (app/gui ModelCache); plainModelOpener opens with a ModelStore's defaults.
using ModelOpener = std::function<Model(const std::string& path, const std::string& device)>;

class ModelStore;
/// Models from `store` (ModelStore::get without import options).
ModelOpener plainModelOpener(ModelStore& store);

/// The two models of a causal run: 0 Grassmann, 1 Transformer; "" leaves one out.
struct CausalModels {
    std::string paths[2];
    std::string device = "auto";
};

/// Progress of a run: the fraction done in [0, 1]; returning false cancels (the runs throw
/// PatchCancelled inside and hand back a result that says so).
using RunProgress = std::function<bool(double)>;

/// The message of a cancelled sweep or paths run (the view keeps its previous result).
inline constexpr const char* kCancelledKeepsPrevious = "Cancelled: the previous result stays.";

/// The site each model runs for a view's site ("offset/head", "offset" or "head": offset for
/// Grassmann, head for the Transformer); "" when the model's kind has no such site ("gate" on a
/// Transformer).
std::string siteFor(const std::string& viewSite, ModelKind kind);

/// What a clicked cell's top-K needs again: per model the checked request and the sweep's cells.
struct PatchingRuns {
    std::string device;
    std::string paths[2];
    std::optional<PatchRequest> requests[2];
    std::vector<Intervention> cells[2]; ///< rows * cols, row-major
    int64_t cols[2] = {0, 0};
};

/// Checks and runs both models' sweeps. Never throws. Bad input (prompts of different token
/// lengths, a piece not in the vocabulary, ...) comes back as the result's error with no grids; a
/// site one model's kind lacks, or a model that fails to load or run, as that grid's error (the
/// other model still runs). Position columns are labelled with their tokens ("clean/corrupt" where
/// the prompts differ). A cancel gives the inputs only and kCancelledKeepsPrevious. `runs`
/// (optional) receives what patchingTopK needs.
PatchingData runPatchingModels(const ModelOpener& open, const CausalModels& models, const PatchingInputs& inputs,
                               const RunProgress& progress = {}, PatchingRuns* runs = nullptr);

/// The changed run of cell (row, col) of model 0/1: its k most probable next pieces at the metric
/// position. Never throws (the error goes into the result).
PatchingTopK patchingTopK(const ModelOpener& open, const PatchingRuns& runs, int model, int64_t row, int64_t col,
                          int k = 10);

/// What a clicked cell's top pieces need again: per model the checked request.
struct PathsRuns {
    std::string device;
    std::string paths[2];
    std::optional<PathRequest> requests[2];
};

/// The engine's path request of one model for the view's inputs (gwb patch's checks and messages;
/// "offset/head" senders become the model's own kind). Throws std::invalid_argument.
PathRequest pathsRequestFor(const Model& model, const PathsInputs& inputs);

/// Both models' senders x receivers matrices, as runPatchingModels. Never throws.
PathsData runPathsModels(const ModelOpener& open, const CausalModels& models, const PathsInputs& inputs,
                         const RunProgress& progress = {}, PathsRuns* runs = nullptr);

/// The run of cell (sender, receiver) of model 0/1: its k most probable next pieces.
PatchingTopK pathsTopK(const ModelOpener& open, const PathsRuns& runs, int model, const std::string& sender,
                       const std::string& receiver, int k = 10);

/// Runs a pairs file (site, mode, method of `inputs`) on both models, summarised per cell (mean,
/// 95% bootstrap interval, n) with each pair's values and the estimates against exact values.
/// Never throws: a file that cannot be read is the result's error; a model that cannot run it (no
/// such site, no usable pair for its vocabulary) that grid's error, with the other model still
/// run. A cancel keeps the pairs done by then (the grid says it is incomplete).
PairsData runPairsModels(const ModelOpener& open, const CausalModels& models, const PairsInputs& inputs,
                         const RunProgress& progress = {}, int bootstrap = 1000, uint64_t seed = 0);

/// Runs a pairs file through path patching (gwb paths --pairs: computePathPairs) on both models,
/// with the estimators over pairs (effect_claims.h). Never throws, as runPairsModels.
PathsPairsData runPathsPairsModels(const ModelOpener& open, const CausalModels& models, const PathsPairsInputs& inputs,
                                   const RunProgress& progress = {}, int bootstrap = 1000, uint64_t seed = 0);

/// The k most probable pieces of `logits` (V) with their probabilities and logits into `out`;
/// throws for empty logits.
void fillTopK(const Model& model, const std::vector<float>& logits, int k, PatchingTopK& out);

/// A quick ablation (the Plücker view's offset D of layer l, an Attention head): log p(next token)
/// with the intervention minus without, T values (NaN at T-1). Checks the layer, offset or head
/// against the model; throws std::invalid_argument / std::runtime_error naming the problem.
std::vector<double> quickAblation(const Model& model, const std::vector<int64_t>& ids, const Intervention& iv);

} // namespace gwb::engine
