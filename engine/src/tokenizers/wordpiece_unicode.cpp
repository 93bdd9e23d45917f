#include "tokenizers/wordpiece_unicode.h"

#include <algorithm>

namespace gwb::engine::unicode {

CharClass charClass(char32_t cp) {
    const ClassRange* end = kClassRanges + kClassRangeCount;
    const ClassRange* r =
        std::upper_bound(kClassRanges, end, cp, [](char32_t c, const ClassRange& x) { return c < x.first; });
    if (r == kClassRanges) return CharClass::Other;
    --r;
    return cp <= r->last ? static_cast<CharClass>(r->cls) : CharClass::Control;
}

void appendLower(char32_t cp, std::u32string& out) {
    if (cp < 0x80) {
        out += (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
        return;
    }
    const LowerMapping* end = kLowerMappings + kLowerMappingCount;
    const LowerMapping* m =
        std::lower_bound(kLowerMappings, end, cp, [](const LowerMapping& x, char32_t c) { return x.cp < c; });
    if (m == end || m->cp != cp) {
        out += cp;
        return;
    }
    for (char32_t c : m->lower)
        if (c) out += c;
}

void appendStripped(char32_t cp, std::u32string& out) {
    if (cp < 0xC0) { // Latin-1 below À has no decomposition and no marks
        out += cp;
        return;
    }
    constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
    constexpr char32_t kVCount = 21, kTCount = 28, kSCount = 11172;
    if (cp >= kSBase && cp < kSBase + kSCount) { // Hangul syllable: algorithmic NFD into jamo
        const char32_t s = cp - kSBase;
        out += kLBase + s / (kVCount * kTCount);
        out += kVBase + (s % (kVCount * kTCount)) / kTCount;
        if (s % kTCount) out += kTBase + s % kTCount;
        return;
    }
    if (charClass(cp) == CharClass::NonspacingMark) return;
    const StripMapping* end = kStripMappings + kStripMappingCount;
    const StripMapping* m =
        std::lower_bound(kStripMappings, end, cp, [](const StripMapping& x, char32_t c) { return x.cp < c; });
    if (m == end || m->cp != cp) {
        out += cp;
        return;
    }
    out.append(kStripData + m->offset, m->count);
}

std::vector<DecodedChar> decodeUtf8(std::string_view text) {
    std::vector<DecodedChar> out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto b = static_cast<unsigned char>(text[i]);
        const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
        char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
        for (size_t k = 1; k < n && i + k < text.size(); ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
        const size_t len = std::min(n, text.size() - i);
        out.push_back({cp, static_cast<int64_t>(i), static_cast<int64_t>(i + len)});
        i += len;
    }
    return out;
}

void appendUtf8(char32_t cp, std::string& out) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

} // namespace gwb::engine::unicode
