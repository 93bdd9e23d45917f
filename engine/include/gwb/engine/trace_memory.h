#pragma once
// What a trace of T tokens holds in memory, from the model's shapes alone (no run needed): the
// window shows it beside its longest-prompt setting. Std types only.

#include "gwb/engine/config.h"

#include <cstdint>

namespace gwb::engine {

struct TraceMemory {
    int64_t trace = 0;    ///< bytes of the Trace: kept states, weights copied for the analyses, lens
    int64_t analysis = 0; ///< bytes of its analysis (a Grassmann trace's every part; an attention trace's)
    int64_t total() const { return trace + analysis; }
};

/// The bytes a trace of `tokens` tokens keeps (as TraceOptions describes it: `lensTopK` 0 = no
/// lens, `keepMixerStates` g and the mixer's input, `denseAttentionLimit` the H x T x T
/// probabilities up to that length) and its analysis takes. The array payloads only: a few
/// hundred bytes per array and each token's piece text come on top.
TraceMemory traceMemory(const ModelConfig& config, int64_t tokens, int lensTopK = 0, bool keepMixerStates = false,
                        int64_t denseAttentionLimit = 2048);

} // namespace gwb::engine
