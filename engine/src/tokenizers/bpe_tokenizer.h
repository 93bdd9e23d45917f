#pragma once
// GPT-2 byte-level BPE (vocab.json + merges.txt), engine-internal factory functions. The
// tokenizer's kind() is "bpe"; serialize() is a JSON object {"vocab": <vocab.json text>,
// "merges": <merges.txt text>} that makeByteLevelBpeFromSerialized() reads back.

#include "gwb/engine/tokenizer.h"

#include <string>

namespace gwb::engine {

/// Throws std::invalid_argument naming the problem (bad JSON, a merge line that is not two
/// symbols, a byte symbol missing from the vocabulary).
TokenizerPtr makeByteLevelBpeTokenizer(const std::string& vocabJson, const std::string& mergesText);
TokenizerPtr makeByteLevelBpeFromSerialized(const std::string& bytes);

} // namespace gwb::engine
