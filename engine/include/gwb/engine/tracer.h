#pragma once
// Running a model on one prompt and recording everything trace.h describes; gradient x input
// saliency. Std types only.

#include "gwb/engine/analysis.h"
#include "gwb/engine/model.h"
#include "gwb/engine/trace.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

struct TraceOptions {
    /// Keep H x T x T attention probabilities only up to this many tokens (above: use
    /// attentionRow(), which recomputes rows from q and k).
    int64_t denseAttentionLimit = 2048;
    bool keepLogits = false; ///< fill Trace::logits (T x V floats)
    int lensTopK = 5;        ///< K of the logit lens (0 = none now: logitLens() computes it later)
    /// Longest prompt traced: 0 = the model's max_len (the position table's size; larger values
    /// are clamped to it). Longer prompts keep their first maxTokens tokens and report the rest
    /// in Trace::droppedTokens.
    int64_t maxTokens = 0;
    bool keepWeights = true; ///< copy W_red, b_red, W_plu, b_plu into Grassmann layer traces
    /// Keep each Grassmann layer's g and every layer's mixerInput (T x d each). No analysis and no
    /// view reads them (the NPZ and Python do): the window leaves them out, two fifths of a long
    /// Grassmann trace's memory.
    bool keepMixerStates = true;
    /// Rows of T whose V logits are computed at once for the surprisal and the logit lens (0 = the
    /// default: 256, fewer when 256 x V floats would exceed 32 MiB, but at least 64). Only this many rows x V floats
    /// exist at a time unless keepLogits is set; the results do not depend on it.
    int64_t headChunkRows = 0;
};

/// Traces a text prompt (needs the model's tokenizer). Throws std::invalid_argument for an empty
/// prompt or invalid UTF-8, Cancelled when `cancel` becomes true or progress returns false.
TracePtr trace(const Model& model, const std::string& prompt, const TraceOptions& options = {},
               const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

/// Traces token ids directly (tokens get their piece text when the model has a tokenizer, spans -1).
TracePtr traceIds(const Model& model, const std::vector<int32_t>& ids, const TraceOptions& options = {},
                  const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

/// The logit lens of a trace made without one (TraceOptions::lensTopK = 0), from the block inputs
/// and final state it keeps: equal to the lens a trace with lensTopK = topK computes. `model` must
/// be the model that made the trace (its shape is checked). Throws std::invalid_argument for
/// another model's trace or topK < 1, Cancelled when `cancel` becomes true or progress returns
/// false. Progress counts N + 1 head passes.
LensPtr logitLens(const Model& model, const Trace& trace, int topK = 5, const ProgressFn& progress = {},
                  const std::atomic<bool>* cancel = nullptr);

/// Gradient x input saliency of log p(targetId | x_0..x_position) with respect to the embedding
/// output h0 = E[x] + P[t]: entry s = sum over d of (d log p / d h0[s][d]) * h0[s][d], for s in
/// [0, T) (zero for s > position by causality). Length T = ids.size() (<= max_len). With wrongId
/// >= 0 the objective is the contrast log p(target) - log p(wrong) = logit[target] - logit[wrong],
/// the metric of the causal tests.
std::vector<float> saliency(const Model& model, const std::vector<int32_t>& ids, int64_t position, int32_t targetId,
                            int32_t wrongId = -1);
/// The saliency of `trace` (its token ids, as traced by `model`) at token t for `target`: "" = the
/// actual next token x_{t+1} (refused at the last token: there is none), else one vocabulary
/// piece typed as the text encodes it, as the vocabulary spells it or as the strip shows it
/// (gwb patch's rule for answer pieces); "A - W" (a space each side of the minus) is the contrast
/// logit[A] - logit[W]. `targetPiece` (optional) gets the target as the tokenizer reads it
/// ("▁she - ▁he" for a contrast). Throws std::invalid_argument naming the problem.
std::vector<float> saliencyAt(const Model& model, const Trace& trace, int64_t t, const std::string& target,
                              std::string* targetPiece = nullptr);

} // namespace gwb::engine
