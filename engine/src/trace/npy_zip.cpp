// NPZ = a zip archive of .npy members. We write "stored" entries (method 0) without Zip64, which
// numpy.load and every unzip tool read.
#include "gwb/engine/npy.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace gwb::engine {

namespace {
constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
// 1980-01-01 00:00 in DOS format: fixed so that identical content gives identical archives.
constexpr uint16_t kDosTime = 0, kDosDate = (0 << 9) | (1 << 5) | 1;

void put16(std::vector<uint8_t>& out, uint32_t v) {
    out.push_back(static_cast<uint8_t>(v & 0xff));
    out.push_back(static_cast<uint8_t>((v >> 8) & 0xff));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
    put16(out, v & 0xffff);
    put16(out, v >> 16);
}
uint32_t get16(const std::vector<uint8_t>& b, size_t pos) {
    if (pos + 2 > b.size()) throw std::runtime_error("zip: truncated archive");
    return b[pos] | (uint32_t{b[pos + 1]} << 8);
}
uint32_t get32(const std::vector<uint8_t>& b, size_t pos) {
    return get16(b, pos) | (get16(b, pos + 2) << 16);
}
} // namespace

void NpzWriter::addMember(const std::string& memberName, std::vector<uint8_t> bytes) {
    if (memberName.empty()) throw std::invalid_argument("NpzWriter: empty member name");
    if (memberName.size() > 65535) throw std::invalid_argument("NpzWriter: member name too long");
    for (const auto& [name, data] : m_members)
        if (name == memberName) throw std::invalid_argument("NpzWriter: duplicate member '" + memberName + "'");
    m_members.emplace_back(memberName, std::move(bytes));
}

void NpzWriter::add(const std::string& name, const Array<float>& a) {
    addMember(name + ".npy", encodeNpy(a));
}
void NpzWriter::add(const std::string& name, const Array<double>& a) {
    addMember(name + ".npy", encodeNpy(a));
}
void NpzWriter::add(const std::string& name, const Array<int32_t>& a) {
    addMember(name + ".npy", encodeNpy(a));
}
void NpzWriter::add(const std::string& name, const Array<int64_t>& a) {
    addMember(name + ".npy", encodeNpy(a));
}
void NpzWriter::add(const std::string& name, const Array<uint8_t>& a) {
    addMember(name + ".npy", encodeNpy(a));
}

void NpzWriter::add(const NpzMember& member) {
    std::visit([&](const auto& a) { add(member.name, a); }, member.values);
}

void NpzWriter::addFile(const std::string& memberName, const std::string& contents) {
    addMember(memberName, std::vector<uint8_t>(contents.begin(), contents.end()));
}

std::vector<uint8_t> NpzWriter::archive() const {
    constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
    std::vector<uint8_t> out, central;
    for (const auto& [name, data] : m_members) {
        if (data.size() >= kMax || out.size() >= kMax)
            throw std::runtime_error("NpzWriter: member '" + name + "' or archive exceeds 4 GiB (Zip64 not supported)");
        const uint32_t crc = crc32Ieee(data.data(), data.size());
        const auto offset = static_cast<uint32_t>(out.size());
        const auto size = static_cast<uint32_t>(data.size());
        put32(out, kLocalSig);
        put16(out, 20); // version needed
        put16(out, 0);  // flags
        put16(out, 0);  // method: stored
        put16(out, kDosTime);
        put16(out, kDosDate);
        put32(out, crc);
        put32(out, size); // compressed size
        put32(out, size); // uncompressed size
        put16(out, static_cast<uint32_t>(name.size()));
        put16(out, 0); // extra length
        out.insert(out.end(), name.begin(), name.end());
        out.insert(out.end(), data.begin(), data.end());

        put32(central, kCentralSig);
        put16(central, 20); // version made by
        put16(central, 20); // version needed
        put16(central, 0);
        put16(central, 0);
        put16(central, kDosTime);
        put16(central, kDosDate);
        put32(central, crc);
        put32(central, size);
        put32(central, size);
        put16(central, static_cast<uint32_t>(name.size()));
        put16(central, 0); // extra
        put16(central, 0); // comment
        put16(central, 0); // disk
        put16(central, 0); // internal attributes
        put32(central, 0); // external attributes
        put32(central, offset);
        central.insert(central.end(), name.begin(), name.end());
    }
    if (out.size() + central.size() >= kMax || m_members.size() > 65535)
        throw std::runtime_error("NpzWriter: archive exceeds 4 GiB or 65535 members (Zip64 not supported)");
    const auto cdOffset = static_cast<uint32_t>(out.size());
    out.insert(out.end(), central.begin(), central.end());
    put32(out, kEndSig);
    put16(out, 0);
    put16(out, 0);
    put16(out, static_cast<uint32_t>(m_members.size()));
    put16(out, static_cast<uint32_t>(m_members.size()));
    put32(out, static_cast<uint32_t>(central.size()));
    put32(out, cdOffset);
    put16(out, 0); // comment length
    return out;
}

void NpzWriter::write(const std::string& path) const {
    const std::vector<uint8_t> bytes = archive();
    writeBytesAtomic(path, bytes.data(), bytes.size());
}

std::map<std::string, std::vector<uint8_t>> readZipStored(const std::vector<uint8_t>& b) {
    if (b.size() < 22) throw std::runtime_error("zip: archive too short");
    // End of central directory: search backwards over a possible comment.
    size_t end = b.size() - 22;
    while (get32(b, end) != kEndSig) {
        if (end == 0 || b.size() - end > 22 + 65535)
            throw std::runtime_error("zip: end of central directory not found");
        --end;
    }
    const uint32_t entries = get16(b, end + 10);
    size_t pos = get32(b, end + 16);
    std::map<std::string, std::vector<uint8_t>> out;
    for (uint32_t e = 0; e < entries; ++e) {
        if (get32(b, pos) != kCentralSig) throw std::runtime_error("zip: bad central directory entry");
        const uint32_t method = get16(b, pos + 10), crc = get32(b, pos + 16);
        const uint32_t csize = get32(b, pos + 20), usize = get32(b, pos + 24);
        const uint32_t nameLen = get16(b, pos + 28), extraLen = get16(b, pos + 30), commentLen = get16(b, pos + 32);
        const uint32_t local = get32(b, pos + 42);
        if (pos + 46 + nameLen > b.size()) throw std::runtime_error("zip: truncated central directory");
        const std::string name(b.begin() + static_cast<std::ptrdiff_t>(pos + 46),
                               b.begin() + static_cast<std::ptrdiff_t>(pos + 46 + nameLen));
        if (method != 0 || csize != usize)
            throw std::runtime_error("zip: member '" + name + "' is compressed (only stored members are read)");
        if (get32(b, local) != kLocalSig) throw std::runtime_error("zip: bad local header for '" + name + "'");
        const size_t data = local + 30 + get16(b, local + 26) + get16(b, local + 28);
        if (data + usize > b.size()) throw std::runtime_error("zip: truncated member '" + name + "'");
        std::vector<uint8_t> bytes(b.begin() + static_cast<std::ptrdiff_t>(data),
                                   b.begin() + static_cast<std::ptrdiff_t>(data + usize));
        if (crc32Ieee(bytes.data(), bytes.size()) != crc)
            throw std::runtime_error("zip: CRC mismatch in member '" + name + "'");
        out.emplace(name, std::move(bytes));
        pos += 46 + nameLen + extraLen + commentLen;
    }
    return out;
}

} // namespace gwb::engine
