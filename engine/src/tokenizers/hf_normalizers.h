#pragma once
// tokenizer.json's normalizers: parsed into steps, applied to a word whose characters keep
// their source byte spans. Normal forms other than NFD+StripAccents are checked, not computed.
// Engine-internal; see hf_tokenizer.cpp for the whole pipeline.

#include "tokenizers/hf_common.h"

#include <string>
#include <vector>

namespace gwb::engine::hf {

enum class Norm { Bert, Lowercase, StripAccents, Strip, Nfd, Nfc, Nfkd, Nfkc, Replace, Prepend };

struct NormStep {
    Norm kind;
    bool cleanText = true, chinese = true, stripAccents = true, lowercase = true; // Bert
    bool left = true, right = true;                                               // Strip
    std::u32string pattern, content;                                              // Replace, Prepend
};

/// Appends the steps of normalizer `n` (a Sequence flattened); null adds none.
void parseNormalizer(const json& n, const std::string& where, std::vector<NormStep>& out, int depth = 0);
/// Applies the steps in order; throws for a text a checked-only normal form would change.
void normalize(const std::vector<NormStep>& steps, Chars& w);

} // namespace gwb::engine::hf
