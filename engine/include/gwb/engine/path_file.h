#pragma once
// Path patching's files: the NPZ and meta.json `gwb paths` writes for one pair
// (pathPatching, with --linear the direct logit attribution) and for a pairs file (every usable
// pair's senders x receivers matrix, the mean effect over pairs and its bootstrap interval), each
// with one writer here; `gwb paths` and the Python package's model.paths() use them, and the pairs
// loop itself runs here so the command line and Python compute it the same way. Std types only.

#include "gwb/engine/npy.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

class Model;

/// What meta.json says of one pair's paths beside the result: where it came from and how it was
/// asked for.
struct PathFileContext {
    std::string modelFile;                  ///< the model's path as given
    std::string cleanPrompt, corruptPrompt; ///< as typed
    std::string answer, wrong;              ///< the pieces as typed
};

/// The arrays of one pair's paths: metric, effect (senders x receivers), clean_metric,
/// corrupt_metric; with `linear`, linear_corrupt, linear_clean, linear_delta, linear_bias and the
/// per-channel terms.
std::vector<NpzMember> pathArrays(const PathResult& result, const LinearResult* linear = nullptr);

/// meta.json of one pair's paths: model, labels, prompts, the metric's pieces and values, the
/// sender position and the definitions of every array.
std::string pathMetaJson(const Model& model, const PathRequest& request, const PathResult& result,
                         const PathFileContext& context, const LinearResult* linear = nullptr);

/// Writes one pair's NPZ (pathArrays + meta.json) atomically.
void writePathFile(const std::string& path, const Model& model, const PathRequest& request, const PathResult& result,
                   const PathFileContext& context, const LinearResult* linear = nullptr);

/// The paths of every usable pair of a pairs file (`gwb paths --pairs`).
struct PathPairsResult {
    std::vector<std::string> senderLabels, receiverLabels;
    int64_t pairs = 0;                              ///< P usable pairs
    std::vector<double> metric, effect;             ///< P x senders x receivers
    std::vector<double> cleanMetric, corruptMetric; ///< P
    std::vector<int64_t> lines;                     ///< P: each pair's line in the file
    /// senders x receivers: the estimators over the pairs (effect_claims.h): ratio of means, raw
    /// effects, mean of ratios above the threshold, Holm's marks; and the verdict on clean - corrupted.
    PairsEstimates estimates;
    std::vector<SkippedLine> skipped; ///< lines not used and why (sorted)
    int64_t fileLines = 0;            ///< lines the file had
    std::string pairsJson;            ///< JSON array: each pair as meta.json lists it
    int bootstrap = 1000;
    uint64_t seed = 0;
};

/// Runs `shape` (senders, receivers, sender position; its prompts and pieces are each pair's) for
/// every pair of `file` (the metric position each pair gives, else the last token), skipping a
/// pair the model cannot run with the reason; then the mean effect and its bootstrap interval
/// (`bootstrap` resamples from `seed`). Throws std::invalid_argument for a file without a usable
/// pair (naming the first lines and reasons); `progress` returns false to stop (PatchCancelled).
PathPairsResult computePathPairs(const Model& model, const PairsFile& file, const PathRequest& shape, int bootstrap,
                                 uint64_t seed, const std::function<bool(double)>& progress = {});

/// The arrays of a pairs run: metric, effect (P x S x R), clean_metric, corrupt_metric, line (P),
/// effect_mean, effect_ci_low, effect_ci_high, effect_n (S x R).
std::vector<NpzMember> pathPairsArrays(const PathPairsResult& result);

/// meta.json of a pairs run: model, labels, the pairs file and each pair, skipped lines,
/// bootstrap and seed, definitions.
std::string pathPairsMetaJson(const Model& model, const PathPairsResult& result, const std::string& modelFile,
                              const std::string& pairsFile);

/// Writes a pairs run's NPZ (pathPairsArrays + meta.json) atomically.
void writePathPairsFile(const std::string& path, const Model& model, const PathPairsResult& result,
                        const std::string& modelFile, const std::string& pairsFile);

} // namespace gwb::engine
