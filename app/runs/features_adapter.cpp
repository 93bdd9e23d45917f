#include "runs/features_adapter.h"

namespace gwb::app {

gwb::engine::FeatureModels featureModels(const FeaturesContext& c) {
    gwb::engine::FeatureModels m;
    m.paths[0] = c.grassmannPath.toStdString();
    m.paths[1] = c.baselinePath.toStdString();
    m.device = c.device.toStdString();
    m.traces[0] = c.data.grassmann;
    m.traces[1] = c.data.baseline;
    return m;
}

gwb::engine::FeatureDataPtr computeFeatureData(ModelCache& cache, const QString& path,
                                               const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                               const FeaturesContext& context) {
    return gwb::engine::runFeatureActivations(cache.opener(), path.toStdString(), dictionary, featureModels(context));
}

gwb::engine::FeatureDashboardRun computeDashboard(ModelCache& cache,
                                                  const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                                  int64_t feature, const FeaturesContext& context, int64_t maxWindows) {
    std::vector<std::string> files;
    for (const QString& f : context.dashboardCorpus)
        files.push_back(f.toStdString());
    return gwb::engine::runFeatureDashboard(cache.opener(), dictionary, feature, featureModels(context), files,
                                            maxWindows);
}

} // namespace gwb::app
