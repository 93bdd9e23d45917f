#pragma once
// Model configuration shared by both model kinds (model-spec.md). Plain std types only.

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

enum class ModelKind { Grassmann, Transformer };
/// Block arrangement (model-spec step 9), with mix = the gated blend of the mixer input and g:
///  Post    (paper):     x = LN1(mix(h));                 out = LN2(x + FFN(x))
///  Pre     (alphaXiv):  h' = h + LN_mix?(mix(LN1(h)));   out = h' + FFN(LN2(h'))
///  PostMix (Wake2vec):  x = LN1(mix(h));                 out = x + FFN(LN2(x))
///  PreMix  (youdie006 pre_norm=True): x = mix(LN1(h));   out = x + FFN(LN2(x))
/// PostMix and PreMix have no skip path around the mixer but a pre-LN FFN with its residual;
/// they exist for Grassmann blocks with the paper gate.
enum class NormPlacement { Post, Pre, PostMix, PreMix };
/// `paper`: m = a*h + (1-a)*g. `geometry_only`: mix = sigmoid(W_gate[x;g]) * g, x = LN(x + mix).
/// `residual` (GrassmannGPTv3): mix = x + a * g * stages.mixScale (pre-norm only).
enum class GateVariant { Paper, GeometryOnly, Residual };
/// What g is for a token with no valid offset (t = 0): zero (default) or b_plu.
enum class EmptyRule { Zero, Bias };
/// How the offsets' planes become B_t (model-spec steps 4-5):
///  NormalizeThenMean (paper): B_t = mean_D p^(D), p^ = p / max(||p||, eps)
///  MeanThenNormalize (Arledge's fused kernel): B_t = q / sqrt(||q||^2 + eps), q = mean_D p(D)
///  Mean (GrassmannGPTv3): B_t = s * mean_D p(D), no normalisation (s = stages.pluckerScale); with
///    W_plu linear this is also the mean of the projected planes, as that code computes it
///  PerOffsetMlp (CausalGrassmannMixer): no B_t; g = mean_D MLP(p^(D)), p^ = p / max(||p||, eps), with
///    MLP(p) = W_geo_out GELU(W_geo_in p + b_in) + b_out (hidden width ModelConfig::dGeom; no W_plu)
enum class Aggregation { NormalizeThenMean, MeanThenNormalize, Mean, PerOffsetMlp };
/// The FFN's GELU: exact (erf, torch's default and the paper's) or the tanh approximation
/// (GPT-2's "gelu_new", torch's approximate="tanh"). The per-offset MLP keeps its family's exact GELU.
enum class Activation { Gelu, GeluTanh };

/// Mixer stages beyond the paper's, each a step of a public family's code described as data (all
/// off: the paper's mixer). Arledge's GrassmannGPTv3 (train.py --model grassmann) uses every one.
struct MixerStages {
    bool reductionNorm = false;    ///< z = LN_red(W_red x) (parameters ln_red, r wide)
    double pluckerScale = 1.0;     ///< aggregation mean: each plane scaled by this
    bool featureNorm = false;      ///< g = LN_geo(g) after the empty rule (parameters ln_geo)
    bool gateFromInput = false;    ///< a = sigmoid(W_gate x) with W_gate d x d (else W_gate [x; g])
    double mixScale = 1.0;         ///< gate residual: mix = x + a * g * mixScale
    bool outputProjection = false; ///< mix = W_out mix + b_out (parameters w_out, d x d)
    /// p(D) = z_{t-D} ^ z_t (past x current: the paper's plane with the opposite sign) instead of
    /// z_t ^ z_{t-D}. CausalGrassmannMixer forms its planes this way.
    bool wedgePastFirst = false;
    /// A stage that changes what the mixer computes from its planes (every one but the planes'
    /// orientation, which only flips their sign).
    bool anyBeyondOrientation() const {
        return reductionNorm || pluckerScale != 1.0 || featureNorm || gateFromInput || mixScale != 1.0 ||
               outputProjection;
    }
    bool any() const { return anyBeyondOrientation() || wedgePastFirst; }
};

struct ModelConfig {
    ModelKind kind = ModelKind::Grassmann;
    std::string name; ///< free-form label shown in the GUI
    /// Implementation whose checkpoint this model was imported from ("grasslm", "alphaxiv",
    /// "kanenorman"); empty for models trained or created here.
    std::string family;
    int64_t vocabSize = 30522; ///< V
    int64_t dModel = 256;      ///< d
    int64_t reduced = 32;      ///< r (Grassmann only)
    int64_t nLayers = 6;       ///< N
    int64_t dFF = 1024;        ///< FFN hidden width
    int64_t maxLen = 128;      ///< Lmax, rows of the position table
    int64_t nHeads = 4;        ///< attention heads (Transformer only)
    NormPlacement norm = NormPlacement::Post;
    GateVariant gate = GateVariant::Paper;
    EmptyRule empty = EmptyRule::Zero;
    double pluckerEps = 1e-8; ///< eps in p^ = p / max(||p||, eps) (MeanThenNormalize: sqrt(||q||^2 + eps))
    Aggregation aggregation = Aggregation::NormalizeThenMean;
    int64_t dGeom = 0; ///< hidden width of the per-offset MLP (aggregation PerOffsetMlp only; else 0)
    double layerNormEps = 1e-5;
    double dropout = 0.1;
    Activation activation = Activation::Gelu;
    bool mixerLayerNorm = false; ///< pre-norm variant's extra LayerNorm around the mix
    MixerStages stages;          ///< Grassmann only
    /// Explicit per-layer offset sets (size nLayers), each ascending, positive, unique.
    std::vector<std::vector<int>> layerOffsets;
};

} // namespace gwb::engine
