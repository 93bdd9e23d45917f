#pragma once
// The two language models of model-spec.md as torch::nn modules (engine-internal).
// Parameter names match parameterSpecs() in config_io.h; they are the .gwb tensor names.

#include "model/forward_capture.h"
#include "gwb/engine/config.h"
#include "kernels/packed_weight.h"

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace gwb::engine {

/// y = x W^T + b, as torch::nn::Linear. With initialize it draws exactly what torch::nn::Linear
/// draws (kaiming_uniform_(a = sqrt 5), then the bias), so a seed gives the same model as before;
/// without, the parameters are left uninitialized (loading overwrites every one of them).
class DenseImpl : public torch::nn::Module {
public:
    DenseImpl(int64_t in, int64_t out, bool initialize);
    torch::Tensor forward(const torch::Tensor& x);
    torch::Tensor weight, bias;

private:
    detail::PackedWeight m_packed; ///< the weight as packedGemm reads it (inference on the CPU)
};
TORCH_MODULE(Dense);

/// The positions [start, T) of a sequence run through a block, with what the block needs of the
/// earlier positions (batch 1; broadcast over the batch): their reduced vectors z (Grassmann) or
/// keys and values (attention), 1 x T' x r / 1 x H x T' x d_head with T' >= start. start = 0: the
/// whole sequence.
struct SuffixContext {
    int64_t start = 0;
    torch::Tensor z;
    torch::Tensor k, v;
};

/// A change made inside a block for causal tests (gwb/engine/patching.h), on B x S rows:
/// site tensor = where(mask, value, site tensor). Shapes (broadcastable): mixer, gate, ffn: mask
/// B x S x 1, value B x S x d; head: B x S x H x 1 and B x S x H x d_head (the context rows
/// before out_proj); offset: mask B x S x |W| x 1 and value B x S x |W| x C (normalised Plucker
/// vectors), keep B x S x |W| x 1 (0 drops the offset from the average).
struct BlockEdit {
    enum class Site { Mixer, Gate, Ffn, Head, Offset, None };
    Site site = Site::Mixer;
    torch::Tensor mask, value, keep;
    /// Attribution: site tensor = site tensor + value at every row (mask and keep unused); a zero
    /// value that requires a gradient makes d metric / d site reachable with every later site
    /// still computed from it.
    bool additive = false;
    /// Path patching: components held at these values whatever their inputs (B x S x d each),
    /// applied after the edit above: the mixer's output (Grassmann g, attention after out_proj),
    /// the Grassmann gate, the FFN output. Undefined: computed as usual.
    torch::Tensor freezeMixer, freezeGate, freezeFfn;
    torch::Tensor apply(const torch::Tensor& site) const {
        return additive ? site + value : torch::where(mask, value, site);
    }
};

/// Site values of a block's run on B x S rows (the sources of patches and means, and the context
/// of later suffix runs). plucker (B x S x |W| x C, zero where t < D) only when asked for.
struct BlockRecord {
    torch::Tensor h, mixer, gate, ffn, ffnIn, heads, z, k, v, plucker;
    bool wantPlucker = false;
};

/// Common interface of a block: input B x T x d -> output B x T x d.
class BlockImpl : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) = 0;
    /// Causal tests: the block on rows [ctx.start, T) (h: B x S x d), with an optional edit and
    /// record. Without an edit, equal to forward() on those rows.
    virtual torch::Tensor run(const torch::Tensor& h, const SuffixContext& ctx, const BlockEdit* edit,
                              BlockRecord* record) = 0;
};

/// Position-wise feed-forward: Linear(d, d_ff) -> GELU (erf, or tanh for GPT-2's) -> Dropout -> Linear(d_ff, d).
struct BlockEdit;
struct BlockRecord;
struct FeedForward {
    Dense in{nullptr}, out{nullptr};
    torch::nn::Dropout drop{nullptr};
    bool tanhGelu = false; ///< ModelConfig::activation is GeluTanh
    torch::Tensor operator()(const torch::Tensor& x);
    /// The FFN output with a causal test's ffn edit applied and/or kept in the record.
    torch::Tensor operator()(const torch::Tensor& x, const BlockEdit* edit, BlockRecord* record);
};

namespace detail {
/// fn(t0, n) over blocks of at most 1,024 tokens (dim 1 of a B x T x ... x) joined along dim 1,
/// when no gradient is recorded through x and T > 1,024; else fn(0, -1), meaning all of x. For the position-wise parts
/// of a block: a long prompt's wide intermediates (T x C(r,2) Plucker coordinates, T x d_ff hidden units; 52 and 42 MB
/// at 4,096 tokens of GrassLM-100M's shape) then stay small enough for the allocator to reuse instead of mapping fresh
/// pages in every block. Each row is computed as in one call.
torch::Tensor overTokenBlocks(const torch::Tensor& x, const std::function<torch::Tensor(int64_t, int64_t)>& fn);
/// LayerNorm over d_model with the config's epsilon.
torch::nn::LayerNorm makeNorm(const ModelConfig& c);
/// The block's FFN, registered in `owner` as ffn_in / ffn_out.
FeedForward makeFfn(torch::nn::Module& owner, const ModelConfig& c, const torch::nn::Dropout& drop, bool init);
} // namespace detail

/// Incremental-decoding state of one Grassmann block: the last max(W) reduced vectors (ring buffer).
struct GrassmannState {
    int64_t position = 0; ///< index of the next token
    int64_t capacity = 0; ///< max(W_l)
    torch::Tensor z;      ///< capacity x r ring buffer: row t % capacity holds z_t (rows of tokens seen)
};

/// Incremental-decoding state of one attention block: keys and values of the tokens so far.
struct AttentionState {
    int64_t length = 0;   ///< tokens in the cache
    torch::Tensor keys;   ///< 1 x H x max_len x d_head (rows < length valid)
    torch::Tensor values; ///< 1 x H x max_len x d_head
};

/// Causal Grassmann mixing block (model-spec steps 1-9), vectorized over T.
class GrassmannBlockImpl : public BlockImpl {
public:
    GrassmannBlockImpl(const ModelConfig& config, std::vector<int> offsets, bool initialize = true);
    torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) override;
    torch::Tensor run(const torch::Tensor& h, const SuffixContext& ctx, const BlockEdit* edit,
                      BlockRecord* record) override;
    /// Normalised Plucker vectors of every offset for rows [start, T) of z (B x T x r): B x S x |W| x C,
    /// zero where t < D.
    torch::Tensor pluckerPerOffset(const torch::Tensor& z, int64_t start);
    /// Every offset's past vector for rows [start, T) of z (B x T x r) at once: z_{t-D} as
    /// B x S x |W| x r (row 0 where t < D) and the validity t >= D as 1 x S x |W| x 1 (float). Under
    /// autograd, one gather and one product over all offsets replace a dozen small operations per
    /// offset (and their backward nodes).
    std::pair<torch::Tensor, torch::Tensor> pastStack(const torch::Tensor& z, int64_t start);
    /// pluckerPerOffset from pastStack's result (zS: the rows [start, T) of z).
    torch::Tensor pluckerStacked(const torch::Tensor& zS, const torch::Tensor& past, const torch::Tensor& valid);

    /// Whether each offset's plane is normalised before the aggregation (normalize_then_mean, per_offset_mlp).
    bool unitPlanes() const {
        return m_config.aggregation == Aggregation::NormalizeThenMean ||
               m_config.aggregation == Aggregation::PerOffsetMlp;
    }
    /// Mixer steps 1-7 on x (B x T x d): returns g and the gate a; z into *zOut when non-null.
    /// Exact one-plane form: B_t = z_t ^ y_t with y_t = mean_D z_{t-D} / max(||z_t ^ z_{t-D}||, eps).
    std::pair<torch::Tensor, torch::Tensor> geometry(const torch::Tensor& x, torch::Tensor* zOut);
    /// The same quantities by the literal per-offset formula (one Plucker vector per offset); test oracle.
    std::pair<torch::Tensor, torch::Tensor> geometryPerOffset(const torch::Tensor& x);
    /// Plucker coordinates of a ^ b over the last dimension (..., r) -> (..., C(r,2)), pairs i < j.
    torch::Tensor wedge(const torch::Tensor& a, const torch::Tensor& b);
    /// z_{t-D} / max(||z_t ^ z_{t-D}||, eps) for matching rows of zCur and zPast (norms squared given, ... x 1).
    torch::Tensor pastDirection(const torch::Tensor& zCur, const torch::Tensor& zPast, const torch::Tensor& curNormSq,
                                const torch::Tensor& pastNormSq) const;
    /// The averaged direction y -> the one B_t = z ^ y is made from: y itself (normalise then mean),
    /// or y / sqrt(||z ^ y||^2 + eps) (mean then normalise; pastDirection then returned raw parts).
    torch::Tensor finishDirection(const torch::Tensor& z, const torch::Tensor& y) const;
    /// pastDirection of z (1 x r, CPU float) against rows `rows` of the ring buffer (capacity x r),
    /// averaged over the rows: y_t of one generated token, computed in place of the tensor form.
    torch::Tensor pastDirectionMean(const torch::Tensor& z, const torch::Tensor& ring,
                                    const std::vector<int64_t>& rows) const;
    /// g from z and the averaged direction y (both ... x r); valid (... x 1 bool) marks tokens with >= 1 offset.
    torch::Tensor featureFromDirection(const torch::Tensor& z, const torch::Tensor& y, const torch::Tensor& valid);
    /// Mixer output given x, g, a (model-spec step 8 and the block arrangement); used by forward and generation.
    /// With an ffn edit or a record, the FFN output is changed or kept.
    torch::Tensor finish(const torch::Tensor& h, const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& a,
                         const BlockEdit* edit = nullptr, BlockRecord* record = nullptr);
    const std::vector<int>& offsets() const { return m_offsets; }
    /// One new token h (1 x 1 x d) at position state.position -> block output (1 x 1 x d); O(|W| r + d r^2).
    torch::Tensor step(const torch::Tensor& h, GrassmannState& state);
    GrassmannState initialState() const;
    /// Whole prompt h (1 x T x d, state fresh from initialState()) -> block output, state filled.
    torch::Tensor prefill(const torch::Tensor& h, GrassmannState& state);

    /// Tests only: forward() uses geometryPerOffset() instead of the one-plane geometry().
    bool perOffsetOracle = false;

    torch::nn::LayerNorm ln1{nullptr}, lnMix{nullptr}, ln2{nullptr};
    /// wPlu is null for aggregation per_offset_mlp, whose planes go through geoIn -> GELU -> geoOut.
    Dense wRed{nullptr}, wPlu{nullptr}, wGate{nullptr}, geoIn{nullptr}, geoOut{nullptr};
    /// Mixer stages (config.stages): LN of z, LN of g, the output projection; null when off.
    torch::nn::LayerNorm lnRed{nullptr}, lnGeo{nullptr};
    Dense wOut{nullptr};

    /// z = W_red x, then LN_red when the reduction has a norm.
    torch::Tensor reduce(const torch::Tensor& x);
    /// a = sigmoid(W_gate [x; g]), or sigmoid(W_gate x) when the gate sees the input only.
    torch::Tensor gateOf(const torch::Tensor& x, const torch::Tensor& g);
    /// g from the projected plane (W_plu B + b): the empty rule (valid: ... x 1 bool), then LN_geo.
    torch::Tensor feature(const torch::Tensor& projected, const torch::Tensor& valid);
    /// The plane of a current and a past vector as the model orients it: cur ^ past, or past ^ cur
    /// (stage wedge_order past_current).
    torch::Tensor plane(const torch::Tensor& cur, const torch::Tensor& past);
    /// Aggregation per_offset_mlp: g from the normalised planes P (B x S x |W| x C) weighted by w
    /// ((1|B) x S x |W| x 1, 0 drops an offset): W_out mean_D GELU(W_in p^(D) + b_in) + b_out (the
    /// mean of the MLP outputs, with the last linear map taken out of the mean), then feature().
    torch::Tensor mlpFeature(const torch::Tensor& P, const torch::Tensor& w);
    /// Normalised planes of one current vector z (1 x r) against the past rows `past` (n x r): n x C.
    torch::Tensor normalizedPlanes(const torch::Tensor& z, const torch::Tensor& past);

private:
    ModelConfig m_config;
    std::vector<int> m_offsets;
    FeedForward m_ffn;
    torch::nn::Dropout m_drop{nullptr};
    void moveIndices(const torch::Device& device);
    /// 1 x T x 1 float: number of valid offsets |W_t| of every position.
    torch::Tensor offsetCounts(int64_t T, const torch::Device& device) const;
    torch::Tensor m_idxI, m_idxJ; ///< C(r,2) pair indices i < j in lexicographic order (int64, model's device)
};

/// Causal multi-head self-attention block of the baseline.
class AttentionBlockImpl : public BlockImpl {
public:
    explicit AttentionBlockImpl(const ModelConfig& config, bool initialize = true);
    torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) override;
    torch::Tensor run(const torch::Tensor& h, const SuffixContext& ctx, const BlockEdit* edit,
                      BlockRecord* record) override;
    /// One new token h (1 x 1 x d) appended to the KV cache -> block output (1 x 1 x d).
    torch::Tensor step(const torch::Tensor& h, AttentionState& state);
    /// Whole prompt h (1 x T x d) -> block output, with the KV cache filled.
    torch::Tensor prefill(const torch::Tensor& h, AttentionState& state);

    torch::nn::LayerNorm ln1{nullptr}, lnMix{nullptr}, ln2{nullptr};
    Dense qkv{nullptr}, outProj{nullptr};

private:
    torch::Tensor attend(const torch::Tensor& x, BlockCapture* capture, AttentionState* cache = nullptr);
    /// Residual / norm / FFN arrangement around the attention output a (FFN edit and record as
    /// in the Grassmann block).
    torch::Tensor finish(const torch::Tensor& h, torch::Tensor a, const BlockEdit* edit = nullptr,
                         BlockRecord* record = nullptr);
    ModelConfig m_config;
    FeedForward m_ffn;
    torch::nn::Dropout m_drop{nullptr};
};

/// Embeddings + N blocks + final LayerNorm + head tied to the token table.
class LanguageModelImpl : public torch::nn::Module {
public:
    /// initialize = false leaves the parameters uninitialized (and skips the token table's random
    /// fill): for loading, where every parameter is overwritten at once.
    explicit LanguageModelImpl(const ModelConfig& config, bool initialize = true);

    /// ids: B x T int64 (T <= maxLen) -> logits B x T x V.
    torch::Tensor forward(const torch::Tensor& ids, ForwardCapture* capture = nullptr);
    /// h0 = E[x] + P[t] (before dropout): B x T x d.
    torch::Tensor embed(const torch::Tensor& ids);
    /// From the embedding output (dropout applied here) to logits.
    torch::Tensor forwardFromEmbedding(const torch::Tensor& h0, ForwardCapture* capture = nullptr);
    /// From the embedding output (dropout applied here) to the last block's output, without the head.
    torch::Tensor hiddenFromEmbedding(const torch::Tensor& h0) { return blocksFrom(h0, nullptr); }
    /// ids -> output of the last block (B x T x d, before the final LayerNorm), without the T x V head:
    /// tracing applies head() to a few rows at a time.
    torch::Tensor forwardHidden(const torch::Tensor& ids, ForwardCapture* capture = nullptr);
    /// Final LayerNorm + tied head on any state B x T x d (logit lens).
    torch::Tensor head(const torch::Tensor& h);
    /// Mean next-token cross-entropy of head(h) against targets (B x T ids), i.e.
    /// nll_loss(log_softmax(head(h))), without the B T x V logits (detail::linearCrossEntropy).
    torch::Tensor nextTokenLoss(const torch::Tensor& h, const torch::Tensor& targets);

    /// N(0, 0.02) weights, zero biases, LayerNorm 1/0.
    void resetParameters();

    const ModelConfig& config() const { return m_config; }
    const std::vector<std::shared_ptr<BlockImpl>>& blocks() const { return m_blocks; }

    torch::nn::Embedding tokEmbed{nullptr}, posEmbed{nullptr};
    /// The token table packed for the tied head's inference products (head(), the tracer's chunks).
    detail::PackedWeight headPacked;
    torch::nn::LayerNorm lnFinal{nullptr};

private:
    /// Dropout and the N blocks from h0; returns the last block's output.
    torch::Tensor blocksFrom(const torch::Tensor& h0, ForwardCapture* capture);
    ModelConfig m_config;
    torch::nn::Dropout m_drop{nullptr};
    torch::nn::ModuleList m_blockList{nullptr};
    std::vector<std::shared_ptr<BlockImpl>> m_blocks;
};

} // namespace gwb::engine
