#pragma once
// A dictionary's cfg.json (SAELens's layout) to and from DictionaryConfig: Torch-free, so that the
// fuzz harness (tests/fuzz/fuzz_dictionary.cpp) reads files exactly as loadDictionary does.

#include "gwb/engine/features.h"

#include <string>
#include <vector>

namespace gwb::engine {

/// What cfg.json says of its corpus paths (gwb.corpus_paths), so that they travel with the folder:
/// gwb.corpus holds the training files relative to the folder of the cfg.json (absolute
/// where a file has no relative form), gwb.corpus_absolute the same files' absolute paths when the
/// dictionary was saved (read when the relative ones are not found: the folder moved alone).
inline constexpr const char* kCorpusPathsNote =
    "corpus: relative to the folder of this cfg.json; corpus_absolute: the same files when it was saved";

/// cfg.json's text in SAELens 6.x's layout (the architecture's fields at the top, the model and
/// site under "metadata", gwb's own record under "gwb"). With `dir` (the folder the file goes to),
/// config.corpus (paths this process opens) is stored by the rule of kCorpusPathsNote; without it
/// config.corpus is stored as it is (what dictionaryConfigFromJson without a folder gives back).
std::string dictionaryConfigJson(const DictionaryConfig& config, const std::string& dir = "");

/// The config of a cfg.json: SAELens 6.x's layout or 5.x's flat one (gwb's files before version
/// 2). *rescaleByDecoderNorm (when given) says whether the weights must be rescaled by the decoder
/// norms (SAELens's rescale_acts_by_decoder_norm), which loadDictionary folds in. std::runtime_error
/// naming the problem for what gwb cannot read as SAELens computes it. With `dir` (the folder the
/// file is in) config.corpus holds paths this process can open (corpusPathsFromFile); without it,
/// the paths as stored.
DictionaryConfig dictionaryConfigFromJson(const std::string& text, bool* rescaleByDecoderNorm = nullptr,
                                          const std::string& dir = "");

/// Training files as cfg.json stores them in `dir`: relative to that folder (symbolic links
/// resolved on both sides), absolute where a file has no relative form.
std::vector<std::string> corpusPathsForFile(const std::vector<std::string>& paths, const std::string& dir);

/// The stored corpus paths of a cfg.json in `dir` as paths this process can open.
/// relativeToDir (the file has gwb.corpus_paths): each against `dir`, else its entry of `absolute`
/// where that exists and the relative one does not. Older files stored the paths as the trainer was
/// given them, relative to a working folder nobody recorded: each is looked for in this working
/// folder, then beside the dictionary's folder (where `gwb features train --out DIR` usually ran),
/// then in it; the first that exists is taken, else the first form.
std::vector<std::string> corpusPathsFromFile(const std::vector<std::string>& stored,
                                             const std::vector<std::string>& absolute, const std::string& dir,
                                             bool relativeToDir);

} // namespace gwb::engine
