// libFuzzer harness: GPT-2 byte-level BPE vocab.json + merges.txt (tokenizers/bpe_tokenizer.cpp).
// An input holding the separator line "\n@@merges.txt@@\n" is vocab.json before it and merges.txt
// after it (what `gwb import` reads from a folder); any other input is the serialized form that
// travels inside a .gwb ({"vocab": ..., "merges": ...}). Seeds: tests/fuzz/corpus/bpe.

#include "fuzz_util.h"

#include "tokenizers/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace gwb;
    const std::string input(reinterpret_cast<const char*>(data), size);
    static const std::string kSeparator = "\n@@merges.txt@@\n";
    engine::TokenizerPtr t;
    const size_t cut = input.find(kSeparator);
    const bool ok = fuzz::readOrRefuse([&] {
        if (cut == std::string::npos)
            t = engine::makeByteLevelBpeFromSerialized(input);
        else
            t = engine::makeByteLevelBpeTokenizer(input.substr(0, cut), input.substr(cut + kSeparator.size()));
    });
    if (ok) fuzz::mustWork("BPE tokenizer", [&] { fuzz::exerciseTokenizer(*t); });
    return 0;
}
