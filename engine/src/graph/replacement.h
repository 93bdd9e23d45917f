#pragma once
// The local replacement of a model on one prompt (engine-internal; Torch types): each FFN replaced
// by its transcoder plus an error term, and everything that is not linear in the sources frozen at
// the prompt: LayerNorm denominators, Grassmann gates and Plucker normalisers, attention patterns.
// The Plucker product z_t ^ z_{t-D} is bilinear; it is split evenly between its two factors,
// (1/2)(z_t ^ zbar_{t-D} + zbar_t ^ z_{t-D}) with zbar the prompt's reduced vectors, which equals
// z_t ^ z_{t-D} at the prompt and is linear (docs/attribution-graphs.md). The replacement is then an
// affine function of its sources: the embeddings E[x_t] + P[t], every block's active transcoder
// features and its error vectors. Construction runs the prompt once ("record") and keeps what is
// frozen; run() replays the affine map on any sources, batched, under autograd.

#include "gwb/engine/features.h"
#include "gwb/engine/model.h"

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace gwb::engine::graph {

/// y = x W^T + b (b may be undefined).
struct Lin {
    torch::Tensor w, b;
    bool defined() const { return w.defined(); }
    torch::Tensor operator()(const torch::Tensor& x) const;
};

/// A LayerNorm's affine parameters (undefined for one without).
struct Norm {
    torch::Tensor w, b;
    double eps = 1e-5;
    bool on = false;
};

struct BlockParams {
    Norm ln1, lnRed, lnGeo, lnMix, ln2;
    Lin red, plu, gate, out; ///< Grassmann mixer
    Lin qkv, proj;           ///< attention
    Lin ffnIn, ffnOut;
    bool tanhGelu = false;
    std::vector<int> offsets;
    // The layer's transcoder: pre = x W_enc + b_enc, y^ = a W_dec + b_dec.
    torch::Tensor wEnc, bEnc, wDec, bDec;
    std::string architecture;
    int64_t k = 0;
};

/// What the prompt fixes in one block.
struct Frozen {
    torch::Tensor sigma1, sigmaRed, sigmaGeo, sigmaMix, sigma2; ///< 1 x T x 1 LayerNorm denominators
    torch::Tensor zBar;                                         ///< 1 x T x r the prompt's reduced vectors
    torch::Tensor yBar;                ///< 1 x T x r their weighted past means y_t = sum_D s_{t,D} zbar_{t-D}
    torch::Tensor offsetScale;         ///< 1 x T x |W| weight of z_{t-D} in y_t (0 where t < D)
    torch::Tensor aggSigma;            ///< 1 x T x 1 (aggregation mean_then_normalize)
    torch::Tensor valid;               ///< 1 x T x 1 tokens with at least one offset
    torch::Tensor gate;                ///< 1 x T x d
    torch::Tensor pattern;             ///< 1 x H x T x T attention probabilities
    torch::Tensor actPos, actFeat;     ///< n: the active features' positions and indices (int64)
    torch::Tensor actValue;            ///< n: their activations
    torch::Tensor error;               ///< 1 x T x d: FFN output minus the transcoder's
    std::vector<int64_t> activeBefore; ///< [t]: active features at positions < t (the list is position-major)
    int64_t slots = 0;                 ///< the most features active at one position
    torch::Tensor slotOf;              ///< n: active feature i's slot, position * slots + j
    torch::Tensor slotDec;             ///< T x slots x d: the decoder rows in each slot (0-activation slots: any row)
    /// W_plu (z_t ^ ybar_t) = mz_t z_t and W_plu (zbar_t ^ y_t) = my_t y_t: the split Plucker product
    /// folded into the projection, T x d x r each (undefined for long prompts, where they would not fit).
    torch::Tensor mz, my;
    std::vector<torch::Tensor> mzOffset; ///< per offset: mz with ybar's term of that offset alone (sum = mz)
};

/// The sources' values, each with a batch dimension B (1 for the prompt's own).
struct Sources {
    torch::Tensor emb;              ///< B x T x d
    std::vector<torch::Tensor> act; ///< per block: B x n_l
    std::vector<torch::Tensor> err; ///< per block: B x T x d
};

/// Per-unit routing at one block (loadings): mask B x (1 + units), column 0 the skip route (the
/// residual and the gate's a * x term), then the offsets (Grassmann) or heads (attention).
struct Route {
    int layer = -1;
    torch::Tensor mask;
};

class Replacement {
public:
    /// Records the prompt. Throws std::invalid_argument for a mixer variant it does not cover.
    Replacement(const Model& model, const TranscoderSet& transcoders, const std::vector<int32_t>& ids,
                torch::ScalarType dtype);

    int layers = 0;
    int64_t T = 0, d = 0;
    bool grassmann = true;
    torch::TensorOptions options;
    Sources base;                      ///< the prompt's sources (B = 1)
    std::vector<int64_t> featureStart; ///< block l's features start here in the list of every active feature
    int64_t activeCount = 0;
    torch::Tensor modelLogits;       ///< V: the model's own logits at the last position (float64, CPU)
    torch::Tensor replacementLogits; ///< V: the recorded replacement's (float64, CPU)
    torch::Tensor unembed;           ///< V x d: the tied head
    torch::Tensor lastNormed;        ///< 1 x d: the recorded replacement's final-normed last position

    const Frozen& frozen(int layer) const { return m_frozen[static_cast<size_t>(layer)]; }
    const BlockParams& params(int layer) const { return m_params[static_cast<size_t>(layer)]; }
    /// Units of block `layer`'s mixer: its offsets or heads.
    int units(int layer) const;
    /// Runs blocks [0, upTo) on `sources`; ffnIn (resized to `layers`) gets each block's FFN input
    /// (B x T' x d). Returns the residual stream after the last block run. The sources may cover
    /// the first T' <= T positions only (a causal model's positions < T' do not read later ones):
    /// emb and err B x T' x d, act B x activeBefore[T'].
    /// mixOut (resized to `layers`), when given, gets each block's mixer output (B x T' x d, before
    /// the residual is added), as part of the autograd graph.
    torch::Tensor run(const Sources& sources, int upTo, std::vector<torch::Tensor>* ffnIn = nullptr,
                      const Route* route = nullptr, std::vector<torch::Tensor>* mixOut = nullptr);
    /// Runs blocks [0, m) and then block m's mixer alone, routed: the output of its units that
    /// route.mask keeps (B x T' x d). What the rest of the model does with a mixer's output does not
    /// depend on the route, so a loading is this output's gradient against the unrouted pass's.
    torch::Tensor runToMixer(const Sources& sources, int m, const Route& route);
    /// The prompt's sources on positions < len.
    Sources baseBefore(int64_t len) const;
    /// The final LayerNorm, frozen at the prompt's last position (h: ... x d).
    torch::Tensor finalNorm(const torch::Tensor& h) const;

private:
    torch::Tensor block(int l, const torch::Tensor& h, const Sources& s, std::vector<torch::Tensor>* ffnIn,
                        const Route* route, bool record, std::vector<torch::Tensor>* mixOut = nullptr);
    /// Block l's mixer on its input h: the Grassmann mix (gate included) or the heads' projection.
    torch::Tensor mixer(int l, const torch::Tensor& h, const Route* route, bool record);
    torch::Tensor grassmannMix(int l, const torch::Tensor& h, const torch::Tensor& x, const Route* route, bool record);
    torch::Tensor attentionMix(int l, const torch::Tensor& x, const Route* route, bool record);
    torch::Tensor ffn(int l, const torch::Tensor& in, const Sources& s, std::vector<torch::Tensor>* ffnIn, bool record);
    torch::Tensor decodeActs(int l, const torch::Tensor& act) const;
    torch::Tensor wedge(const torch::Tensor& a, const torch::Tensor& b) const;
    /// A frozen 1 x T x ... tensor on the positions run.
    torch::Tensor cut(const torch::Tensor& t) const;
    void foldPlucker(int l);
    void foldOffsets(int l);

    ModelConfig m_config;
    std::vector<BlockParams> m_params;
    std::vector<Frozen> m_frozen;
    Norm m_lnFinal;
    torch::Tensor m_sigmaFinal; ///< 1 x 1 x 1 (the last position)
    torch::Tensor m_idxI, m_idxJ;
    int64_t m_len = 0; ///< positions of the run in progress
};

} // namespace gwb::engine::graph
