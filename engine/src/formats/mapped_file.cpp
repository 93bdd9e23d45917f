// POSIX memory mapping of whole files.

#include "formats/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gwb::engine {

MappedFile::MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path + " (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot read " + path + " (" + std::strerror(err) + ")");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error("cannot read " + path + " (not a regular file)");
    }
    m_size = static_cast<size_t>(st.st_size);
    if (m_size > 0) {
        // Populated read-only first: populating a writable private mapping would copy every page
        // (copy-on-write broken in advance). Write access afterwards keeps the populated pages shared
        // with the page cache until something writes to them.
        void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (p == MAP_FAILED || ::mprotect(p, m_size, PROT_READ | PROT_WRITE) != 0) {
            const int err = errno;
            if (p != MAP_FAILED) ::munmap(p, m_size);
            ::close(fd);
            throw std::runtime_error("cannot map " + path + " (" + std::strerror(err) + ")");
        }
        m_data = static_cast<char*>(p);
    }
    ::close(fd); // the mapping keeps the file's pages
}

MappedFile::~MappedFile() {
    if (m_data) ::munmap(m_data, m_size);
}

} // namespace gwb::engine
