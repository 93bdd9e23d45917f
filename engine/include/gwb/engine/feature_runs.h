#pragma once
// The Features view's runs (the runs layer): a dictionary's activations on the traces of a
// Run, and one feature's dashboard over a corpus, with the models the dictionary was trained on
// found among the run's two by their weights (a crosscoder needs both). Plain std results; the
// window's runner (app/gui/features_job.h) and `gwb figure --view features` call these. Std-only.

#include "gwb/engine/causal_runs.h"
#include "gwb/engine/feature_results.h"
#include "gwb/engine/features.h"
#include "gwb/engine/trace.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine {

/// The models of a Run a dictionary may belong to, with their traces (0 Grassmann, 1 baseline;
/// "" / null when left out).
struct FeatureModels {
    std::string paths[2];
    std::string device = "auto";
    TracePtr traces[2];
};

/// The model (and a crosscoder's second) a dictionary was trained on, among the run's models.
struct FittedDictionary {
    Model first;
    std::optional<Model> second;
    TracePtr trace; ///< the first model's trace of the prompt (may be null)
};

/// Finds the dictionary's model by its weights' hash (a dictionary from elsewhere that names no
/// weights: the model it fits, the one of its model_name first). Throws std::invalid_argument
/// naming the models open ("'name' (weights 1a2b3c4d5e6f)") and the one it wants.
FittedDictionary fitDictionary(const ModelOpener& open, const Dictionary& dictionary, const FeatureModels& models);

/// The activations of `dictionary` (opened from `path`) on the first model's trace. Never throws:
/// problems come back in FeatureData::error.
FeatureDataPtr runFeatureActivations(const ModelOpener& open, const std::string& path,
                                     const std::shared_ptr<const Dictionary>& dictionary, const FeatureModels& models);

/// A feature's dashboard over `corpusFiles` (each must exist), else the dictionary's training
/// files found on this machine, at most `maxWindows` windows. Never throws: the error goes into
/// the result.
FeatureDashboardRun runFeatureDashboard(const ModelOpener& open, const std::shared_ptr<const Dictionary>& dictionary,
                                        int64_t feature, const FeatureModels& models,
                                        const std::vector<std::string>& corpusFiles, int64_t maxWindows = 64);

} // namespace gwb::engine
