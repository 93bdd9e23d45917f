// Normalizers: see hf_normalizers.h.

#include "tokenizers/hf_normalizers.h"

#include <stdexcept>

namespace gwb::engine::hf {

void parseNormalizer(const json& n, const std::string& where, std::vector<NormStep>& out, int depth) {
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

namespace {

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
            if (unicode::charClass(x) != unicode::CharClass::NonspacingMark) out.push_back({x, c.begin, c.end});
    }
    w = std::move(out);
}

} // namespace

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
                                   [](const Char& c) { return unicode::charClass(c.cp) == unicode::CharClass::NonspacingMark; }),
                    w.end());
            }
            break;
        case Norm::Bert: {
            Chars out;
            for (const Char& c : w) {
                if (s.cleanText) {
                    const bool control =
                        c.cp != '\t' && c.cp != '\n' && c.cp != '\r' && unicode::charClass(c.cp) == unicode::CharClass::Control;
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
