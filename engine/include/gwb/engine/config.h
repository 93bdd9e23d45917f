#pragma once
// Model configuration shared by both model kinds (model-spec.md). Plain std types only.

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

enum class ModelKind { Grassmann, Transformer };
/// Block arrangement (model-spec step 9): `post` is the paper's, `pre` alphaXiv's.
enum class NormPlacement { Post, Pre };
/// `paper`: m = a*h + (1-a)*g. `geometry_only`: mix = sigmoid(W_gate[x;g]) * g, x = LN(x + mix).
enum class GateVariant { Paper, GeometryOnly };
/// What g is for a token with no valid offset (t = 0): zero (default) or b_plu.
enum class EmptyRule { Zero, Bias };

struct ModelConfig {
    ModelKind kind = ModelKind::Grassmann;
    std::string name;          ///< free-form label shown in the GUI
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
    double pluckerEps = 1e-8; ///< eps in p^ = p / max(||p||, eps)
    double layerNormEps = 1e-5;
    double dropout = 0.1;
    bool mixerLayerNorm = false; ///< pre-norm variant's extra LayerNorm around the mix
    /// Explicit per-layer offset sets (size nLayers), each ascending, positive, unique.
    std::vector<std::vector<int>> layerOffsets;
};

} // namespace gwb::engine
