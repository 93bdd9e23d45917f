#include "import/zip_reader.h"

#include <algorithm>
#include <fstream>

namespace gwb::engine {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;
constexpr uint32_t kCentralHeaderSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr size_t kEndSize = 22;           // end-of-central-directory record without comment
constexpr size_t kCentralHeaderSize = 46; // central directory header without name/extra/comment
constexpr size_t kLocalHeaderSize = 30;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;

/// Bounds-checked little-endian reads: every access to the archive goes through here.
class Cursor {
public:
    explicit Cursor(const std::vector<uint8_t>& b) : m_b(b) {}
    uint64_t le(uint64_t pos, int n) const {
        need(pos, static_cast<uint64_t>(n));
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; --i)
            v = (v << 8) | m_b[static_cast<size_t>(pos) + static_cast<size_t>(i)];
        return v;
    }
    void need(uint64_t pos, uint64_t n) const {
        if (pos > m_b.size() || n > m_b.size() - pos)
            throw ZipError("zip: truncated archive (a record points past the end of the file)");
    }

private:
    const std::vector<uint8_t>& m_b;
};

} // namespace

bool ZipReader::looksLikeZip(const std::vector<uint8_t>& bytes) {
    return bytes.size() >= 4 && Cursor(bytes).le(0, 4) == kLocalHeaderSig;
}

ZipReader ZipReader::fromFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ZipError("zip: cannot open '" + path + "'");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return ZipReader(std::move(bytes));
}

ZipReader::ZipReader(std::vector<uint8_t> bytes) : m_bytes(std::move(bytes)) {
    const Cursor c(m_bytes);
    if (m_bytes.size() < kEndSize) throw ZipError("zip: file too small to be an archive");
    // The end record sits in the last 22 + (up to 65535 comment) bytes; search backwards.
    const size_t lowest = m_bytes.size() > kEndSize + 0xFFFF ? m_bytes.size() - kEndSize - 0xFFFF : 0;
    size_t end = m_bytes.size() - kEndSize;
    bool found = false;
    for (;; --end) {
        if (c.le(end, 4) == kEndSig) {
            found = true;
            break;
        }
        if (end == lowest) break;
    }
    if (!found) throw ZipError("zip: no end-of-central-directory record (not a zip archive, or truncated)");

    uint64_t count = c.le(end + 10, 2);
    uint64_t cdSize = c.le(end + 12, 4);
    uint64_t cdOffset = c.le(end + 16, 4);
    if ((count == 0xFFFF || cdSize == kMax32 || cdOffset == kMax32) && end >= 20 &&
        c.le(end - 20, 4) == kZip64LocatorSig) {
        const uint64_t z64 = c.le(end - 20 + 8, 8);
        if (c.le(z64, 4) != kZip64EndSig) throw ZipError("zip: ZIP64 locator points at no ZIP64 end record");
        count = c.le(z64 + 32, 8);
        cdSize = c.le(z64 + 40, 8);
        cdOffset = c.le(z64 + 48, 8);
    }
    c.need(cdOffset, cdSize);
    // Each central header takes at least 46 bytes: a count larger than that is a lie.
    if (count > cdSize / kCentralHeaderSize + 1)
        throw ZipError("zip: central directory claims more records than it can hold");

    uint64_t pos = cdOffset;
    for (uint64_t i = 0; i < count; ++i) {
        if (c.le(pos, 4) != kCentralHeaderSig)
            throw ZipError("zip: bad central directory header #" + std::to_string(i));
        Entry e;
        e.method = static_cast<uint16_t>(c.le(pos + 10, 2));
        uint64_t compSize = c.le(pos + 20, 4);
        uint64_t size = c.le(pos + 24, 4);
        const uint64_t nameLen = c.le(pos + 28, 2);
        const uint64_t extraLen = c.le(pos + 30, 2);
        const uint64_t commentLen = c.le(pos + 32, 2);
        uint64_t offset = c.le(pos + 42, 4);
        c.need(pos + kCentralHeaderSize, nameLen + extraLen + commentLen);
        std::string name(reinterpret_cast<const char*>(m_bytes.data() + pos + kCentralHeaderSize),
                         static_cast<size_t>(nameLen));
        // ZIP64 extended information: 64-bit values for exactly the fields saturated above.
        uint64_t x = pos + kCentralHeaderSize + nameLen;
        const uint64_t xEnd = x + extraLen;
        while (x + 4 <= xEnd) {
            const uint64_t id = c.le(x, 2);
            const uint64_t len = c.le(x + 2, 2);
            if (x + 4 + len > xEnd) throw ZipError("zip: extra field of '" + name + "' overruns its header");
            if (id == 0x0001) {
                uint64_t f = x + 4;
                auto take = [&](uint64_t& field) {
                    if (field != kMax32) return;
                    if (f + 8 > x + 4 + len) throw ZipError("zip: short ZIP64 field in '" + name + "'");
                    field = c.le(f, 8);
                    f += 8;
                };
                take(size);
                take(compSize);
                take(offset);
            }
            x += 4 + len;
        }
        if (e.method == 0 && compSize != size)
            throw ZipError("zip: stored record '" + name + "' has different packed and unpacked sizes");
        e.size = size;
        e.localHeaderOffset = offset;
        if (m_entries.count(name)) throw ZipError("zip: duplicate record '" + name + "'");
        m_entries[name] = e;
        m_names.push_back(std::move(name));
        pos += kCentralHeaderSize + nameLen + extraLen + commentLen;
    }
}

std::string_view ZipReader::read(const std::string& name) const {
    const auto it = m_entries.find(name);
    if (it == m_entries.end()) throw ZipError("zip: archive has no record '" + name + "'");
    const Entry& e = it->second;
    if (e.method != 0)
        throw ZipError("zip: record '" + name + "' is compressed (method " + std::to_string(e.method) +
                       "); torch.save writes stored records only");
    const Cursor c(m_bytes);
    if (c.le(e.localHeaderOffset, 4) != kLocalHeaderSig) throw ZipError("zip: bad local header for '" + name + "'");
    const uint64_t nameLen = c.le(e.localHeaderOffset + 26, 2);
    const uint64_t extraLen = c.le(e.localHeaderOffset + 28, 2);
    const uint64_t data = e.localHeaderOffset + kLocalHeaderSize + nameLen + extraLen;
    c.need(data, e.size);
    return {reinterpret_cast<const char*>(m_bytes.data() + data), static_cast<size_t>(e.size)};
}

} // namespace gwb::engine
