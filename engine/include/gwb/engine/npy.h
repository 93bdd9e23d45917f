#pragma once
// NPY (format 1.0) and NPZ writers, and an NPY/NPZ reader for tests and round trips.
// numpy.load reads what these write. Little-endian, C order; NPZ members are stored
// (uncompressed) with correct CRC-32. Files are written atomically (temp file + rename).

#include "gwb/engine/array.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace gwb::engine {

enum class NpyType { Float32, Float64, Int32, Int64, UInt8 };

/// numpy dtype string: '<f4', '<f8', '<i4', '<i8', '|u1'.
std::string npyDescr(NpyType type);
size_t npyItemSize(NpyType type);

/// A typed, shaped array as its raw little-endian bytes (what one .npy file holds).
struct NpyArray {
    NpyType type = NpyType::Float32;
    std::vector<int64_t> shape; ///< extents, outermost first ({} = a scalar)
    std::vector<uint8_t> bytes; ///< C-order element bytes, product(shape) * itemsize
    int64_t count() const;
    /// The values converted to T (any stored type). Throws for an unknown type.
    template <typename T> std::vector<T> values() const;
};

/// Whole .npy file contents for data of `type` (count(shape) elements at `data`).
std::vector<uint8_t> encodeNpy(NpyType type, const std::vector<int64_t>& shape, const void* data);
std::vector<uint8_t> encodeNpy(const Array<float>& a);
std::vector<uint8_t> encodeNpy(const Array<double>& a);
std::vector<uint8_t> encodeNpy(const Array<int32_t>& a);
std::vector<uint8_t> encodeNpy(const Array<int64_t>& a);
std::vector<uint8_t> encodeNpy(const Array<uint8_t>& a);

/// Parses .npy bytes (versions 1.0-3.0, little-endian f4/f8/i4/i8/u1, C order). Throws
/// std::runtime_error naming the problem for anything else or a truncated file.
NpyArray parseNpy(const std::vector<uint8_t>& bytes);

/// Writes bytes to path atomically: a temp file in the same folder, then rename. Throws FileError
/// (gwb/engine/file_error.h, a std::runtime_error) "cannot write '<path>': <reason>" on failure;
/// no partial file is left.
void writeBytesAtomic(const std::string& path, const void* data, size_t size);

void writeNpy(const std::string& path, const Array<float>& a);
void writeNpy(const std::string& path, const Array<double>& a);
void writeNpy(const std::string& path, const Array<int32_t>& a);
void writeNpy(const std::string& path, const Array<int64_t>& a);
void writeNpy(const std::string& path, const Array<uint8_t>& a);
NpyArray readNpy(const std::string& path);

/// One named array of an NPZ file, in its own element type: what `gwb trace` and `gwb patch` write,
/// and what the Python package hands out as numpy arrays (under the same names).
struct NpzMember {
    using Values = std::variant<Array<float>, Array<double>, Array<int32_t>, Array<int64_t>, Array<uint8_t>>;
    std::string name; ///< member name without ".npy"
    Values values;
};

/// Collects named arrays ("name" -> member "name.npy") and extra members (e.g. "meta.json"),
/// then writes one NPZ (zip, stored entries). Member names must be unique and non-empty.
class NpzWriter {
public:
    void add(const std::string& name, const Array<float>& a);
    void add(const std::string& name, const Array<double>& a);
    void add(const std::string& name, const Array<int32_t>& a);
    void add(const std::string& name, const Array<int64_t>& a);
    void add(const std::string& name, const Array<uint8_t>& a);
    void add(const NpzMember& member);
    /// An arbitrary member stored under exactly `memberName` (e.g. "meta.json").
    void addFile(const std::string& memberName, const std::string& contents);
    /// Zip archive bytes. Throws when an entry or the archive exceeds 4 GiB (no Zip64).
    std::vector<uint8_t> archive() const;
    void write(const std::string& path) const;

private:
    void addMember(const std::string& memberName, std::vector<uint8_t> bytes);
    std::vector<std::pair<std::string, std::vector<uint8_t>>> m_members;
};

/// Members of a stored (uncompressed) zip/NPZ archive, CRC-checked. Throws std::runtime_error
/// for compressed members, bad CRC or a malformed archive.
std::map<std::string, std::vector<uint8_t>> readZipStored(const std::vector<uint8_t>& archive);
std::vector<uint8_t> readBinaryFile(const std::string& path);

/// CRC-32 (IEEE 802.3, as zip uses).
uint32_t crc32Ieee(const uint8_t* data, size_t size, uint32_t crc = 0);

} // namespace gwb::engine
