#include "runs/graph_adapter.h"

#include "gwb/engine/graph_run.h"

#include <memory>
#include <mutex>

namespace gwb::app {

std::shared_ptr<const gwb::engine::GraphPair> computeGraphs(ModelCache& cache, const GraphContext& c,
                                                            const std::function<bool(double)>& progress) {
    gwb::engine::GraphModels models;
    models.paths[0] = c.data.grassmann ? c.grassmannPath.toStdString() : std::string();
    models.paths[1] = c.data.baseline ? c.baselinePath.toStdString() : std::string();
    for (int m = 0; m < 2; ++m)
        models.transcoders[m] = c.transcoders[m].toStdString();
    models.device = c.device.toStdString();
    std::vector<int32_t> ids[2];
    for (int m = 0; m < 2; ++m) {
        const gwb::engine::TracePtr& tr = m == 0 ? c.data.grassmann : c.data.baseline;
        if (tr)
            for (const auto& t : tr->tokens)
                ids[m].push_back(t.id);
    }
    gwb::engine::GraphRequest request;
    request.answer = c.answer.toStdString();
    request.wrong = c.wrong.toStdString();
    try {
        auto pair = std::make_shared<gwb::engine::GraphPair>(
            gwb::engine::runGraphModels(cache.opener(), models, ids, request, progress));
        return pair;
    } catch (const std::exception&) {
        return nullptr; // cancelled
    }
}

gwb::engine::FeatureDashboardRun computeGraphDashboard(ModelCache& cache, const QString& folder, int layer,
                                                       int64_t feature, const GraphContext& c) {
    gwb::engine::FeatureDashboardRun out;
    out.feature = feature;
    try {
        // The store keeps the sets last used: hovering a graph asks for many features of one set.
        const std::shared_ptr<const gwb::engine::TranscoderSet> set = cache.store().transcoders(folder.toStdString());
        if (layer < 0 || layer >= static_cast<int>(set->layers.size()))
            throw std::invalid_argument("the set has no transcoder at block " + std::to_string(layer));
        auto dictionary = std::make_shared<const gwb::engine::Dictionary>(set->layers[static_cast<size_t>(layer)]);
        FeaturesContext fc; // the Features view's dashboard, over the set's training corpus
        fc.grassmannPath = c.grassmannPath;
        fc.baselinePath = c.baselinePath;
        fc.device = c.device;
        fc.data = c.data;
        out = computeDashboard(cache, dictionary, feature, fc);
    } catch (const std::exception& e) {
        out.error = std::string("no dashboard: ") + e.what();
    }
    return out;
}

} // namespace gwb::app
