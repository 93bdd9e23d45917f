// Hugging Face tokenizer.json and Wake2vec's character map (see hf_tokenizer.h).
//
// The Hugging Face pipeline, as `tokenizers` runs it with add_special_tokens=False:
//   1. added tokens whose "normalized" is false are cut out of the raw text (leftmost-longest),
//   2. the rest is normalized (every character keeps the byte span of its source character),
//   3. added tokens whose "normalized" is true are cut out of the normalized text,
//   4. the pre-tokenizer splits the rest into words, the model turns each word into pieces.
// The post-processor (which adds [CLS]/[SEP] and the like), truncation and padding are not
// applied: encode() returns the pieces of the text itself, like the other tokenizers here.
// GPT-2's pre-tokenizer pattern and byte alphabet come from bpe_tokenizer.cpp, the Unicode
// facts (categories, lower case, NFD without marks) from the WordPiece tables.
// Anything the file asks for that is not implemented is refused by name.
//
// Where tokenizers' behaviour is not what it should be for a workbench, we differ, and say so:
// a character that a BPE without unk_token cannot encode is an error (tokenizers drops it), and
// the ByteLevel decoder returns the raw bytes (tokenizers replaces invalid UTF-8 by U+FFFD).
// Lower-casing is per character, as in tokenizers (Python's BERT lower-cases a final capital
// sigma to ς; tokenizers and this code give σ).
//
// The pieces: hf_common (text, JSON fields, splitting), hf_normalizers, hf_pre_tokenizers,
// hf_decoders; this file holds the model (BPE, WordPiece, WordLevel) and added tokens.

#include "tokenizers/hf_tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_common.h"
#include "tokenizers/hf_decoders.h"
#include "tokenizers/hf_normalizers.h"
#include "tokenizers/hf_pre_tokenizers.h"

#include <algorithm>
#include <climits>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gwb::engine {
namespace {

using namespace hf; // NOLINT(google-build-using-namespace): this file is the reader's last piece

// ---- the model ----

enum class ModelType { Bpe, WordPiece, WordLevel };

struct AddedToken {
    int32_t id;
    std::string content;
    std::u32string match; // content as matched (normalized when "normalized" is true)
    bool singleWord, lstrip, rstrip, normalized, special;
};

class HuggingFaceTokenizer final : public Tokenizer {
public:
    explicit HuggingFaceTokenizer(std::string text) : m_text(std::move(text)), m_alphabet(gpt2ByteAlphabet()) {
        json j;
        try {
            j = json::parse(m_text);
        } catch (const json::exception& e) {
            fail(std::string("not valid JSON: ") + e.what());
        }
        if (!j.is_object()) fail("not a JSON object");
        const json* model = field(j, "model");
        if (!model || !model->is_object()) fail("no \"model\" object");
        parseModel(*model);
        if (const json* n = field(j, "normalizer")) parseNormalizer(*n, "normalizer", m_norm);
        if (const json* p = field(j, "pre_tokenizer")) parsePreTokenizer(*p, "pre_tokenizer", m_pre);
        if (const json* d = field(j, "decoder")) {
            parseDecoder(*d, "decoder", m_dec);
            m_joinWithSpace = false;
        }
        // Byte-level pieces are shown as the text they stand for (as the "bpe" kind shows them).
        for (const DecStep& s : m_dec)
            m_byteLevel = m_byteLevel || s.kind == Dec::ByteLevel;
        for (const PreStep& s : m_pre)
            m_byteLevel = m_byteLevel || s.kind == Pre::ByteLevel;
        if (const json* a = field(j, "added_tokens")) parseAdded(*a);
        m_pieces = densePieces(m_byId, "", "piece");
        m_byId.clear();
        for (AddedToken& t : m_added) {
            if (!t.normalized) continue;
            Chars c = unicode::decodeUtf8(t.content);
            normalize(m_norm, c);
            t.match.clear();
            for (const Char& x : c)
                t.match += x.cp;
            if (t.match.empty()) fail("added token '" + t.content + "' normalizes to nothing");
        }
    }

    std::string kind() const override { return "huggingface"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_pieces.size()); }
    std::string serialize() const override { return m_text; }

    std::string pieceText(int32_t id) const override {
        checkId(id);
        const std::string& p = m_pieces[static_cast<size_t>(id)];
        if (!m_byteLevel || m_addedIds.count(id)) return p;
        std::string bytes;
        if (!byteLevelBytes(m_alphabet, p, bytes)) return p;
        try {
            checkUtf8(bytes);
            return bytes;
        } catch (const std::invalid_argument&) {
            return p; // a partial UTF-8 sequence: show the symbols
        }
    }

    std::string decode(const std::vector<int32_t>& ids) const override {
        std::vector<std::string> tokens;
        for (int32_t id : ids) {
            checkId(id);
            tokens.push_back(m_pieces[static_cast<size_t>(id)]);
        }
        for (const DecStep& s : m_dec)
            tokens = applyDecoder(s, std::move(tokens), m_alphabet);
        std::string out;
        for (size_t i = 0; i < tokens.size(); ++i)
            out += (m_joinWithSpace && i > 0 ? " " : "") + tokens[i];
        return out;
    }

    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        std::vector<TokenPiece> out;
        for (Segment& raw : splitAdded(unicode::decodeUtf8(text), false)) {
            if (raw.added) {
                out.push_back({raw.added->id, raw.added->content, raw.begin, raw.end});
                continue;
            }
            normalize(m_norm, raw.chars);
            for (Segment& seg : splitAdded(raw.chars, true)) {
                if (seg.added) {
                    out.push_back({seg.added->id, seg.added->content, seg.begin, seg.end});
                    continue;
                }
                std::vector<Chars> words{std::move(seg.chars)};
                for (const PreStep& s : m_pre)
                    preTokenize(s, m_alphabet, words);
                for (const Chars& w : words)
                    if (!w.empty()) tokenizeWord(w, out);
            }
        }
        // Pieces from one source character (an expansion by normalization) share its span: keep
        // spans non-overlapping by starting each after the previous one.
        int64_t last = 0;
        for (TokenPiece& p : out) {
            p.begin = std::max(p.begin, last);
            p.end = std::max(p.end, p.begin);
            last = p.end;
        }
        return out;
    }

private:
    /// Text between added tokens (added == nullptr), or one added token and the bytes it covers.
    struct Segment {
        Chars chars;
        const AddedToken* added = nullptr;
        int64_t begin = 0, end = 0;
    };

    /// Cuts the added tokens whose "normalized" flag is `normalized` out of `w`, leftmost-longest
    /// as tokenizers does; returns text segments and tokens in order (empty segments left out).
    std::vector<Segment> splitAdded(const Chars& w, bool normalized) const {
        std::vector<Segment> segs;
        auto wordLike = [](char32_t c) {
            const unicode::CharClass k = unicode::charClass(c);
            return c == '_' || k == unicode::CharClass::Letter || k == unicode::CharClass::Number;
        };
        auto text = [&](size_t from, size_t to) {
            if (to <= from) return;
            Segment s;
            s.chars.assign(w.begin() + static_cast<std::ptrdiff_t>(from), w.begin() + static_cast<std::ptrdiff_t>(to));
            segs.push_back(std::move(s));
        };
        size_t start = 0, i = 0;
        while (i < w.size()) {
            const AddedToken* best = nullptr;
            for (const AddedToken& t : m_added) {
                if (t.normalized != normalized || t.match.size() > w.size() - i) continue;
                if (best && t.match.size() <= best->match.size()) continue;
                bool eq = true;
                for (size_t k = 0; eq && k < t.match.size(); ++k)
                    eq = w[i + k].cp == t.match[k];
                if (eq) best = &t;
            }
            if (!best) {
                ++i;
                continue;
            }
            size_t b = i, e = i + best->match.size();
            if (best->singleWord && ((b > 0 && wordLike(w[b - 1].cp)) || (e < w.size() && wordLike(w[e].cp)))) {
                i = e; // tokenizers skips a match that is not a whole word
                continue;
            }
            if (best->lstrip)
                while (b > start && isWhiteSpace(w[b - 1].cp))
                    --b;
            if (best->rstrip)
                while (e < w.size() && isWhiteSpace(w[e].cp))
                    ++e;
            text(start, b);
            Segment tok;
            tok.added = best;
            tok.begin = w[b].begin;
            tok.end = w[e - 1].end;
            segs.push_back(std::move(tok));
            start = i = e;
        }
        text(start, w.size());
        return segs;
    }

    void parseModel(const json& m) {
        std::string type;
        if (const json* t = field(m, "type")) {
            if (!t->is_string()) fail("model.type must be a string");
            type = t->get<std::string>();
        } else if (field(m, "merges")) {
            type = "BPE"; // files written before "type" existed: tokenizers tells them apart by fields
        } else if (field(m, "max_input_chars_per_word")) {
            type = "WordPiece";
        } else {
            fail("model has no \"type\"");
        }
        if (type == "BPE")
            m_type = ModelType::Bpe;
        else if (type == "WordPiece")
            m_type = ModelType::WordPiece;
        else if (type == "WordLevel")
            m_type = ModelType::WordLevel;
        else
            fail("model type '" + type + "' is not supported (BPE, WordPiece and WordLevel are)");

        const json* vocab = field(m, "vocab");
        if (!vocab || !vocab->is_object()) fail("model.vocab must be a JSON object of piece -> id");
        for (const auto& item : vocab->items()) {
            const json& v = item.value();
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
                fail("id of '" + item.key() + "' is " + shortJson(v) + ", not an id in [0, 2147483647]");
            addPiece(v.get<int32_t>(), item.key());
        }
        const std::string where = "model";
        m_unk = getString(m, "unk_token", where,
                          m_type == ModelType::WordPiece   ? "[UNK]"
                          : m_type == ModelType::WordLevel ? "<unk>"
                                                           : "");
        m_prefix = getString(m, "continuing_subword_prefix", where, m_type == ModelType::WordPiece ? "##" : "");
        m_suffix = getString(m, "end_of_word_suffix", where, "");
        m_maxChars = getInt(m, "max_input_chars_per_word", where, 100);
        m_byteFallback = getBool(m, "byte_fallback", where, false);
        m_fuseUnk = getBool(m, "fuse_unk", where, false);
        m_ignoreMerges = getBool(m, "ignore_merges", where, false);
        if (const json* d = field(m, "dropout")) {
            if (!d->is_number()) fail("model.dropout must be a number");
            if (d->get<double>() != 0.0)
                fail("BPE dropout " + shortJson(*d) + " is not supported (it makes encoding random)");
        }
        if (m_type == ModelType::Bpe) parseMerges(m);
    }

    void parseMerges(const json& m) {
        const json* merges = field(m, "merges");
        if (!merges) return; // a BPE without merges: every piece is a character
        if (!merges->is_array()) fail("model.merges must be a list");
        for (size_t rank = 0; rank < merges->size(); ++rank) {
            const json& e = (*merges)[rank];
            const std::string at = "merge " + std::to_string(rank + 1);
            std::string a, b;
            if (e.is_string()) {
                const std::string s = e.get<std::string>();
                const size_t sp = s.find(' ');
                if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos || sp == 0 ||
                    sp + 1 == s.size())
                    fail(at + " '" + s + "' is not two pieces separated by one space");
                a = s.substr(0, sp);
                b = s.substr(sp + 1);
            } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
                a = e[0].get<std::string>();
                b = e[1].get<std::string>();
            } else {
                fail(at + " is neither \"a b\" nor [\"a\", \"b\"]");
            }
            const auto ia = m_ids.find(a), ib = m_ids.find(b);
            if (ia == m_ids.end()) fail(at + " '" + a + " " + b + "' uses '" + a + "', which is not in the vocabulary");
            if (ib == m_ids.end()) fail(at + " '" + a + " " + b + "' uses '" + b + "', which is not in the vocabulary");
            if (!m_prefix.empty() && b.compare(0, m_prefix.size(), m_prefix) != 0)
                fail(at + " '" + a + " " + b + "': '" + b + "' lacks the continuing_subword_prefix '" + m_prefix + "'");
            const std::string merged = a + b.substr(m_prefix.size());
            const auto im = m_ids.find(merged);
            if (im == m_ids.end())
                fail(at + " '" + a + " " + b + "' makes '" + merged + "', which is not in the vocabulary");
            m_merges.emplace(pairKey(ia->second, ib->second), std::make_pair(static_cast<int>(rank), im->second));
        }
    }

    void parseAdded(const json& a) {
        if (!a.is_array()) fail("added_tokens must be a list");
        for (size_t i = 0; i < a.size(); ++i) {
            const json& t = a[i];
            const std::string where = "added_tokens[" + std::to_string(i) + "]";
            if (!t.is_object()) fail(where + " must be a JSON object");
            const json* id = field(t, "id");
            const std::string content = getString(t, "content", where, "");
            if (content.empty()) fail(where + " has no content");
            checkUtf8Field(content, where);
            if (!id || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > INT32_MAX)
                fail("id of added token '" + content + "' is " + (id ? shortJson(*id) : std::string("missing")) +
                     ", not an id in [0, 2147483647]");
            AddedToken tok{id->get<int32_t>(),
                           content,
                           codePoints(content),
                           getBool(t, "single_word", where, false),
                           getBool(t, "lstrip", where, false),
                           getBool(t, "rstrip", where, false),
                           getBool(t, "normalized", where, !getBool(t, "special", where, false)),
                           getBool(t, "special", where, false)};
            const auto known = m_ids.find(content);
            if (known != m_ids.end() && known->second != tok.id)
                fail("added token '" + content + "' has id " + std::to_string(tok.id) +
                     " but the vocabulary gives it " + std::to_string(known->second));
            if (known == m_ids.end()) addPiece(tok.id, content);
            m_addedIds.emplace(tok.id);
            m_added.push_back(std::move(tok));
        }
    }

    static void checkUtf8Field(const std::string& s, const std::string& where) {
        try {
            checkUtf8(s);
        } catch (const std::invalid_argument& e) {
            fail(where + ": " + e.what());
        }
    }

    void addPiece(int32_t id, const std::string& piece) {
        const auto [it, fresh] = m_byId.emplace(id, piece);
        if (!fresh) fail("id " + std::to_string(id) + " is given to both '" + it->second + "' and '" + piece + "'");
        m_ids.emplace(piece, id);
    }

    static uint64_t pairKey(int32_t a, int32_t b) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    }

    void checkId(int32_t id) const { detail::checkTokenId(id, static_cast<int64_t>(m_pieces.size())); }

    int32_t unkId(const Chars& w) const {
        const auto it = m_unk.empty() ? m_ids.end() : m_ids.find(m_unk);
        if (it == m_ids.end())
            throw std::invalid_argument("tokenizer.json: '" + utf8(w) + "' at byte " + std::to_string(w.front().begin) +
                                        " is not in the vocabulary and " +
                                        (m_unk.empty() ? std::string("the model has no unk_token")
                                                       : "unk_token '" + m_unk + "' is not either"));
        return it->second;
    }

    void tokenizeWord(const Chars& w, std::vector<TokenPiece>& out) const {
        switch (m_type) {
        case ModelType::WordLevel: {
            const auto it = m_ids.find(utf8(w));
            const int32_t id = it != m_ids.end() ? it->second : unkId(w);
            out.push_back({id, pieceText(id), w.front().begin, w.back().end});
            return;
        }
        case ModelType::WordPiece:
            wordPiece(w, out);
            return;
        case ModelType::Bpe:
            bpe(w, out);
            return;
        }
    }

    void wordPiece(const Chars& w, std::vector<TokenPiece>& out) const {
        auto unknown = [&] {
            const int32_t id = unkId(w);
            out.push_back({id, pieceText(id), w.front().begin, w.back().end});
        };
        if (static_cast<int64_t>(w.size()) > m_maxChars) return unknown();
        std::vector<TokenPiece> pieces;
        size_t start = 0;
        while (start < w.size()) {
            int32_t found = -1;
            size_t end = w.size();
            for (; end > start; --end) {
                const auto it = m_ids.find((start > 0 ? m_prefix : "") + utf8(w, start, end));
                if (it != m_ids.end()) {
                    found = it->second;
                    break;
                }
            }
            if (found < 0) return unknown();
            pieces.push_back({found, pieceText(found), w[start].begin, w[end - 1].end});
            start = end;
        }
        out.insert(out.end(), pieces.begin(), pieces.end());
    }

    void bpe(const Chars& w, std::vector<TokenPiece>& out) const {
        if (m_ignoreMerges) {
            const auto it = m_ids.find(utf8(w));
            if (it != m_ids.end()) {
                out.push_back({it->second, pieceText(it->second), w.front().begin, w.back().end});
                return;
            }
        }
        struct Sym {
            int32_t id;
            int64_t begin, end;
            bool unk;
        };
        std::vector<Sym> syms;
        for (size_t i = 0; i < w.size(); ++i) {
            std::string s = (i > 0 ? m_prefix : "") + utf8(w, i, i + 1) + (i + 1 == w.size() ? m_suffix : "");
            const auto it = m_ids.find(s);
            if (it != m_ids.end()) {
                syms.push_back({it->second, w[i].begin, w[i].end, false});
                continue;
            }
            if (m_byteFallback) {
                const std::string& bytes = s; // tokenizers falls back on the bytes of the decorated symbol
                std::vector<Sym> fb;
                const bool exact = w[i].end - w[i].begin == static_cast<int64_t>(bytes.size());
                for (size_t k = 0; k < bytes.size(); ++k) {
                    char name[8];
                    std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned char>(bytes[k]));
                    const auto b = m_ids.find(name);
                    if (b == m_ids.end()) break;
                    const auto at = static_cast<int64_t>(k);
                    fb.push_back({b->second, exact ? w[i].begin + at : w[i].begin,
                                  exact ? w[i].begin + at + 1 : w[i].end, false});
                }
                if (fb.size() == bytes.size()) {
                    syms.insert(syms.end(), fb.begin(), fb.end());
                    continue;
                }
            }
            const int32_t unk = unkId(Chars{w[i]});
            if (m_fuseUnk && !syms.empty() && syms.back().unk)
                syms.back().end = w[i].end;
            else
                syms.push_back({unk, w[i].begin, w[i].end, true});
        }
        // Merge the pair of best (lowest) rank, the leftmost among equals, until none applies:
        // the order in which tokenizers' priority queue merges.
        while (syms.size() > 1) {
            int best = INT_MAX;
            size_t at = 0;
            int32_t merged = 0;
            for (size_t k = 0; k + 1 < syms.size(); ++k) {
                const auto it = m_merges.find(pairKey(syms[k].id, syms[k + 1].id));
                if (it != m_merges.end() && it->second.first < best) {
                    best = it->second.first;
                    merged = it->second.second;
                    at = k;
                }
            }
            if (best == INT_MAX) break;
            syms[at] = {merged, syms[at].begin, syms[at + 1].end, false};
            syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(at) + 1);
        }
        for (const Sym& s : syms)
            out.push_back({s.id, pieceText(s.id), s.begin, s.end});
    }

    std::string m_text;
    std::vector<char32_t> m_alphabet;
    ModelType m_type = ModelType::Bpe;
    std::vector<std::string> m_pieces;
    std::map<int32_t, std::string> m_byId; // while parsing
    std::unordered_map<std::string, int32_t> m_ids;
    std::unordered_map<uint64_t, std::pair<int, int32_t>> m_merges; // (a, b) -> (rank, merged id)
    std::string m_unk, m_prefix, m_suffix;
    int64_t m_maxChars = 100;
    bool m_byteFallback = false, m_fuseUnk = false, m_ignoreMerges = false;
    std::vector<NormStep> m_norm;
    std::vector<PreStep> m_pre;
    std::vector<DecStep> m_dec;
    bool m_joinWithSpace = true; // no decoder: tokenizers joins the pieces with spaces
    bool m_byteLevel = false;
    std::vector<AddedToken> m_added;
    std::unordered_set<int32_t> m_addedIds;
};

} // namespace

std::string tokenizerJsonFormat(const std::string& text) {
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return "";
    if (j.contains("model")) return "huggingface";
    if (j.contains("char_to_id")) return "wake2vec_chars";
    return "";
}

TokenizerPtr makeHuggingFaceTokenizer(const std::string& json) {
    return std::make_shared<HuggingFaceTokenizer>(json);
}

TokenizerPtr makeTokenizerJson(const std::string& text) {
    const std::string format = tokenizerJsonFormat(text);
    if (format == "huggingface") return makeHuggingFaceTokenizer(text);
    if (format == "wake2vec_chars") return makeWake2vecCharTokenizer(text);
    try {
        const json j = json::parse(text);
        if (!j.is_object()) fail("not a JSON object");
    } catch (const json::exception& e) {
        fail(std::string("not valid JSON: ") + e.what());
    }
    fail("neither a Hugging Face tokenizer.json (no \"model\") nor a Wake2vec character map (no \"char_to_id\")");
}

} // namespace gwb::engine
