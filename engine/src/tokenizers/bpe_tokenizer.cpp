// GPT-2 byte-level BPE: GPT-2's pre-tokenizer pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// hand-written over code points, each pre-token's bytes mapped to GPT-2's printable byte
// alphabet, then merges applied by rank. Spans are exact byte ranges of the original text.

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/wordpiece_unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace gwb::engine {
namespace {

using unicode::CharClass;

/// GPT-2's bytes_to_unicode(): printable bytes map to themselves, the rest to U+0100.. in order.
std::vector<char32_t> byteAlphabet() {
    std::vector<char32_t> map(256, 0);
    std::vector<bool> printable(256, false);
    for (int b = '!'; b <= '~'; ++b)
        printable[static_cast<size_t>(b)] = true;
    for (int b = 0xA1; b <= 0xAC; ++b)
        printable[static_cast<size_t>(b)] = true;
    for (int b = 0xAE; b <= 0xFF; ++b)
        printable[static_cast<size_t>(b)] = true;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b)
        map[static_cast<size_t>(b)] = printable[static_cast<size_t>(b)] ? static_cast<char32_t>(b) : next++;
    return map;
}

/// Python `regex`'s \s: Unicode White_Space plus the ASCII separators 0x1C-0x1F.
bool isSpace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

class ByteLevelBpe final : public Tokenizer {
public:
    ByteLevelBpe(const std::string& vocabJson, const std::string& mergesText)
        : m_vocabJson(vocabJson), m_mergesText(mergesText), m_alphabet(byteAlphabet()) {
        nlohmann::json vocab;
        try {
            vocab = nlohmann::json::parse(vocabJson);
        } catch (const nlohmann::json::exception& e) {
            throw std::invalid_argument(std::string("vocab.json is not valid JSON: ") + e.what());
        }
        if (!vocab.is_object()) throw std::invalid_argument("vocab.json is not a JSON object of token -> id");
        for (const auto& item : vocab.items()) {
            if (!item.value().is_number_integer() || item.value().get<int64_t>() < 0 ||
                item.value().get<int64_t>() > INT32_MAX)
                throw std::invalid_argument("vocab.json: id of '" + item.key() + "' is not a non-negative integer");
            const auto id = item.value().get<int32_t>();
            m_ids[item.key()] = id;
            if (static_cast<size_t>(id) >= m_pieces.size()) m_pieces.resize(static_cast<size_t>(id) + 1);
            m_pieces[static_cast<size_t>(id)] = item.key();
        }
        for (char32_t c : m_alphabet) {
            std::string s;
            unicode::appendUtf8(c, s);
            if (!m_ids.count(s)) throw std::invalid_argument("vocab.json lacks the byte symbol '" + s + "'");
        }
        // serialize() embeds the text in JSON, which must be UTF-8 (as merges.txt always is).
        try {
            checkUtf8(mergesText);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(std::string("merges.txt is not UTF-8 text: ") + e.what());
        }
        std::istringstream in(mergesText);
        std::string line;
        int rank = 0;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty() || line.rfind("#version", 0) == 0) continue;
            const size_t sp = line.find(' ');
            if (sp == std::string::npos || sp == 0 || sp + 1 >= line.size() ||
                line.find(' ', sp + 1) != std::string::npos)
                throw std::invalid_argument("merges.txt line " + std::to_string(rank + 1) + " is not two symbols: '" +
                                            line + "'");
            m_ranks.emplace(line, rank++);
        }
    }

    std::string kind() const override { return "bpe"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_pieces.size()); }
    std::string serialize() const override {
        return nlohmann::json{{"vocab", m_vocabJson}, {"merges", m_mergesText}}.dump();
    }

    std::string pieceText(int32_t id) const override {
        detail::checkTokenId(id, static_cast<int64_t>(m_pieces.size()));
        const std::string bytes = pieceBytes(id);
        try {
            checkUtf8(bytes);
            return bytes;
        } catch (const std::invalid_argument&) {
            return m_pieces[static_cast<size_t>(id)]; // a partial UTF-8 sequence: show the symbols
        }
    }

    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string out;
        for (int32_t id : ids) {
            pieceText(id); // range check
            out += pieceBytes(id);
        }
        return out;
    }

    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        std::vector<TokenPiece> out;
        // GPT-2's one special token, where the vocabulary has it, is one piece wherever it stands in
        // the text, as transformers' GPT2Tokenizer reads a vocab.json + merges.txt folder (its
        // default bos, eos and unk token); the text between is pre-tokenized and merged as usual.
        static constexpr std::string_view kEndOfText = "<|endoftext|>";
        const auto special = m_ids.find(std::string(kEndOfText));
        size_t from = 0;
        while (from <= text.size()) {
            const size_t at = special == m_ids.end() ? std::string_view::npos : text.find(kEndOfText, from);
            encodeSpan(text, from, at == std::string_view::npos ? text.size() : at, out);
            if (at == std::string_view::npos) break;
            out.push_back({special->second, std::string(kEndOfText), static_cast<int64_t>(at),
                           static_cast<int64_t>(at + kEndOfText.size())});
            from = at + kEndOfText.size();
        }
        return out;
    }

    /// Pre-tokenizes and merges text[from, to) (byte offsets), spans relative to the whole text.
    void encodeSpan(std::string_view text, size_t from, size_t to, std::vector<TokenPiece>& out) const {
        if (to <= from) return;
        const auto chars = unicode::decodeUtf8(text.substr(from, to - from));
        size_t i = 0;
        while (i < chars.size()) {
            const size_t end = preTokenEnd(chars, i);
            const auto begin = static_cast<size_t>(chars[i].begin) + from;
            const auto stop = static_cast<size_t>(chars[end - 1].end) + from;
            bpe(text.substr(begin, stop - begin), static_cast<int64_t>(begin), out);
            i = end;
        }
    }

    /// End (exclusive) of the pre-token starting at chars[i], following GPT-2's alternation.
    static size_t preTokenEnd(const std::vector<unicode::DecodedChar>& c, size_t i) {
        const size_t n = c.size();
        auto cls = [&](size_t k) { return unicode::charClass(c[k].cp); };
        if (c[i].cp == '\'' && i + 1 < n) {
            for (const char* s : {"s", "t", "re", "ve", "m", "ll", "d"}) {
                const size_t len = std::char_traits<char>::length(s);
                bool match = true;
                for (size_t k = 0; match && k < len; ++k)
                    match = i + 1 + k < n && c[i + 1 + k].cp == static_cast<char32_t>(s[k]);
                if (match) return i + 1 + len;
            }
        }
        const size_t s = (c[i].cp == ' ' && i + 1 < n && !isSpace(c[i + 1].cp)) ? i + 1 : i;
        if (!isSpace(c[s].cp)) {
            const CharClass first = cls(s);
            auto same = [&](size_t k) {
                const CharClass x = cls(k);
                if (first == CharClass::Letter || first == CharClass::Number) return x == first;
                return !isSpace(c[k].cp) && x != CharClass::Letter && x != CharClass::Number;
            };
            size_t k = s + 1;
            while (k < n && same(k))
                ++k;
            return k;
        }
        size_t k = i;
        while (k < n && isSpace(c[k].cp))
            ++k;
        if (k == n || k - i == 1) return k; // \s+ at the end, or a single separator before a non-space
        return k - 1;                       // \s+(?!\S): leave the last space to prefix the next word
    }

private:
    std::string pieceBytes(int32_t id) const {
        std::string out;
        for (const auto& d : unicode::decodeUtf8(m_pieces[static_cast<size_t>(id)])) {
            const auto it = std::find(m_alphabet.begin(), m_alphabet.end(), d.cp);
            if (it != m_alphabet.end()) out += static_cast<char>(it - m_alphabet.begin());
        }
        return out;
    }

    /// Merges by rank inside one pre-token; appends its pieces with spans offset by `base`.
    void bpe(std::string_view bytes, int64_t base, std::vector<TokenPiece>& out) const {
        struct Sym {
            std::string text; // in GPT-2's byte alphabet
            int64_t begin, end;
        };
        std::vector<Sym> syms;
        for (size_t k = 0; k < bytes.size(); ++k) {
            Sym s{"", base + static_cast<int64_t>(k), base + static_cast<int64_t>(k) + 1};
            unicode::appendUtf8(m_alphabet[static_cast<unsigned char>(bytes[k])], s.text);
            syms.push_back(std::move(s));
        }
        while (syms.size() > 1) {
            int best = INT32_MAX;
            size_t at = 0;
            for (size_t k = 0; k + 1 < syms.size(); ++k) {
                const auto it = m_ranks.find(syms[k].text + " " + syms[k + 1].text);
                if (it != m_ranks.end() && it->second < best) {
                    best = it->second;
                    at = k;
                }
            }
            if (best == INT32_MAX) break;
            // Merge every occurrence of the best pair, left to right.
            const std::string a = syms[at].text, b = syms[at + 1].text;
            std::vector<Sym> merged;
            for (size_t k = 0; k < syms.size(); ++k) {
                if (k + 1 < syms.size() && syms[k].text == a && syms[k + 1].text == b) {
                    merged.push_back({a + b, syms[k].begin, syms[k + 1].end});
                    ++k;
                } else {
                    merged.push_back(syms[k]);
                }
            }
            syms = std::move(merged);
        }
        for (const Sym& s : syms) {
            const auto it = m_ids.find(s.text);
            const int32_t id = it == m_ids.end() ? -1 : it->second;
            if (id < 0) // a merge result outside the vocabulary: fall back to its bytes
                for (int64_t k = s.begin; k < s.end; ++k) {
                    std::string one;
                    unicode::appendUtf8(m_alphabet[static_cast<unsigned char>(bytes[static_cast<size_t>(k - base)])],
                                        one);
                    const int32_t bid = m_ids.at(one);
                    out.push_back({bid, pieceText(bid), k, k + 1});
                }
            else
                out.push_back({id, pieceText(id), s.begin, s.end});
        }
    }

    std::string m_vocabJson, m_mergesText;
    std::vector<char32_t> m_alphabet;
    std::unordered_map<std::string, int32_t> m_ids;
    std::vector<std::string> m_pieces;
    std::unordered_map<std::string, int> m_ranks;
};

} // namespace

std::vector<char32_t> gpt2ByteAlphabet() {
    return byteAlphabet();
}

size_t gpt2PreTokenEnd(const std::vector<unicode::DecodedChar>& chars, size_t i) {
    return ByteLevelBpe::preTokenEnd(chars, i);
}

TokenizerPtr makeByteLevelBpeTokenizer(const std::string& vocabJson, const std::string& mergesText) {
    return std::make_shared<ByteLevelBpe>(vocabJson, mergesText);
}

TokenizerPtr makeByteLevelBpeFromSerialized(const std::string& bytes) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(bytes);
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("serialized BPE tokenizer is not JSON: ") + e.what());
    }
    if (!j.is_object() || !j.contains("vocab") || !j.contains("merges") || !j["vocab"].is_string() ||
        !j["merges"].is_string())
        throw std::invalid_argument("serialized BPE tokenizer needs string fields 'vocab' and 'merges'");
    return makeByteLevelBpeTokenizer(j["vocab"].get<std::string>(), j["merges"].get<std::string>());
}

} // namespace gwb::engine
