#pragma once
// The options of a trace (gwb trace, Model.trace): one table, read by the command line, Python and
// the engine's check, so each front end shows the same default and range and refuses a bad value
// with the same sentence.

#include "gwb/engine/options.h"
#include "gwb/engine/tracer.h"

namespace gwb::engine {

/// lens_k (--lens-k), max_tokens (--max-tokens), dense_limit (--dense-limit) over TraceOptions;
/// the defaults are TraceOptions{}'s.
const OptionTable<TraceOptions>& traceOptions();

} // namespace gwb::engine
