#pragma once
// A dictionary's cfg.json (SAELens's layout) to and from DictionaryConfig: Torch-free, so that the
// fuzz harness (tests/fuzz/fuzz_dictionary.cpp) reads files exactly as loadDictionary does.

#include "gwb/engine/features.h"

#include <string>

namespace gwb::engine {

/// cfg.json's text in SAELens 6.x's layout (the architecture's fields at the top, the model and
/// site under "metadata", gwb's own record under "gwb").
std::string dictionaryConfigJson(const DictionaryConfig& config);

/// The config of a cfg.json: SAELens 6.x's layout or 5.x's flat one (gwb's files before version
/// 2). *rescaleByDecoderNorm (when given) says whether the weights must be rescaled by the decoder
/// norms (SAELens's rescale_acts_by_decoder_norm), which loadDictionary folds in. std::runtime_error
/// naming the problem for what gwb cannot read as SAELens computes it.
DictionaryConfig dictionaryConfigFromJson(const std::string& text, bool* rescaleByDecoderNorm = nullptr);

} // namespace gwb::engine
