// Read-out planes on disk (readout_disk_cache.h). File layout, little-endian:
//   "GWBREAD\0"  u32 version  u32 0  i64 d  i64 n  u64 hashA  u64 hashB  i64 zeroRows
//   f8 residual[d]  f8 planarity[d]  f8 spectrum[d x n/2]  u8 ambiguous[d]  f8 topPlane[d x n x 2]
#include "readout_disk_cache.h"

#include "gwb/engine/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gwb::engine::analysis_detail {

namespace geo = gwb::geometry;

namespace {

constexpr char kMagic[8] = {'G', 'W', 'B', 'R', 'E', 'A', 'D', '\0'};
/// Raised whenever what is stored, how it is computed or how it is keyed changes (2: the residual from
/// the spectrum; 3: the hash a word at a time).
constexpr uint32_t kVersion = 3;

struct Key {
    uint64_t a = 0, b = 0;
};

/// Two independent 64-bit hashes (FNV-1a-like and a multiply-xorshift mix, a word at a time) of the
/// shape and the bytes.
Key hashWeights(const FloatArray& w) {
    uint64_t a = 1469598103934665603ull, b = 0x9E3779B97F4A7C15ull ^ kVersion;
    auto feed = [&](const void* p, size_t size) {
        const auto* bytes = static_cast<const unsigned char*>(p);
        size_t i = 0;
        for (; i + 8 <= size; i += 8) { // a word at a time (FNV-1a over words, not bytes)
            uint64_t word;
            std::memcpy(&word, bytes + i, 8);
            a = (a ^ word) * 1099511628211ull;
            a ^= a >> 29;
            b ^= word;
            b *= 0xff51afd7ed558ccdull;
            b ^= b >> 33;
        }
        for (; i < size; ++i) {
            a = (a ^ bytes[i]) * 1099511628211ull;
            b = (b ^ bytes[i]) * 0xc4ceb9fe1a85ec53ull;
        }
    };
    for (int64_t s : w.shape)
        feed(&s, sizeof s);
    feed(w.data.data(), w.data.size() * sizeof(float));
    return {a, b};
}

template <typename T> void put(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

struct Reader {
    const std::vector<uint8_t>& bytes;
    size_t at = 0;
    template <typename T> bool get(T& v) {
        if (at + sizeof v > bytes.size()) return false;
        std::memcpy(&v, bytes.data() + at, sizeof v);
        at += sizeof v;
        return true;
    }
};

} // namespace

std::string readoutCacheDir() {
    if (const char* own = std::getenv("GWB_CACHE_DIR"); own && *own)
        return std::string(own) == "none" ? std::string() : std::string(own);
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/gwb";
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/gwb";
    return {};
}

std::string readoutCachePath(const FloatArray& wPlu) {
    const std::string dir = readoutCacheDir();
    if (dir.empty()) return {};
    const Key k = hashWeights(wPlu);
    char name[64];
    std::snprintf(name, sizeof name, "readout-v%u-%016llx%016llx.bin", kVersion, static_cast<unsigned long long>(k.a),
                  static_cast<unsigned long long>(k.b));
    return dir + "/" + name;
}

std::shared_ptr<const geo::ReadoutPlanes> loadReadoutPlanes(const FloatArray& wPlu) {
    const std::string path = readoutCachePath(wPlu);
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec) || wPlu.shape.size() != 2) return nullptr;
    std::vector<uint8_t> bytes;
    try {
        bytes = readBinaryFile(path);
    } catch (const std::exception&) {
        return nullptr;
    }
    Reader in{bytes};
    char magic[8];
    uint32_t version = 0, pad = 0;
    int64_t d = 0, n = 0, zeroRows = 0;
    uint64_t ha = 0, hb = 0;
    if (!in.get(magic) || std::memcmp(magic, kMagic, 8) != 0 || !in.get(version) || version != kVersion ||
        !in.get(pad) || !in.get(d) || !in.get(n) || !in.get(ha) || !in.get(hb) || !in.get(zeroRows))
        return nullptr;
    const Key k = hashWeights(wPlu);
    if (ha != k.a || hb != k.b || d != wPlu.shape[0] || n < 2 || n * (n - 1) / 2 != wPlu.shape[1]) return nullptr;
    const size_t expected = in.at + static_cast<size_t>(d) * (8 * 2 + 8 * static_cast<size_t>(n / 2) + 1 +
                                                            8 * 2 * static_cast<size_t>(n));
    if (bytes.size() != expected) return nullptr;
    auto planes = std::make_shared<geo::ReadoutPlanes>();
    planes->zeroRows = zeroRows;
    planes->residual.resize(d);
    planes->planarity.resize(d);
    planes->spectrum.resize(d, n / 2);
    planes->ambiguous.assign(static_cast<size_t>(d), false);
    planes->topPlane.assign(static_cast<size_t>(d), Eigen::MatrixXd(n, 2));
    for (int64_t c = 0; c < d; ++c)
        in.get(planes->residual[c]);
    for (int64_t c = 0; c < d; ++c)
        in.get(planes->planarity[c]);
    for (int64_t c = 0; c < d; ++c)
        for (int64_t k2 = 0; k2 < n / 2; ++k2)
            in.get(planes->spectrum(c, k2));
    for (int64_t c = 0; c < d; ++c) {
        uint8_t a = 0;
        in.get(a);
        planes->ambiguous[static_cast<size_t>(c)] = a != 0;
    }
    for (int64_t c = 0; c < d; ++c)
        for (int64_t col = 0; col < 2; ++col)
            for (int64_t i = 0; i < n; ++i)
                in.get(planes->topPlane[static_cast<size_t>(c)](i, col));
    return planes;
}

void saveReadoutPlanes(const FloatArray& wPlu, const geo::ReadoutPlanes& planes) {
    const std::string path = readoutCachePath(wPlu);
    if (path.empty() || wPlu.shape.size() != 2) return;
    const int64_t d = planes.residual.size();
    if (d == 0 || planes.topPlane.size() != static_cast<size_t>(d)) return;
    // r from the top planes (the spectrum's floor(r/2) columns lose an odd r).
    const int64_t rows = planes.topPlane.front().rows();
    if (d != wPlu.shape[0] || rows * (rows - 1) / 2 != wPlu.shape[1]) return;
    const Key k = hashWeights(wPlu);
    std::string out;
    out.append(kMagic, 8);
    put(out, kVersion);
    put(out, uint32_t{0});
    put(out, d);
    put(out, rows);
    put(out, k.a);
    put(out, k.b);
    put(out, planes.zeroRows);
    for (int64_t c = 0; c < d; ++c)
        put(out, planes.residual[c]);
    for (int64_t c = 0; c < d; ++c)
        put(out, planes.planarity[c]);
    for (int64_t c = 0; c < d; ++c)
        for (int64_t k2 = 0; k2 < rows / 2; ++k2)
            put(out, planes.spectrum(c, k2));
    for (int64_t c = 0; c < d; ++c)
        put(out, uint8_t{planes.ambiguous[static_cast<size_t>(c)] ? uint8_t{1} : uint8_t{0}});
    for (int64_t c = 0; c < d; ++c)
        for (int64_t col = 0; col < 2; ++col)
            for (int64_t i = 0; i < rows; ++i)
                put(out, planes.topPlane[static_cast<size_t>(c)](i, col));
    try {
        std::error_code ec;
        std::filesystem::create_directories(readoutCacheDir(), ec);
        writeBytesAtomic(path, out.data(), out.size());
    } catch (const std::exception&) {
        // a read-only or full cache folder: the planes were computed, they are just not kept
    }
}

} // namespace gwb::engine::analysis_detail
