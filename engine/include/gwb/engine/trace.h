#pragma once
// What one forward pass of one model on one prompt records (workbench-spec.md section 2).
// Immutable once built: the engine fills it, analyses and views only read it
// (pass it around as TracePtr). Plain std types only: views include this header.

#include "gwb/engine/array.h"
#include "gwb/engine/config.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

/// One token of the prompt.
struct TraceToken {
    int32_t id = 0;     ///< vocabulary id
    std::string text;   ///< display text of the piece (UTF-8; byte pieces shown as <0xNN>)
    int64_t begin = -1; ///< byte offset of the piece's first byte in Trace::prompt, -1 if unknown
    int64_t end = -1;   ///< one past its last byte, -1 if unknown
};

/// Recorded inside a causal Grassmann mixing layer (model-spec steps 1-8).
struct GrassmannLayerTrace {
    std::vector<int> offsets; ///< this layer's offset set W_l, ascending
    FloatArray z;    ///< T x r   reduced vectors z_t = W_red h_t + b_red (h = the mixer's input; then LN_red with mixer
                     ///< stage reduction_norm)
    FloatArray g;    ///< T x d   geometric feature g_t (empty when traced without TraceOptions::keepMixerStates)
    FloatArray gate; ///< T x d   gate a_t in (0,1)
    FloatArray wRed; ///< r x d   W_red (weights, copied for lifting and reading subspaces)
    FloatArray bRed; ///< r       b_red
    FloatArray wPlu; ///< d x C(r,2)  W_plu, columns in lexicographic pair order (empty for per_offset_mlp)
    FloatArray bPlu; ///< d       b_plu
    /// Aggregation per_offset_mlp only (else empty): the MLP every offset's normalised plane goes
    /// through, g = mean_D (W_geo_out GELU(W_geo_in p^(D) + b_in) + b_out).
    FloatArray wGeoIn;  ///< d_geom x C(r,2)
    FloatArray bGeoIn;  ///< d_geom
    FloatArray wGeoOut; ///< d x d_geom
    FloatArray bGeoOut; ///< d
};

/// Recorded inside a causal self-attention layer of the baseline.
struct AttentionLayerTrace {
    int64_t nHeads = 0;
    FloatArray q; ///< H x T x d_head  queries (before scaling)
    FloatArray k; ///< H x T x d_head  keys
    /// H x T x T attention probabilities (row t = query t, zero above the diagonal).
    /// Empty when T exceeds TraceOptions::denseAttentionLimit: use attentionRow() instead.
    FloatArray attn;
};

/// One block of either model.
struct LayerTrace {
    FloatArray h; ///< T x d  the block's input state h^l (residual stream; for pre-norm before LN1)
    /// T x d  the input the mixer actually saw: equals h for post-norm, LN1(h) for pre-norm (empty
    /// when traced without TraceOptions::keepMixerStates).
    FloatArray mixerInput;
    std::optional<GrassmannLayerTrace> grassmann; ///< set for Grassmann blocks
    std::optional<AttentionLayerTrace> attention; ///< set for Transformer blocks
};

/// Logit lens of a trace: each block's input state (index l < N) and the final state (index N)
/// through the final LayerNorm and the tied head. The T x V logits are never kept.
struct LogitLens {
    IntArray topIds;        ///< (N+1) x T x K  ids of the top-K next tokens
    FloatArray topLogProbs; ///< (N+1) x T x K  their log-probabilities (nats)
    IntArray nextRank;      ///< (N+1) x T  rank (0 = top-1) of the actual next token x_{t+1}; -1 at t = T-1
    FloatArray nextLogProb; ///< (N+1) x T  log-prob (nats) of the actual next token; NaN at t = T-1
    /// Display text of every vocabulary id in topIds (filled when the model has a tokenizer).
    std::map<int32_t, std::string> pieces;
    int64_t topK() const { return topIds.rank() == 3 ? topIds.dim(2) : 0; }
};
using LensPtr = std::shared_ptr<const LogitLens>;

struct Trace {
    std::string modelPath;          ///< file the model came from ("" for an in-memory model)
    std::string modelName;          ///< ModelConfig::name or the file's stem
    ModelConfig config;             ///< the traced model's configuration
    std::string device;             ///< "cpu", "cuda:0", ...
    std::string prompt;             ///< the exact UTF-8 text traced ("" when traced from ids)
    std::vector<TraceToken> tokens; ///< T tokens actually run through the model
    int64_t droppedTokens = 0;      ///< tokens cut off the end because T > maxLen (visible notice)
    std::vector<float> surprisal;   ///< T  -log p(x_t | x_<t) in nats; NaN at t = 0
    std::vector<LayerTrace> layers; ///< N blocks in order
    FloatArray finalH;              ///< T x d  output of the last block (before the final LayerNorm)
    FloatArray logits;              ///< T x V  only when TraceOptions::keepLogits
    /// The logit lens when it was computed with the trace (TraceOptions::lensTopK > 0); null
    /// otherwise: logitLens() (tracer.h) computes it later from the kept states, with equal values.
    std::shared_ptr<const LogitLens> lens;

    int64_t length() const { return static_cast<int64_t>(tokens.size()); }
    bool isGrassmann() const { return config.kind == ModelKind::Grassmann; }
};

using TracePtr = std::shared_ptr<const Trace>;

/// Attention row of query t in head `head` of an attention layer: softmax(q_t . k_j / sqrt(d_head))
/// over j <= t, length t+1. Reads the dense matrix when kept, else recomputes from q and k.
std::vector<float> attentionRow(const AttentionLayerTrace& layer, int64_t head, int64_t t);

} // namespace gwb::engine
