#include "gwb/engine/trace_memory.h"

#include <algorithm>

namespace gwb::engine {

TraceMemory traceMemory(const ModelConfig& c, int64_t tokens, int lensTopK, bool keepMixerStates,
                        int64_t denseAttentionLimit) {
    const int64_t T = std::max<int64_t>(0, std::min(tokens, c.maxLen > 0 ? c.maxLen : tokens));
    const int64_t N = c.nLayers, d = c.dModel, f = 4; // float32 / int32 entries
    TraceMemory m;
    // Every block's input h, the final state, the surprisal, the token ids.
    m.trace = (N * T * d + T * d + T + T) * f;
    if (lensTopK > 0) m.trace += (N + 1) * T * (2 * int64_t{lensTopK} + 2) * f;
    if (c.kind == ModelKind::Grassmann) {
        const int64_t r = c.reduced, C = r * (r - 1) / 2;
        for (int64_t l = 0; l < N; ++l) {
            const auto O = static_cast<int64_t>(
                static_cast<size_t>(l) < c.layerOffsets.size() ? c.layerOffsets[static_cast<size_t>(l)].size() : 1);
            // z and the gate always; g and the mixer's input when kept.
            m.trace += (T * r + T * d + (keepMixerStates ? 2 * T * d : 0)) * f;
            // W_red, b_red, W_plu, b_plu (per-offset MLP: about as many).
            m.trace += (r * d + r + d * C + d) * f;
            // Core: residual, planarity, coherence, mean gate, gate > 1/2, pair norms, influence;
            // read-out: d planes and spectra, T x d contributions, T x d x 2 angles; angles
            // between layers T x O x 2.
            m.analysis += (5 * T + 2 * T * O + 2 * T * O) * f;
            m.analysis += (2 * d + d * (r / 2) + d * r * 2 + T * d + 2 * T * d) * f;
        }
        m.analysis += 2 * N * N * f;
    } else {
        const int64_t H = std::max<int64_t>(1, c.nHeads);
        for (int64_t l = 0; l < N; ++l) {
            // q and k (H x T x d_head each), the mixer's input when kept, the dense probabilities.
            m.trace += (2 * T * d + (keepMixerStates ? T * d : 0)) * f;
            if (T <= denseAttentionLimit) m.trace += H * T * T * f;
            m.analysis += 6 * H * T * f;
        }
        m.analysis += N * N * f;
    }
    return m;
}

} // namespace gwb::engine
