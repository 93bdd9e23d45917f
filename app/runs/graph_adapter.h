#pragma once
// The Graph figure's runs in the window's Qt words: both models' attribution graphs on a Run's
// prompt (gwb/engine/graph_run.h) and a transcoder feature's dashboard. The window's runner and
// `gwb figure --view graph` call them. Qt Core + engine.

#include "runs/features_adapter.h"
#include "runs/trace_job.h"

#include "gwb/engine/feature_runs.h"
#include "gwb/engine/graph.h"
#include "gwb/engine/workbench_data.h"

#include <QString>

#include <functional>
#include <memory>
#include <optional>

namespace gwb::app {

/// What the runner needs of the window: the model files, the device, the traces (their tokens are
/// the prompt) and each model's transcoder folder.
struct GraphContext {
    QString grassmannPath, baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice, baselineChoice;
    gwb::engine::WorkbenchData data;
    QString transcoders[2];
    /// Both typed: the graphs explain logit[answer] - logit[wrong] instead of the top logits.
    QString answer, wrong;
};

/// Both graphs for `context` (never throws: a model's problem goes into its errors entry; a cancel
/// gives null).
std::shared_ptr<const gwb::engine::GraphPair> computeGraphs(ModelCache& cache, const GraphContext& context,
                                                            const std::function<bool(double)>& progress = {});

/// The dashboard of feature `feature` of the transcoder at block `layer` of the set in `folder`,
/// over the set's training corpus as found on this machine (never throws: a problem goes into the
/// dashboard's error).
gwb::engine::FeatureDashboardRun computeGraphDashboard(ModelCache& cache, const QString& folder, int layer,
                                                       int64_t feature, const GraphContext& context);

} // namespace gwb::app
