#pragma once
// Configs found with a foreign checkpoint: the `args` / `config` records inside a .pt, a
// config.json beside the file (GrassLM's model folders keep it under `architecture`), or the
// config.json of an HF-style folder. Values are kept as text under their leaf names
// ("pre_norm" -> "true", "window_schedule" -> "1,2,4,8,12,16"). Engine-internal, Torch-free.

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

namespace gwb::engine {

struct FoundSetting {
    std::string value;  ///< "256", "true", "1,2,4" (integer lists comma-joined)
    std::string source; ///< "args.pre_norm in the checkpoint", "config.json: architecture.d_model"
};

struct FoundConfig {
    std::map<std::string, FoundSetting> values; ///< leaf name -> setting (first source wins)
    std::string files;                          ///< "config.json" when one was read, else ""

    /// The first of `names` present.
    std::optional<FoundSetting> get(std::initializer_list<const char*> names) const;
    std::optional<FoundSetting> get(const std::string& name) const { return get({name.c_str()}); }
};

/// "1,3,5" for a string that spells a list of integers ("1,3,5", "[1, 3, 5]", "(1, 3, 5)",
/// "1 3 5"), as argparse-saved arguments keep them; any other string unchanged.
std::string normalizeListText(const std::string& s);

/// Gathers the settings of `metadata` (keys `args.*`, `config.*`, as readTensorFile() collects
/// them; also `architecture.*`, `model.*`, `model_config.*`, `hparams.*`, and the root's
/// `model_type`) and of `folder`/config.json when it exists (its sections `architecture`, `model`,
/// `model_config`, `config`, `args`, `hparams`, `hyper_parameters`, then its top level). Throws std::runtime_error for
/// a config.json that is not valid JSON.
FoundConfig findConfig(const std::string& folder, const std::map<std::string, std::string>& metadata);

} // namespace gwb::engine
