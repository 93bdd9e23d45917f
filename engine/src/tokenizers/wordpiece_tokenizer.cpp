// BERT WordPiece (bert-base-uncased behaviour): basic tokenization (clean text, split CJK
// characters, whitespace split, lower-case, strip accents by NFD minus Mn, split punctuation),
// then greedy longest-match-first word pieces with "##" continuations, [UNK] for words that do
// not decompose or exceed 100 characters. Every piece keeps the byte span of the source
// characters it came from (a character expanded by lower-casing or NFD maps to its source).

#include "gwb/engine/tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/wordpiece_unicode.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gwb::engine {
namespace {

using unicode::CharClass;

constexpr size_t kMaxCharsPerWord = 100; // bert-base-uncased's max_input_chars_per_word
constexpr const char* kUnknown = "[UNK]";
constexpr const char* kContinuation = "##";

/// A processed character and the bytes of the source character it came from.
struct Char {
    char32_t cp;
    int64_t begin, end;
};
using Word = std::vector<Char>;

bool isWhitespace(char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || unicode::charClass(c) == CharClass::SpaceSeparator;
}
bool isControl(char32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    return unicode::charClass(c) == CharClass::Control;
}
bool isPunctuation(char32_t c) {
    // ASCII symbols such as $ ^ ` count as punctuation for BERT although Unicode calls them S*.
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
    return unicode::charClass(c) == CharClass::Punctuation;
}
bool isCjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
bool isCased(char32_t c) {
    return unicode::charClass(c) == CharClass::Letter;
}
bool isCaseIgnorable(char32_t c) {
    return c == '\'' || c == '.' || c == ':' || c == 0x2019 || unicode::charClass(c) == CharClass::NonspacingMark;
}

std::string toUtf8(const Word& w, size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i)
        unicode::appendUtf8(w[i].cp, s);
    return s;
}

class WordPieceTokenizer final : public Tokenizer {
public:
    explicit WordPieceTokenizer(std::string vocabText) : m_text(std::move(vocabText)) {
        std::istringstream in(m_text);
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            checkUtf8(line);
            m_ids.emplace(line, static_cast<int32_t>(m_pieces.size())); // first occurrence wins
            m_pieces.push_back(line);
        }
        if (m_pieces.empty()) throw std::invalid_argument("WordPiece vocabulary is empty");
        const auto unk = m_ids.find(kUnknown);
        if (unk == m_ids.end()) throw std::invalid_argument("WordPiece vocabulary has no [UNK] entry");
        m_unk = unk->second;
        for (const char* s : {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"})
            if (m_ids.count(s)) m_neverSplit.insert(s);
    }

    std::string kind() const override { return "wordpiece"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_pieces.size()); }
    std::string serialize() const override { return m_text; }

    std::string pieceText(int32_t id) const override {
        detail::checkTokenId(id, static_cast<int64_t>(m_pieces.size()));
        return m_pieces[static_cast<size_t>(id)];
    }

    /// HF's convert_tokens_to_string: join with spaces, glue "##" continuations.
    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string out;
        for (int32_t id : ids) {
            const std::string p = pieceText(id);
            if (p.rfind(kContinuation, 0) == 0 && !out.empty())
                out += p.substr(2);
            else
                out += (out.empty() ? "" : " ") + p;
        }
        return out;
    }

    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        std::vector<TokenPiece> out;
        for (const Word& w : basicTokenize(text))
            wordPieces(w, out);
        return out;
    }

private:
    /// BERT's BasicTokenizer: words after cleaning, CJK splitting, lower-casing, accent stripping
    /// and punctuation splitting.
    std::vector<Word> basicTokenize(std::string_view text) const {
        // Clean: drop NUL, U+FFFD and control characters; whitespace becomes a separator.
        // CJK ideographs become words of their own.
        std::vector<Word> words;
        Word cur;
        auto flush = [&] {
            if (!cur.empty()) words.push_back(std::move(cur));
            cur.clear();
        };
        for (const auto& d : unicode::decodeUtf8(text)) {
            if (d.cp == 0 || d.cp == 0xFFFD || isControl(d.cp)) continue;
            if (isWhitespace(d.cp)) {
                flush();
            } else if (isCjk(d.cp)) {
                flush();
                words.push_back({{d.cp, d.begin, d.end}});
            } else {
                cur.push_back({d.cp, d.begin, d.end});
            }
        }
        flush();

        std::vector<Word> out;
        for (const Word& w : words) {
            if (m_neverSplit.count(toUtf8(w, 0, w.size()))) {
                out.push_back(w);
                continue;
            }
            // Lower-case (with Python's final-sigma rule), then NFD and drop Mn.
            Word norm;
            std::u32string tmp;
            for (size_t i = 0; i < w.size(); ++i) {
                tmp.clear();
                if (w[i].cp == 0x03A3 && finalSigma(w, i))
                    tmp += char32_t{0x03C2};
                else
                    unicode::appendLower(w[i].cp, tmp);
                std::u32string stripped;
                for (char32_t c : tmp)
                    unicode::appendStripped(c, stripped);
                for (char32_t c : stripped)
                    norm.push_back({c, w[i].begin, w[i].end});
            }
            // Punctuation characters become words of their own.
            Word part;
            for (const Char& c : norm) {
                if (isPunctuation(c.cp)) {
                    if (!part.empty()) out.push_back(std::move(part));
                    part.clear();
                    out.push_back({c});
                } else {
                    part.push_back(c);
                }
            }
            if (!part.empty()) out.push_back(std::move(part));
        }
        return out;
    }

    /// Python lower-cases Σ to ς at the end of a word: preceded by a cased letter and not
    /// followed by one (case-ignorable characters skipped on both sides).
    static bool finalSigma(const Word& w, size_t i) {
        size_t j = i;
        bool before = false;
        while (j-- > 0) {
            if (isCaseIgnorable(w[j].cp)) continue;
            before = isCased(w[j].cp);
            break;
        }
        if (!before) return false;
        for (size_t k = i + 1; k < w.size(); ++k) {
            if (isCaseIgnorable(w[k].cp)) continue;
            return !isCased(w[k].cp);
        }
        return true;
    }

    /// Greedy longest-match-first; a word that does not decompose becomes one [UNK].
    void wordPieces(const Word& w, std::vector<TokenPiece>& out) const {
        auto unknown = [&] { out.push_back({m_unk, kUnknown, w.front().begin, w.back().end}); };
        const std::string whole = toUtf8(w, 0, w.size());
        if (m_neverSplit.count(whole)) {
            out.push_back({m_ids.at(whole), whole, w.front().begin, w.back().end});
            return;
        }
        if (w.size() > kMaxCharsPerWord) {
            unknown();
            return;
        }
        std::vector<TokenPiece> pieces;
        size_t start = 0;
        while (start < w.size()) {
            size_t end = w.size();
            int32_t found = -1;
            std::string piece;
            for (; end > start; --end) {
                piece = (start > 0 ? kContinuation : "") + toUtf8(w, start, end);
                const auto it = m_ids.find(piece);
                if (it != m_ids.end()) {
                    found = it->second;
                    break;
                }
            }
            if (found < 0) {
                unknown();
                return;
            }
            // Pieces from one source character (e.g. a Hangul syllable's jamo) share its span;
            // keep spans non-overlapping by starting after the previous piece.
            int64_t begin = w[start].begin;
            if (!pieces.empty() && begin < pieces.back().end) begin = pieces.back().end;
            pieces.push_back({found, piece, begin, std::max(begin, w[end - 1].end)});
            start = end;
        }
        out.insert(out.end(), pieces.begin(), pieces.end());
    }

    std::string m_text;
    std::vector<std::string> m_pieces;
    std::unordered_map<std::string, int32_t> m_ids;
    std::unordered_set<std::string> m_neverSplit;
    int32_t m_unk = 0;
};

} // namespace

TokenizerPtr makeWordPieceTokenizer(const std::string& vocabText) {
    return std::make_shared<WordPieceTokenizer>(vocabText);
}

} // namespace gwb::engine
