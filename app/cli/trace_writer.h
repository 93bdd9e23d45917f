#pragma once
// Writing a trace as the NPZ that `gwb trace` writes (shared by trace and generate).

#include "gwb/engine/trace.h"

#include <string>

namespace gwb::app {

/// token_ids, surprisal, per-layer arrays, lens, meta.json; the analyses too when withAnalysis.
/// Written atomically; throws std::runtime_error naming the path on failure.
void writeTraceNpz(const gwb::engine::Trace& trace, bool withAnalysis, const std::string& out);

} // namespace gwb::app
