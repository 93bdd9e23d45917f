#pragma once
// GPT-2 byte-level BPE (vocab.json + merges.txt), engine-internal factory functions. The
// tokenizer's kind() is "bpe"; serialize() is a JSON object {"vocab": <vocab.json text>,
// "merges": <merges.txt text>} that makeByteLevelBpeFromSerialized() reads back.

#include "gwb/engine/tokenizer.h"
#include "tokenizers/wordpiece_unicode.h"

#include <string>
#include <vector>

namespace gwb::engine {

/// Throws std::invalid_argument naming the problem (bad JSON, a merge line that is not two
/// symbols, a byte symbol missing from the vocabulary).
TokenizerPtr makeByteLevelBpeTokenizer(const std::string& vocabJson, const std::string& mergesText);
TokenizerPtr makeByteLevelBpeFromSerialized(const std::string& bytes);

/// GPT-2's bytes_to_unicode(): the symbol of each byte value (shared with tokenizer.json's ByteLevel).
std::vector<char32_t> gpt2ByteAlphabet();
/// End (exclusive) of the GPT-2 pre-token that starts at chars[i] (the pattern in bpe_tokenizer.cpp).
size_t gpt2PreTokenEnd(const std::vector<unicode::DecodedChar>& chars, size_t i);

} // namespace gwb::engine
