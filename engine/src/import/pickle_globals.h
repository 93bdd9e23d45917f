#pragma once
// The restricted unpickler's allow-list (engine-internal): every global name a torch.save
// archive may name, and what the reader makes of it. Any other name is refused. Torch-free.

#include "import/pickle_reader.h"

#include <functional>
#include <map>
#include <string>

namespace gwb::engine::detail {

/// What the reader does with a global name. Everything not listed is refused.
enum class GlobalRole {
    RebuildTensor,
    RebuildTensorV1,
    RebuildParameter,
    RebuildFromType,
    OrderedDict,
    CodecsEncode,
    Storage,
    Opaque
};

/// "module.name" -> its role, for every name the reader accepts.
const std::map<std::string, GlobalRole, std::less<>>& allowedGlobals();
/// Element type of a storage class ("torch.FloatStorage" -> Float32); PickleError for others.
ScalarType storageType(const std::string& name);

} // namespace gwb::engine::detail
