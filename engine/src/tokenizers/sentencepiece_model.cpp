// Minimal protobuf wire-format reader for SentencePiece .model files.

#include "tokenizers/sentencepiece_model.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace gwb::engine {

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw std::invalid_argument("not a valid SentencePiece model: " + what);
}

/// Iterates the fields of one message.
class WireReader {
public:
    explicit WireReader(std::string_view data) : m_data(data) {}
    bool next() {
        if (m_pos >= m_data.size()) return false;
        const uint64_t key = varint();
        m_field = static_cast<int>(key >> 3);
        m_wire = static_cast<int>(key & 7);
        switch (m_wire) {
        case 0:
            m_value = varint();
            break;
        case 1:
            m_bytes = take(8);
            break;
        case 2:
            m_bytes = take(static_cast<size_t>(varint()));
            break;
        case 5:
            m_bytes = take(4);
            break;
        default:
            bad("unsupported wire type " + std::to_string(m_wire) + " for field " + std::to_string(m_field));
        }
        return true;
    }
    int field() const { return m_field; }
    int wire() const { return m_wire; }
    uint64_t value() const { return m_value; }
    std::string_view bytes() const { return m_bytes; }
    float asFloat() const {
        if (m_wire != 5) bad("field " + std::to_string(m_field) + " is not a float");
        float f;
        std::memcpy(&f, m_bytes.data(), 4);
        return f;
    }

private:
    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (m_pos >= m_data.size()) bad("truncated varint");
            const auto b = static_cast<unsigned char>(m_data[m_pos++]);
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        bad("varint too long");
    }
    std::string_view take(size_t n) {
        if (n > m_data.size() - m_pos) bad("field runs past the end of the data");
        const std::string_view s = m_data.substr(m_pos, n);
        m_pos += n;
        return s;
    }
    std::string_view m_data;
    size_t m_pos = 0;
    int m_field = 0, m_wire = 0;
    uint64_t m_value = 0;
    std::string_view m_bytes;
};

} // namespace

SentencePieceModel parseSentencePieceModel(const std::string& bytes) {
    SentencePieceModel m;
    bool whitespaceSuffix = false;
    WireReader top(bytes);
    while (top.next()) {
        if (top.wire() != 2) continue;
        if (top.field() == 1) { // SentencePiece
            SentencePieceModel::Piece p;
            WireReader r(top.bytes());
            while (r.next()) {
                if (r.field() == 1 && r.wire() == 2)
                    p.piece = std::string(r.bytes());
                else if (r.field() == 2)
                    p.score = r.asFloat();
                else if (r.field() == 3 && r.wire() == 0) {
                    if (r.value() < 1 || r.value() > 6) bad("piece type " + std::to_string(r.value()));
                    p.type = static_cast<SpmPieceType>(r.value());
                }
            }
            m.pieces.push_back(std::move(p));
        } else if (top.field() == 2) { // TrainerSpec
            WireReader r(top.bytes());
            while (r.next()) {
                if (r.field() == 3 && r.wire() == 0)
                    m.type = static_cast<SpmModelType>(r.value());
                else if (r.field() == 35 && r.wire() == 0)
                    m.byteFallback = r.value() != 0;
                else if (r.field() == 24 && r.wire() == 0)
                    whitespaceSuffix = r.value() != 0;
            }
        } else if (top.field() == 3) { // NormalizerSpec
            WireReader r(top.bytes());
            while (r.next()) {
                if (r.field() == 1 && r.wire() == 2)
                    m.normalizationName = std::string(r.bytes());
                else if (r.field() == 2 && r.wire() == 2)
                    m.hasCharsMap = !r.bytes().empty();
                else if (r.field() == 3 && r.wire() == 0)
                    m.addDummyPrefix = r.value() != 0;
                else if (r.field() == 4 && r.wire() == 0)
                    m.removeExtraWhitespaces = r.value() != 0;
                else if (r.field() == 5 && r.wire() == 0)
                    m.escapeWhitespaces = r.value() != 0;
            }
        }
    }
    if (m.pieces.empty()) bad("no pieces");
    if (m.type != SpmModelType::Unigram && m.type != SpmModelType::Bpe)
        throw std::invalid_argument("SentencePiece model type " + std::to_string(static_cast<int>(m.type)) +
                                    " is not supported (unigram or bpe)");
    if (m.hasCharsMap)
        throw std::invalid_argument("SentencePiece normalization '" + m.normalizationName +
                                    "' is not supported: train with normalization_rule_name=identity");
    if (whitespaceSuffix) throw std::invalid_argument("SentencePiece treat_whitespace_as_suffix is not supported");
    return m;
}

} // namespace gwb::engine
