// See hf_common.h.

#include "tokenizers/hf_common.h"

#include "tokenizers/bpe_tokenizer.h"

#include <cstdio>
#include <stdexcept>

namespace gwb::engine {
namespace hf {

[[noreturn]] void fail(const std::string& what) {
    throw std::invalid_argument("tokenizer.json: " + what);
}

std::string utf8(const Chars& c, size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i)
        unicode::appendUtf8(c[i].cp, s);
    return s;
}
std::string utf8(const Chars& c) {
    return utf8(c, 0, c.size());
}
std::u32string codePoints(const std::string& s) {
    std::u32string out;
    for (const auto& d : unicode::decodeUtf8(s))
        out += d.cp;
    return out;
}
std::string hexCp(char32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
    return buf;
}

/// Unicode White_Space (Rust's char::is_whitespace, the regex crate's \s).
bool isWhiteSpace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
/// BERT's punctuation: ASCII symbols and Unicode P*.
bool isBertPunctuation(char32_t c) {
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
    return unicode::charClass(c) == unicode::CharClass::Punctuation;
}
bool isCjk(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
/// The regex crate's \w: Alphabetic, marks, Nd, Pc, Join_Control (kWordRanges beyond ASCII).
bool isWordChar(char32_t c) {
    if (c < 0x80) return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return unicode::rangeValue(unicode::kWordRanges, unicode::kWordRangesCount, c) != 0;
}

// ---- JSON field access with messages that name the field ----

/// A value for a message: scalars as written (cut at 40 characters), lists and objects by kind
/// (dumping those would recurse as deep as a hostile file nests them).
std::string shortJson(const json& v) {
    if (v.is_array()) return "a list";
    if (v.is_object()) return "an object";
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 40) + "..." : s;
}

const json* field(const json& obj, const char* key) {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}
std::string getString(const json& obj, const char* key, const std::string& where, const std::string& dflt) {
    const json* v = field(obj, key);
    if (!v) return dflt;
    if (!v->is_string()) fail(where + "." + key + " must be a string");
    return v->get<std::string>();
}
bool getBool(const json& obj, const char* key, const std::string& where, bool dflt) {
    const json* v = field(obj, key);
    if (!v) return dflt;
    if (!v->is_boolean()) fail(where + "." + key + " must be true or false");
    return v->get<bool>();
}
int64_t getInt(const json& obj, const char* key, const std::string& where, int64_t dflt) {
    const json* v = field(obj, key);
    if (!v) return dflt;
    if (!v->is_number_integer()) fail(where + "." + key + " must be an integer");
    return v->get<int64_t>();
}
std::string typeOf(const json& obj, const std::string& where) {
    if (!obj.is_object()) fail(where + " must be a JSON object");
    const json* t = field(obj, "type");
    if (!t || !t->is_string()) fail(where + " has no \"type\"");
    return t->get<std::string>();
}
/// {"String": s} or {"Regex": r}: a literal, or the regexes we implement (GPT-2's pattern, or a
/// regex without metacharacters, which is a literal). Sets gpt2 for GPT-2's pattern.
std::string splitPattern(const json& obj, const std::string& where, bool& gpt2) {
    gpt2 = false;
    const json* p = field(obj, "pattern");
    if (!p || !p->is_object()) fail(where + ".pattern must be {\"String\": ...} or {\"Regex\": ...}");
    if (const json* s = field(*p, "String")) {
        if (!s->is_string()) fail(where + ".pattern.String must be a string");
        return s->get<std::string>();
    }
    const json* r = field(*p, "Regex");
    if (!r || !r->is_string()) fail(where + ".pattern must be {\"String\": ...} or {\"Regex\": ...}");
    const std::string re = r->get<std::string>();
    if (re == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)") {
        gpt2 = true;
        return re;
    }
    if (re.empty() || re.find_first_of("\\^$.|?*+()[]{}") != std::string::npos)
        fail(where + " regex '" + re + "' is not supported (only GPT-2's pattern and plain literals are)");
    return re;
}

// ---- splitting a word by matches, with tokenizers' SplitDelimiterBehavior ----

Behavior parseBehavior(const json& obj, const std::string& where, Behavior dflt) {
    const json* b = field(obj, "behavior");
    if (!b) return dflt;
    const std::string s = b->is_string() ? b->get<std::string>() : std::string();
    if (s == "Removed") return Behavior::Removed;
    if (s == "Isolated") return Behavior::Isolated;
    if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (s == "MergedWithNext") return Behavior::MergedWithNext;
    if (s == "Contiguous") return Behavior::Contiguous;
    fail(where + ".behavior '" + (b->is_string() ? s : shortJson(*b)) + "' is not a split behavior");
}

/// tokenizers' NormalizedString::split: the matches (sorted, non-overlapping, possibly empty)
/// and the gaps between them, then the behavior; empty pieces are dropped.
void splitByMatches(const Chars& w, const std::vector<std::pair<size_t, size_t>>& matches, Behavior behavior,
                    bool invert, std::vector<Chars>& out) {
    if (w.empty()) return;
    std::vector<Span> spans;
    size_t prev = 0;
    for (const auto& [b, e] : matches) {
        if (prev != b) spans.push_back({prev, b, false});
        spans.push_back({b, e, true});
        prev = e;
    }
    if (prev != w.size()) spans.push_back({prev, w.size(), false});
    if (invert)
        for (Span& s : spans)
            s.match = !s.match;
    std::vector<Span> pieces;
    bool previousMatch = false;
    switch (behavior) {
    case Behavior::Removed:
        for (const Span& s : spans)
            if (!s.match) pieces.push_back(s);
        break;
    case Behavior::Isolated:
        pieces = spans;
        break;
    case Behavior::MergedWithPrevious:
        for (const Span& s : spans) {
            if (s.match && !previousMatch && !pieces.empty())
                pieces.back().end = s.end;
            else
                pieces.push_back(s);
            previousMatch = s.match;
        }
        break;
    case Behavior::MergedWithNext:
        for (size_t k = spans.size(); k-- > 0;) {
            const Span& s = spans[k];
            if (s.match && !previousMatch && !pieces.empty())
                pieces.back().begin = s.begin;
            else
                pieces.push_back(s);
            previousMatch = s.match;
        }
        std::reverse(pieces.begin(), pieces.end());
        break;
    case Behavior::Contiguous:
        for (const Span& s : spans) {
            if (s.match == previousMatch && !pieces.empty())
                pieces.back().end = s.end;
            else
                pieces.push_back(s);
            previousMatch = s.match;
        }
        break;
    }
    for (const Span& s : pieces)
        if (s.end > s.begin)
            out.emplace_back(w.begin() + static_cast<std::ptrdiff_t>(s.begin),
                             w.begin() + static_cast<std::ptrdiff_t>(s.end));
}

/// Leftmost non-overlapping occurrences of a literal; the empty literal matches (emptily) at
/// every character boundary, which is how Split("", ...) cuts a word into characters.
std::vector<std::pair<size_t, size_t>> literalMatches(const Chars& w, const std::u32string& lit) {
    std::vector<std::pair<size_t, size_t>> m;
    if (lit.empty()) {
        for (size_t i = 0; i <= w.size(); ++i)
            m.emplace_back(i, i);
        return m;
    }
    for (size_t i = 0; i + lit.size() <= w.size();) {
        bool eq = true;
        for (size_t k = 0; eq && k < lit.size(); ++k)
            eq = w[i + k].cp == lit[k];
        if (eq) {
            m.emplace_back(i, i + lit.size());
            i += lit.size();
        } else {
            ++i;
        }
    }
    return m;
}
std::vector<std::pair<size_t, size_t>> gpt2Matches(const Chars& w) {
    // GPT-2's \s (Python's regex) counts U+001C..U+001F as spaces, tokenizers' (Oniguruma) does
    // not: refuse them rather than pick one.
    for (const Char& c : w)
        if (c.cp >= 0x1C && c.cp <= 0x1F)
            throw std::invalid_argument("tokenizer.json: " + hexCp(c.cp) + " at byte " + std::to_string(c.begin) +
                                        " is a space for GPT-2's pattern but not for tokenizers'");
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t i = 0; i < w.size();) {
        const size_t e = gpt2PreTokenEnd(w, i);
        m.emplace_back(i, e);
        i = e;
    }
    return m;
}

bool byteLevelBytes(const std::vector<char32_t>& alphabet, const std::string& piece, std::string& bytes) {
    for (const auto& d : unicode::decodeUtf8(piece)) {
        const auto it = std::find(alphabet.begin(), alphabet.end(), d.cp);
        if (it == alphabet.end()) return false;
        bytes += static_cast<char>(it - alphabet.begin());
    }
    return true;
}

/// The pieces by id. Ids must run from 0 to the largest without gaps: every embedding row has a
/// piece (checked on the map, so a huge id costs nothing before it is refused).
std::vector<std::string> densePieces(const std::map<int32_t, std::string>& byId, const std::string& where,
                                     const std::string& what) {
    if (byId.empty()) fail(where + "the vocabulary is empty");
    const int32_t last = byId.rbegin()->first;
    if (static_cast<size_t>(last) + 1 != byId.size()) {
        int32_t expect = 0;
        for (const auto& [id, piece] : byId) {
            if (id != expect) break;
            ++expect;
        }
        fail(where + "no " + what + " has id " + std::to_string(expect) + " (ids must run from 0 to " +
             std::to_string(last) + " without gaps)");
    }
    std::vector<std::string> out;
    out.reserve(byId.size());
    for (const auto& [id, piece] : byId)
        out.push_back(piece);
    return out;
}

} // namespace hf

namespace unicode {

uint8_t rangeValue(const ValueRange* ranges, size_t count, char32_t cp) {
    const ValueRange* end = ranges + count;
    const ValueRange* r =
        std::upper_bound(ranges, end, cp, [](char32_t c, const ValueRange& x) { return c < x.first; });
    if (r == ranges) return 0;
    --r;
    return cp <= r->last ? r->value : 0;
}

namespace {
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

const Decomposition* findDecomposition(const Decomposition* table, size_t count, char32_t cp) {
    const Decomposition* end = table + count;
    const Decomposition* d =
        std::lower_bound(table, end, cp, [](const Decomposition& x, char32_t c) { return x.cp < c; });
    return d != end && d->cp == cp ? d : nullptr;
}
} // namespace

char32_t compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    const CompositionPair* end = kCompositionPairs + kCompositionPairCount;
    const CompositionPair* p = std::lower_bound(
        kCompositionPairs, end, CompositionPair{a, b, 0}, [](const CompositionPair& x, const CompositionPair& y) {
            return x.first < y.first || (x.first == y.first && x.second < y.second);
        });
    return p != end && p->first == a && p->second == b ? p->composite : 0;
}

void appendDecomposition(char32_t cp, bool compat, std::u32string& out) {
    if (cp < 0xA0) { // nothing below U+00A0 decomposes
        out += cp;
        return;
    }
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const char32_t s = cp - kSBase;
        out += kLBase + s / kNCount;
        out += kVBase + (s % kNCount) / kTCount;
        if (s % kTCount) out += kTBase + s % kTCount;
        return;
    }
    const Decomposition* d =
        compat ? findDecomposition(kCompatDecompositions, kCompatDecompositionsCount, cp) : nullptr;
    if (!d) d = findDecomposition(kCanonicalDecompositions, kCanonicalDecompositionsCount, cp);
    if (!d) {
        out += cp;
        return;
    }
    out.append(kDecompositionData + d->offset, d->length);
}

} // namespace unicode

} // namespace gwb::engine
