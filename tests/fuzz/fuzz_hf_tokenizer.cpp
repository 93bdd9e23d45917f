// libFuzzer harness: tokenizer.json (tokenizers/hf_tokenizer.cpp makeTokenizerJson): Hugging
// Face's format (BPE byte-level or not, WordPiece, WordLevel, with their normalizers,
// pre-tokenizers, decoders and added tokens) and Wake2vec's character map. Seeds:
// tests/fuzz/corpus/hf_tokenizer.

#include "fuzz_util.h"

#include "gwb/engine/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string text(reinterpret_cast<const char*>(data), size);
    engine::TokenizerPtr t;
    if (fuzz::readOrRefuse([&] { t = engine::makeTokenizerJson(text); }))
        fuzz::mustWork("tokenizer.json tokenizer", [&] { fuzz::exerciseTokenizer(*t, /*encodeMayRefuse=*/true); });
    return 0;
}
