// Normalizers: see hf_normalizers.h.

#include "tokenizers/hf_normalizers.h"

#include <stdexcept>

namespace gwb::engine::hf {

void parseNormalizer(const json& n, const std::string& where, std::vector<NormStep>& out, int depth) {
    const std::string type =
        componentType(n, where, "normalizers", depth,
                      [&](const json& item, const std::string& at, int d) { parseNormalizer(item, at, out, d); });
    if (type.empty()) return;
    NormStep s{};
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

namespace {

/// Replaces every character by what `append(cp, out)` writes for it, each keeping the source
/// character's byte span.
template <class Append> void expandChars(Chars& w, Append append) {
    Chars out;
    out.reserve(w.size());
    std::u32string tmp;
    for (const Char& c : w) {
        tmp.clear();
        append(c.cp, tmp);
        for (char32_t x : tmp)
            out.push_back({x, c.begin, c.end});
    }
    w = std::move(out);
}

/// Unicode's normal forms as tokenizers computes them (the unicode-normalization crate): the full
/// decomposition of every character (compatibility for NFKD/NFKC), marks put in canonical
/// order (a stable sort of each run of non-starters by combining class), then for NFC/NFKC the
/// canonical composition, where a character joins the last starter unless a character between
/// them is a starter or has a class at least its own. Every output character keeps the byte span
/// of the characters it came from (a composite: the union of its parts').
void normalForm(Norm form, Chars& w) {
    if (std::all_of(w.begin(), w.end(), [](const Char& c) { return c.cp < 0x80; })) return; // ASCII: fixed
    const bool compat = form == Norm::Nfkd || form == Norm::Nfkc;
    Chars out = w;
    expandChars(out, [compat](char32_t cp, std::u32string& o) { unicode::appendDecomposition(cp, compat, o); });
    for (size_t i = 0; i < out.size();) {
        if (unicode::combiningClass(out[i].cp) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < out.size() && unicode::combiningClass(out[j].cp) != 0)
            ++j;
        std::stable_sort(
            out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
            [](const Char& x, const Char& y) { return unicode::combiningClass(x.cp) < unicode::combiningClass(y.cp); });
        i = j;
    }
    if (form == Norm::Nfd || form == Norm::Nfkd) {
        w = std::move(out);
        return;
    }
    Chars composed;
    composed.reserve(out.size());
    size_t starter = SIZE_MAX; // index in composed of the last starter
    for (const Char& c : out) {
        const uint8_t ccc = unicode::combiningClass(c.cp);
        if (starter != SIZE_MAX) {
            const bool adjacent = starter + 1 == composed.size();
            const uint8_t before = adjacent ? 0 : unicode::combiningClass(composed.back().cp);
            if (adjacent || (before != 0 && before < ccc)) {
                if (const char32_t joined = unicode::compose(composed[starter].cp, c.cp)) {
                    Char& s = composed[starter];
                    s = {joined, std::min(s.begin, c.begin), std::max(s.end, c.end)};
                    continue;
                }
            }
        }
        if (ccc == 0) starter = composed.size();
        composed.push_back(c);
    }
    w = std::move(composed);
}

void lowercase(Chars& w) {
    expandChars(w, unicode::appendLower);
}
/// NFD without nonspacing marks (what BERT's strip_accents gives).
void decomposeStrip(Chars& w) {
    expandChars(w, [](char32_t cp, std::u32string& out) {
        const size_t from = out.size();
        unicode::appendStripped(cp, out);
        out.erase(
            std::remove_if(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
                           [](char32_t x) { return unicode::charClass(x) == unicode::CharClass::NonspacingMark; }),
            out.end());
    });
}

} // namespace

void normalize(const std::vector<NormStep>& steps, Chars& w) {
    for (const NormStep& s : steps) {
        switch (s.kind) {
        case Norm::Nfd:
        case Norm::Nfc:
        case Norm::Nfkd:
        case Norm::Nfkc:
            normalForm(s.kind, w);
            break;
        case Norm::Lowercase:
            lowercase(w);
            break;
        case Norm::StripAccents: // tokenizers removes every combining mark (Mn, Mc, Me)
            w.erase(std::remove_if(w.begin(), w.end(),
                                   [](const Char& c) {
                                       return c.cp >= 0x300 && unicode::rangeValue(unicode::kMarkRanges,
                                                                                   unicode::kMarkRangesCount, c.cp);
                                   }),
                    w.end());
            break;
        case Norm::Bert: {
            Chars out;
            for (const Char& c : w) {
                if (s.cleanText) {
                    const bool control = c.cp != '\t' && c.cp != '\n' && c.cp != '\r' &&
                                         unicode::charClass(c.cp) == unicode::CharClass::Control;
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

} // namespace gwb::engine::hf
