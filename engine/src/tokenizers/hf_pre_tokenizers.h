#pragma once
// tokenizer.json's pre-tokenizers: parsed into steps, each splitting words into smaller words.
// Engine-internal; see hf_tokenizer.cpp for the whole pipeline.

#include "tokenizers/hf_common.h"

#include <string>
#include <vector>

namespace gwb::engine::hf {

enum class Pre { ByteLevel, Bert, Whitespace, WhitespaceSplit, Split, Punctuation, CharDelimiter, Metaspace };

struct PreStep {
    Pre kind;
    bool addPrefixSpace = false, useRegex = true; // ByteLevel
    std::u32string pattern;                       // Split (literal), CharDelimiter, Metaspace replacement
    bool gpt2 = false, invert = false;            // Split
    Behavior behavior = Behavior::Isolated;       // Split, Punctuation
    std::string prependScheme = "always";         // Metaspace
    bool split = true;                            // Metaspace
};

/// Appends the steps of pre-tokenizer `p` (a Sequence flattened); null adds none.
void parsePreTokenizer(const json& p, const std::string& where, std::vector<PreStep>& out, int depth = 0);
/// Applies one step to every word; `alphabet` is GPT-2's byte alphabet (ByteLevel).
void preTokenize(const PreStep& s, const std::vector<char32_t>& alphabet, std::vector<Chars>& words);

} // namespace gwb::engine::hf
