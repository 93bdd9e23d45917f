#include "gui/patching_pairs_job.h"

namespace gwb::app {

gwb::views::PairsData computePatchingPairs(ModelCache& cache, const PatchingJobRequest& request,
                                           const gwb::views::PairsInputs& inputs,
                                           const std::function<bool(double)>& progress, int bootstrap, uint64_t seed) {
    return gwb::engine::runPairsModels(cache.opener(), causalModelsOf(request), inputs, progress, bootstrap, seed);
}

} // namespace gwb::app
