#pragma once
// The rules gwb import's conversion (import_convert.cpp) applies besides the key table
// (engine-internal): the family's buffers are checked, heads and variant flags are chosen from the
// layout, a found config and the options (each reported with its source), and the vocabulary
// file is read. Every error names the tensor, file or option.

#include "gwb/engine/import.h"
#include "gwb/engine/tokenizer.h"
#include "import/import_config.h"
#include "import/import_tensor_file.h"
#include "import/layout_file.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gwb::engine::detail {

/// Checks the family's pair-index buffers. Returns, for each of the file's W_plu columns, our
/// column and sign: the file may list pairs in another order, or as (j, i) (then p flips sign).
/// Throws when the buffers are not a permutation of all pairs of r.
std::vector<std::pair<int64_t, float>> pairColumns(const RawTensor& idxI, const RawTensor& idxJ, int64_t r,
                                                   const std::string& where);
/// A causal-mask buffer: [1, 1,] L x L with L >= Lmax, ones on and below the diagonal, zeros
/// above (only the leading Lmax x Lmax block is ever used). Throws naming the buffer otherwise.
void checkCausalMask(const RawTensor& t, int64_t maxLen, const std::string& name);
/// Heads: the option, else a found config (the checkpoint's saved arguments, config.json),
/// else the layout's, else model-spec's 4. A found count that cannot divide d (the shapes'
/// dModel) is refused with both values.
int64_t headsFor(const ImportOptions& o, const FoundConfig& found, const KindLayout& k, const std::string& layout,
                 int64_t dModel, ImportReport& report);
/// Sizes a found config states must equal what the tensor shapes show.
void checkFoundSizes(const FoundConfig& found, const ModelConfig& c, ImportReport& report);
/// The layout's defaults, then what a found config says, then the command-line overrides. Every
/// flag is reported with where it came from; a flag the checkpoint cannot show and nothing set is
/// reported as a default with the option that overrides it.
void applyVariant(const Layout& layout, const FoundConfig& found, const ImportOptions& o, ModelConfig& c,
                  ImportReport& report);
/// What the family's config.json says about the computation (the layout kind's "config"): the
/// activation, the LayerNorm eps, and flags with one value gwb honours, any other refused by name.
void applyConfigChecks(const KindLayout& k, const FoundConfig& found, const std::string& layout, ModelConfig& c,
                       ImportReport& report);
/// The mixer's stages in the report's words ("stages: z = LN(W_red x); ...").
std::string describeStages(const ModelConfig& c);
/// The vocabulary the options name: tokenizer.json (Hugging Face's or Wake2vec's), GPT-2's
/// vocab.json + merges.txt, or a WordPiece vocab.txt.
TokenizerPtr loadVocabulary(const ImportOptions& o);

} // namespace gwb::engine::detail
