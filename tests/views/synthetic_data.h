#pragma once
// Hand-built traces and analyses for the view tests (no engine, no model): deterministic
// pseudo-random states with the shapes trace.h and analysis.h document.

#include "gwb/views/features_figure.h"
#include "gwb/views/graph_figure.h"
#include "gwb/views/patching_figure.h"
#include "gwb/views/paths_figure.h"
#include "gwb/views/saliency_figure.h"
#include "gwb/views/view_data.h"

#ifdef GWB_TEST_WIDGETS // the view tests (views_tests); the figure tests have no widgets
#include "gwb/views/features_view.h"
#include "gwb/views/graph_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/view.h"
#endif

#include "std_text.h"

namespace gwb::views::synthetic {

struct SyntheticSizes {
    int64_t tokens = 12;
    int64_t layers = 3;
    int64_t dModel = 16;
    int64_t reduced = 6;
    int64_t heads = 4;
    std::vector<int> offsets = {1, 2, 4};
};

/// Creates the one Qt application of the test process (offscreen platform from the environment): a
/// QApplication for the view tests, a QGuiApplication for the figure tests.
void ensureApp();

/// Corpus statistics as `gwb stats` makes them (model = Grassmann, baseline = Transformer) with
/// deterministic values: gate_mean, attn_entropy (layer x head), surprisal of both models (with
/// position curves) and pair_norm (log-spaced edges).
std::shared_ptr<gwb::engine::CorpusStats> makeCorpusStats(int64_t layers = 3, int64_t heads = 4, int64_t window = 12);

/// Grassmann trace + analysis and baseline trace + analysis on the same synthetic prompt, and
/// corpus statistics from makeCorpusStats.
WorkbenchData makeWorkbenchData(const SyntheticSizes& sizes = {});

/// A patching result for the prompt of `data` as the application makes it: Grassmann resid x
/// position (rows N+1) and Transformer resid, with a metric (clean 2, corrupted -1 for both) and
/// deterministic effects in [-0.6, 1.2]; the Grassmann cell (1, 2) is undefined (defined = 0).
PatchingData makePatchingData(const WorkbenchData& data);
/// Both models' path-patching matrices (senders by layer x logits, resid.1..N) for `data`.
PathsData makePathsData(const WorkbenchData& data);

/// A saliency result for `data` at token t (deterministic shares over tokens 0..t).
SaliencyResult makeSaliency(const WorkbenchData& data, int token);
/// Feeds the figures that need a computed result (Saliency, Patching, Paths, Features, Graph) one
/// for `data` at token t.
void feedComputed(Figure& figure, const WorkbenchData& data, int token);
#ifdef GWB_TEST_WIDGETS
/// The same for the views (synthetic_views.cpp), through their own setters.
void feedComputed(View* view, const WorkbenchData& data, int token);
#endif
/// Attribution graphs of both models on `data`'s tokens, made by hand (features at the last three
/// positions of three blocks), pruned, with loadings on the top logit's kept edges.
GraphPairPtr makeGraphPair(const WorkbenchData& data);
/// A dictionary's activations on `data`'s tokens (5 features a token), and a dashboard.
FeatureDataPtr makeFeatureData(const WorkbenchData& data, bool crosscoder);
FeatureDashboard makeFeatureDashboard(const FeatureData& features, int64_t feature);

} // namespace gwb::views::synthetic
