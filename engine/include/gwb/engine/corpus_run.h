#pragma once
// Streams text files window by window through one or two models and accumulates CorpusStats.
// Std types only.

#include "gwb/engine/corpus_stats.h"
#include "gwb/engine/model.h"
#include "gwb/engine/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

struct CorpusOptions {
    std::vector<std::string> files; ///< UTF-8 text files, each tokenized whole with the model's tokenizer
    int64_t window = 256;           ///< tokens per window (<= both models' max_len)
    int64_t stride = 256;           ///< tokens between window starts
    int64_t maxWindows = 0;         ///< use only the first N global windows (0 = all)
    int shardIndex = 0;             ///< this run covers global windows g with g % shardCount == shardIndex
    int shardCount = 1;
    int lensTopK = 10; ///< logit-lens depth: ranks above K are counted as K+1
    /// Global windows already covered (an interrupted run being resumed): skipped here, and not
    /// counted in windowsPlanned' progress; merge the result with the earlier file.
    std::vector<int64_t> skipWindows;
};

/// The valued options, declared once (gwb/engine/options.h): `gwb stats`'s flags and
/// Model.stats's keywords. runCorpus checks them, then what spans options and models (the shard,
/// the window within both models' max_len).
const OptionTable<CorpusOptions>& corpusOptions();

/// One file's windows: starts 0, stride, 2*stride, ...; each window holds min(window, n - start)
/// tokens; the last window is the first that reaches the end of the file; windows shorter than
/// 2 tokens are not made. Global window indices number the windows of all files in order.
std::vector<int64_t> windowStarts(int64_t tokens, int64_t window, int64_t stride);

struct CorpusProgress {
    int64_t windowsDone = 0;      ///< windows of this shard finished
    int64_t windowsTotal = 0;     ///< windows this shard covers
    int64_t tokensDone = 0;       ///< tokens traced (per model)
    double seconds = 0;           ///< wall time since the windows started
    double traceSeconds = 0;      ///< of which: forward passes (both models)
    double analysisSeconds = 0;   ///< analyzeTrace (both models)
    double accumulateSeconds = 0; ///< histogram/sum updates and the influence-attention comparison
};
/// Returns false to cancel.
using CorpusProgressFn = std::function<bool(const CorpusProgress&)>;

/// Runs the corpus. `baseline` may be null. A file that cannot be read, is not valid UTF-8 or has
/// fewer than 2 tokens is recorded in CorpusStats::skipped (and reported through `warn`) and the
/// others go on. Cancelling (flag or progress) stops after the current window and returns the
/// windows done with complete = false; it never throws Cancelled. Throws std::invalid_argument for
/// bad options (window > max_len, bad shard, no tokenizer, models with different tokenizers).
CorpusStats runCorpus(const Model& model, const Model* baseline, const CorpusOptions& options,
                      const CorpusProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr,
                      const std::function<void(const std::string&)>& warn = {});

} // namespace gwb::engine
