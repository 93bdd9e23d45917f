#pragma once
// Key-name tables of the public re-implementations (model-spec.md): which tensor of a family's
// state_dict becomes which of our parameters (parameterSpecs() names). Engine-internal.

#include "gwb/engine/config.h"
#include "gwb/engine/import.h"

#include <map>
#include <string>
#include <vector>

namespace gwb::engine {

/// One of our tensors and the family's name for it.
struct KeyMapping {
    std::string ours;   ///< e.g. "blocks.0.w_red.weight"
    std::string theirs; ///< e.g. "blocks.0.mixing.plucker_encoder.W_red.weight"
};

struct LayoutKeys {
    std::string tokEmbed;                  ///< token table, V x d
    std::string posEmbed;                  ///< position table, Lmax x d
    std::string blockPrefix;               ///< "blocks." or "transformer_blocks."
    std::string grassmannProbe;            ///< block-relative key that only a Grassmann block has
    std::string transformerProbe;          ///< block-relative key that only an attention block has
    std::string reduceWeight;              ///< block-relative W_red weight (r x d)
    std::string ffnInWeight;               ///< block-relative first FFN weight (d_ff x d)
    std::string idxI, idxJ;                ///< block-relative pair-index buffers ("" when the family has none)
    std::string lmHead = "lm_head.weight"; ///< tied head (optional in the file)
    std::string causalMask;                ///< block-relative Lmax x Lmax lower-triangular buffer ("" = none)
};

const LayoutKeys& layoutKeys(ImportLayout layout);

/// The layout's block arrangement (norm, gate, mixer LayerNorm, empty rule, eps) applied to `c`.
void applyLayoutVariant(ImportLayout layout, ModelConfig& c);

/// Every (ours, theirs) pair of a model of this kind and layer count; our names follow
/// parameterSpecs(), which must list exactly the `ours` side.
std::vector<KeyMapping> layoutMappings(ImportLayout layout, ModelKind kind, int64_t nLayers);

/// Picks the layout from the names present; throws std::runtime_error when none fits.
ImportLayout detectLayout(const std::vector<std::string>& names);

} // namespace gwb::engine
