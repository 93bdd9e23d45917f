// SentencePiece tokenizer: reads SentencePiece .model files and encodes like libsentencepiece
// (unigram Viterbi or BPE merges, byte fallback), keeping each piece's byte span.
//
// Why not link libsentencepiece: Debian's libsentencepiece.so embeds its own protobuf 3.14 and
// exports those symbols, while LibTorch loads the system libprotobuf (3.21). Loaded together,
// the dynamic linker binds one library's protobuf calls into the other's copy and the process
// crashes at start-up. So the engine parses the model proto itself (a few fields) and trains
// through the `spm_train` program in a child process (sentencepiece_trainer.cpp).

#include "gwb/engine/tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/sentencepiece_model.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace gwb::engine {

namespace {

constexpr const char* kSpace = "\xe2\x96\x81"; // U+2581, SentencePiece's whitespace symbol
constexpr float kUnkPenalty = 10.0f;           // libsentencepiece: unknown score = min score - 10

/// The byte of a BYTE piece "<0xHH>" (exactly two hex digits), -1 for any other text.
int bytePieceValue(const std::string& piece) {
    auto hex = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
    const int hi = hex(piece[3]), lo = hex(piece[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

size_t utf8Length(unsigned char lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xe0) == 0xc0) return 2;
    if ((lead & 0xf0) == 0xe0) return 3;
    return 4;
}

/// One unit of the normalized text with the original bytes it came from.
struct NormChar {
    std::string text; ///< normalized bytes (a space becomes U+2581)
    int64_t begin;    ///< original span; the dummy prefix has begin == end
    int64_t end;
};

class SentencePieceTokenizer final : public Tokenizer {
public:
    explicit SentencePieceTokenizer(const std::string& proto)
        : m_proto(proto), m_model(parseSentencePieceModel(proto)) {
        float minScore = std::numeric_limits<float>::max();
        for (size_t i = 0; i < m_model.pieces.size(); ++i) {
            const auto& p = m_model.pieces[i];
            const auto id = static_cast<int32_t>(i);
            using T = SpmPieceType;
            if (p.type == T::Normal || p.type == T::UserDefined || p.type == T::Unused) {
                m_pieceIds.emplace(p.piece, id);
                m_maxPieceBytes = std::max(m_maxPieceBytes, p.piece.size());
                if (p.type == T::Normal) {
                    minScore = std::min(minScore, p.score);
                    m_maxScore = std::max(m_maxScore, p.score);
                }
            } else if (p.type == T::Unknown) {
                m_unkId = id;
            } else if (p.type == T::Byte) {
                const int v = bytePieceValue(p.piece);
                if (v < 0)
                    throw std::invalid_argument("SentencePiece byte piece " + std::to_string(id) + " is '" + p.piece +
                                                "', not <0xHH>");
                m_byteIds[static_cast<size_t>(v)] = id;
            }
        }
        if (m_unkId < 0) throw std::invalid_argument("SentencePiece model has no <unk> piece");
        m_unkScore = (minScore == std::numeric_limits<float>::max() ? 0.0f : minScore) - kUnkPenalty;
        if (m_model.byteFallback)
            for (int b = 0; b < 256; ++b)
                if (m_byteIds[b] < 0)
                    throw std::invalid_argument("SentencePiece model has byte_fallback but no piece for byte " +
                                                std::to_string(b));
    }

    std::string kind() const override { return "sentencepiece"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_model.pieces.size()); }

    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        const std::vector<NormChar> chars = normalize(text);
        std::vector<std::pair<size_t, size_t>> segments; // [first char, last char) per piece
        std::vector<int32_t> ids;
        if (m_model.type == SpmModelType::Bpe)
            encodeBpe(chars, segments, ids);
        else
            encodeUnigram(chars, segments, ids);
        return emit(chars, segments, ids);
    }

    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string bytes;
        for (size_t i = 0; i < ids.size(); ++i) {
            checkId(ids[i]);
            const auto& p = m_model.pieces[static_cast<size_t>(ids[i])];
            switch (p.type) {
            case SpmPieceType::Control:
                break;
            case SpmPieceType::Unknown:
                bytes += " \xe2\x81\x87 "; // libsentencepiece's " ⁇ "
                break;
            case SpmPieceType::Byte: // its text was checked by the constructor
                bytes.push_back(static_cast<char>(bytePieceValue(p.piece)));
                break;
            default: // U+2581 back to a space
                for (size_t k = 0; k < p.piece.size();) {
                    if (p.piece.compare(k, 3, kSpace) == 0) {
                        bytes.push_back(' ');
                        k += 3;
                    } else {
                        bytes.push_back(p.piece[k++]);
                    }
                }
            }
        }
        if (m_model.addDummyPrefix && !bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
        return repairUtf8(bytes);
    }

    std::string pieceText(int32_t id) const override {
        checkId(id);
        return m_model.pieces[static_cast<size_t>(id)].piece;
    }

    std::string serialize() const override { return m_proto; }

private:
    void checkId(int32_t id) const { detail::checkTokenId(id, vocabSize()); }

    /// Identity normalization as libsentencepiece does it: optional dummy prefix, spaces escaped
    /// to U+2581, optional removal of leading/trailing/repeated spaces.
    std::vector<NormChar> normalize(std::string_view text) const {
        std::vector<NormChar> out;
        if (text.empty()) return out;
        size_t i = 0, end = text.size();
        if (m_model.removeExtraWhitespaces) {
            while (i < end && text[i] == ' ')
                ++i;
            while (end > i && text[end - 1] == ' ')
                --end;
            if (i == end) return out;
        }
        if (m_model.addDummyPrefix) out.push_back({kSpace, static_cast<int64_t>(i), static_cast<int64_t>(i)});
        bool prevSpace = m_model.addDummyPrefix;
        while (i < end) {
            const size_t n = std::min(utf8Length(static_cast<unsigned char>(text[i])), end - i);
            const bool space = text[i] == ' ';
            if (space && m_model.removeExtraWhitespaces && prevSpace) {
                ++i;
                continue;
            }
            out.push_back({space && m_model.escapeWhitespaces ? std::string(kSpace) : std::string(text.substr(i, n)),
                           static_cast<int64_t>(i), static_cast<int64_t>(i + n)});
            prevSpace = space;
            i += n;
        }
        return out;
    }

    int32_t lookup(const std::string& s) const {
        const auto it = m_pieceIds.find(s);
        return it == m_pieceIds.end() ? -1 : it->second;
    }

    /// Viterbi over all pieces (libsentencepiece's EncodeOptimized): maximal total score, ties to
    /// the first path found; a character no piece starts with becomes <unk> at min score - 10.
    void encodeUnigram(const std::vector<NormChar>& chars, std::vector<std::pair<size_t, size_t>>& segs,
                       std::vector<int32_t>& ids) const {
        const size_t n = chars.size();
        // libsentencepiece adds in double and stores in float; doing the same makes near-equal
        // paths tie-break identically.
        struct Node {
            float score = 0;
            int64_t from = -1;
            int32_t id = -1;
        };
        std::vector<Node> best(n + 1);
        best[0].from = 0;
        for (size_t s = 0; s < n; ++s) {
            if (best[s].from < 0 && s > 0) continue;
            std::string piece;
            bool hasSingle = false;
            for (size_t e = s; e < n; ++e) {
                piece += chars[e].text;
                if (piece.size() > m_maxPieceBytes) break;
                const int32_t id = lookup(piece);
                if (id < 0) continue;
                const auto& p = m_model.pieces[static_cast<size_t>(id)];
                if (p.type == SpmPieceType::Unused) continue;
                const double score = p.type == SpmPieceType::UserDefined
                                         ? static_cast<double>(piece.size()) * m_maxScore - 0.1
                                         : static_cast<double>(p.score);
                const double cand = score + static_cast<double>(best[s].score);
                Node& t = best[e + 1];
                if (t.from < 0 || cand > static_cast<double>(t.score))
                    t = {static_cast<float>(cand), static_cast<int64_t>(s), id};
                if (e == s) hasSingle = true;
            }
            if (!hasSingle) {
                const double cand = static_cast<double>(m_unkScore) + static_cast<double>(best[s].score);
                Node& t = best[s + 1];
                if (t.from < 0 || cand > static_cast<double>(t.score))
                    t = {static_cast<float>(cand), static_cast<int64_t>(s), m_unkId};
            }
        }
        for (size_t e = n; e > 0;) {
            const auto s = static_cast<size_t>(best[e].from);
            segs.push_back({s, e});
            ids.push_back(best[e].id);
            e = s;
        }
        std::reverse(segs.begin(), segs.end());
        std::reverse(ids.begin(), ids.end());
    }

    /// BPE (libsentencepiece's bpe_model): start from characters, repeatedly merge the adjacent
    /// pair whose concatenation is the highest-scoring piece (leftmost on ties).
    void encodeBpe(const std::vector<NormChar>& chars, std::vector<std::pair<size_t, size_t>>& segs,
                   std::vector<int32_t>& ids) const {
        struct Sym {
            size_t first, last;
            std::string text;
        };
        std::vector<Sym> syms;
        for (size_t i = 0; i < chars.size(); ++i)
            syms.push_back({i, i + 1, chars[i].text});
        while (syms.size() > 1) {
            float bestScore = -std::numeric_limits<float>::infinity();
            size_t bestAt = syms.size();
            for (size_t i = 0; i + 1 < syms.size(); ++i) {
                const int32_t id = lookup(syms[i].text + syms[i + 1].text);
                if (id < 0 || m_model.pieces[static_cast<size_t>(id)].type == SpmPieceType::Unused) continue;
                const float sc = m_model.pieces[static_cast<size_t>(id)].score;
                if (sc > bestScore) {
                    bestScore = sc;
                    bestAt = i;
                }
            }
            if (bestAt == syms.size()) break;
            syms[bestAt].text += syms[bestAt + 1].text;
            syms[bestAt].last = syms[bestAt + 1].last;
            syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(bestAt) + 1);
        }
        for (const Sym& s : syms) {
            const int32_t id = lookup(s.text);
            segs.push_back({s.first, s.last});
            ids.push_back(id < 0 ? m_unkId : id);
        }
    }

    /// Pieces with spans; <unk> pieces become one byte piece per byte under byte fallback.
    std::vector<TokenPiece> emit(const std::vector<NormChar>& chars, const std::vector<std::pair<size_t, size_t>>& segs,
                                 const std::vector<int32_t>& ids) const {
        std::vector<TokenPiece> out;
        out.reserve(ids.size());
        for (size_t k = 0; k < ids.size(); ++k) {
            const auto [first, last] = segs[k];
            if (ids[k] == m_unkId && m_model.byteFallback) {
                for (size_t c = first; c < last; ++c) {
                    const NormChar& ch = chars[c];
                    const bool mapped = static_cast<int64_t>(ch.text.size()) == ch.end - ch.begin;
                    for (size_t b = 0; b < ch.text.size(); ++b) {
                        const int32_t id = m_byteIds[static_cast<unsigned char>(ch.text[b])];
                        // Each byte gets its own original byte when the character was not rewritten.
                        const int64_t bb = mapped ? ch.begin + static_cast<int64_t>(b) : ch.begin;
                        const int64_t be = mapped ? bb + 1 : (b + 1 == ch.text.size() ? ch.end : ch.begin);
                        out.push_back({id, m_model.pieces[static_cast<size_t>(id)].piece, bb, be});
                    }
                }
                continue;
            }
            out.push_back(
                {ids[k], m_model.pieces[static_cast<size_t>(ids[k])].piece, chars[first].begin, chars[last - 1].end});
        }
        return out;
    }

    /// Byte-fallback output may hold invalid UTF-8: replace each bad byte by U+FFFD like libsentencepiece.
    static std::string repairUtf8(const std::string& s) {
        std::string out;
        size_t i = 0;
        while (i < s.size()) {
            const size_t n = utf8Length(static_cast<unsigned char>(s[i]));
            bool ok = i + n <= s.size() && !((static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) &&
                      static_cast<unsigned char>(s[i]) < 0xf8;
            try {
                if (ok) checkUtf8(std::string_view(s).substr(i, n));
            } catch (const std::invalid_argument&) {
                ok = false;
            }
            if (ok) {
                out.append(s, i, n);
                i += n;
            } else {
                out += "\xef\xbf\xbd";
                ++i;
            }
        }
        return out;
    }

    std::string m_proto;
    SentencePieceModel m_model;
    std::unordered_map<std::string, int32_t> m_pieceIds; ///< normal, user-defined and unused pieces
    size_t m_maxPieceBytes = 0;
    int32_t m_unkId = -1;
    float m_unkScore = 0;
    float m_maxScore = 0;
    std::array<int32_t, 256> m_byteIds = makeNoBytes(); ///< id of <0xNN>, -1 when absent

    static std::array<int32_t, 256> makeNoBytes() {
        std::array<int32_t, 256> a;
        a.fill(-1);
        return a;
    }
};

} // namespace

TokenizerPtr makeSentencePieceTokenizer(const std::string& modelProto) {
    return std::make_shared<SentencePieceTokenizer>(modelProto);
}

} // namespace gwb::engine
