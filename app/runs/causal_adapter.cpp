#include "runs/causal_adapter.h"

namespace gwb::app {

gwb::engine::PatchingData computePatching(ModelCache& cache, const PatchingJobRequest& r,
                                          const std::function<bool(double)>& progress, PatchingRuns* runs) {
    return gwb::engine::runPatchingModels(cache.opener(), causalModelsOf(r), r.inputs, progress, runs);
}

gwb::engine::PatchingTopK computePatchingTopK(ModelCache& cache, const PatchingRuns& runs, int model, int64_t row,
                                              int64_t col, int k) {
    return gwb::engine::patchingTopK(cache.opener(), runs, model, row, col, k);
}

std::vector<double> computeAblation(ModelCache& cache, const AblationRequest& r, QString* error) {
    if (error) error->clear();
    try {
        if (r.path.isEmpty()) throw std::runtime_error("no model file");
        return gwb::engine::quickAblation(cache.get(r.path, r.device), r.ids, r.intervention);
    } catch (const std::exception& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return {};
    }
}

gwb::engine::PairsData computePatchingPairs(ModelCache& cache, const PatchingJobRequest& request,
                                            const gwb::engine::PairsInputs& inputs,
                                            const std::function<bool(double)>& progress, int bootstrap, uint64_t seed) {
    return gwb::engine::runPairsModels(cache.opener(), causalModelsOf(request), inputs, progress, bootstrap, seed);
}

gwb::engine::PathsData computePaths(ModelCache& cache, const PathsJobRequest& r,
                                    const std::function<bool(double)>& progress, PathsRuns* runs) {
    return gwb::engine::runPathsModels(cache.opener(), causalModelsOf(r), r.inputs, progress, runs);
}

gwb::engine::PathsPairsData computePathsPairs(ModelCache& cache, const PathsJobRequest& r,
                                              const gwb::engine::PathsPairsInputs& inputs,
                                              const std::function<bool(double)>& progress, int bootstrap,
                                              uint64_t seed) {
    return gwb::engine::runPathsPairsModels(cache.opener(), causalModelsOf(r), inputs, progress, bootstrap, seed);
}

gwb::engine::PatchingTopK computePathsTopK(ModelCache& cache, const PathsRuns& runs, int model, const QString& sender,
                                           const QString& receiver, int k) {
    return gwb::engine::pathsTopK(cache.opener(), runs, model, sender.toStdString(), receiver.toStdString(), k);
}

} // namespace gwb::app
