// Decoders: see hf_decoders.h.

#include "tokenizers/hf_decoders.h"

#include "gwb/engine/tokenizer.h"

#include <stdexcept>

namespace gwb::engine::hf {

void parseDecoder(const json& d, const std::string& where, std::vector<DecStep>& out, int depth) {
    const std::string type =
        componentType(d, where, "decoders", depth,
                      [&](const json& item, const std::string& at, int d) { parseDecoder(item, at, out, d); });
    if (type.empty()) return;
    DecStep s{};
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

namespace {

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

} // namespace

std::vector<std::string> applyDecoder(const DecStep& s, std::vector<std::string> t,
                                      const std::vector<char32_t>& alphabet) {
    switch (s.kind) {
    case Dec::ByteLevel: {
        std::string all; // raw bytes, like the "bpe" kind (tokenizers would replace invalid UTF-8)
        for (const std::string& x : t) {
            std::string bytes;
            all += byteLevelBytes(alphabet, x, bytes) ? bytes : x; // a token outside the alphabet stays as it is
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

} // namespace gwb::engine::hf
