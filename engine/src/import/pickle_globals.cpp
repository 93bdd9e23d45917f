// The restricted unpickler's allow-list: tensors, storages, OrderedDict and plain-data records.

#include "import/pickle_globals.h"

namespace gwb::engine::detail {

const std::map<std::string, GlobalRole, std::less<>>& allowedGlobals() {
    static const std::map<std::string, GlobalRole, std::less<>> m = [] {
        std::map<std::string, GlobalRole, std::less<>> a{
            {"torch._utils._rebuild_tensor_v2", GlobalRole::RebuildTensor},
            {"torch._utils._rebuild_tensor", GlobalRole::RebuildTensorV1},
            {"torch._utils._rebuild_parameter", GlobalRole::RebuildParameter},
            {"torch._utils._rebuild_parameter_with_state", GlobalRole::RebuildParameter},
            {"torch._tensor._rebuild_from_type_v2", GlobalRole::RebuildFromType},
            {"collections.OrderedDict", GlobalRole::OrderedDict},
            {"_codecs.encode", GlobalRole::CodecsEncode},
        };
        for (const char* s :
             {"FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage",
              "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage", "UntypedStorage"})
            a[std::string("torch.") + s] = GlobalRole::Storage;
        // Plain-data classes seen in training checkpoints next to the weights: kept as records.
        for (const char* s : {"argparse.Namespace",
                              "numpy.core.multiarray.scalar",
                              "numpy._core.multiarray.scalar",
                              "numpy.dtype",
                              "numpy.ndarray",
                              "numpy.core.multiarray._reconstruct",
                              "numpy._core.multiarray._reconstruct",
                              "builtins.set",
                              "builtins.frozenset",
                              "builtins.slice",
                              "builtins.complex",
                              "builtins.list",
                              "builtins.dict",
                              "builtins.int",
                              "builtins.float",
                              "builtins.str",
                              "builtins.tuple",
                              "builtins.bool",
                              "__builtin__.set",
                              "collections.defaultdict",
                              "torch.device",
                              "torch.Tensor",
                              "torch.nn.parameter.Parameter",
                              "torch.Size",
                              "torch.float32",
                              "torch.float16",
                              "torch.bfloat16",
                              "torch.float64",
                              "torch.int64",
                              "pathlib.PosixPath",
                              "pathlib.WindowsPath",
                              "pathlib.Path"})
            a[s] = GlobalRole::Opaque;
        return a;
    }();
    return m;
}

ScalarType storageType(const std::string& name) {
    static const std::map<std::string, ScalarType, std::less<>> m{
        {"torch.FloatStorage", ScalarType::Float32}, {"torch.DoubleStorage", ScalarType::Float64},
        {"torch.HalfStorage", ScalarType::Float16},  {"torch.BFloat16Storage", ScalarType::BFloat16},
        {"torch.LongStorage", ScalarType::Int64},    {"torch.IntStorage", ScalarType::Int32},
        {"torch.ShortStorage", ScalarType::Int16},   {"torch.CharStorage", ScalarType::Int8},
        {"torch.ByteStorage", ScalarType::UInt8},    {"torch.BoolStorage", ScalarType::Bool},
        {"torch.UntypedStorage", ScalarType::UInt8}};
    const auto it = m.find(name);
    if (it == m.end()) throw PickleError("pickle: '" + name + "' is not a storage class");
    return it->second;
}

} // namespace gwb::engine::detail
