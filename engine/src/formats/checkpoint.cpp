// safetensors reading (with structural checks) and writing.

#include "gwb/engine/checkpoint.h"

#include "formats/file_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace gwb::engine {

using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& problem) {
    throw std::runtime_error(what + ": " + problem);
}

template <typename T> T readLe(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v); // the platforms we build for are little-endian
    return v;
}

/// Header length limit: headers are tiny; a huge value means a corrupt or foreign file.
constexpr uint64_t kMaxHeader = 100ull << 20;

/// The largest end offset any tensor entry of `header` asks for (entries without two unsigned
/// data_offsets are skipped: their own check names them). The file needs 8 + header + this.
uint64_t largestDataEnd(const json& header) {
    uint64_t end = 0;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const json& e = it.value();
        if (it.key() == "__metadata__" || !e.is_object() || !e.contains("data_offsets")) continue;
        const json& off = e["data_offsets"];
        if (off.is_array() && off.size() == 2 && off[1].is_number_unsigned())
            end = std::max(end, off[1].get<uint64_t>());
    }
    return end;
}

} // namespace

int64_t dtypeSize(const std::string& d) {
    if (d == "F64" || d == "I64" || d == "U64") return 8;
    if (d == "F32" || d == "I32" || d == "U32") return 4;
    if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
    if (d == "U8" || d == "I8" || d == "BOOL") return 1;
    return 0;
}

int64_t StoredTensor::numel() const {
    int64_t n = 1;
    for (int64_t e : shape)
        n *= e;
    return n;
}

uint16_t floatToHalf(float value) {
    const uint32_t x = std::bit_cast<uint32_t>(value);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // overflow -> inf
    if (absx < 0x38800000u) {                                              // subnormal half or zero
        const float f = std::bit_cast<float>(absx);
        // Scale so the subnormal step 2^-24 becomes 1, then round to nearest even.
        const float scaled = f * 16777216.0f;
        const auto r = static_cast<uint32_t>(std::nearbyint(scaled));
        return static_cast<uint16_t>(sign | r);
    }
    const uint32_t mant = absx & 0x7fffffu;
    uint32_t h = ((absx >> 23) - 112u) << 10 | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // carries into the exponent correctly
    return static_cast<uint16_t>(sign | h);
}

float halfToFloat(uint16_t bits) {
    const uint32_t sign = (bits & 0x8000u) << 16;
    const uint32_t exp = (bits >> 10) & 0x1fu;
    const uint32_t mant = bits & 0x3ffu;
    if (exp == 0) {
        const float f = static_cast<float>(mant) / 16777216.0f; // mant * 2^-24
        return sign ? -f : f;
    }
    if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

float bfloat16ToFloat(uint16_t bits) {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

std::vector<float> StoredTensor::toFloat() const {
    const int64_t n = numel();
    std::vector<float> out(static_cast<size_t>(n));
    const char* p = bytes.data();
    for (int64_t i = 0; i < n; ++i) {
        float v;
        if (dtype == "F32")
            v = readLe<float>(p + 4 * i);
        else if (dtype == "F16")
            v = halfToFloat(readLe<uint16_t>(p + 2 * i));
        else if (dtype == "BF16")
            v = bfloat16ToFloat(readLe<uint16_t>(p + 2 * i));
        else if (dtype == "F64")
            v = static_cast<float>(readLe<double>(p + 8 * i));
        else if (dtype == "I64")
            v = static_cast<float>(readLe<int64_t>(p + 8 * i));
        else if (dtype == "I32")
            v = static_cast<float>(readLe<int32_t>(p + 4 * i));
        else if (dtype == "U8")
            v = static_cast<float>(static_cast<unsigned char>(p[i]));
        else
            throw std::runtime_error("tensor dtype " + dtype + " cannot be converted to float");
        out[static_cast<size_t>(i)] = v;
    }
    return out;
}

FloatArray StoredTensor::toArray() const {
    return FloatArray(shape, toFloat());
}

StoredTensor makeStoredTensor(const std::vector<int64_t>& shape, const float* values, const std::string& dtype) {
    StoredTensor t;
    t.dtype = dtype;
    t.shape = shape;
    const int64_t n = t.numel();
    if (dtype == "F32") {
        t.bytes.assign(reinterpret_cast<const char*>(values), static_cast<size_t>(n) * 4);
    } else if (dtype == "F16") {
        t.bytes.resize(static_cast<size_t>(n) * 2);
        for (int64_t i = 0; i < n; ++i) {
            const uint16_t h = floatToHalf(values[i]);
            std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        }
    } else {
        throw std::invalid_argument("cannot store floats as " + dtype + " (use F32 or F16)");
    }
    return t;
}

SafetensorsHeader parseSafetensorsHeader(const char* bytes, size_t size, const std::string& what) {
    if (size < 8) bad(what, "file is " + std::to_string(size) + " bytes, too short for a safetensors header");
    const uint64_t headerLen = readLe<uint64_t>(bytes);
    if (headerLen > kMaxHeader || headerLen > size - 8)
        bad(what, "header length " + std::to_string(headerLen) + " exceeds the file size (" + std::to_string(size) +
                      " bytes): truncated or not a safetensors file");
    json header;
    try {
        header = json::parse(bytes + 8, bytes + 8 + headerLen);
    } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e999
        bad(what, std::string("header is not valid JSON (") + e.what() + ")");
    }
    if (!header.is_object()) bad(what, "header is not a JSON object");

    SafetensorsHeader file;
    const uint64_t dataStart = 8 + headerLen;
    const uint64_t dataSize = size - dataStart;
    file.dataStart = dataStart;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    std::vector<std::string> rangeNames;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const json& e = it.value();
        if (name == "__metadata__") {
            if (!e.is_object()) bad(what, "__metadata__ is not an object");
            for (auto m = e.begin(); m != e.end(); ++m) {
                if (!m.value().is_string()) bad(what, "__metadata__ value '" + m.key() + "' is not a string");
                file.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string t = "tensor '" + name + "'";
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            bad(what, t + " needs dtype, shape and data_offsets");
        if (!e["dtype"].is_string()) bad(what, t + ": dtype is not a string");
        TensorEntry st;
        st.dtype = e["dtype"].get<std::string>();
        const int64_t esize = dtypeSize(st.dtype);
        if (esize == 0) bad(what, t + ": unsupported dtype " + st.dtype);
        if (!e["shape"].is_array()) bad(what, t + ": shape is not an array");
        for (const json& s : e["shape"]) {
            if (!s.is_number_integer() || s.get<int64_t>() < 0)
                bad(what, t + ": shape has a non-integer or negative extent");
            st.shape.push_back(s.get<int64_t>());
        }
        const json& off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            bad(what, t + ": data_offsets must be two non-negative integers");
        const uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
        if (b > en || en > dataSize) {
            const std::string detail = t + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(en) +
                                       "] lie outside the data section of " + std::to_string(dataSize) + " bytes";
            // A well-formed header asking for bytes past the end is a cut-off copy (an interrupted
            // download or copy): say that first, with both sizes, then which tensor showed it.
            if (b <= en)
                bad(what, "the file is truncated: it is " + std::to_string(size) + " bytes but its header needs " +
                              std::to_string(dataStart + largestDataEnd(header)) + " bytes (" + detail + ")");
            bad(what, detail);
        }
        long double expect = esize;
        for (int64_t s : st.shape)
            expect *= static_cast<long double>(s);
        if (expect != static_cast<long double>(en - b))
            bad(what, t + ": data_offsets span " + std::to_string(en - b) + " bytes but dtype " + st.dtype +
                          " and its shape need " + std::to_string(static_cast<uint64_t>(expect)));
        st.begin = b;
        st.end = en;
        ranges.push_back({b, en});
        rangeNames.push_back(name);
        file.tensors.emplace(name, std::move(st));
    }
    std::vector<size_t> order(ranges.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
    // Overlaps first (they are the more specific fault), then gaps.
    for (size_t k = 1; k < order.size(); ++k)
        if (ranges[order[k]].first < ranges[order[k - 1]].second)
            bad(what, "tensor '" + rangeNames[order[k]] + "' overlaps tensor '" + rangeNames[order[k - 1]] + "'");
    uint64_t pos = 0;
    for (size_t k = 0; k < order.size(); ++k) {
        const auto [b, e] = ranges[order[k]];
        if (b > pos)
            bad(what, "data section has a gap of " + std::to_string(b - pos) + " bytes before tensor '" +
                          rangeNames[order[k]] + "'");
        pos = e;
    }
    if (pos != dataSize)
        bad(what, "data section has " + std::to_string(dataSize - pos) + " bytes not covered by any tensor");
    return file;
}

SafetensorsFile parseSafetensors(const std::string& bytes, const std::string& what) {
    const SafetensorsHeader header = parseSafetensorsHeader(bytes.data(), bytes.size(), what);
    SafetensorsFile file;
    file.metadata = header.metadata;
    for (const auto& [name, e] : header.tensors) {
        StoredTensor t;
        t.dtype = e.dtype;
        t.shape = e.shape;
        t.bytes.assign(bytes.data() + header.dataStart + e.begin, static_cast<size_t>(e.end - e.begin));
        file.tensors.emplace(name, std::move(t));
    }
    return file;
}

SafetensorsFile readSafetensors(const std::string& path) {
    return parseSafetensors(readFileBytes(path), path);
}

std::string serializeSafetensors(const SafetensorsFile& file) {
    json header = json::object();
    if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
    uint64_t pos = 0;
    for (const auto& [name, t] : file.tensors) {
        if (dtypeSize(t.dtype) * t.numel() != static_cast<int64_t>(t.bytes.size()))
            throw std::invalid_argument("tensor '" + name + "': byte size does not match dtype and shape");
        header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {pos, pos + t.bytes.size()}}};
        pos += t.bytes.size();
    }
    std::string h = header.dump();
    while ((h.size() + 8) % 8 != 0)
        h.push_back(' '); // align the data section to 8 bytes
    std::string out;
    out.reserve(8 + h.size() + pos);
    const uint64_t n = h.size();
    out.append(reinterpret_cast<const char*>(&n), 8);
    out += h;
    for (const auto& [name, t] : file.tensors)
        out += t.bytes;
    return out;
}

void writeSafetensors(const std::string& path, const SafetensorsFile& file) {
    writeFileAtomic(path, serializeSafetensors(file));
}

} // namespace gwb::engine
