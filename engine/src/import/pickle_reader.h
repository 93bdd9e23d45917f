#pragma once
// A restricted unpickler for the data.pkl record of torch.save archives (pickle protocols 2-5).
//
// Security property: it never executes anything. Python's pickle runs arbitrary callables named
// in the file; this reader only recognises a fixed allow-list of names. Tensor rebuild functions
// and storage classes become tensor references, collections.OrderedDict becomes a dict, a few
// plain-data classes (argparse.Namespace, numpy scalars, ...) become opaque records that keep
// their arguments, and any other name is rejected with PickleError naming it. Every read is
// bounds-checked and the value graph lives in an arena (no recursion, no reference cycles), so
// a malformed file ends in PickleError, never in a crash. Torch-free and Qt-free.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gwb::engine {

class PickleError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Element types of torch storages that the reader understands.
enum class ScalarType { Float32, Float64, Float16, BFloat16, Int64, Int32, Int16, Int8, UInt8, Bool };
/// Bytes per element of `t`.
int scalarTypeSize(ScalarType t);
/// "float32", "bfloat16", ... for messages.
std::string scalarTypeName(ScalarType t);

/// A tensor as torch._utils._rebuild_tensor_v2 describes it: a strided view of a storage.
struct PickleTensorRef {
    std::string storageKey; ///< record name under <archive>/data/
    ScalarType dtype = ScalarType::Float32;
    int64_t storageNumel = 0;    ///< elements in the storage, as the persistent id states
    int64_t storageOffset = 0;   ///< elements from the storage start to element [0,...,0]
    std::vector<int64_t> shape;  ///< extents, outermost first
    std::vector<int64_t> stride; ///< in elements, same length as shape
};

using PickleId = int32_t; ///< index of a value in PickleDocument's arena

struct PickleValue {
    enum class Kind { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict, Tensor, Global, Object, Storage };
    Kind kind = Kind::None;
    bool boolean = false;
    int64_t integer = 0;
    double number = 0.0;
    std::string text;                                   ///< String/Bytes payload; "module.name" for Global/Object
    std::vector<PickleId> items;                        ///< List/Tuple elements; Object: its call arguments
    std::vector<std::pair<PickleId, PickleId>> entries; ///< Dict (key, value) in insertion order
    PickleId state = -1;                                ///< BUILD state of an Object or Dict, -1 if none
    PickleTensorRef tensor;                             ///< Tensor (and Storage: key, dtype, numel)
};

/// The value graph of one pickle. Values refer to each other by PickleId; the graph may share
/// values and even contain cycles (through the memo), so walkers must bound their depth.
class PickleDocument {
public:
    const PickleValue& at(PickleId id) const;
    PickleId root() const { return m_root; }
    size_t size() const { return m_values.size(); }
    /// Value of the string key `key` in the dict `dict`, or -1.
    PickleId find(PickleId dict, std::string_view key) const;
    /// Short description for messages: "dict", "tensor float32 [3, 4]", "argparse.Namespace", ...
    std::string describe(PickleId id) const;

private:
    friend class PickleParser;
    std::vector<PickleValue> m_values;
    PickleId m_root = -1;
};

/// Limits that keep hostile inputs cheap.
struct PickleLimits {
    size_t maxValues = 50'000'000; ///< values in the arena
    size_t maxStack = 1'000'000;   ///< stack depth incl. marks
    int64_t maxRank = 16;          ///< tensor rank
};

/// Parses `bytes` (a whole pickle). Throws PickleError with the offending offset and opcode.
PickleDocument parsePickle(std::string_view bytes, const PickleLimits& limits = {});

} // namespace gwb::engine
