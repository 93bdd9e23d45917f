#pragma once
// The Patching view over a pairs file: both models' sweeps of every usable pair (gwb patch
// --pairs's computation, cli/patch_pairs_run), summarised per cell (mean, 95% bootstrap interval,
// n) with each pair's values and the first-order estimates against exact values, as the view's
// plain PairsData. Runs on the PatchingRunner's worker thread, or synchronously for gwb figure.

#include "gui/patching_job.h"

#include "gwb/views/patching_pairs.h"

#include <functional>

namespace gwb::app {

/// Runs `inputs` (file, site, mode, method) on the models of `models` (its inputs are ignored):
/// gwb::engine::runPairsModels with the models from the cache.
/// Never throws: a file that cannot be read is the result's error; a model that cannot run it
/// (no such site, no usable pair for its vocabulary) that grid's error, with the other model still
/// run. `progress` gets the fraction done and returns false to cancel: the pairs done by then are
/// kept (the grid says it is incomplete).
gwb::views::PairsData computePatchingPairs(ModelCache& cache, const PatchingJobRequest& models,
                                           const gwb::views::PairsInputs& inputs,
                                           const std::function<bool(double)>& progress = {}, int bootstrap = 1000,
                                           uint64_t seed = 0);

} // namespace gwb::app
