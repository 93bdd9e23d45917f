// Tokenizer factory, file loading and UTF-8 validation.

#include "gwb/engine/tokenizer.h"

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"
#include "formats/file_util.h"
#include "gwb/engine/checkpoint.h"

#include <filesystem>
#include <stdexcept>

namespace gwb::engine {

std::vector<int32_t> Tokenizer::encodeIds(std::string_view text) const {
    std::vector<int32_t> ids;
    for (const TokenPiece& p : encode(text))
        ids.push_back(p.id);
    return ids;
}

TokenizerPtr makeTokenizer(const std::string& kind, const std::string& bytes) {
    if (kind == "sentencepiece") return makeSentencePieceTokenizer(bytes);
    if (kind == "wordpiece") return makeWordPieceTokenizer(bytes);
    if (kind == "bpe") return makeByteLevelBpeFromSerialized(bytes);
    if (kind == "huggingface") return makeHuggingFaceTokenizer(bytes);
    if (kind == "wake2vec_chars") return makeWake2vecCharTokenizer(bytes);
    throw std::invalid_argument("unknown tokenizer kind '" + kind + "'");
}

TokenizerPtr loadTokenizerFile(const std::string& path) {
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".gwb") { // a model file carries its tokenizer: tensor tokenizer.model + tokenizer_kind
        SafetensorsFile f;
        try {
            f = readSafetensors(path);
        } catch (const std::exception& e) {
            throw std::runtime_error(path + ": not a .gwb model file (" + e.what() + ")");
        }
        const auto it = f.tensors.find("tokenizer.model");
        const auto kind = f.metadata.find("tokenizer_kind");
        if (it == f.tensors.end() || kind == f.metadata.end())
            throw std::runtime_error(path + ": this model file carries no tokenizer");
        try {
            const auto& t = it->second;
            return makeTokenizer(kind->second, std::string(t.bytes.begin(), t.bytes.end()));
        } catch (const std::exception& e) {
            throw std::runtime_error(path + ": its tokenizer: " + e.what());
        }
    }
    const std::string bytes = readFileBytes(path);
    try {
        if (ext == ".txt") return makeTokenizer("wordpiece", bytes);
        if (ext == ".json") {
            if (!tokenizerJsonFormat(bytes).empty() || std::filesystem::path(path).filename() == "tokenizer.json")
                return makeTokenizerJson(bytes);
            const auto merges = std::filesystem::path(path).parent_path() / "merges.txt";
            if (!std::filesystem::exists(merges))
                throw std::invalid_argument(
                    "neither a tokenizer.json nor a GPT-2 vocab.json with merges.txt beside it");
            return makeByteLevelBpeTokenizer(bytes, readFileBytes(merges.string()));
        }
        return makeTokenizer("sentencepiece", bytes);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

void checkUtf8(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    size_t i = 0;
    auto fail = [&](const char* what) {
        throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(i) + ": " + what);
    };
    while (i < n) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        int len = 0; // every branch below sets it or throws (clang cannot see that fail() throws)
        uint32_t cp = 0;
        if ((c & 0xe0) == 0xc0)
            len = 2, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            len = 3, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            len = 4, cp = c & 0x07;
        else
            fail("byte is not a valid UTF-8 lead byte");
        if (i + static_cast<size_t>(len) > n) fail("sequence truncated at end of text");
        for (int k = 1; k < len; ++k) {
            if ((p[i + static_cast<size_t>(k)] & 0xc0) != 0x80) fail("missing continuation byte");
            cp = (cp << 6) | (p[i + static_cast<size_t>(k)] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
            fail("overlong encoding");
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) fail("code point out of range or a surrogate");
        i += static_cast<size_t>(len);
    }
}

} // namespace gwb::engine
