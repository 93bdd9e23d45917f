#pragma once
// Lenses beyond the logit lens, for either architecture: the tuned lens (Belrose et al. 2023,
// AlignmentResearch/tuned-lens) and the Jacobian lens (Gurnee et al. 2026; TransformerLens
// tools/analysis/jacobian_lens.py). Fitting, the files in the reference tools' own layouts, and
// the evaluation over held-out text. Std types only; LibTorch inside (engine/src/runs/lens_*.cpp).
//
// Residual states: s = 0 is the embedding (block 0's input), s = l + 1 is block l's output; s = N
// is the last block's output, which the model itself decodes (LN_final, tied head W_U).
//   logit lens     lens_s(h) = W_U LN_final(h)                        s = 0..N-1
//   tuned lens     lens_s(h) = W_U LN_final(h + A_s h + b_s)          s = 0..N-1 (A, b zero-initialised)
//   Jacobian lens  lens_s(h) = W_U LN_final(J_l h),  l = s - 1        s = 1..N-1
//     J_l = E_prompt[ (1/|V|) sum_{t in V} sum_{t' in V, t' >= t} d h_final,t' / d h_l,t ],
//     V = skip_first..T-2, a plain average (no optimiser), prompts weighted equally.

#include "gwb/engine/array.h"
#include "gwb/engine/lens_readout.h"
#include "gwb/engine/model.h"
#include "gwb/engine/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

enum class LensKind { Logit, Tuned, Jacobian };
/// "logit", "tuned", "jacobian".
std::string lensKindName(LensKind kind);
/// The kind of a name; throws std::invalid_argument naming the choices.
LensKind lensKindFromName(const std::string& name);

/// What to fit, on which text, with which budget. Defaults: the Jacobian lens as the reference
/// fits it (windows of 128 tokens, skip 16, 8 output dimensions per backward pass, 100 prompts);
/// the tuned lens with the reference's optimiser (SGD, Nesterov momentum 0.9, lr 0.1 in torch
/// units, weight decay 1e-3, linear decay to 0, gradient norm clipped at 1) and a budget for the
/// bundled models' size (100 steps of 2,048 tokens instead of 250 of 2^18).
struct LensFitRequest {
    LensKind kind = LensKind::Jacobian;
    std::vector<std::string> files;              ///< UTF-8 text files, each tokenized whole
    std::vector<std::vector<int32_t>> promptIds; ///< or token ids directly (used when files is empty)
    int64_t window = 128;     ///< tokens per prompt; a file is cut into windows of this length (stride = window)
    int64_t maxPrompts = 100; ///< the first N windows of all files (0 = all)
    int shardIndex = 0;       ///< Jacobian lens: this run covers windows g with g % shardCount == shardIndex
    int shardCount = 1;
    int64_t skipFirst = 16;       ///< Jacobian lens: leading positions left out of V
    int64_t dimBatch = 8;         ///< Jacobian lens: output dimensions per backward pass
    int64_t steps = 100;          ///< tuned lens: optimiser steps
    int64_t tokensPerStep = 2048; ///< tuned lens: tokens per step (whole windows, at least one)
    double lr = 0.1;
    double momentum = 0.9;
    double weightDecay = 1e-3;
    double clip = 1.0;
    uint64_t seed = 0; ///< tuned lens: which windows each step reads
    /// Throws std::invalid_argument with one sentence per bad value (every front end the same):
    /// lensFitOptions' ranges, then what spans two options (the shard, skip_first within window).
    void validate() const;
};

/// The fit's options, declared once (gwb/engine/options.h), in the order `gwb lens fit --help` lists
/// them: its flags, gwb.lens.fit's keywords and gwb.lens.DEFAULTS read this table.
const OptionTable<LensFitRequest>& lensFitOptions();

/// A fitted lens (or the start of one: an interrupted fit keeps what it has, complete = false).
struct Lens {
    LensKind kind = LensKind::Jacobian;
    int64_t dModel = 0;
    int64_t nLayers = 0;
    /// Tuned: residual states 0..N-1 (block inputs); Jacobian: source layers 0..N-2 (block outputs).
    std::vector<int> layers;
    std::vector<FloatArray> matrix; ///< per entry of layers, d x d: A_s (tuned) or J_l (Jacobian)
    std::vector<FloatArray> bias;   ///< tuned: b_s (d); empty for the Jacobian lens
    // Jacobian bookkeeping: the windows averaged in (global indices), for merges and resumes.
    int64_t nPrompts = 0;
    std::vector<int64_t> prompts;
    int64_t promptsPlanned = 0;
    // Tuned bookkeeping: steps done, and the momentum buffers an interrupted fit resumes from.
    int64_t stepsDone = 0;
    std::vector<FloatArray> momentumMatrix, momentumBias;
    bool complete = true;
    LensFitRequest request; ///< the options it was fitted with (files, window, budget, shard)
    std::string modelName;  ///< the model it was fitted on (display name)
    std::string modelHash;  ///< modelWeightsHash of that model
    double seconds = 0;     ///< fitting time (this run, not earlier ones)
};

struct LensProgress {
    int64_t done = 0; ///< prompts (Jacobian) or steps (tuned) finished
    int64_t total = 0;
    double seconds = 0;
    double loss = 0; ///< tuned: the last step's summed KL over the layers
};
/// Returns false to cancel.
using LensProgressFn = std::function<bool(const LensProgress&)>;

/// Fits a lens. With `resume` (an incomplete lens of the same request), carries on from it: the
/// Jacobian lens skips the windows it has and averages in the rest; the tuned lens continues at
/// its step with its momentum, giving the same lens as an uninterrupted fit. Cancelling (flag or
/// progress) stops after the current prompt or step and returns complete = false. Throws
/// std::invalid_argument for bad options, a model without a tokenizer, or no usable prompt.
Lens fitLens(const Model& model, const LensFitRequest& request, const LensProgressFn& progress = {},
             const std::atomic<bool>* cancel = nullptr, const Lens* resume = nullptr,
             const std::function<void(const std::string&)>& warn = {});

/// Shards of one Jacobian fit (same model, request apart from the shard, no window twice) into
/// one lens: the prompt-weighted mean of their matrices.
Lens mergeLenses(const std::vector<Lens>& shards);

/// Writes a lens into `folder` (made if missing), each file atomically:
///   Jacobian: jacobian_lens.pt = torch.save of {"J": {layer: d x d float32}, "n_prompts",
///             "source_layers", "d_model", "metadata"} (TransformerLens's JacobianLens.load);
///   tuned:    config.json + params.pt (tuned-lens's TunedLens.from_unembed_and_pretrained; params
///             = {"<s>.weight": A_s, "<s>.bias": b_s}), and momentum.pt while incomplete;
///   both:     gwb_lens.json (kind, model, options, what was covered, complete).
void writeLens(const Lens& lens, const std::string& folder);
/// Reads a folder written by writeLens. Throws std::runtime_error naming the folder.
Lens readLens(const std::string& folder);
/// Throws std::invalid_argument when `folder` cannot take a lens (a file there, or not writable):
/// checked before a long fit.
void checkLensFolder(const std::string& folder);

/// Lens logits of residual state s for token ids (T <= max_len): T x V. kind Logit needs no lens.
FloatArray lensLogits(const Model& model, const std::vector<int32_t>& ids, int state, const Lens* lens);

/// The lens read out on token ids (T <= max_len) at every residual state s = 0..N, one forward pass
/// (LensReadout; the logit lens when `lens` is null). `folder` is recorded as given. Throws
/// std::invalid_argument when the lens does not fit the model (d_model, layers).
LensReadout lensReadout(const Model& model, const std::vector<int32_t>& ids, const Lens* lens,
                        const std::string& folder = {});

struct LensEvalRequest {
    std::vector<std::string> files;              ///< held-out UTF-8 text files
    std::vector<std::vector<int32_t>> promptIds; ///< or token ids (used when files is empty)
    int64_t window = 128;
    int64_t maxPrompts = 0; ///< the first N windows (0 = all)
};

/// The evaluation's options, declared once: `gwb lens eval`'s flags and gwb.lens.eval's keywords.
const OptionTable<LensEvalRequest>& lensEvalOptions();

// LensEvalResult: gwb/engine/lens_readout.h (std only, for the views).

LensEvalResult evaluateLenses(const Model& model, const std::vector<Lens>& lenses,
                              const std::vector<std::string>& folders, const LensEvalRequest& request,
                              const LensProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

/// NPZ of the result: kl, ce, top1, rank (lenses x N float64), final_ce, and meta.json (lenses,
/// their estimators and folders, model, layer numbering). Written atomically.
void writeLensEval(const LensEvalResult& result, const std::string& path);
LensEvalResult readLensEval(const std::string& path);

} // namespace gwb::engine
