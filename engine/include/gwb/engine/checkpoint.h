#pragma once
// safetensors container (the .gwb checkpoint layout): 8-byte little-endian header length N,
// N bytes of JSON header {"__metadata__": {string: string}, "<name>": {"dtype": "F32",
// "shape": [..], "data_offsets": [begin, end]}, ...}, then raw little-endian tensor data with
// offsets relative to the end of the header. Std types only; the importer reads Hugging Face
// .safetensors files with the same reader.

#include "gwb/engine/array.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gwb::engine {

/// One tensor as stored: dtype name ("F32", "F16", "BF16", "U8", "I64", ...), shape, raw bytes.
struct StoredTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::string bytes; ///< little-endian element data, size == numel * element size

    int64_t numel() const;
    /// Values as float (F32, F16, BF16, F64; integer types converted). Throws for other dtypes.
    std::vector<float> toFloat() const;
    /// FloatArray with this shape (same conversions as toFloat()).
    FloatArray toArray() const;
};

struct SafetensorsFile {
    std::map<std::string, std::string> metadata; ///< the "__metadata__" map (may be empty)
    std::map<std::string, StoredTensor> tensors; ///< by name
};

/// A tensor's header entry: dtype, shape, and its bytes [begin, end) relative to the data section.
struct TensorEntry {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
};

/// The checked header of a safetensors file; tensor data stays where it is.
struct SafetensorsHeader {
    std::map<std::string, std::string> metadata;
    std::map<std::string, TensorEntry> tensors;
    uint64_t dataStart = 0; ///< offset of the data section in the file (8 + header length)
};

/// Bytes per element of a safetensors dtype name, 0 when unknown.
int64_t dtypeSize(const std::string& dtype);

/// Parses and checks the container: header length vs file size, JSON syntax, every entry's dtype,
/// shape, and data_offsets (in range, matching numel * element size, not overlapping, together
/// covering the data section). Throws std::runtime_error naming `what` (usually the path) and the
/// problem.
SafetensorsFile parseSafetensors(const std::string& bytes, const std::string& what);
/// The same checks on `size` bytes at `bytes` (e.g. a memory-mapped file), without copying tensor data.
SafetensorsHeader parseSafetensorsHeader(const char* bytes, size_t size, const std::string& what);
SafetensorsFile readSafetensors(const std::string& path);
/// Serializes (tensors in name order, header padded to 8 bytes).
std::string serializeSafetensors(const SafetensorsFile& file);
/// serializeSafetensors + atomic write.
void writeSafetensors(const std::string& path, const SafetensorsFile& file);

/// Float <-> half/bfloat16 conversions (round to nearest even).
uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

/// Tensors from floats: F32 or F16 (dtype "F32"/"F16").
StoredTensor makeStoredTensor(const std::vector<int64_t>& shape, const float* values, const std::string& dtype);

} // namespace gwb::engine
