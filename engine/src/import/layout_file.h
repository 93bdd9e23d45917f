#pragma once
// Checkpoint layouts as data (engine-internal, Torch-free): a layout file says how one public
// implementation names its tensors (key patterns -> our parameters), which block arrangement and
// variant flags it uses, its default offsets, and how to recognise its checkpoints. The built-in
// layouts are the files of resources/layouts/, compiled in; `gwb import --layout-file F.json`
// reads another. README, "Layout files", documents the format.

#include "gwb/engine/config.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine {

/// One of our tensors and where it comes from in the family's state dict: one tensor, or several
/// concatenated along their first dimension (separate q, k, v projections -> our fused qkv).
struct KeyMapping {
    std::string ours;                ///< e.g. "blocks.0.w_red.weight"
    std::vector<std::string> theirs; ///< e.g. {"blocks.0.mixing.plucker_encoder.W_red.weight"}
};

/// A layout's mixer stages (variant "stages"; see MixerStages). The two scales are a number or a
/// rule of the family's code: "1/sqrt(pairs)" (1/sqrt(C(r,2))), "1/sqrt(2*windows)" (1/sqrt(2|W|),
/// |W| the layer's offsets), resolved once r and the offsets are known.
struct LayoutStages {
    bool reductionNorm = false, featureNorm = false, gateFromInput = false, outputProjection = false;
    bool wedgePastFirst = false; ///< "wedge_order": "past_current"
    std::string pluckerScale = "1", mixScale = "1";
};

/// What a layout says about one kind of model (Grassmann or Transformer).
struct KindLayout {
    std::string probe; ///< block-relative key only this kind's blocks have
    /// Our block-relative tensor ("w_red.weight") -> theirs (block-relative, one or several).
    std::vector<std::pair<std::string, std::vector<std::string>>> parameters;
    std::string idxI, idxJ; ///< block-relative pair-index buffers ("" = none)
    std::string causalMask; ///< block-relative Lmax x Lmax lower-triangular buffer ("" = none)
    std::optional<NormPlacement> norm;
    std::optional<GateVariant> gate;
    std::optional<bool> mixerLayerNorm;
    std::optional<EmptyRule> empty;
    std::optional<double> eps;
    /// A found config key holding the planes' eps, as the family's code reads it ("eps": the
    /// CausalGrassmannMixer's cfg.eps); "" = none.
    std::string epsConfigKey;
    std::optional<Aggregation> aggregation;
    std::optional<LayoutStages> stages;
    std::optional<int64_t> heads; ///< the family's head count (Transformer; not in the shapes)
    std::string offsetsBuffer;    ///< block-relative integer buffer that holds the layer's offsets
    /// What a found `pre_norm: true` means for this kind (the family's pre-norm arrangement).
    NormPlacement preNorm = NormPlacement::Pre;
    /// Flag -> why the checkpoint cannot show it ("norm" -> "its state dict cannot show ...").
    std::map<std::string, std::string> unseen;
    std::optional<Activation> activation; ///< variant "activation" (the FFN's GELU)
    /// Our modules ("qkv", "ffn_in") whose weights the family stores input x output, as Hugging
    /// Face's Conv1D does: transposed on the way in ("transposed").
    std::set<std::string> transposed;
    /// Block-relative buffers that carry no weights and are read by nothing ("ignored_buffers":
    /// name -> why, e.g. older transformers' attn.masked_bias fill value).
    std::map<std::string, std::string> ignoredBuffers;
    /// "config": what the family's config.json says about the computation.
    std::string activationKey;                     ///< found key naming the activation ("activation_function")
    std::map<std::string, Activation> activations; ///< its values we run -> our activation
    std::string layerNormEpsKey;                   ///< found key holding the LayerNorm eps ("layer_norm_epsilon")
    /// Found key -> {the only value gwb can honour, why}: any other value is refused by name.
    std::map<std::string, std::pair<std::string, std::string>> required;
};

/// What a family's code does with its own config under a condition (a layout's
/// "config_rules"): fields it never reads, the offsets it runs instead, what pre_norm means. A
/// rule applies when every `when` key has its value ("*": the key is present) and no `whenLacks`
/// key is present (whenLacks needs a found config: without one nothing can be said).
struct ConfigRule {
    std::map<std::string, std::string> when;    ///< found key -> value ("*" = present)
    std::vector<std::string> whenLacks;         ///< found keys that must be absent
    std::vector<std::string> ignore;            ///< found keys the code does not read: reported, not applied
    std::string offsets;                        ///< the schedule the code runs ("" = no change)
    std::map<ModelKind, NormPlacement> preNorm; ///< what pre_norm: true means, per kind
    /// The file may come from a version of the family's code whose model gwb does not run, and
    /// nothing in it tells the versions apart: the report says so (why), nothing is changed.
    bool caution = false;
    std::string why; ///< the family's code, in words (for the report)
};

struct Layout {
    std::string name;                     ///< "alphaxiv"
    std::string title;                    ///< one line for people
    std::string facts;                    ///< the family's semantics in words
    std::string source;                   ///< "built-in (resources/layouts/alphaxiv.json)" or the file's path
    std::vector<std::string> detectAll;   ///< keys (or prefixes ending in '.') that must be present
    std::vector<std::string> detectNone;  ///< keys (or prefixes) that must be absent
    std::vector<std::string> detectFiles; ///< files beside the checkpoint that must exist
    std::string tokens, positions;        ///< embedding tables
    std::string blocks;                   ///< block prefix with {i}: "blocks.{i}."
    std::string finalNorm;                ///< final LayerNorm module ("ln_f": .weight, .bias)
    std::string head = "lm_head.weight";  ///< tied head, optional in a file
    /// A prefix every key but the head may carry as a whole ("key_prefix": Hugging Face's
    /// GPT2LMHeadModel saves transformer.*, its GPT2Model the bare names); stripped before mapping.
    std::string keyPrefix;
    std::map<int64_t, std::string> offsetsByLayers; ///< N -> schedule text (parseOffsetSchedule)
    std::string offsetsOtherwise = "1,2,4,8,12,16"; ///< schedule for other N
    bool configOffsetsPerLayer = false;             ///< a found schedule lists one offset per layer
    /// Non-empty: a found schedule is not what the family's code runs (why, in words); it is
    /// compared with the layout's own schedule and reported, never applied.
    std::string configOffsetsIgnoredWhy;
    std::string configPerLayerFlag; ///< a found boolean that, when true, makes it one per layer
    /// A schedule for checkpoints whose found config lacks a key (an older code generation).
    std::string lacksKey, lacksSchedule, lacksWhy;
    std::vector<ConfigRule> configRules; ///< "config_rules", in file order
    std::map<ModelKind, KindLayout> kinds;

    /// "blocks.3." for layer 3.
    std::string blockPrefix(int64_t layer) const;
    /// The default schedule text for N layers.
    std::string defaultOffsets(int64_t nLayers) const;
    const KindLayout& kind(ModelKind k) const; ///< throws std::runtime_error when the layout has no such kind
};

/// Parses a layout file. Throws std::runtime_error naming `source` and the problem: not JSON, a
/// missing field, an unknown flag value, a kind that does not map every one of our block
/// tensors, a tensor of theirs mapped twice.
Layout parseLayout(const std::string& text, const std::string& source);

/// The compiled-in layouts of resources/layouts/, sorted by name.
const std::vector<Layout>& builtinLayouts();
/// A built-in layout by name (case-insensitive); throws std::invalid_argument listing the names.
const Layout& builtinLayout(const std::string& name);

/// The layout's variant flags for c.kind applied to c (and LayerNorm eps 1e-5, nn.LayerNorm's).
/// The stages' scales need c.reduced and c.layerOffsets: call again once the offsets are set.
void applyLayoutVariant(const Layout& layout, ModelConfig& c);
/// A stage scale of a layout ("1", "0.25", "1/sqrt(pairs)", "1/sqrt(2*windows)") for r and |W|
/// (windows: the layers' offset count, which must be the same in every layer); throws
/// std::invalid_argument for a rule it does not know or layers of different |W|.
double stageScale(const std::string& rule, const ModelConfig& c);

/// Every (ours, theirs) pair of a model of this kind and layer count; our names follow
/// parameterSpecs() (ln_mix only when the variant has a mixer LayerNorm).
std::vector<KeyMapping> layoutMappings(const Layout& layout, ModelKind kind, int64_t nLayers, bool mixerLayerNorm);

/// How well a layout fits a set of key names.
struct LayoutMatch {
    const Layout* layout = nullptr;
    int score = 0;       ///< signals that fit; < 0: the layout does not fit
    std::string reason;  ///< what fit ("token_embedding.weight, blocks.0.* and blocks.0.grassmann.W_red.weight")
    std::string failure; ///< what did not fit, when score < 0
};

namespace detail {
/// ASCII lower case (layout names; Torch-free, as the layout files are).
std::string layoutLower(std::string s);
} // namespace detail

/// A key without the layout's key_prefix (unchanged when it lacks it).
std::string keyWithoutPrefix(const Layout& layout, const std::string& key);
/// Every key without the layout's key_prefix.
std::vector<std::string> stripKeyPrefix(const Layout& layout, const std::vector<std::string>& names);

/// Every candidate ranked best first; `folder` (the checkpoint's) is where detect.files are looked for.
std::vector<LayoutMatch> rankLayouts(const std::vector<Layout>& candidates, const std::vector<std::string>& names,
                                     const std::string& folder = "");

} // namespace gwb::engine
