#pragma once
// tokenizer.json's decoders: parsed into steps, each turning the list of piece texts into
// another (ByteLevel and Fuse join them into one).
// Engine-internal; see hf_tokenizer.cpp for the whole pipeline.

#include "tokenizers/hf_common.h"

#include <string>
#include <vector>

namespace gwb::engine::hf {

enum class Dec { ByteLevel, WordPiece, Bpe, Metaspace, ByteFallback, Fuse, Strip, Replace };

struct DecStep {
    Dec kind;
    std::string prefix = "##"; // WordPiece; Bpe suffix; Replace pattern
    bool cleanup = true;       // WordPiece
    std::string content;       // Replace content, Strip content, Metaspace replacement
    std::string prependScheme = "always";
    int64_t start = 0, stop = 0; // Strip
};

/// Appends the steps of decoder `d` (a Sequence flattened); null adds none.
void parseDecoder(const json& d, const std::string& where, std::vector<DecStep>& out, int depth = 0);
/// Applies one step; `alphabet` is GPT-2's byte alphabet (ByteLevel).
std::vector<std::string> applyDecoder(const DecStep& s, std::vector<std::string> t,
                                      const std::vector<char32_t>& alphabet);

} // namespace gwb::engine::hf
