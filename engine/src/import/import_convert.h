#pragma once
// gwb import's conversion of one family's tensors into a Model (engine-internal).

#include "gwb/engine/import.h"
#include "import/import_tensor_file.h"
#include "import/layout_file.h"

#include <map>
#include <string>

namespace gwb::engine::detail {

/// The tensors of `file` (read from `path`) -> our model and the report of what was inferred.
/// Throws std::runtime_error naming the problem (missing or unknown keys, shapes, configs).
ImportedModel convertTensors(const std::string& path, TensorFile file, const ImportOptions& options);
/// Our parameters from the (prefix-stripped) `tensors` through the layout's key table
/// (import_parameters.cpp): every key present with exactly our shape, pair-index and causal-mask
/// buffers checked, a tied head checked, no key left over. Notes go to `report`; throws
/// std::runtime_error naming the missing, unknown or misshapen keys.
std::map<std::string, FloatArray> mapParameters(const Layout& layout, const std::map<std::string, RawTensor>& tensors,
                                                const ModelConfig& c, ImportReport& report);
/// ASCII lower case (extensions, layout names).
std::string asciiLower(std::string s);

} // namespace gwb::engine::detail
