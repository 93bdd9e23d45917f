#pragma once
// ModelConfig <-> JSON, validation and parameter counting (model-spec.md). Std types only.
//
// JSON format (one format for both kinds; unknown keys are errors, missing keys take defaults):
// {
//   "kind": "grassmann" | "transformer", "name": "...",
//   "vocab_size": 30522, "d_model": 256, "reduced": 32, "n_layers": 6, "d_ff": 1024,
//   "max_len": 128, "n_heads": 4,
//   "norm": "post" | "pre", "gate": "paper" | "geometry_only", "empty": "zero" | "bias",
//   "plucker_eps": 1e-8, "layer_norm_eps": 1e-5, "dropout": 0.1, "mixer_layer_norm": false,
//   "offsets": {"schedule": "all", "set": [1,2,4,8,12,16]}
//            | {"schedule": "per_layer", "list": [1,1,2,2,4,4]}   (one offset per layer)
//            | {"schedule": "explicit", "layers": [[1,2],[4],...]} (what toJson() writes)
// }

#include "gwb/engine/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

/// Parses and validates; throws std::invalid_argument naming the offending field.
ModelConfig configFromJson(const std::string& jsonText);
/// Reads a JSON config file; errors name the file and the field.
ModelConfig loadConfigFile(const std::string& path);
/// Canonical JSON (offsets stored as explicit per-layer sets). indent < 0: one line.
std::string configToJson(const ModelConfig& config, int indent = 2);
/// Throws std::invalid_argument naming the first inconsistent field.
void validateConfig(const ModelConfig& config);

/// The paper's default offsets {1, 2, 4, 8, 12, 16}.
std::vector<int> defaultOffsets();

const char* kindName(ModelKind kind);       ///< "grassmann" / "transformer"
const char* normName(NormPlacement norm);   ///< "post" / "pre" / "post_mix" / "pre_mix"
const char* aggregationName(Aggregation a); ///< "normalize_then_mean" / "mean_then_normalize"
/// Inverses (std::invalid_argument naming the accepted values).
NormPlacement normFromName(const std::string& name);
Aggregation aggregationFromName(const std::string& name);
/// True where the mixer sees LN1(h) (pre, pre_mix); false where it sees h (post, post_mix).
bool mixerSeesNormedInput(NormPlacement norm);
const char* gateName(GateVariant gate);   ///< "paper" / "geometry_only"
const char* emptyName(EmptyRule empty);   ///< "zero" / "bias"
const char* activationName(Activation a); ///< "gelu" / "gelu_tanh"
/// Inverse of activationName (std::invalid_argument naming the accepted values).
Activation activationFromName(const std::string& name);

/// Parameter counts computed from the config alone (tied head counted once).
struct ParameterCounts {
    int64_t embeddings = 0;        ///< token table V*d + position table Lmax*d
    std::vector<int64_t> perBlock; ///< N entries
    int64_t finalNorm = 0;         ///< 2d
    int64_t total = 0;             ///< sum of the above
};
ParameterCounts countParameters(const ModelConfig& config);

/// Names and shapes of every parameter tensor of a model with this config, in model order.
/// These are the tensor names of a .gwb checkpoint and of Model::fromParameters().
struct ParameterSpec {
    std::string name;
    std::vector<int64_t> shape;
};
std::vector<ParameterSpec> parameterSpecs(const ModelConfig& config);

} // namespace gwb::engine
