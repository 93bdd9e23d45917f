// File reading, atomic writing and hashing helpers.

#include "formats/file_util.h"

#include "gwb/engine/file_error.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {

std::string readFileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw std::runtime_error("cannot open " + path);
    // One read into a string of the file's size (no doubling buffer, no second copy).
    const std::streamoff size = in.tellg();
    if (size >= 0) {
        std::string bytes(static_cast<size_t>(size), '\0');
        in.seekg(0);
        if (in.read(bytes.data(), size)) return bytes;
        in.clear();
        in.seekg(0);
    }
    std::ostringstream ss; // not seekable (a pipe): read to the end
    ss << in.rdbuf();
    if (in.bad()) throw std::runtime_error("cannot read " + path);
    return ss.str();
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    std::random_device rd;
    const fs::path tmp = target.parent_path() / (target.filename().string() + ".tmp" + std::to_string(rd()));
    // Failures name `path`, the file the caller asked for, not the temporary one (FileError).
    {
        errno = 0;
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw fileWriteError(path, errno != 0 ? errno : EIO);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.flush();
        if (!out) {
            const int error = errno != 0 ? errno : ENOSPC;
            out.close();
            std::error_code ec;
            fs::remove(tmp, ec);
            throw fileWriteError(path, error);
        }
    }
    std::error_code ec;
    fs::rename(tmp, target, ec);
    if (ec) {
        const int error = ec.value();
        fs::remove(tmp, ec);
        throw fileWriteError(path, error);
    }
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
    uint64_t h = seed;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string hex64(uint64_t value) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
    return buf;
}

} // namespace gwb::engine
