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

#include "tokenizers/hf_tokenizer.h"
#include "tokenizers/token_id.h"

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_unicode.h"
#include "tokenizers/wordpiece_unicode.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace gwb::engine {
namespace {

using nlohmann::json;
using unicode::CharClass;
using Char = unicode::DecodedChar; // a (normalized) code point and the source bytes it came from
using Chars = std::vector<Char>;

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
    return unicode::charClass(c) == CharClass::Punctuation;
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

constexpr int kMaxNesting = 32; // Sequence inside Sequence: real files use one level

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

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

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

struct Span {
    size_t begin, end; // char indices
    bool match;
};

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

/// Every character for which pred holds is a match of its own (tokenizers' char-predicate pattern).
template <class Pred> std::vector<std::pair<size_t, size_t>> charMatches(const Chars& w, Pred pred) {
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t i = 0; i < w.size(); ++i)
        if (pred(w[i].cp)) m.emplace_back(i, i + 1);
    return m;
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

// ---- normalizers ----

enum class Norm { Bert, Lowercase, StripAccents, Strip, Nfd, Nfc, Nfkd, Nfkc, Replace, Prepend };

struct NormStep {
    Norm kind;
    bool cleanText = true, chinese = true, stripAccents = true, lowercase = true; // Bert
    bool left = true, right = true;                                               // Strip
    std::u32string pattern, content;                                              // Replace, Prepend
};

void parseNormalizer(const json& n, const std::string& where, std::vector<NormStep>& out, int depth = 0) {
    if (n.is_null()) return;
    if (depth > kMaxNesting) fail(where + ": Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    const std::string type = typeOf(n, where);
    NormStep s{};
    if (type == "Sequence") {
        const json* list = field(n, "normalizers");
        if (!list || !list->is_array()) fail(where + ".normalizers must be a list");
        for (size_t i = 0; i < list->size(); ++i)
            parseNormalizer((*list)[i], where + ".normalizers[" + std::to_string(i) + "]", out, depth + 1);
        return;
    }
    if (type == "BertNormalizer") {
        s.kind = Norm::Bert;
        s.cleanText = getBool(n, "clean_text", where, true);
        s.chinese = getBool(n, "handle_chinese_chars", where, true);
        s.lowercase = getBool(n, "lowercase", where, true);
        s.stripAccents = getBool(n, "strip_accents", where, s.lowercase);
    } else if (type == "Lowercase") {
        s.kind = Norm::Lowercase;
    } else if (type == "StripAccents") {
        s.kind = Norm::StripAccents;
    } else if (type == "Strip") {
        s.kind = Norm::Strip;
        s.left = getBool(n, "strip_left", where, true);
        s.right = getBool(n, "strip_right", where, true);
    } else if (type == "NFD" || type == "NFC" || type == "NFKD" || type == "NFKC") {
        s.kind = type == "NFD" ? Norm::Nfd : type == "NFC" ? Norm::Nfc : type == "NFKD" ? Norm::Nfkd : Norm::Nfkc;
    } else if (type == "Replace") {
        s.kind = Norm::Replace;
        bool gpt2 = false;
        s.pattern = codePoints(splitPattern(n, where, gpt2));
        if (gpt2 || s.pattern.empty()) fail(where + ": a Replace normalizer needs a non-empty literal pattern");
        s.content = codePoints(getString(n, "content", where, ""));
    } else if (type == "Prepend") {
        s.kind = Norm::Prepend;
        s.content = codePoints(getString(n, "prepend", where, ""));
    } else {
        fail("normalizer '" + type + "' is not supported");
    }
    out.push_back(std::move(s));
}

/// The first character of `w` that the normal form would change, or w.size() when it leaves
/// the text as it is. Decided from the tables (hf_unicode.h): every character must be stable on
/// its own, marks in canonical order, and (NFC, NFKC) no character may compose with the starter
/// before it (blocking is not modelled: a pair that would be blocked is refused too). We carry
/// no decomposition data, so a text the form would change is refused rather than guessed.
size_t firstChangedByNormalForm(Norm form, const Chars& w) {
    const uint8_t bit = form == Norm::Nfd    ? unicode::kNfdChanges
                        : form == Norm::Nfc  ? unicode::kNfcChanges
                        : form == Norm::Nfkd ? unicode::kNfkdChanges
                                             : unicode::kNfkcChanges;
    const bool composing = form == Norm::Nfc || form == Norm::Nfkc;
    size_t starter = w.size();
    uint8_t previousCcc = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        const char32_t c = w[i].cp;
        if (c < 0x80) { // ASCII: stable, a starter, composes with nothing that precedes it
            starter = i;
            previousCcc = 0;
            continue;
        }
        if (unicode::rangeValue(unicode::kNormRanges, unicode::kNormRangesCount, c) & bit) return i;
        const uint8_t ccc = unicode::rangeValue(unicode::kCccRanges, unicode::kCccRangesCount, c);
        if (ccc != 0 && previousCcc > ccc) return i; // canonical reordering
        if (composing && starter < w.size() && unicode::composes(w[starter].cp, c)) return i;
        if (ccc == 0) starter = i;
        previousCcc = ccc;
    }
    return w.size();
}

const char* normName(Norm n) {
    switch (n) {
    case Norm::Nfd:
        return "NFD";
    case Norm::Nfc:
        return "NFC";
    case Norm::Nfkd:
        return "NFKD";
    default:
        return "NFKC";
    }
}

void lowercase(Chars& w) {
    Chars out;
    std::u32string tmp;
    for (const Char& c : w) {
        tmp.clear();
        unicode::appendLower(c.cp, tmp);
        for (char32_t x : tmp)
            out.push_back({x, c.begin, c.end});
    }
    w = std::move(out);
}
/// NFD without nonspacing marks (what NFD followed by StripAccents gives).
void decomposeStrip(Chars& w) {
    Chars out;
    std::u32string tmp;
    for (const Char& c : w) {
        tmp.clear();
        unicode::appendStripped(c.cp, tmp);
        for (char32_t x : tmp)
            if (unicode::charClass(x) != CharClass::NonspacingMark) out.push_back({x, c.begin, c.end});
    }
    w = std::move(out);
}

void normalize(const std::vector<NormStep>& steps, Chars& w) {
    // NFD followed (after any Lowercase) by StripAccents is computed exactly from the tables
    // (NFD without marks); any other normal form must leave the text as it is.
    bool decomposing = false; // an NFD waits for its StripAccents
    for (size_t i = 0; i < steps.size(); ++i) {
        const NormStep& s = steps[i];
        switch (s.kind) {
        case Norm::Nfd:
        case Norm::Nfc:
        case Norm::Nfkd:
        case Norm::Nfkc: {
            if (s.kind == Norm::Nfd) {
                size_t j = i + 1;
                while (j < steps.size() && steps[j].kind == Norm::Lowercase)
                    ++j;
                if (j < steps.size() && steps[j].kind == Norm::StripAccents) {
                    decomposing = true;
                    break;
                }
            }
            const size_t at = firstChangedByNormalForm(s.kind, w);
            if (at < w.size())
                throw std::invalid_argument("tokenizer.json: normalizer '" + std::string(normName(s.kind)) +
                                            "' is implemented only for text it leaves unchanged; " + hexCp(w[at].cp) +
                                            " at byte " + std::to_string(w[at].begin) + " would change");
            break;
        }
        case Norm::Lowercase:
            lowercase(w);
            break;
        case Norm::StripAccents:
            if (decomposing) {
                decomposeStrip(w);
                decomposing = false;
            } else {
                w.erase(
                    std::remove_if(w.begin(), w.end(),
                                   [](const Char& c) { return unicode::charClass(c.cp) == CharClass::NonspacingMark; }),
                    w.end());
            }
            break;
        case Norm::Bert: {
            Chars out;
            for (const Char& c : w) {
                if (s.cleanText) {
                    const bool control =
                        c.cp != '\t' && c.cp != '\n' && c.cp != '\r' && unicode::charClass(c.cp) == CharClass::Control;
                    if (c.cp == 0 || c.cp == 0xFFFD || control) continue;
                    if (isWhiteSpace(c.cp)) {
                        out.push_back({U' ', c.begin, c.end});
                        continue;
                    }
                }
                if (s.chinese && isCjk(c.cp)) {
                    out.push_back({U' ', c.begin, c.begin});
                    out.push_back(c);
                    out.push_back({U' ', c.end, c.end});
                    continue;
                }
                out.push_back(c);
            }
            w = std::move(out);
            if (s.stripAccents) decomposeStrip(w);
            if (s.lowercase) lowercase(w);
            break;
        }
        case Norm::Strip:
            if (s.right)
                while (!w.empty() && isWhiteSpace(w.back().cp))
                    w.pop_back();
            if (s.left) {
                size_t k = 0;
                while (k < w.size() && isWhiteSpace(w[k].cp))
                    ++k;
                w.erase(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(k));
            }
            break;
        case Norm::Replace: {
            Chars out;
            const auto m = literalMatches(w, s.pattern);
            size_t at = 0;
            for (const auto& [b, e] : m) {
                for (; at < b; ++at)
                    out.push_back(w[at]);
                for (char32_t x : s.content)
                    out.push_back({x, w[b].begin, w[e - 1].end});
                at = e;
            }
            for (; at < w.size(); ++at)
                out.push_back(w[at]);
            w = std::move(out);
            break;
        }
        case Norm::Prepend:
            if (!w.empty()) {
                Chars out;
                for (char32_t x : s.content)
                    out.push_back({x, w.front().begin, w.front().begin});
                out.insert(out.end(), w.begin(), w.end());
                w = std::move(out);
            }
            break;
        }
    }
}

// ---- pre-tokenizers ----

enum class Pre { ByteLevel, Bert, Whitespace, WhitespaceSplit, Split, Punctuation, CharDelimiter, Metaspace };

struct PreStep {
    Pre kind;
    bool addPrefixSpace = false, useRegex = true; // ByteLevel
    std::u32string pattern;                       // Split (literal), CharDelimiter, Metaspace replacement
    bool gpt2 = false, invert = false;            // Split
    Behavior behavior = Behavior::Isolated;       // Split, Punctuation
    std::string prependScheme = "always";         // Metaspace
    bool split = true;                            // Metaspace
};

void parsePreTokenizer(const json& p, const std::string& where, std::vector<PreStep>& out, int depth = 0) {
    if (p.is_null()) return;
    if (depth > kMaxNesting) fail(where + ": Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    const std::string type = typeOf(p, where);
    PreStep s{};
    if (type == "Sequence") {
        const json* list = field(p, "pretokenizers");
        if (!list || !list->is_array()) fail(where + ".pretokenizers must be a list");
        for (size_t i = 0; i < list->size(); ++i)
            parsePreTokenizer((*list)[i], where + ".pretokenizers[" + std::to_string(i) + "]", out, depth + 1);
        return;
    }
    if (type == "ByteLevel") {
        s.kind = Pre::ByteLevel;
        s.addPrefixSpace = getBool(p, "add_prefix_space", where, true);
        s.useRegex = getBool(p, "use_regex", where, true);
    } else if (type == "BertPreTokenizer") {
        s.kind = Pre::Bert;
    } else if (type == "Whitespace") {
        s.kind = Pre::Whitespace;
    } else if (type == "WhitespaceSplit") {
        s.kind = Pre::WhitespaceSplit;
    } else if (type == "Split") {
        s.kind = Pre::Split;
        s.pattern = codePoints(splitPattern(p, where, s.gpt2));
        s.behavior = parseBehavior(p, where, Behavior::Isolated);
        s.invert = getBool(p, "invert", where, false);
    } else if (type == "Punctuation") {
        s.kind = Pre::Punctuation;
        s.behavior = parseBehavior(p, where, Behavior::Isolated);
    } else if (type == "CharDelimiterSplit") {
        s.kind = Pre::CharDelimiter;
        s.pattern = codePoints(getString(p, "delimiter", where, ""));
        if (s.pattern.size() != 1) fail(where + ".delimiter must be one character");
    } else if (type == "Metaspace") {
        s.kind = Pre::Metaspace;
        s.pattern = codePoints(getString(p, "replacement", where, "\xE2\x96\x81"));
        if (s.pattern.size() != 1) fail(where + ".replacement must be one character");
        if (field(p, "prepend_scheme"))
            s.prependScheme = getString(p, "prepend_scheme", where, "always");
        else
            s.prependScheme = getBool(p, "add_prefix_space", where, true) ? "always" : "never";
        if (s.prependScheme != "always" && s.prependScheme != "first" && s.prependScheme != "never")
            fail(where + ".prepend_scheme '" + s.prependScheme + "' is not always, first or never");
        s.split = getBool(p, "split", where, true);
    } else {
        fail("pre_tokenizer '" + type + "' is not supported");
    }
    out.push_back(std::move(s));
}

void preTokenize(const PreStep& s, const std::vector<char32_t>& alphabet, std::vector<Chars>& words) {
    std::vector<Chars> out;
    for (Chars& w : words) {
        switch (s.kind) {
        case Pre::ByteLevel: {
            if (s.addPrefixSpace && !w.empty() && w.front().cp != U' ')
                w.insert(w.begin(), Char{U' ', w.front().begin, w.front().begin});
            std::vector<Chars> parts;
            if (s.useRegex)
                splitByMatches(w, gpt2Matches(w), Behavior::Isolated, false, parts);
            else if (!w.empty())
                parts.push_back(w);
            for (const Chars& part : parts) {
                Chars bytes; // each UTF-8 byte as its symbol in GPT-2's alphabet
                for (const Char& c : part) {
                    std::string b;
                    unicode::appendUtf8(c.cp, b);
                    const bool exact = c.end - c.begin == static_cast<int64_t>(b.size());
                    for (size_t k = 0; k < b.size(); ++k) {
                        const auto at = static_cast<int64_t>(k);
                        bytes.push_back({alphabet[static_cast<unsigned char>(b[k])], exact ? c.begin + at : c.begin,
                                         exact ? c.begin + at + 1 : c.end});
                    }
                }
                out.push_back(std::move(bytes));
            }
            break;
        }
        case Pre::Bert: {
            std::vector<Chars> parts;
            splitByMatches(w, charMatches(w, isWhiteSpace), Behavior::Removed, false, parts);
            for (const Chars& part : parts)
                splitByMatches(part, charMatches(part, isBertPunctuation), Behavior::Isolated, false, out);
            break;
        }
        case Pre::Whitespace: { // \w+|[^\w\s]+, whitespace dropped
            size_t i = 0;
            while (i < w.size()) {
                if (isWhiteSpace(w[i].cp)) {
                    ++i;
                    continue;
                }
                const bool word = isWordChar(w[i].cp);
                size_t e = i + 1;
                while (e < w.size() && !isWhiteSpace(w[e].cp) && isWordChar(w[e].cp) == word)
                    ++e;
                out.emplace_back(w.begin() + static_cast<std::ptrdiff_t>(i),
                                 w.begin() + static_cast<std::ptrdiff_t>(e));
                i = e;
            }
            break;
        }
        case Pre::WhitespaceSplit:
            splitByMatches(w, charMatches(w, isWhiteSpace), Behavior::Removed, false, out);
            break;
        case Pre::Split:
            splitByMatches(w, s.gpt2 ? gpt2Matches(w) : literalMatches(w, s.pattern), s.behavior, s.invert, out);
            break;
        case Pre::Punctuation:
            splitByMatches(w, charMatches(w, isBertPunctuation), s.behavior, false, out);
            break;
        case Pre::CharDelimiter:
            splitByMatches(w, charMatches(w, [&](char32_t c) { return c == s.pattern[0]; }), Behavior::Removed, false,
                           out);
            break;
        case Pre::Metaspace: {
            const char32_t r = s.pattern[0];
            for (Char& c : w)
                if (c.cp == U' ') c.cp = r;
            const bool prepend =
                s.prependScheme == "always" || (s.prependScheme == "first" && !w.empty() && w.front().begin == 0);
            if (prepend && !w.empty() && w.front().cp != r)
                w.insert(w.begin(), Char{r, w.front().begin, w.front().begin});
            if (s.split)
                splitByMatches(w, charMatches(w, [&](char32_t c) { return c == r; }), Behavior::MergedWithNext, false,
                               out);
            else if (!w.empty())
                out.push_back(w);
            break;
        }
        }
    }
    words = std::move(out);
}

// ---- decoders ----

enum class Dec { ByteLevel, WordPiece, Bpe, Metaspace, ByteFallback, Fuse, Strip, Replace };

struct DecStep {
    Dec kind;
    std::string prefix = "##"; // WordPiece; Bpe suffix; Replace pattern
    bool cleanup = true;       // WordPiece
    std::string content;       // Replace content, Strip content, Metaspace replacement
    std::string prependScheme = "always";
    int64_t start = 0, stop = 0; // Strip
};

void parseDecoder(const json& d, const std::string& where, std::vector<DecStep>& out, int depth = 0) {
    if (d.is_null()) return;
    if (depth > kMaxNesting) fail(where + ": Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    const std::string type = typeOf(d, where);
    DecStep s{};
    if (type == "Sequence") {
        const json* list = field(d, "decoders");
        if (!list || !list->is_array()) fail(where + ".decoders must be a list");
        for (size_t i = 0; i < list->size(); ++i)
            parseDecoder((*list)[i], where + ".decoders[" + std::to_string(i) + "]", out, depth + 1);
        return;
    }
    if (type == "ByteLevel") {
        s.kind = Dec::ByteLevel;
    } else if (type == "WordPiece") {
        s.kind = Dec::WordPiece;
        s.prefix = getString(d, "prefix", where, "##");
        s.cleanup = getBool(d, "cleanup", where, true);
    } else if (type == "BPEDecoder") {
        s.kind = Dec::Bpe;
        s.prefix = getString(d, "suffix", where, "</w>");
    } else if (type == "Metaspace") {
        s.kind = Dec::Metaspace;
        s.content = getString(d, "replacement", where, "\xE2\x96\x81");
        if (field(d, "prepend_scheme"))
            s.prependScheme = getString(d, "prepend_scheme", where, "always");
        else
            s.prependScheme = getBool(d, "add_prefix_space", where, true) ? "always" : "never";
    } else if (type == "ByteFallback") {
        s.kind = Dec::ByteFallback;
    } else if (type == "Fuse") {
        s.kind = Dec::Fuse;
    } else if (type == "Strip") {
        s.kind = Dec::Strip;
        s.content = getString(d, "content", where, " ");
        if (codePoints(s.content).size() != 1) fail(where + ".content must be one character");
        s.start = getInt(d, "start", where, 0);
        s.stop = getInt(d, "stop", where, 0);
    } else if (type == "Replace") {
        s.kind = Dec::Replace;
        bool gpt2 = false;
        s.prefix = splitPattern(d, where, gpt2);
        if (gpt2 || s.prefix.empty()) fail(where + ": a Replace decoder needs a non-empty literal pattern");
        s.content = getString(d, "content", where, "");
    } else {
        fail("decoder '" + type + "' is not supported");
    }
    out.push_back(std::move(s));
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    size_t at = 0;
    while ((at = s.find(from, at)) != std::string::npos) {
        s.replace(at, from.size(), to);
        at += to.size();
    }
    return s;
}

/// tokenizers' wordpiece::cleanup (English detokenization).
std::string cleanup(std::string s) {
    for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{{" .", "."},
                                                                               {" ?", "?"},
                                                                               {" !", "!"},
                                                                               {" ,", ","},
                                                                               {" ' ", "'"},
                                                                               {" n't", "n't"},
                                                                               {" 'm", "'m"},
                                                                               {" do not", " don't"},
                                                                               {" 's", "'s"},
                                                                               {" 've", "'ve"},
                                                                               {" 're", "'re"}})
        s = replaceAll(std::move(s), a, b);
    return s;
}

int byteFallbackValue(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int v = 0;
    for (size_t k = 3; k < 5; ++k) {
        const char c = t[k];
        const int d = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
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
        if (!byteLevelBytes(p, bytes)) return p;
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
            tokens = applyDecoder(s, std::move(tokens));
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
            const CharClass k = unicode::charClass(c);
            return c == '_' || k == CharClass::Letter || k == CharClass::Number;
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

    bool byteLevelBytes(const std::string& piece, std::string& bytes) const {
        for (const auto& d : unicode::decodeUtf8(piece)) {
            const auto it = std::find(m_alphabet.begin(), m_alphabet.end(), d.cp);
            if (it == m_alphabet.end()) return false;
            bytes += static_cast<char>(it - m_alphabet.begin());
        }
        return true;
    }

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

    std::vector<std::string> applyDecoder(const DecStep& s, std::vector<std::string> t) const {
        switch (s.kind) {
        case Dec::ByteLevel: {
            std::string all; // raw bytes, like the "bpe" kind (tokenizers would replace invalid UTF-8)
            for (const std::string& x : t) {
                std::string bytes;
                all += byteLevelBytes(x, bytes) ? bytes : x; // a token outside the alphabet stays as it is
            }
            return {all};
        }
        case Dec::WordPiece:
            for (size_t i = 0; i < t.size(); ++i) {
                if (i > 0) {
                    if (t[i].compare(0, s.prefix.size(), s.prefix) == 0)
                        t[i] = t[i].substr(s.prefix.size());
                    else
                        t[i] = " " + t[i];
                }
                if (s.cleanup) t[i] = cleanup(std::move(t[i]));
            }
            return t;
        case Dec::Bpe:
            for (size_t i = 0; i < t.size(); ++i)
                t[i] = replaceAll(t[i], s.prefix, i + 1 == t.size() ? "" : " ");
            return t;
        case Dec::Metaspace:
            for (size_t i = 0; i < t.size(); ++i)
                t[i] = replaceAll(t[i], s.content, i == 0 && s.prependScheme != "never" ? "" : " ");
            return t;
        case Dec::ByteFallback: {
            std::vector<std::string> out;
            std::string bytes;
            size_t count = 0;
            auto flush = [&] {
                if (!count) return;
                try {
                    checkUtf8(bytes);
                    out.push_back(bytes);
                } catch (const std::invalid_argument&) {
                    for (size_t k = 0; k < count; ++k)
                        out.emplace_back("\xEF\xBF\xBD");
                }
                bytes.clear();
                count = 0;
            };
            for (std::string& x : t) {
                const int v = byteFallbackValue(x);
                if (v >= 0) {
                    bytes += static_cast<char>(v);
                    ++count;
                } else {
                    flush();
                    out.push_back(std::move(x));
                }
            }
            flush();
            return out;
        }
        case Dec::Fuse: {
            std::string all;
            for (const std::string& x : t)
                all += x;
            return {all};
        }
        case Dec::Strip:
            for (std::string& x : t) {
                for (int64_t k = 0; k < s.start && x.compare(0, s.content.size(), s.content) == 0; ++k)
                    x.erase(0, s.content.size());
                for (int64_t k = 0; k < s.stop && x.size() >= s.content.size() &&
                                    x.compare(x.size() - s.content.size(), s.content.size(), s.content) == 0;
                     ++k)
                    x.erase(x.size() - s.content.size());
            }
            return t;
        case Dec::Replace:
            for (std::string& x : t)
                x = replaceAll(x, s.prefix, s.content);
            return t;
        }
        return t;
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

// ---- Wake2vec's character map ----

class Wake2vecCharTokenizer final : public Tokenizer {
public:
    explicit Wake2vecCharTokenizer(std::string text) : m_text(std::move(text)) {
        json j;
        try {
            j = json::parse(m_text);
        } catch (const json::exception& e) {
            fail(std::string("not valid JSON: ") + e.what());
        }
        const json* map = field(j, "char_to_id");
        if (!map || !map->is_object()) fail("no \"char_to_id\" object");
        std::map<int32_t, std::string> byId;
        for (const auto& item : map->items()) {
            const json& v = item.value();
            if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
                fail("char_to_id: id of '" + item.key() + "' is " + shortJson(v) + ", not an id in [0, 2147483647]");
            const auto id = v.get<int32_t>();
            const auto [it, fresh] = byId.emplace(id, item.key());
            if (!fresh)
                fail("char_to_id: id " + std::to_string(id) + " is given to both '" + it->second + "' and '" +
                     item.key() + "'");
            const auto cps = unicode::decodeUtf8(item.key());
            if (cps.size() == 1) m_ids.emplace(cps[0].cp, id); // "<pad>" and the like never match a character
        }
        m_pieces = densePieces(byId, "char_to_id: ", "character");
    }

    std::string kind() const override { return "wake2vec_chars"; }
    int64_t vocabSize() const override { return static_cast<int64_t>(m_pieces.size()); }
    std::string serialize() const override { return m_text; }
    std::string pieceText(int32_t id) const override {
        detail::checkTokenId(id, static_cast<int64_t>(m_pieces.size()));
        return m_pieces[static_cast<size_t>(id)];
    }
    /// Wake2vec's decode: the entries joined ("<pad>" and "<eos>" as written).
    std::string decode(const std::vector<int32_t>& ids) const override {
        std::string out;
        for (int32_t id : ids)
            out += pieceText(id);
        return out;
    }
    /// One piece per code point; a character not in the map is id 0, as in Wake2vec.
    std::vector<TokenPiece> encode(std::string_view text) const override {
        checkUtf8(text);
        std::vector<TokenPiece> out;
        for (const auto& d : unicode::decodeUtf8(text)) {
            const auto it = m_ids.find(d.cp);
            const int32_t id = it == m_ids.end() ? 0 : it->second;
            out.push_back({id, m_pieces[static_cast<size_t>(id)], d.begin, d.end});
        }
        return out;
    }

private:
    std::string m_text;
    std::vector<std::string> m_pieces;
    std::unordered_map<char32_t, int32_t> m_ids;
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

TokenizerPtr makeWake2vecCharTokenizer(const std::string& json) {
    return std::make_shared<Wake2vecCharTokenizer>(json);
}

namespace unicode {

uint8_t rangeValue(const ValueRange* ranges, size_t count, char32_t cp) {
    const ValueRange* end = ranges + count;
    const ValueRange* r =
        std::upper_bound(ranges, end, cp, [](char32_t c, const ValueRange& x) { return c < x.first; });
    if (r == ranges) return 0;
    --r;
    return cp <= r->last ? r->value : 0;
}

bool composes(char32_t a, char32_t b) {
    constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
    if (a >= kLBase && a < kLBase + 19 && b >= kVBase && b < kVBase + 21) return true;
    if (a >= kSBase && a < kSBase + 11172 && (a - kSBase) % 28 == 0 && b > kTBase && b < kTBase + 28) return true;
    const CompositionPair* end = kCompositionPairs + kCompositionPairCount;
    const CompositionPair* p = std::lower_bound(
        kCompositionPairs, end, CompositionPair{a, b}, [](const CompositionPair& x, const CompositionPair& y) {
            return x.first < y.first || (x.first == y.first && x.second < y.second);
        });
    return p != end && p->first == a && p->second == b;
}

} // namespace unicode

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
