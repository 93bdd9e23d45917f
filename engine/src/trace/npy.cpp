#include "gwb/engine/npy.h"

#include "gwb/engine/file_error.h"

#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <unistd.h>

namespace gwb::engine {

static_assert(std::endian::native == std::endian::little, "NPY/NPZ writer assumes a little-endian host");

std::string npyDescr(NpyType type) {
    switch (type) {
    case NpyType::Float32:
        return "<f4";
    case NpyType::Float64:
        return "<f8";
    case NpyType::Int32:
        return "<i4";
    case NpyType::Int64:
        return "<i8";
    case NpyType::UInt8:
        return "|u1";
    }
    throw std::invalid_argument("npyDescr: unknown type");
}

size_t npyItemSize(NpyType type) {
    switch (type) {
    case NpyType::Float32:
        return 4;
    case NpyType::Float64:
        return 8;
    case NpyType::Int32:
        return 4;
    case NpyType::Int64:
        return 8;
    case NpyType::UInt8:
        return 1;
    }
    throw std::invalid_argument("npyItemSize: unknown type");
}

int64_t NpyArray::count() const {
    return Array<float>::count(shape);
}

template <typename T> std::vector<T> NpyArray::values() const {
    const auto n = static_cast<size_t>(count());
    if (bytes.size() != n * npyItemSize(type)) throw std::runtime_error("NpyArray: byte count does not match shape");
    std::vector<T> out(n);
    auto convert = [&](auto tag) {
        using S = decltype(tag);
        for (size_t i = 0; i < n; ++i) {
            S v;
            std::memcpy(&v, bytes.data() + i * sizeof(S), sizeof(S));
            if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S>) {
                // A float outside T's range (or NaN) has no integer value: refuse it.
                const auto x = static_cast<long double>(v);
                if (!(x >= static_cast<long double>(std::numeric_limits<T>::min()) &&
                      x <= static_cast<long double>(std::numeric_limits<T>::max())))
                    throw std::runtime_error("NpyArray: value " + std::to_string(v) + " at index " + std::to_string(i) +
                                             " is not an integer in range");
            }
            out[i] = static_cast<T>(v);
        }
    };
    switch (type) {
    case NpyType::Float32:
        convert(float{});
        break;
    case NpyType::Float64:
        convert(double{});
        break;
    case NpyType::Int32:
        convert(int32_t{});
        break;
    case NpyType::Int64:
        convert(int64_t{});
        break;
    case NpyType::UInt8:
        convert(uint8_t{});
        break;
    }
    return out;
}
template std::vector<float> NpyArray::values<float>() const;
template std::vector<double> NpyArray::values<double>() const;
template std::vector<int32_t> NpyArray::values<int32_t>() const;
template std::vector<int64_t> NpyArray::values<int64_t>() const;
template std::vector<uint8_t> NpyArray::values<uint8_t>() const;

namespace {
constexpr char kMagic[] = "\x93NUMPY";

std::string shapeString(const std::vector<int64_t>& shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) {
        s += std::to_string(shape[i]);
        if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
        if (i + 1 < shape.size()) s += " ";
    }
    return s + ")";
}

template <typename T> std::vector<uint8_t> encodeArray(NpyType type, const Array<T>& a) {
    if (static_cast<int64_t>(a.data.size()) != Array<T>::count(a.shape))
        throw std::invalid_argument("encodeNpy: data size does not match shape");
    return encodeNpy(type, a.shape, a.data.data());
}
} // namespace

std::vector<uint8_t> encodeNpy(NpyType type, const std::vector<int64_t>& shape, const void* data) {
    for (int64_t e : shape)
        if (e < 0) throw std::invalid_argument("encodeNpy: negative extent in shape " + shapeString(shape));
    std::string header =
        "{'descr': '" + npyDescr(type) + "', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }";
    // Pad with spaces so that magic + version + length + header (ending in '\n') is a multiple of 64.
    const size_t preamble = 6 + 2 + 2;
    const size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
    header.append(total - preamble - header.size() - 1, ' ');
    header += '\n';
    if (header.size() > 65535) throw std::invalid_argument("encodeNpy: header too long for format 1.0");
    const size_t payload = static_cast<size_t>(Array<float>::count(shape)) * npyItemSize(type);
    if (payload > 0 && data == nullptr) throw std::invalid_argument("encodeNpy: null data");
    // Sized up front and filled with memcpy (GCC 12 misreads vector::insert here as an overflow).
    std::vector<uint8_t> out(total + payload);
    std::memcpy(out.data(), kMagic, 6);
    out[6] = 1; // format 1.0
    out[7] = 0;
    out[8] = static_cast<uint8_t>(header.size() & 0xff);
    out[9] = static_cast<uint8_t>(header.size() >> 8);
    std::memcpy(out.data() + preamble, header.data(), header.size());
    if (payload > 0) std::memcpy(out.data() + total, data, payload);
    return out;
}

std::vector<uint8_t> encodeNpy(const Array<float>& a) {
    return encodeArray(NpyType::Float32, a);
}
std::vector<uint8_t> encodeNpy(const Array<double>& a) {
    return encodeArray(NpyType::Float64, a);
}
std::vector<uint8_t> encodeNpy(const Array<int32_t>& a) {
    return encodeArray(NpyType::Int32, a);
}
std::vector<uint8_t> encodeNpy(const Array<int64_t>& a) {
    return encodeArray(NpyType::Int64, a);
}
std::vector<uint8_t> encodeNpy(const Array<uint8_t>& a) {
    return encodeArray(NpyType::UInt8, a);
}

NpyArray parseNpy(const std::vector<uint8_t>& b) {
    if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0)
        throw std::runtime_error("parseNpy: not an NPY file (bad magic)");
    const int major = b[6];
    size_t headerLen = 0, pos = 0;
    if (major == 1) {
        headerLen = b[8] | (size_t{b[9]} << 8);
        pos = 10;
    } else if (major == 2 || major == 3) {
        if (b.size() < 12) throw std::runtime_error("parseNpy: truncated header");
        headerLen = b[8] | (size_t{b[9]} << 8) | (size_t{b[10]} << 16) | (size_t{b[11]} << 24);
        pos = 12;
    } else {
        throw std::runtime_error("parseNpy: unsupported NPY version " + std::to_string(major));
    }
    if (b.size() < pos + headerLen) throw std::runtime_error("parseNpy: truncated header");
    const std::string header(b.begin() + static_cast<std::ptrdiff_t>(pos),
                             b.begin() + static_cast<std::ptrdiff_t>(pos + headerLen));
    auto field = [&](const std::string& key) {
        const size_t k = header.find("'" + key + "'");
        if (k == std::string::npos) throw std::runtime_error("parseNpy: header lacks '" + key + "'");
        const size_t colon = header.find(':', k);
        if (colon == std::string::npos) throw std::runtime_error("parseNpy: malformed header");
        return colon + 1;
    };
    NpyArray out;
    {
        size_t q1 = header.find('\'', field("descr"));
        size_t q2 = q1 == std::string::npos ? q1 : header.find('\'', q1 + 1);
        if (q2 == std::string::npos) throw std::runtime_error("parseNpy: malformed descr");
        const std::string d = header.substr(q1 + 1, q2 - q1 - 1);
        if (d == "<f4")
            out.type = NpyType::Float32;
        else if (d == "<f8")
            out.type = NpyType::Float64;
        else if (d == "<i4")
            out.type = NpyType::Int32;
        else if (d == "<i8")
            out.type = NpyType::Int64;
        else if (d == "|u1" || d == "<u1")
            out.type = NpyType::UInt8;
        else
            throw std::runtime_error("parseNpy: unsupported dtype '" + d + "'");
    }
    {
        const size_t f = header.find_first_not_of(' ', field("fortran_order"));
        if (f == std::string::npos) throw std::runtime_error("parseNpy: malformed fortran_order");
        if (header.compare(f, 5, "False") != 0)
            throw std::runtime_error("parseNpy: Fortran-order arrays are not supported");
    }
    {
        const size_t open = header.find('(', field("shape"));
        const size_t close = open == std::string::npos ? open : header.find(')', open);
        if (close == std::string::npos) throw std::runtime_error("parseNpy: malformed shape");
        const std::string s = header.substr(open + 1, close - open - 1);
        // Extents are plain decimal numbers separated by commas and spaces.
        size_t i = 0;
        while (i < s.size()) {
            while (i < s.size() && (s[i] == ' ' || s[i] == ','))
                ++i;
            if (i >= s.size()) break;
            if (s[i] < '0' || s[i] > '9') throw std::runtime_error("parseNpy: malformed shape (" + s + ")");
            int64_t e = 0;
            for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
                if (e > (std::numeric_limits<int64_t>::max() - 9) / 10)
                    throw std::runtime_error("parseNpy: shape (" + s + ") has an extent too large");
                e = e * 10 + (s[i] - '0');
            }
            out.shape.push_back(e);
        }
    }
    // The element count must fit in int64 (the product of the non-zero extents, so that count()
    // is defined) and the data must be present, checked before anything is allocated.
    const size_t start = pos + headerLen;
    const size_t available = b.size() - start, item = npyItemSize(out.type);
    int64_t nonZero = 1;
    bool empty = false;
    for (int64_t e : out.shape) {
        if (e == 0) {
            empty = true;
        } else {
            if (nonZero > std::numeric_limits<int64_t>::max() / e)
                throw std::runtime_error("parseNpy: shape " + shapeString(out.shape) + " has too many elements");
            nonZero *= e;
        }
    }
    if (!empty && static_cast<uint64_t>(nonZero) > available / item)
        throw std::runtime_error("parseNpy: truncated data (" + std::to_string(available) + " bytes for " +
                                 std::to_string(nonZero) + " elements of " + std::to_string(item) + " bytes)");
    const size_t payload = empty ? 0 : static_cast<size_t>(nonZero) * item;
    out.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(start),
                     b.begin() + static_cast<std::ptrdiff_t>(start + payload));
    return out;
}

void writeBytesAtomic(const std::string& path, const void* data, size_t size) {
    if (path.empty()) throw std::runtime_error("cannot write '': empty path");
    static std::atomic<unsigned> counter{0};
    const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    // Failures name `path`, never the temporary file (FileError: errno kept for the front ends).
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw fileWriteError(path, errno);
    const bool ok =
        (size == 0 || std::fwrite(data, 1, size, f) == size) && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    const int err = errno;
    if (std::fclose(f) != 0 || !ok) {
        const int closeErr = errno;
        std::remove(tmp.c_str());
        throw fileWriteError(path, ok ? closeErr : err);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int renameErr = errno;
        std::remove(tmp.c_str());
        throw fileWriteError(path, renameErr);
    }
}

std::vector<uint8_t> readBinaryFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeNpy(const std::string& path, const Array<float>& a) {
    auto b = encodeNpy(a);
    writeBytesAtomic(path, b.data(), b.size());
}
void writeNpy(const std::string& path, const Array<double>& a) {
    auto b = encodeNpy(a);
    writeBytesAtomic(path, b.data(), b.size());
}
void writeNpy(const std::string& path, const Array<int32_t>& a) {
    auto b = encodeNpy(a);
    writeBytesAtomic(path, b.data(), b.size());
}
void writeNpy(const std::string& path, const Array<int64_t>& a) {
    auto b = encodeNpy(a);
    writeBytesAtomic(path, b.data(), b.size());
}
void writeNpy(const std::string& path, const Array<uint8_t>& a) {
    auto b = encodeNpy(a);
    writeBytesAtomic(path, b.data(), b.size());
}

NpyArray readNpy(const std::string& path) {
    try {
        return parseNpy(readBinaryFile(path));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

uint32_t crc32Ieee(const uint8_t* data, size_t size, uint32_t crc) {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    crc = ~crc;
    for (size_t i = 0; i < size; ++i)
        crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

} // namespace gwb::engine
