// Read-out planes on disk (readout_disk_cache.h). File layout, little-endian:
//   "GWBREAD\0"  u32 version  u32 0  i64 d  i64 n  u64 hashA  u64 hashB  i64 zeroRows
//   f8 residual[d]  f8 planarity[d]  f8 spectrum[d x n/2]  u8 ambiguous[d]  f8 topPlane[d x n x 2]
// Reading subspaces: "GWBRSUB\0" u32 version u32 0 i64 N u64 hashA u64 hashB i64 ranks[N] i64 widths[N]
//   f4 distance[N x N].
// Lifters: "GWBLIFT\0" u32 version u32 0 i64 r i64 d i64 rank u64 hashA u64 hashB f8 pinv[d x r] (column-major).
#include "readout_disk_cache.h"

#include "gwb/engine/npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace gwb::engine::analysis_detail {

namespace geo = gwb::geometry;

namespace {

constexpr char kMagic[8] = {'G', 'W', 'B', 'R', 'E', 'A', 'D', '\0'};
/// Raised whenever what is stored, how it is computed or how it is keyed changes (2: the residual from
/// the spectrum; 3: the hash a word at a time; 4: the top plane by inverse iteration, and the lifters).
constexpr uint32_t kVersion = 4;

struct Key {
    uint64_t a = 0, b = 0;
};

/// Two independent 64-bit hashes (FNV-1a-like and a multiply-xorshift mix, a word at a time) of
/// shapes and bytes fed in order.
class Hasher {
public:
    void feed(const void* p, size_t size) {
        const auto* bytes = static_cast<const unsigned char*>(p);
        size_t i = 0;
        for (; i + 8 <= size; i += 8) { // a word at a time (FNV-1a over words, not bytes)
            uint64_t word;
            std::memcpy(&word, bytes + i, 8);
            m_key.a = (m_key.a ^ word) * 1099511628211ull;
            m_key.a ^= m_key.a >> 29;
            m_key.b ^= word;
            m_key.b *= 0xff51afd7ed558ccdull;
            m_key.b ^= m_key.b >> 33;
        }
        for (; i < size; ++i) {
            m_key.a = (m_key.a ^ bytes[i]) * 1099511628211ull;
            m_key.b = (m_key.b ^ bytes[i]) * 0xc4ceb9fe1a85ec53ull;
        }
    }
    void feed(const FloatArray& w) {
        for (int64_t s : w.shape)
            feed(&s, sizeof s);
        feed(w.data.data(), w.data.size() * sizeof(float));
    }
    Key key() const { return m_key; }

private:
    Key m_key{1469598103934665603ull, 0x9E3779B97F4A7C15ull ^ kVersion};
};

Key hashWeights(const FloatArray& w) {
    Hasher h;
    h.feed(w);
    return h.key();
}

std::string cacheFile(const char* kind, const Key& k) {
    const std::string dir = readoutCacheDir();
    if (dir.empty()) return {};
    char name[80];
    std::snprintf(name, sizeof name, "%s-v%u-%016llx%016llx.bin", kind, kVersion, static_cast<unsigned long long>(k.a),
                  static_cast<unsigned long long>(k.b));
    return dir + "/" + name;
}

void writeCacheFile(const std::string& path, const std::string& bytes) {
    try {
        std::error_code ec;
        std::filesystem::create_directories(readoutCacheDir(), ec);
        writeBytesAtomic(path, bytes.data(), bytes.size());
    } catch (const std::exception&) {
        // a read-only or full cache folder: the result was computed, it is just not kept
    }
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

/// Reads a cache file's first 16 bytes: its magic, the current version and the padding word.
bool readHeader(Reader& in, const char (&magic)[8]) {
    char m[8];
    uint32_t version = 0, pad = 0;
    return in.get(m) && std::memcmp(m, magic, 8) == 0 && in.get(version) && version == kVersion && in.get(pad);
}

/// The bytes of a cache file, or nothing (no folder, no file, or one that cannot be read).
std::optional<std::vector<uint8_t>> readCacheFile(const std::string& path) {
    std::error_code ec;
    if (path.empty() || !std::filesystem::exists(path, ec)) return std::nullopt;
    try {
        return readBinaryFile(path);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace

std::string readoutCacheDir() {
    if (const char* own = std::getenv("GWB_CACHE_DIR"); own && *own)
        return std::string(own) == "none" ? std::string() : std::string(own);
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/gwb";
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/gwb";
    return {};
}

std::string readoutCachePath(const FloatArray& wPlu) {
    return cacheFile("readout", hashWeights(wPlu));
}

std::shared_ptr<const geo::ReadoutPlanes> loadReadoutPlanes(const FloatArray& wPlu) {
    if (wPlu.shape.size() != 2) return nullptr;
    const std::optional<std::vector<uint8_t>> file = readCacheFile(readoutCachePath(wPlu));
    if (!file) return nullptr;
    const std::vector<uint8_t>& bytes = *file;
    Reader in{bytes};
    int64_t d = 0, n = 0, zeroRows = 0;
    uint64_t ha = 0, hb = 0;
    if (!readHeader(in, kMagic) || !in.get(d) || !in.get(n) || !in.get(ha) || !in.get(hb) || !in.get(zeroRows))
        return nullptr;
    const Key k = hashWeights(wPlu);
    if (ha != k.a || hb != k.b || d != wPlu.shape[0] || n < 2 || n * (n - 1) / 2 != wPlu.shape[1]) return nullptr;
    const size_t expected =
        in.at + static_cast<size_t>(d) * (8 * 2 + 8 * static_cast<size_t>(n / 2) + 1 + 8 * 2 * static_cast<size_t>(n));
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
    writeCacheFile(path, out);
}

namespace {
constexpr char kReadingMagic[8] = {'G', 'W', 'B', 'R', 'S', 'U', 'B', '\0'};

Key hashLayers(const std::vector<const FloatArray*>& wRed) {
    Hasher h;
    for (const FloatArray* w : wRed)
        h.feed(*w);
    return h.key();
}
} // namespace

std::optional<ReadingSubspaces> loadReadingSubspaces(const std::vector<const FloatArray*>& wRed) {
    const Key k = hashLayers(wRed);
    if (wRed.empty()) return std::nullopt;
    const std::optional<std::vector<uint8_t>> file = readCacheFile(cacheFile("reading", k));
    if (!file) return std::nullopt;
    const std::vector<uint8_t>& bytes = *file;
    Reader in{bytes};
    int64_t n = 0;
    uint64_t ha = 0, hb = 0;
    if (!readHeader(in, kReadingMagic) || !in.get(n) || !in.get(ha) || !in.get(hb) || ha != k.a || hb != k.b ||
        n != static_cast<int64_t>(wRed.size()))
        return std::nullopt;
    const size_t N = static_cast<size_t>(n);
    if (bytes.size() != in.at + N * 16 + N * N * 4) return std::nullopt;
    ReadingSubspaces r;
    r.ranks.resize(N);
    r.widths.resize(N);
    for (int64_t& v : r.ranks)
        in.get(v);
    for (int64_t& v : r.widths)
        in.get(v);
    r.distance = FloatArray::zeros({n, n});
    for (float& v : r.distance.data)
        in.get(v);
    return r;
}

void saveReadingSubspaces(const std::vector<const FloatArray*>& wRed, const ReadingSubspaces& r) {
    const size_t N = wRed.size();
    if (N == 0 || r.ranks.size() != N || r.widths.size() != N || r.distance.data.size() != N * N) return;
    const Key k = hashLayers(wRed);
    const std::string path = cacheFile("reading", k);
    if (path.empty()) return;
    std::string out;
    out.append(kReadingMagic, 8);
    put(out, kVersion);
    put(out, uint32_t{0});
    put(out, static_cast<int64_t>(N));
    put(out, k.a);
    put(out, k.b);
    for (int64_t v : r.ranks)
        put(out, v);
    for (int64_t v : r.widths)
        put(out, v);
    for (float v : r.distance.data)
        put(out, v);
    writeCacheFile(path, out);
}

namespace {
constexpr char kLifterMagic[8] = {'G', 'W', 'B', 'L', 'I', 'F', 'T', '\0'};
} // namespace

std::shared_ptr<const geo::PlaneLifter> loadLifter(const FloatArray& wRed) {
    if (wRed.shape.size() != 2) return nullptr;
    const Key k = hashWeights(wRed);
    const std::optional<std::vector<uint8_t>> file = readCacheFile(cacheFile("lifter", k));
    if (!file) return nullptr;
    const std::vector<uint8_t>& bytes = *file;
    Reader in{bytes};
    int64_t r = 0, d = 0, rank = 0;
    uint64_t ha = 0, hb = 0;
    if (!readHeader(in, kLifterMagic) || !in.get(r) || !in.get(d) || !in.get(rank) || !in.get(ha) || !in.get(hb) ||
        ha != k.a || hb != k.b || r != wRed.shape[0] || d != wRed.shape[1] || rank < 0 || rank > r)
        return nullptr;
    if (bytes.size() != in.at + static_cast<size_t>(d * r) * 8) return nullptr;
    Eigen::MatrixXd pinv(d, r);
    std::memcpy(pinv.data(), bytes.data() + in.at, static_cast<size_t>(d * r) * 8);
    return std::make_shared<const geo::PlaneLifter>(std::move(pinv), rank, r);
}

void saveLifter(const FloatArray& wRed, const geo::PlaneLifter& lifter) {
    if (wRed.shape.size() != 2) return;
    const int64_t r = wRed.shape[0], d = wRed.shape[1];
    if (lifter.pinv().rows() != d || lifter.pinv().cols() != r) return;
    const Key k = hashWeights(wRed);
    const std::string path = cacheFile("lifter", k);
    if (path.empty()) return;
    std::string out;
    out.append(kLifterMagic, 8);
    put(out, kVersion);
    put(out, uint32_t{0});
    put(out, r);
    put(out, d);
    put(out, lifter.rank());
    put(out, k.a);
    put(out, k.b);
    out.append(reinterpret_cast<const char*>(lifter.pinv().data()), static_cast<size_t>(d * r) * 8);
    writeCacheFile(path, out);
}

} // namespace gwb::engine::analysis_detail
