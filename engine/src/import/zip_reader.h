#pragma once
// Read-only access to the records of a ZIP archive held in memory, enough for the archives that
// torch.save writes (every record STORED, i.e. uncompressed; ZIP64 fields when large). Torch-free
// and Qt-free so that the sanitizer build and the fuzz target can use it.

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gwb::engine {

/// Thrown for a malformed or unsupported archive; the message names the problem.
class ZipError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ZipReader {
public:
    /// Parses the central directory of `bytes` (the whole archive). Throws ZipError.
    explicit ZipReader(std::vector<uint8_t> bytes);
    /// Reads the file at `path` into memory and parses it. Throws ZipError.
    static ZipReader fromFile(const std::string& path);
    /// True when `bytes` start like a ZIP archive (local file header signature).
    static bool looksLikeZip(const std::vector<uint8_t>& bytes);

    /// Record names in central-directory order.
    const std::vector<std::string>& names() const { return m_names; }
    bool contains(const std::string& name) const { return m_entries.count(name) != 0; }
    /// The bytes of record `name` (a view into the archive). Throws ZipError when absent,
    /// compressed, or when its data lies outside the archive.
    std::string_view read(const std::string& name) const;

private:
    struct Entry {
        uint64_t localHeaderOffset = 0; ///< bytes from the archive start
        uint64_t size = 0;              ///< bytes of stored data
        uint16_t method = 0;            ///< 0 = stored
    };
    std::vector<uint8_t> m_bytes;
    std::vector<std::string> m_names;
    std::map<std::string, Entry> m_entries;
};

} // namespace gwb::engine
