#pragma once
// The Features figure's runs in the window's Qt words: a dictionary's activations on a Run's
// traces and a feature's dashboard (gwb/engine/feature_runs.h). The window's runner and `gwb figure
// --view features` call them. Qt Core + engine.

#include "runs/trace_job.h"

#include "gwb/engine/feature_runs.h"
#include "gwb/engine/features.h"
#include "gwb/engine/workbench_data.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

namespace gwb::app {

/// What the runner needs of the window: the model files, the device and the traces.
struct FeaturesContext {
    QString grassmannPath, baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice, baselineChoice;
    gwb::engine::WorkbenchData data;
    /// Text files the dashboards draw their contexts from (empty: the dictionary's training files).
    QStringList dashboardCorpus;
};

/// The window's models and traces as the engine's feature runs take them.
gwb::engine::FeatureModels featureModels(const FeaturesContext& context);

/// The activations of `dictionary` on the traces of `context` (the model it was trained on, found
/// by its weights; a crosscoder reads both); never throws: problems come back in FeatureData::error.
gwb::engine::FeatureDataPtr computeFeatureData(ModelCache& cache, const QString& path,
                                               const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                               const FeaturesContext& context);
/// A feature's dashboard over context.dashboardCorpus, else the dictionary's training files (at
/// most `maxWindows` windows).
gwb::engine::FeatureDashboardRun computeDashboard(ModelCache& cache,
                                                  const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                                  int64_t feature, const FeaturesContext& context,
                                                  int64_t maxWindows = 64);

} // namespace gwb::app
