#pragma once
// What the Features view, its figure and `gwb figure --view features` draw: a dictionary's active
// features per token, and one feature's dashboard over a corpus. Plain data, Torch-free: the views
// and figures include this header, never the runs that fill it (feature_runs.h, features.h).

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine {

/// A feature's dashboard: its summary with every token read as a piece by the model's tokenizer
/// (its id where there is none). The one form of a summary: `gwb features top/export`, Python's
/// gwb.features.top/export and the window's Features view take it.
struct FeatureDashboard {
    std::string name; ///< feature.<site>.<index>
    int64_t feature = 0;
    int64_t rows = 0, fired = 0;
    float maxActivation = 0;
    struct Context {
        float activation = 0;             ///< at `position`
        int64_t window = 0, position = 0; ///< the row it ranks
        int64_t begin = 0;                ///< position of the first token shown
        std::vector<int32_t> ids;
        std::vector<std::string> pieces;
        std::vector<float> activations;                    ///< the feature on each token
        int64_t focus() const { return position - begin; } ///< index of the ranked token
    };
    std::vector<Context> top;
    std::vector<double> histogramEdges;
    std::vector<int64_t> histogramCounts;
    struct Read {
        std::string piece;
        int32_t id = 0;
        float logit = 0;
    };
    std::vector<Read> promoted, suppressed; ///< the decoder direction read through the unembedding
    double readingShare = 0;                ///< NaN where undefined (FeatureSummary)
    int readingLayer = -1;
    double relativeNorm = 0;      ///< crosscoders; NaN otherwise
    std::string relativeNormKind; ///< relativeNormKind() of it; "" without one
};

/// A loaded dictionary and its features on the current trace.
struct FeatureData {
    std::string path, site, secondSite, architecture, modelName, secondModelName;
    int64_t dSae = 0;
    bool crosscoder = false;
    /// Per token of the primary trace: the active features, most active first (at most 64).
    std::vector<std::vector<std::pair<int64_t, float>>> perToken;
    /// Crosscoders: ||d_2|| / (||d_1|| + ||d_2||) per feature (0 = first model's only).
    std::vector<double> relativeNorms;
    std::string error; ///< why the activations are missing ("" = fine)
    /// "feature.<site>.<f>".
    std::string featureName(int64_t f) const { return "feature." + site + "." + std::to_string(f); }
};
using FeatureDataPtr = std::shared_ptr<const FeatureData>;

/// One feature's dashboard as a run computed it over a corpus: the dashboard (featureDashboards,
/// the one the command line and Python print and write) with what the contexts were drawn from,
/// or why there is none. feature = -1: none yet.
struct FeatureDashboardRun : FeatureDashboard {
    FeatureDashboardRun() {
        feature = -1;
        readingShare = std::numeric_limits<double>::quiet_NaN();
        relativeNorm = std::numeric_limits<double>::quiet_NaN();
    }
    std::string corpus; ///< what the contexts were drawn from
    std::string error;  ///< why it could not be computed ("" = fine)
};

} // namespace gwb::engine
