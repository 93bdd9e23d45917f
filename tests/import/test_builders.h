#pragma once
// Small writers used only by the import tests: a STORED zip archive and raw pickle opcodes, so
// tests can build valid and hostile inputs byte by byte without Python.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine::test {

/// A zip archive with STORED records, laid out as torch.save lays them out.
inline std::vector<uint8_t> makeZip(const std::vector<std::pair<std::string, std::string>>& records) {
    std::vector<uint8_t> out, central;
    auto put = [](std::vector<uint8_t>& v, uint64_t x, int n) {
        for (int i = 0; i < n; ++i)
            v.push_back(static_cast<uint8_t>(x >> (8 * i)));
    };
    for (const auto& [name, data] : records) {
        const uint64_t offset = out.size();
        put(out, 0x04034b50, 4);
        put(out, 20, 2);
        put(out, 0, 2);
        put(out, 0, 2);
        put(out, 0, 2);
        put(out, 0, 2);
        put(out, 0, 4);
        put(out, data.size(), 4);
        put(out, data.size(), 4);
        put(out, name.size(), 2);
        put(out, 0, 2);
        out.insert(out.end(), name.begin(), name.end());
        out.insert(out.end(), data.begin(), data.end());
        put(central, 0x02014b50, 4);
        put(central, 20, 2);
        put(central, 20, 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 4);
        put(central, data.size(), 4);
        put(central, data.size(), 4);
        put(central, name.size(), 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 2);
        put(central, 0, 4);
        put(central, offset, 4);
        central.insert(central.end(), name.begin(), name.end());
    }
    const uint64_t cdOffset = out.size();
    out.insert(out.end(), central.begin(), central.end());
    put(out, 0x06054b50, 4);
    put(out, 0, 2);
    put(out, 0, 2);
    put(out, records.size(), 2);
    put(out, records.size(), 2);
    put(out, central.size(), 4);
    put(out, cdOffset, 4);
    put(out, 0, 2);
    return out;
}

/// Pickle opcodes, appended one call at a time.
class PickleWriter {
public:
    PickleWriter() { m_s += "\x80\x02"; }
    PickleWriter& raw(const std::string& s) {
        m_s += s;
        return *this;
    }
    PickleWriter& op(char c) {
        m_s += c;
        return *this;
    }
    PickleWriter& global(const std::string& module, const std::string& name) {
        m_s += 'c' + module + '\n' + name + '\n';
        return *this;
    }
    PickleWriter& str(const std::string& s) {
        m_s += 'X';
        le(s.size(), 4);
        m_s += s;
        return *this;
    }
    PickleWriter& integer(int32_t v) {
        m_s += 'J';
        le(static_cast<uint32_t>(v), 4);
        return *this;
    }
    PickleWriter& ints(const std::vector<int32_t>& v) { // a tuple of ints
        m_s += '(';
        for (int32_t x : v)
            integer(x);
        m_s += 't';
        return *this;
    }
    /// ('storage', torch.<type>, key, 'cpu', numel) BINPERSID
    PickleWriter& storage(const std::string& type, const std::string& key, int32_t numel) {
        op('(').str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t').op('Q');
        return *this;
    }
    /// torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
    PickleWriter& tensor(const std::string& type, const std::string& key, int32_t numel, int32_t offset,
                         const std::vector<int32_t>& size, const std::vector<int32_t>& stride) {
        global("torch._utils", "_rebuild_tensor_v2").op('(');
        storage(type, key, numel).integer(offset).ints(size).ints(stride);
        op('\x89').global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
        return *this;
    }
    std::string done() { return m_s + '.'; }

private:
    void le(uint64_t x, int n) {
        for (int i = 0; i < n; ++i)
            m_s += static_cast<char>(x >> (8 * i));
    }
    std::string m_s;
};

/// `n` float32 values as little-endian bytes.
inline std::string floatBytes(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

} // namespace gwb::engine::test
