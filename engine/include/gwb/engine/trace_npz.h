#pragma once
// A trace as the named arrays and meta.json that `gwb trace` writes to its NPZ: one assembly for
// the command line, `gwb generate --trace` and the Python package (model.trace() hands out the
// same names). Std types only.

#include "gwb/engine/npy.h"
#include "gwb/engine/analysis.h"
#include "gwb/engine/trace.h"

#include <string>
#include <vector>

namespace gwb::engine {

struct TraceFile {
    /// token_ids, surprisal, logits (when kept), lL_h, lL_mixer_input (pre-norm), lL_z, lL_g, lL_gate
    /// or lL_q, lL_k, lL_attn, final_h, lens_*; the analyses' arrays with withAnalysis.
    std::vector<NpzMember> arrays;
    std::string metaJson;              ///< model, config, prompt, tokens with byte and character spans, definitions
    std::vector<std::string> warnings; ///< the analyses' warnings (one per layer and kind; callers may collapse them)
};

/// The arrays and meta.json of a trace; with withAnalysis the geometry and attention analyses too
/// (layers in parallel on the engine's threads): of a Grassmann trace the parts in analysisParts
/// (AnalysisPart bits; the core part always), the arrays of the others left out. The lens_* arrays
/// come from `lens` when given (a lens computed after the trace, logitLens()), else from trace.lens.
TraceFile traceFile(const Trace& trace, bool withAnalysis, unsigned analysisParts = kAnalysisAll,
                    const LogitLens* lens = nullptr);

/// Writes the NPZ (arrays + meta.json) atomically; throws std::runtime_error naming the path.
void writeTraceFile(const TraceFile& file, const std::string& path);

} // namespace gwb::engine
