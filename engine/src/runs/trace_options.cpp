// The trace's option table (gwb/engine/trace_options.h).

#include "gwb/engine/trace_options.h"

namespace gwb::engine {

const OptionTable<TraceOptions>& traceOptions() {
    using O = TraceOptions;
    static const OptionTable<O> table = {
        integerOption<O>("lens_k", "lens-k", "K", "Logit-lens top K; 0 leaves the lens out", 0, kNoMax, &O::lensTopK),
        integerOption<O>("max_tokens", "max-tokens", "N", "Trace at most N tokens; 0 = the model's max_len", 0, kNoMax,
                         &O::maxTokens),
        integerOption<O>("dense_limit", "dense-limit", "N",
                         "Keep the T x T attention up to this T (longer prompts recompute rows)", 0, kNoMax,
                         &O::denseAttentionLimit),
    };
    return table;
}

} // namespace gwb::engine
