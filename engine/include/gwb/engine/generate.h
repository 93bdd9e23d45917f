#pragma once
// Incremental text generation: the prompt runs once, then every new token costs O(1) work per
// Grassmann layer (only the last max(W) reduced vectors are kept) or one KV-cache row per attention
// layer. Std types only.

#include "gwb/engine/model.h"
#include "gwb/engine/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace gwb::engine {

struct GenerateOptions {
    int64_t maxNew = 32;      ///< tokens to generate (stops early at max_len)
    double temperature = 1.0; ///< > 0; ignored when greedy
    int64_t topK = 0;         ///< 0 = off
    double topP = 1.0;        ///< nucleus mass; 1 = off
    uint64_t seed = 0;
    bool greedy = false;
};

/// The valued options, declared once (gwb/engine/options.h): `gwb generate`'s flags and
/// Model.generate's keywords (greedy is a switch of its own). temperature is not checked when greedy.
const OptionTable<GenerateOptions>& generateOptions();

struct GenerateResult {
    std::vector<int32_t> ids;   ///< prompt ids followed by the generated ids
    int64_t promptLength = 0;   ///< number of prompt ids at the front of ids
    double tokensPerSecond = 0; ///< generated tokens / wall time of the generation loop
    bool stoppedAtMaxLen = false;
};

/// Calls onToken(id, indexInIds) after each new token; returning false stops. Throws Cancelled
/// (analysis.h) when cancel becomes true. Bad options or ids (empty prompt, id outside the
/// vocabulary, prompt longer than max_len, temperature <= 0, top_p outside (0, 1], top_k < 0,
/// max_new < 0) throw std::invalid_argument.
GenerateResult generate(const Model& model, const std::vector<int32_t>& promptIds, const GenerateOptions& options,
                        const std::function<bool(int32_t, int64_t)>& onToken = {},
                        const std::atomic<bool>* cancel = nullptr);

} // namespace gwb::engine
