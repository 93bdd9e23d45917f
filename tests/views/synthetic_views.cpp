#include "synthetic_data.h"

#include "gwb/views/features_view.h"
#include "gwb/views/graph_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/saliency_view.h"

namespace gwb::views::synthetic {

void feedComputed(View* view, const WorkbenchData& data, int token) {
    if (auto* fv = qobject_cast<FeaturesView*>(view)) {
        const FeatureDataPtr f = makeFeatureData(data, false);
        fv->setFeatures(f);
        const int64_t chosen = f->perToken[static_cast<size_t>(token)].front().first;
        fv->chooseFeature(chosen);
        fv->setDashboard(makeFeatureDashboard(*f, chosen));
    }
    if (auto* sv = qobject_cast<SaliencyView*>(view)) sv->setSaliency(makeSaliency(data, token));
    if (auto* pv = qobject_cast<PatchingView*>(view)) pv->setResult(makePatchingData(data));
    if (auto* paths = qobject_cast<PathsView*>(view)) paths->setResult(makePathsData(data));
    if (auto* graph = qobject_cast<GraphView*>(view)) graph->setGraphs(makeGraphPair(data));
}

} // namespace gwb::views::synthetic
