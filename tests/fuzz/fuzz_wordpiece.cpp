// libFuzzer harness: WordPiece vocab.txt (tokenizers/wordpiece_tokenizer.cpp), as `gwb import`,
// `gwb init --tokenizer vocab.txt` and an embedded .gwb tokenizer read it. Seeds:
// tests/fuzz/corpus/wordpiece.

#include "fuzz_util.h"

#include "gwb/engine/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string text(reinterpret_cast<const char*>(data), size);
    engine::TokenizerPtr t;
    if (fuzz::readOrRefuse([&] { t = engine::makeWordPieceTokenizer(text); }))
        fuzz::mustWork("WordPiece tokenizer", [&] { fuzz::exerciseTokenizer(*t); });
    return 0;
}
