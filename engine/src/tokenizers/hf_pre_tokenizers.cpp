// Pre-tokenizers: see hf_pre_tokenizers.h.

#include "tokenizers/hf_pre_tokenizers.h"

#include "tokenizers/bpe_tokenizer.h"

#include <stdexcept>

namespace gwb::engine::hf {

void parsePreTokenizer(const json& p, const std::string& where, std::vector<PreStep>& out, int depth) {
    const std::string type =
        componentType(p, where, "pretokenizers", depth,
                      [&](const json& item, const std::string& at, int d) { parsePreTokenizer(item, at, out, d); });
    if (type.empty()) return;
    PreStep s{};
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

} // namespace gwb::engine::hf
