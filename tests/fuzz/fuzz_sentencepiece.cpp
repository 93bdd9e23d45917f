// libFuzzer harness: SentencePiece .model files (tokenizers/sentencepiece_model.cpp, the protobuf
// wire-format reader, and the tokenizer built on it). Seeds: tests/fuzz/corpus/sentencepiece.

#include "fuzz_util.h"

#include "gwb/engine/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    engine::TokenizerPtr t;
    if (fuzz::readOrRefuse([&] { t = engine::makeSentencePieceTokenizer(bytes); }))
        fuzz::mustWork("SentencePiece tokenizer", [&] { fuzz::exerciseTokenizer(*t); });
    return 0;
}
