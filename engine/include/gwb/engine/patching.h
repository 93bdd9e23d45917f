#pragma once
// Causal tests: ablation and activation patching in both models. Std types only.
//
// Sites (layer l, 0-based):
//   resid  the block input h^l, l = 0..N (l = N: the final state before the final LayerNorm);
//   mixer  the mixing sublayer's output: Grassmann g_t (after the empty rule, before the gate);
//          Transformer the attention output after out_proj;
//   gate   (Grassmann) the gate a_t;
//   ffn    the FFN output (before dropout and the residual);
//   offset (Grassmann) offset D of layer l: zero drops D from the average (y_t / B_t averaged over
//          the remaining valid offsets, the layer's empty rule where none remain); patch puts in
//          the source run's normalised Plucker vector of that offset; mean puts in its mean over
//          the positions where the offset is valid;
//   head   (Transformer) head h's context rows (its slice of the input to out_proj).
// Modes: patch (the value from the source run, same length), zero, mean (mean over the prompt's
// positions of that site in the run being changed).
//
// Metric: with answer and wrong ids, the logit difference logit[answer] - logit[wrong] at the
// metric position (default the last). Patching runs the corrupted prompt with clean values put in
// and reports (patched - corrupted) / (clean - corrupted); ablation (zero/mean) runs the clean
// prompt and reports the same ratio when a corrupted prompt is given. Without a corrupted prompt
// an ablation reports the change of log p of the actual next token at every position.

#include "gwb/engine/effect_claims.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

class Model;

enum class PatchSite { Resid, Mixer, Gate, Ffn, Offset, Head };
enum class PatchMode { Patch, Zero, Mean };

const char* patchSiteName(PatchSite site); ///< "resid", "mixer", ...
const char* patchModeName(PatchMode mode); ///< "patch", "zero", "mean"
/// Throws std::invalid_argument naming the accepted values.
PatchSite patchSiteFromName(const std::string& name);
PatchMode patchModeFromName(const std::string& name);

/// One intervention: a cell of a sweep or a quick ablation.
struct Intervention {
    PatchSite site = PatchSite::Resid;
    PatchMode mode = PatchMode::Zero;
    int layer = 0;     ///< block index; resid: 0..N
    int position = -1; ///< resid, mixer, gate, ffn: the one position changed; -1: every position
    int offset = 0;    ///< offset site: D (must be in the layer's offset set)
    int head = -1;     ///< head site: 0..H-1
};

struct PatchRequest {
    std::vector<int64_t> clean;   ///< token ids of the clean prompt
    std::vector<int64_t> corrupt; ///< same length, or empty (then zero/mean ablate the clean prompt)
    PatchSite site = PatchSite::Resid;
    PatchMode mode = PatchMode::Patch;
    int64_t answer = -1;   ///< with wrong: the logit difference metric
    int64_t wrong = -1;    ///<
    int64_t position = -1; ///< metric position; -1: the last
    /// The least |clean - corrupted| metric difference for a normalised effect (effect_claims.h).
    double minDifference = kDefaultMinDifference;
    /// A part of the sweep; only its cells are computed (-1: all). `layer` keeps one row (a block,
    /// or h^l for resid); `offset` (site offset) and `head` (site head) keep one column.
    int layer = -1;
    int offset = -1;
    int head = -1;
    /// rows * cols of the sweep, or empty: 1 = do not compute this cell (a resumed sweep has it
    /// already); it stays NaN and computed = 0 in the result.
    std::vector<uint8_t> skip;
    /// Cancelled (the progress callback returned false): return what is done, with complete =
    /// false, instead of throwing PatchCancelled (a command stopped by SIGTERM writes it).
    bool partialOnCancel = false;
};

/// A sweep: rows x columns of interventions of one site and mode, with the metric of each.
///   resid: rows l = 0..N (labels "h^0".."h^N"), columns positions; mixer/gate/ffn: rows the
///   blocks, columns positions; offset: rows the blocks, columns the offsets of any layer (cells
///   whose offset the layer lacks are undefined, and so are offsets D >= T, which reach before
///   the prompt at every position and never pair two real tokens); head: rows the blocks,
///   columns the heads.
struct PatchSweep {
    PatchSite site = PatchSite::Resid;
    PatchMode mode = PatchMode::Patch;
    std::string modelName;
    int64_t rows = 0, cols = 0;
    std::vector<std::string> rowLabels, colLabels;
    std::vector<Intervention> cells; ///< rows * cols, row-major
    std::vector<uint8_t> defined;    ///< rows * cols: 0 where the cell does not exist
    int64_t T = 0;
    std::vector<int64_t> clean, corrupt;
    int64_t metricPosition = -1;
    bool hasMetric = false;     ///< answer and wrong given: metric/effect are filled
    double cleanMetric = 0.0;   ///< metric of the clean run
    double corruptMetric = 0.0; ///< of the corrupted run (equal to cleanMetric without one)
    std::vector<double> metric; ///< rows * cols raw metric of the changed run (NaN: undefined cell)
    /// |clean - corrupted| reaches minDifference (effectCondition): the effect is filled.
    bool effectDefined = false;
    double minDifference = kDefaultMinDifference;
    std::string effectNote;     ///< why the effect is not defined ("" when it is, or without a metric)
    std::vector<double> effect; ///< (metric - corrupt) / (clean - corrupt); NaN where undefined
    /// rows * cols * T: log p(next token) of the changed run minus the unchanged run's, at every
    /// position t (predicting token t+1); NaN at t = T-1 and in undefined cells. Filled for
    /// ablations without a corrupted prompt.
    std::vector<double> deltaLogprob;
    /// rows * cols: mean of deltaLogprob over t < T-1 (the cell value shown without a metric).
    std::vector<double> meanDeltaLogprob;
    /// rows * cols: 1 where this run computed the cell's values (an undefined cell counts as
    /// computed: there is nothing to compute). 0 for skipped cells and, in a partial sweep, for
    /// those not reached.
    std::vector<uint8_t> computed;
    bool complete = true; ///< false: stopped early (partialOnCancel); see computed
    /// attributionSweep: metric and effect hold the first-order estimates (metric = the changed
    /// run's metric + attribution), not exact runs.
    bool estimated = false;
    std::vector<double> attribution; ///< rows * cols: estimated metric change; NaN where undefined
    /// rows * cols: 1 where a first-order estimate is known to be poor: the cell's effect passes a
    /// saturated Grassmann gate (half or more of its channels below 0.02 or above 0.98, in the
    /// changed or the source run), where a large change can move the gate the gradient says is flat.
    std::vector<uint8_t> flagged;
};

/// The exact runs of --check K for one attribution sweep: the K cells with the largest |estimate|
/// and K others drawn at random (seeded), their exact metric change, and how well the estimate
/// ranks them.
struct AttributionCheck {
    std::vector<size_t> cells;    ///< sweep cell indices checked (top K first, then the random ones)
    std::vector<double> estimate; ///< estimated metric change of each
    std::vector<double> exact;    ///< exact metric change (patched run - changed run)
    double spearman = 0;          ///< rank correlation of estimate and exact over the checked cells
    double recallAtK = 0; ///< of the K checked cells with the largest |exact|, the share among the top-K estimates
};

/// The normalised effects of a sweep's defined cells from its metrics: effectDefined when it has a
/// metric, a corrupted prompt and effectCondition(clean, corrupt, minDifference) holds (else
/// effectNote says why); then effect = (metric - corrupt) /
/// (clean - corrupt) (NaN elsewhere: left as it is). The one copy of the formula (runPatchSweep,
/// a resumed sweep).
void patchEffects(PatchSweep& sweep);

/// Called with the fraction done; returning false cancels (runPatchSweep then throws
/// PatchCancelled).
using PatchProgress = std::function<bool(double)>;

struct PatchCancelled : std::exception {
    const char* what() const noexcept override { return "patching cancelled"; }
};

/// Checks a request against the model (lengths, ids, site for the model's kind, position) and
/// throws std::invalid_argument with a message for a person: the two prompts tokenize to
/// different lengths (both lengths and the first differing position), an id outside the
/// vocabulary, a site the model's kind has not, ...
void validatePatchRequest(const Model& model, const PatchRequest& request);

/// The whole sweep of request.site x request.mode. A patch at layer l starts from the cached
/// inputs of layer l of the run being changed; only positions >= the changed position are
/// recomputed (causality); cells sharing a start position run as one batch; a cell whose new
/// values equal the old ones bitwise is not recomputed.
PatchSweep runPatchSweep(const Model& model, const PatchRequest& request, const PatchProgress& progress = {});

/// Attribution patching (Nanda 2023; AtP, Kramar et al. 2024): every cell of the sweep of
/// request.site x request.mode estimated to first order, (value in the source run - value in the
/// changed run) . d metric / d value, with the gradient taken on the changed run (the corrupted
/// run when patching, the clean run when ablating; source: the clean run's value, 0, or the mean
/// over the positions of the changed run). One forward pass of each prompt and one backward pass
/// give every layer and position at once. Offsets: the gradient with respect to each offset's
/// normalised Plucker vectors; heads: the head's context slice. Needs an answer and a wrong piece;
/// zero ablation of an offset (dropping it from the mean) is not a value change and is refused.
PatchSweep attributionSweep(const Model& model, const PatchRequest& request);

/// attributionSweep of many requests (a pairs file): requests of the same length, metric
/// position, site, mode and part run together, up to 64 as the rows of one batched forward and
/// backward pass (rows are independent, so each row's gradient is its own). Results in the order
/// of the requests, each equal to attributionSweep of its request. progress as runPatchSweep's.
std::vector<PatchSweep> attributionSweeps(const Model& model, const std::vector<PatchRequest>& requests,
                                          const PatchProgress& progress = {});

/// Logits (V) at `position` of the run changed by one intervention (request gives the prompts
/// and, for patch mode, the source run). For a clicked cell's top-K.
std::vector<float> interventionLogits(const Model& model, const PatchRequest& request, const Intervention& cell,
                                      int64_t position);

/// Quick ablation on one prompt: log p(next token) with the intervention minus without, at every
/// position (T values, NaN at T-1). The intervention's mode must be zero or mean.
std::vector<double> ablationDeltaLogprob(const Model& model, const std::vector<int64_t>& ids,
                                         const Intervention& intervention);

/// Offsets of layer l and heads of the model, for labels and checks.
std::vector<int> layerOffsets(const Model& model, int layer);

} // namespace gwb::engine

namespace gwb::engine {

/// Path patching and direct effects (Wang et al. 2022; Goldowsky-Dill et al. 2023) on one
/// definition for both models. Components: Grassmann offset.l.D (offset D's normalised Plucker
/// vectors), mixer.l (g after the empty rule), gate.l (a), ffn.l (the FFN output); Transformer
/// head.l.H (the head's context slice, input of out_proj), mixer.l (attention after out_proj),
/// ffn.l. Norms and skip paths (residual additions, the gate's products) are not components: they
/// are always recomputed.
///
/// Direct effect of sender S (receiver "logits"): the corrupted prompt runs with S at its clean
/// value; what in S's own sublayer depends on S is recomputed from it (offset -> B_t -> g -> gate
/// and mix; mixer -> gate and mix; gate -> mix; head -> out_proj); every other component keeps its
/// value from the plain corrupted run (every other layer's offsets, mixer, gate and heads, and every
/// FFN, S's own layer's included). The metric of that run is S's direct effect.
/// Effect of S through block input h^M (receiver "resid.M", M > S's layer): in that run h^M is
/// recorded; the corrupted prompt then runs normally with only h^M replaced by it. Receivers at or
/// before S's layer are undefined (NaN).
struct PathRequest {
    std::vector<int64_t> clean, corrupt; ///< token ids, same length
    int64_t answer = -1, wrong = -1;     ///< the metric logit[answer] - logit[wrong]
    int64_t position = -1;               ///< metric position; -1: the last token
    /// Sender kinds to include ("offset", "mixer", "gate", "ffn", "head"); empty: every kind.
    std::vector<std::string> senders;
    int64_t senderPosition = -1;                  ///< >= 0: a sender takes its clean value at this position only
    double minDifference = kDefaultMinDifference; ///< for the normalised effect (effect_claims.h)
    bool logits = true;                           ///< receiver "logits"
    bool resid = true;                            ///< receivers resid.1 .. resid.N
};

struct PathResult {
    std::vector<std::string> senderLabels;   ///< "offset.5.2", "mixer.3", "head.2.1", ...
    std::vector<std::string> receiverLabels; ///< "logits", "resid.1", ...
    std::vector<int> senderLayers;
    int64_t metricPosition = -1;
    double cleanMetric = 0, corruptMetric = 0;
    bool effectDefined = false; ///< effectCondition(clean, corrupt, minDifference)
    double minDifference = kDefaultMinDifference;
    std::string effectNote;     ///< why the effect is not defined ("" when it is)
    std::vector<double> metric; ///< senders x receivers; NaN where undefined
    std::vector<double> effect; ///< (metric - corrupt) / (clean - corrupt); NaN where undefined
};

/// Throws std::invalid_argument for a request the model cannot run (lengths, ids, kinds).
PathResult pathPatching(const Model& model, const PathRequest& request, const PatchProgress& progress = {});

/// The logits (V) at the metric position of the run behind one cell of pathPatching's matrix
/// (sender and receiver labels as in PathResult), for a clicked cell's top next pieces. Throws
/// std::invalid_argument for a label the request does not have or an undefined cell.
std::vector<float> pathCellLogits(const Model& model, const PathRequest& request, const std::string& sender,
                                  const std::string& receiver);

/// Direct logit attribution of every write to the residual stream (gwb paths --linear), for the
/// pre-norm arrangement (NormPlacement::Pre), where the final state at the metric position m is a
/// sum: h^N_m = embed_m + sum over blocks of (mixer write + FFN write). With the final LayerNorm's
/// scale sigma frozen at the changed (corrupted) run's value the metric is linear in the writes:
/// logit[answer] - logit[wrong] = sum_k w_k . v + bias, v = P(gamma * (E[answer] - E[wrong])) / sigma
/// (P: subtracting the mean), bias = beta . (E[answer] - E[wrong]). Terms w_k at position m:
///   embed                 E[x_m] + P[m]
///   Grassmann block l     offset.l.D   the gate's share of offset D's read-out: (1 - a) * W_plu p_D / |W_m|
///                                      (a * ... for the geometry_only gate; p_D / (|W_m| s) when the
///                                      layer averages first, s = sqrt(||q||^2 + eps) of this token)
///                         mixer_bias.l (1 - a) * b_plu (a * b_plu), where g has its bias
///                         gate_skip.l  a * LN1(h) (paper gate: what the gate lets through)
///   Transformer block l   head.l.H     out_proj's columns of head H times its context row
///                         attn_bias.l  out_proj's bias
///   both                  ln_mix_bias.l  the mixer LayerNorm's beta (with its scale frozen too)
///                         ffn.l        the FFN output
/// Post-norm and the no-skip arrangements (post_mix, pre_mix) are refused: their residual stream
/// is not a sum of writes (std::invalid_argument with the reason).
struct LinearResult {
    std::vector<std::string> labels; ///< the terms, in order (embed, then block by block)
    std::vector<int> layers;         ///< each term's block (-1: embed)
    int64_t metricPosition = -1;
    double corruptMetric = 0, cleanMetric = 0;
    double bias = 0;                    ///< beta . (E[answer] - E[wrong])
    std::vector<double> corrupt;        ///< each term in the corrupted (changed) run; they sum to corruptMetric - bias
    std::vector<double> clean;          ///< each term's write in the clean run, read with the corrupted run's scales
    int64_t channels = 0;               ///< d (Grassmann)
    std::vector<double> channelCorrupt; ///< N x d: the offsets' terms of each block split by read-out channel
    std::vector<double> channelClean;   ///< N x d, the clean run's
};

/// Throws std::invalid_argument for a request the model cannot run, or a model that is not pre-norm.
LinearResult linearAttribution(const Model& model, const PathRequest& request);

} // namespace gwb::engine
