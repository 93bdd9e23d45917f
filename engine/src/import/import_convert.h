#pragma once
// gwb import's conversion of one family's tensors into a Model (engine-internal).

#include "gwb/engine/import.h"
#include "import/import_tensor_file.h"

#include <string>

namespace gwb::engine::detail {

/// The tensors of `file` (read from `path`) -> our model and the report of what was inferred.
/// Throws std::runtime_error naming the problem (missing or unknown keys, shapes, configs).
ImportedModel convertTensors(const std::string& path, TensorFile file, const ImportOptions& options);
/// ASCII lower case (extensions, layout names).
std::string asciiLower(std::string s);

} // namespace gwb::engine::detail
