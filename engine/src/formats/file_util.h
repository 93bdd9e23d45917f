#pragma once
// Small file helpers shared by the engine (engine-internal).

#include <cstdint>
#include <string>
#include <string_view>

namespace gwb::engine {

/// Whole file as bytes; throws std::runtime_error naming the file.
std::string readFileBytes(const std::string& path);
/// Writes `path` atomically: a temporary file in the same folder, flushed, then renamed over it.
/// Throws FileError (gwb/engine/file_error.h) naming `path`, never the temporary file.
void writeFileAtomic(const std::string& path, std::string_view bytes);
/// 64-bit FNV-1a hash of bytes (cache keys; not cryptographic).
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 1469598103934665603ull);
/// 16 lowercase hex digits.
std::string hex64(uint64_t value);

} // namespace gwb::engine
