#pragma once
// A whole file mapped into memory, read-only from the file's point of view (engine-internal).

#include <cstddef>
#include <string>

namespace gwb::engine {

/// POSIX mmap of a whole file, MAP_PRIVATE with write access: writes (e.g. an optimizer updating
/// parameters that live in the mapping) are copy-on-write and never reach the file. Files are only
/// ever replaced by rename in this project (writeFileAtomic), so a mapped inode stays intact.
class MappedFile {
public:
    /// Throws std::runtime_error naming the file when it cannot be opened or mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const char* data() const { return m_data; }
    char* mutableData() const { return m_data; }
    size_t size() const { return m_size; }

private:
    char* m_data = nullptr;
    size_t m_size = 0;
};

} // namespace gwb::engine
