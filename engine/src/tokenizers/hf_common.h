#pragma once
// What the pieces of the Hugging Face tokenizer.json reader share (engine-internal): text as
// code points that keep their source bytes, the character classes tokenizers uses, JSON field
// access whose messages name the field, and splitting a word by matches with tokenizers'
// SplitDelimiterBehavior. Every error is std::invalid_argument("tokenizer.json: ...").

#include "tokenizers/hf_unicode.h"
#include "tokenizers/wordpiece_unicode.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine::hf {

using nlohmann::json;
using Char = unicode::DecodedChar; ///< a (normalized) code point and the source bytes it came from
using Chars = std::vector<Char>;

inline constexpr int kMaxNesting = 32; // Sequence inside Sequence: real files use one level

[[noreturn]] void fail(const std::string& what);

std::string utf8(const Chars& c, size_t from, size_t to);
std::string utf8(const Chars& c);
std::u32string codePoints(const std::string& s);
std::string hexCp(char32_t c); ///< "U+00E9"

/// Unicode White_Space (Rust's char::is_whitespace, the regex crate's \s).
bool isWhiteSpace(char32_t c);
/// BERT's punctuation: ASCII symbols and Unicode P*.
bool isBertPunctuation(char32_t c);
bool isCjk(char32_t c);
/// The regex crate's \w: Alphabetic, marks, Nd, Pc, Join_Control (kWordRanges beyond ASCII).
bool isWordChar(char32_t c);

/// A value for a message: scalars as written (cut at 40 characters), lists and objects by kind.
std::string shortJson(const json& v);
/// obj[key] when obj is an object holding a non-null key, else nullptr.
const json* field(const json& obj, const char* key);
std::string getString(const json& obj, const char* key, const std::string& where, const std::string& dflt);
bool getBool(const json& obj, const char* key, const std::string& where, bool dflt);
int64_t getInt(const json& obj, const char* key, const std::string& where, int64_t dflt);
/// obj["type"], refusing a non-object or a missing type by `where`.
std::string typeOf(const json& obj, const std::string& where);
/// The type of a normalizer, pre-tokenizer or decoder at `where`, or "" when there is nothing
/// more to add: null, or a Sequence, whose items (obj[listKey]) are handed to
/// `each(item, itemWhere, depth + 1)` in order. Nesting deeper than kMaxNesting is refused.
template <class Each>
std::string componentType(const json& obj, const std::string& where, const char* listKey, int depth, Each each) {
    if (obj.is_null()) return {};
    if (depth > kMaxNesting) fail(where + ": Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    std::string type = typeOf(obj, where);
    if (type != "Sequence") return type;
    const json* list = field(obj, listKey);
    if (!list || !list->is_array()) fail(where + "." + listKey + " must be a list");
    for (size_t i = 0; i < list->size(); ++i)
        each((*list)[i], where + "." + listKey + "[" + std::to_string(i) + "]", depth + 1);
    return {};
}
/// {"String": s} or {"Regex": r}: a literal, or the regexes we implement (GPT-2's pattern, or a
/// regex without metacharacters, which is a literal). Sets gpt2 for GPT-2's pattern.
std::string splitPattern(const json& obj, const std::string& where, bool& gpt2);

/// The bytes of a byte-level piece (GPT-2's printable byte alphabet); false when a character of
/// `piece` is not in the alphabet.
bool byteLevelBytes(const std::vector<char32_t>& alphabet, const std::string& piece, std::string& bytes);

/// The pieces by id. Ids must run from 0 to the largest without gaps: every embedding row has a
/// piece (checked on the map, so a huge id costs nothing before it is refused).
std::vector<std::string> densePieces(const std::map<int32_t, std::string>& byId, const std::string& where,
                                     const std::string& what);

// ---- splitting a word by matches, with tokenizers' SplitDelimiterBehavior ----

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parseBehavior(const json& obj, const std::string& where, Behavior dflt);

struct Span {
    size_t begin, end; // char indices
    bool match;
};

/// tokenizers' NormalizedString::split: the matches (sorted, non-overlapping, possibly empty)
/// and the gaps between them, then the behavior; empty pieces are dropped.
void splitByMatches(const Chars& w, const std::vector<std::pair<size_t, size_t>>& matches, Behavior behavior,
                    bool invert, std::vector<Chars>& out);

/// Every character for which pred holds is a match of its own (tokenizers' char-predicate pattern).
template <class Pred> std::vector<std::pair<size_t, size_t>> charMatches(const Chars& w, Pred pred) {
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t i = 0; i < w.size(); ++i)
        if (pred(w[i].cp)) m.emplace_back(i, i + 1);
    return m;
}
/// Leftmost non-overlapping occurrences of a literal; the empty literal matches (emptily) at
/// every character boundary, which is how Split("", ...) cuts a word into characters.
std::vector<std::pair<size_t, size_t>> literalMatches(const Chars& w, const std::u32string& lit);
/// GPT-2's pre-tokenizer pattern as matches (refusing U+001C..U+001F, a space for one side only).
std::vector<std::pair<size_t, size_t>> gpt2Matches(const Chars& w);

} // namespace gwb::engine::hf
