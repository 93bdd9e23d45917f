#include "import/pickle_reader.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

namespace gwb::engine {

int scalarTypeSize(ScalarType t) {
    switch (t) {
    case ScalarType::Float64:
    case ScalarType::Int64:
        return 8;
    case ScalarType::Float32:
    case ScalarType::Int32:
        return 4;
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Int16:
        return 2;
    case ScalarType::Int8:
    case ScalarType::UInt8:
    case ScalarType::Bool:
        return 1;
    }
    return 1;
}

std::string scalarTypeName(ScalarType t) {
    switch (t) {
    case ScalarType::Float32:
        return "float32";
    case ScalarType::Float64:
        return "float64";
    case ScalarType::Float16:
        return "float16";
    case ScalarType::BFloat16:
        return "bfloat16";
    case ScalarType::Int64:
        return "int64";
    case ScalarType::Int32:
        return "int32";
    case ScalarType::Int16:
        return "int16";
    case ScalarType::Int8:
        return "int8";
    case ScalarType::UInt8:
        return "uint8";
    case ScalarType::Bool:
        return "bool";
    }
    return "?";
}

const PickleValue& PickleDocument::at(PickleId id) const {
    if (id < 0 || static_cast<size_t>(id) >= m_values.size()) throw PickleError("pickle: value id out of range");
    return m_values[static_cast<size_t>(id)];
}

PickleId PickleDocument::find(PickleId dict, std::string_view key) const {
    const PickleValue& d = at(dict);
    if (d.kind != PickleValue::Kind::Dict) return -1;
    for (const auto& [k, v] : d.entries) {
        const PickleValue& kv = at(k);
        if (kv.kind == PickleValue::Kind::String && kv.text == key) return v;
    }
    return -1;
}

std::string PickleDocument::describe(PickleId id) const {
    using K = PickleValue::Kind;
    const PickleValue& v = at(id);
    switch (v.kind) {
    case K::None:
        return "None";
    case K::Bool:
        return v.boolean ? "True" : "False";
    case K::Int:
        return std::to_string(v.integer);
    case K::Float:
        return std::to_string(v.number);
    case K::String:
        return "'" + v.text.substr(0, 80) + "'";
    case K::Bytes:
        return "bytes[" + std::to_string(v.text.size()) + "]";
    case K::List:
        return "list[" + std::to_string(v.items.size()) + "]";
    case K::Tuple:
        return "tuple[" + std::to_string(v.items.size()) + "]";
    case K::Dict:
        return "dict[" + std::to_string(v.entries.size()) + "]";
    case K::Storage:
        return "storage " + scalarTypeName(v.tensor.dtype);
    case K::Global:
        return "global " + v.text;
    case K::Object:
        return v.text;
    case K::Tensor: {
        std::string s = "tensor " + scalarTypeName(v.tensor.dtype) + " [";
        for (size_t i = 0; i < v.tensor.shape.size(); ++i) {
            if (i) s += ", ";
            s += std::to_string(v.tensor.shape[i]);
        }
        return s + "]";
    }
    }
    return "?";
}

} // namespace gwb::engine
