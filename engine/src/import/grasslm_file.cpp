// GrassLM's .grasslm weight file (grasslm_file.h).
#include "import/grasslm_file.h"

#include <cmath>
#include <cstring>
#include <string>

namespace gwb::engine {

namespace {

constexpr uint32_t kMaxDim = 1u << 24;    ///< any one extent, and each header size
constexpr uint32_t kMaxTensors = 100000;  ///< entries of the weight table
constexpr uint32_t kMaxNameLength = 4096; ///< bytes of one name
constexpr uint32_t kMaxRank = 8;

class Reader {
public:
    explicit Reader(const std::vector<uint8_t>& bytes) : m_bytes(bytes) {}
    size_t at() const { return m_at; }
    size_t left() const { return m_bytes.size() - m_at; }
    uint32_t u32(const std::string& what) {
        if (left() < 4)
            throw TensorFileError("grasslm: the file ends inside " + what + " (at byte " + std::to_string(m_at) + ")");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k)
            v |= static_cast<uint32_t>(m_bytes[m_at + static_cast<size_t>(k)]) << (8 * k);
        m_at += 4;
        return v;
    }
    std::vector<uint8_t> take(size_t n, const std::string& what) {
        if (left() < n)
            throw TensorFileError("grasslm: the file ends inside " + what + " (" + std::to_string(n) +
                                  " bytes needed, " + std::to_string(left()) + " left)");
        std::vector<uint8_t> out(m_bytes.begin() + static_cast<std::ptrdiff_t>(m_at),
                                 m_bytes.begin() + static_cast<std::ptrdiff_t>(m_at + n));
        m_at += n;
        return out;
    }
    void seek(size_t to) { m_at = to; }

private:
    const std::vector<uint8_t>& m_bytes;
    size_t m_at = 0;
};

std::string shapeText(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

void expectShape(const TensorFile& f, const std::string& name, const std::vector<int64_t>& shape,
                 const std::string& why) {
    const auto it = f.tensors.find(name);
    if (it == f.tensors.end()) throw TensorFileError("grasslm: no tensor '" + name + "' (" + why + ")");
    if (it->second.shape != shape)
        throw TensorFileError("grasslm: '" + name + "' is " + shapeText(it->second.shape) + " but the header says " +
                              shapeText(shape) + " (" + why + ")");
}

} // namespace

bool looksLikeGrassLM(const std::vector<uint8_t>& bytes) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), "GRLM", 4) == 0;
}

TensorFile readGrassLMBytes(const std::vector<uint8_t>& bytes) {
    if (!looksLikeGrassLM(bytes)) throw TensorFileError("grasslm: the file does not start with GRLM");
    if (bytes.size() < 68)
        throw TensorFileError("grasslm: " + std::to_string(bytes.size()) +
                              " bytes, shorter than the 64-byte header and the table's count");
    Reader in(bytes);
    in.seek(4);
    const uint32_t version = in.u32("the header");
    if (version != 1)
        throw TensorFileError("grasslm: format version " + std::to_string(version) + " (this reader knows version 1)");
    const char* names[] = {"n_layers", "d_model", "d_reduce", "d_ff", "vocab_size", "max_seq_len"};
    uint32_t h[6];
    for (int k = 0; k < 6; ++k) {
        h[k] = in.u32("the header");
        if (h[k] == 0 || h[k] > kMaxDim)
            throw TensorFileError(std::string("grasslm: header ") + names[k] + " is " + std::to_string(h[k]));
    }
    const uint32_t dtype = in.u32("the header");
    if (dtype > 1)
        throw TensorFileError("grasslm: dtype code " + std::to_string(dtype) + " (0 = float32, 1 = float16)");
    in.seek(64);
    const uint32_t count = in.u32("the weight table's count");
    if (count == 0 || count > kMaxTensors)
        throw TensorFileError("grasslm: the weight table lists " + std::to_string(count) + " tensors");
    TensorFile out;
    out.format = "grasslm";
    const size_t elementSize = dtype == 0 ? 4 : 2;
    for (uint32_t t = 0; t < count; ++t) {
        const std::string at = "tensor " + std::to_string(t);
        const uint32_t nameLength = in.u32("the name length of " + at);
        if (nameLength == 0 || nameLength > kMaxNameLength)
            throw TensorFileError("grasslm: " + at + " has a name of " + std::to_string(nameLength) + " bytes");
        const std::vector<uint8_t> nameBytes = in.take(nameLength, "the name of " + at);
        const std::string name(nameBytes.begin(), nameBytes.end());
        const uint32_t rank = in.u32("the rank of '" + name + "'");
        if (rank > kMaxRank) throw TensorFileError("grasslm: '" + name + "' has rank " + std::to_string(rank));
        RawTensor r;
        r.dtype = dtype == 0 ? ScalarType::Float32 : ScalarType::Float16;
        uint64_t numel = 1;
        for (uint32_t k = 0; k < rank; ++k) {
            const uint32_t extent = in.u32("the shape of '" + name + "'");
            if (extent > kMaxDim)
                throw TensorFileError("grasslm: '" + name + "' has an extent of " + std::to_string(extent));
            r.shape.push_back(extent);
            numel *= extent;
            if (numel * elementSize > in.left())
                throw TensorFileError("grasslm: '" + name + "' needs more bytes than the file has left");
        }
        r.bytes = in.take(static_cast<size_t>(numel) * elementSize, "the data of '" + name + "'");
        if (out.tensors.count(name)) throw TensorFileError("grasslm: two tensors are called '" + name + "'");
        out.tensors[name] = std::move(r);
    }
    if (in.left() != 0)
        throw TensorFileError("grasslm: " + std::to_string(in.left()) + " bytes after the last of the " +
                              std::to_string(count) + " tensors");

    // The header describes the tensors: hold it to them.
    const int64_t N = h[0], d = h[1], r = h[2], dff = h[3], V = h[4], Lmax = h[5];
    expectShape(out, "tok_embed.weight", {V, d}, "vocab_size x d_model");
    expectShape(out, "pos_embed.weight", {Lmax, d}, "max_seq_len x d_model");
    for (int64_t l = 0; l < N; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        if (!out.tensors.count(p + "mixing.plucker_encoder.W_red.weight"))
            throw TensorFileError("grasslm: the header says " + std::to_string(N) + " layers but there is no '" + p +
                                  "mixing.plucker_encoder.W_red.weight'");
        expectShape(out, p + "mixing.plucker_encoder.W_red.weight", {r, d}, "d_reduce x d_model");
        expectShape(out, p + "ffn.0.weight", {dff, d}, "d_ff x d_model");
    }
    if (out.tensors.count("blocks." + std::to_string(N) + ".mixing.plucker_encoder.W_red.weight"))
        throw TensorFileError("grasslm: the file has more blocks than the header's " + std::to_string(N) + " layers");

    // window_offsets: one float per block -> the per-block offsets the layout reads.
    if (const auto it = out.tensors.find("window_offsets"); it != out.tensors.end()) {
        const std::vector<float> v = it->second.toFloat();
        if (static_cast<int64_t>(v.size()) != N)
            throw TensorFileError("grasslm: window_offsets holds " + std::to_string(v.size()) + " values for " +
                                  std::to_string(N) + " layers");
        for (int64_t l = 0; l < N; ++l) {
            const float x = v[static_cast<size_t>(l)];
            if (!(x >= 1) || x != std::floor(x) || x > static_cast<float>(Lmax))
                throw TensorFileError("grasslm: window_offsets[" + std::to_string(l) + "] is " + std::to_string(x) +
                                      ", not an offset between 1 and max_seq_len");
            RawTensor o;
            o.dtype = ScalarType::Int64;
            o.shape = {1};
            const int64_t offset = static_cast<int64_t>(x);
            o.bytes.resize(8);
            std::memcpy(o.bytes.data(), &offset, 8);
            out.tensors["blocks." + std::to_string(l) + ".mixing.window_offsets"] = std::move(o);
        }
        out.tensors.erase(it);
    } else {
        out.warnings.push_back("grasslm: no window_offsets in the file: the layout's schedule is used");
    }
    // lm_head.weight is tok_embed.weight (tied); the exporter leaves it out.
    if (!out.tensors.count("lm_head.weight")) out.tensors["lm_head.weight"] = out.tensors.at("tok_embed.weight");
    out.metadata["grasslm.version"] = std::to_string(version);
    out.metadata["grasslm.dtype"] = dtype == 0 ? "float32" : "float16";
    for (int k = 0; k < 6; ++k)
        out.metadata[std::string("grasslm.") + names[k]] = std::to_string(h[k]);
    return out;
}

} // namespace gwb::engine
