#pragma once
// The results of the two-model causal runs (the runs layer): a patching sweep, path
// patching and a pairs file on both models (Grassmann and the baseline Transformer), each model's
// grid with its labels, and a clicked cell's top next pieces. Plain std data: the engine fills them
// (causal_runs.h), the window's Patching and Paths views and `gwb figure` draw them, and tests build
// them by hand. Torch-free (library gwb_trace), so views may include it.

#include "gwb/engine/effect_claims.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gwb::engine {

/// "Grassmann" (0) or "Transformer" (1): the word a causal run's messages use for model m.
std::string causalModelWord(int model);

/// What the person asked for in the Patching view (or `gwb figure --view patching`).
struct PatchingInputs {
    std::string clean;   ///< clean prompt (the window's current prompt)
    std::string corrupt; ///< corrupted prompt, same token length; "" = ablate the clean prompt
    std::string answer;  ///< answer piece of the metric ("" with wrong "" = no metric: an ablation of the prompt)
    std::string wrong;   ///< wrong piece of the metric
    /// "resid", "mixer", "gate", "ffn" or "offset/head" (Grassmann offsets, Transformer heads).
    std::string site = "resid";
    std::string mode = "patch";                   ///< "patch", "zero" or "mean"
    double minDifference = kDefaultMinDifference; ///< for the normalised effect (effect_claims.h)
};

/// One model's sweep as drawn.
struct PatchingGrid {
    std::string model;     ///< "Grassmann" or "Transformer"
    std::string modelName; ///< the model's display name
    std::string site;      ///< the site run on this model: "resid", ..., "offset" or "head"
    std::string error;     ///< why there is no grid ("" = there is one)
    int64_t rows = 0;      ///< layers (resid: N+1 block inputs)
    int64_t cols = 0;      ///< positions, offsets or heads
    std::vector<std::string> rowLabels, colLabels;
    std::string rowTitle, colTitle; ///< e.g. "layer", "position"
    std::vector<uint8_t> defined;   ///< rows*cols: 0 where the cell does not exist (an offset the layer lacks,
                                    ///< or one that reaches before the prompt at every position)
    int64_t tokens = 0;             ///< the prompt's length T (why an offset D >= T is undefined)
    bool hasMetric = false;         ///< answer and wrong given: metric and effect are filled
    double cleanMetric = std::numeric_limits<double>::quiet_NaN();   ///< logit diff of the clean run
    double corruptMetric = std::numeric_limits<double>::quiet_NaN(); ///< of the corrupted run
    bool effectDefined = false; ///< |clean - corrupted| reaches minDifference (effectCondition)
    double minDifference = kDefaultMinDifference;
    std::string effectNote;        ///< why the effect is not defined ("" when it is, or without a metric)
    bool ablation = false;         ///< the changed run is the clean prompt ablated (else the corrupted one, patched)
    std::vector<double> metric;    ///< rows*cols raw metric of the changed run (NaN: undefined)
    std::vector<double> effect;    ///< rows*cols normalised effect (NaN: undefined)
    std::vector<double> meanDelta; ///< rows*cols mean delta log p(next token), nats (ablation without metric)

    bool hasGrid() const { return error.empty() && rows > 0 && cols > 0; }
    /// Which quantity the cells show.
    enum class Shown { Effect, MetricChange, MeanDelta };
    Shown shown() const;
    /// The drawn value of cell (r, c): the effect; else (no corrupted prompt, or |clean - corrupted|
    /// below the threshold) the raw effect, metric - the changed run's own metric (corrupted when
    /// patching, clean when ablating), in logits; else the mean delta log p. NaN where undefined.
    double value(int64_t r, int64_t c) const;
    /// Why cell (r, c) is undefined ("" when it is defined).
    std::string undefinedReason(int64_t r, int64_t c) const;
};

/// A whole patching result: both models' grids for one request.
struct PatchingData {
    PatchingInputs inputs;
    std::string error;       ///< bad input: the message shown, nothing else changes
    std::string answerPiece; ///< the pieces as the tokenizer reads them ("▁she")
    std::string wrongPiece;
    int64_t metricPosition = -1;            ///< token whose next-token logits give the metric
    std::vector<std::string> cleanTokens;   ///< pieces of the clean prompt
    std::vector<std::string> corruptTokens; ///< pieces of the corrupted prompt (empty without one)
    PatchingGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
};

/// The changed run of one clicked cell (Patching or Paths): its top-K next pieces at the metric
/// position.
struct PatchingTopK {
    int model = 0; ///< 0 Grassmann, 1 Transformer
    int64_t row = -1, col = -1;
    std::vector<std::string> pieces; ///< K pieces, most probable first
    std::vector<double> probs;       ///< their probabilities
    std::vector<double> logits;      ///< their logits
    std::string error;               ///< why there is none
};

/// Largest |value| over the defined cells of both grids (the shared colour scale), 0 when none.
double patchingScale(const PatchingData& data);
/// The colour scale of model 0/1's grid: shared with the other grid only when both show the same
/// quantity (a raw effect in logits is never drawn on a normalised effect's scale).
double patchingScale(const PatchingData& data, int model);

/// What the person asked for in the Paths view.
struct PathsInputs {
    std::string clean, corrupt, answer, wrong;
    /// "all", "offset/head" (Grassmann offsets, Transformer heads), "mixer", "gate", "ffn"
    std::string senders = "all";
    std::string receivers = "all"; ///< "all", "logits", "resid"
    int position = -1;             ///< a sender takes its clean value at this token only; -1 = every token
    double minDifference = kDefaultMinDifference; ///< for the normalised effect (effect_claims.h)
};

/// One model's senders x receivers matrix.
struct PathsGrid {
    std::string model; ///< "Grassmann" or "Transformer"
    std::string modelName;
    std::string error; ///< why there is no matrix ("" = there is one)
    std::vector<std::string> senders, receivers;
    std::vector<int> senderLayers;
    double cleanMetric = std::numeric_limits<double>::quiet_NaN();
    double corruptMetric = std::numeric_limits<double>::quiet_NaN();
    bool effectDefined = false; ///< |clean - corrupted| reaches minDifference (effectCondition)
    double minDifference = kDefaultMinDifference;
    std::string effectNote;     ///< why the effect is not defined ("" when it is)
    std::vector<double> metric; ///< senders x receivers; NaN where undefined
    std::vector<double> effect; ///< (metric - corrupt) / (clean - corrupt); NaN where undefined

    int64_t rows() const { return static_cast<int64_t>(senders.size()); }
    int64_t cols() const { return static_cast<int64_t>(receivers.size()); }
    bool hasGrid() const { return error.empty() && rows() > 0 && cols() > 0; }
    /// The drawn value: the effect, or metric - corrupted metric when clean and corrupted agree.
    double value(int64_t r, int64_t c) const;
    /// Why cell (r, c) is undefined ("" when it is defined).
    std::string undefinedReason(int64_t r, int64_t c) const;
};

/// A whole path-patching result: both models' matrices.
struct PathsData {
    PathsInputs inputs;
    std::string error; ///< bad input: shown, nothing else changes
    std::string answerPiece, wrongPiece;
    int64_t metricPosition = -1;
    PathsGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
};

/// Largest |value| over both matrices (the shared colour scale), 0 when none.
double pathsScale(const PathsData& data);
/// The colour scale of model 0/1's matrix: shared only with a matrix showing the same quantity.
double pathsScale(const PathsData& data, int model);

/// The Paths inputs for "Trace paths from here" on cell (row, col) of a Patching sweep of model
/// 0/1: the same prompts and pieces; the senders of the cell's kind (all for resid), at the cell's
/// token when its columns are tokens. `sender` gets the component's label where the cell is one
/// ("offset.3.2", "ffn.1"; "" for a block input).
PathsInputs pathsFromPatchingCell(const PatchingData& data, int model, int64_t row, int64_t col, std::string* sender);

/// What the person asked for over a pairs file: the file and how to run it.
struct PairsInputs {
    std::string file;
    std::string site = "resid";
    std::string mode = "patch";
    std::string method = "exact";                 ///< "exact" or "attribution"
    int check = 5;                                ///< attribution: K cells of largest |estimate| + K random run exactly
    double minDifference = kDefaultMinDifference; ///< for the per-pair ratios and the verdict (effect_claims.h)
};

/// One model's run over the pairs, summarised per cell.
struct PairsGrid {
    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    std::string model;     ///< "Grassmann" or "Transformer"
    std::string modelName; ///< the model's display name
    std::string site;      ///< the site run on this model
    std::string error;     ///< why there is no grid ("" = there is one)
    int64_t rows = 0, cols = 0;
    std::vector<std::string> rowLabels, colLabels; ///< columns of a position site count back from the metric position m
    std::string rowTitle, colTitle;
    bool estimated = false;     ///< attribution: values are estimated metric changes, not normalised effects
    std::vector<int64_t> lines; ///< P: the pairs file's line of each pair
    /// P x rows x cols: per pair, what `mean` summarises: the effect (exact runs showing the ratio of
    /// means; NaN for a pair below the threshold), else the raw effect or attribution (logits).
    std::vector<double> values;
    std::vector<uint8_t> flagged; ///< P x rows x cols (attribution): a saturated gate on the path
    /// rows x cols: the shown estimate over pairs and its 95% paired-bootstrap interval: the ratio of
    /// means where the pairs show an effect to localise and the cell's ratio is defined (exact
    /// runs), else the mean raw effect p - k in logits (shownEstimate says which).
    std::vector<double> mean, low, high;
    std::vector<int64_t> n; ///< rows x cols: pairs with a defined value
    /// Every estimator over the pairs (the verdict on clean - corrupted, ratio of means, raw
    /// effects, mean of ratios, Holm's marks); effect_claims.h.
    PairsEstimates estimates;
    std::string shownEstimate; ///< "ratio of means" or "mean raw effect (logits)"
    bool shownIsRatio() const { return shownEstimate == PairsEstimates::kEstimator; }
    /// Estimate against exact metric change (pair x cell), the scatter's points: every cell of every
    /// pair for an exact run, the checked cells for an attribution run.
    std::vector<double> scatterEstimate, scatterExact;
    double spearman = kNaN, pearson = kNaN; ///< of those points (spearmanCorrelation, ...)
    std::vector<std::string> skipped;       ///< "line N: reason" of every line this model could not use
    int64_t usable = 0;                     ///< pairs this model could run
    bool complete = true;                   ///< false: cancelled after `pairs()` of `usable` pairs

    bool hasGrid() const { return error.empty() && rows > 0 && cols > 0 && !lines.empty(); }
    int64_t pairs() const { return static_cast<int64_t>(lines.size()); }
    /// The value of pair p in cell (r, c); NaN where undefined.
    double value(int64_t p, int64_t r, int64_t c) const;
    /// The mean of cell (r, c); NaN where no pair defines it.
    double meanAt(int64_t r, int64_t c) const;
    /// Every defined value of cell (r, c), in pair order.
    std::vector<double> cellValues(int64_t r, int64_t c) const;
    /// "effect" or "estimated metric change".
    std::string valueName() const;
};

/// A pairs file's run on both models.
struct PairsData {
    PairsInputs inputs;
    std::string error;  ///< the file could not be used at all: the message shown, nothing else changes
    std::string format; ///< "jsonl" or "csv"
    int64_t lines = 0;  ///< data lines of the file
    int bootstrap = 1000;
    uint64_t seed = 0;
    PairsGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
    const PairsGrid& grid(int model) const { return model == 0 ? grassmann : transformer; }
};

/// What the person asked for over a pairs file in the Paths view (or `gwb figure --view paths
/// --pairs`): each pair's senders x receivers matrix as `gwb paths --pairs` computes it.
struct PathsPairsInputs {
    std::string file;
    std::string senders = "all";   ///< as PathsInputs
    std::string receivers = "all"; ///< "all", "logits", "resid"
    double minDifference = kDefaultMinDifference;
};

/// A pairs file's path patching on both models: each grid's rows are the senders, its columns the
/// receivers (PairsGrid's per-pair values, estimators and Holm's marks, as over a patching sweep).
struct PathsPairsData {
    PathsPairsInputs inputs;
    std::string error;  ///< the file could not be used at all
    std::string format; ///< "jsonl" or "csv"
    int64_t lines = 0;
    int bootstrap = 1000;
    uint64_t seed = 0;
    PairsGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
    const PairsGrid& grid(int model) const { return model == 0 ? grassmann : transformer; }
};

/// The cell (flat index r * cols + c) a figure shows when none was clicked: the largest |mean| among
/// cells whose pairs differ (not the final block input at m, 1 for every pair by definition), else
/// the largest |mean|; -1 when no cell is defined.
int64_t defaultPairsCell(const PairsGrid& grid);

} // namespace gwb::engine
