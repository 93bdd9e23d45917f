#pragma once
// Rows of the attribution graph's adjacency from the frozen replacement (engine-internal; Torch
// types): one backward pass per batch of targets, each target's gradient times each source's value.

#include "graph/replacement.h"
#include "gwb/engine/graph.h"

#include <functional>
#include <optional>
#include <vector>

namespace gwb::engine::graph {

/// The full graph's node order before features are chosen: [every active feature (block-major, then
/// position), errors (block-major, then position), tokens, logits].
struct Layout {
    int64_t features = 0, errors = 0, tokens = 0, logits = 0;
    int64_t errorStart() const { return features; }
    int64_t tokenStart() const { return features + errors; }
    int64_t logitStart() const { return features + errors + tokens; }
    int64_t count() const { return features + errors + tokens + logits; }
};

/// A node with a row: a feature (layer, its index in the block's active list) or a logit (layer =
/// the number of blocks, local = its rank). node: its index in the full layout.
struct Target {
    int layer = 0;
    int64_t local = 0;
    bool logit = false;
    int64_t node = 0;
    int64_t position = 0; ///< where it reads (a logit: the last position)
};

class RowRunner {
public:
    RowRunner(Replacement& replacement, const std::vector<int64_t>& logitTokens, const Layout& layout);
    /// Logit nodes given as directions in the unembedding space (K x d, the replacement's options):
    /// a node's value is the final-normed last position's inner product with its direction
    /// (a token's direction: its unembedding row minus their mean, the demeaned logit).
    RowRunner(Replacement& replacement, const torch::Tensor& directions, const Layout& layout);
    const Layout& layout() const { return m_layout; }
    Replacement& replacement() { return m_R; }

    /// Rows over the full layout of `targets` (one backward pass, over a forward pass kept for the
    /// batches that follow).
    std::vector<std::vector<double>> rows(const std::vector<Target>& targets);
    /// Frees the forward pass rows() keeps.
    void releasePass() { m_pass.reset(); }
    /// The unrouted pass of `targets` read at the mixers: per block m < the deepest target's, the
    /// gradient of each batch row's target with respect to block m's mixer output (B x len x d,
    /// len = the positions the targets read; undefined for blocks not run), detached.
    std::vector<torch::Tensor> mixerCotangents(const std::vector<Target>& targets);
    /// Rows through the units `mask` keeps at block m (mask B x (1 + units), column 0 the skip route)
    /// given the cotangents of block m's mixer output (B x len x d): blocks [0, m) and the routed mixer
    /// run, the output's inner product with the cotangent differentiated. Sources of blocks >= m are 0.
    std::vector<std::vector<double>> routedRows(int m, const torch::Tensor& mask, const torch::Tensor& cotangent);
    /// Every node's value in the replacement on `sources` (batch 1): features' pre-activations,
    /// logits minus the mean logit; 0 for errors and tokens. With a route, only its units pass at
    /// route.layer (the replacement stays affine, so a difference of two runs is a routed edge).
    std::vector<double> values(const Sources& sources, const Route* route = nullptr);
    /// The values the prompt itself gives (features' activations, demeaned logits), as recorded.
    std::vector<double> recordedValues() const;
    /// Every source at 0: what remains is the replacement's constant part.
    Sources zeroSources() const;

private:
    /// The prompt's sources on `len` positions plus a zero per batch row that requires a gradient,
    /// for the sources of blocks [0, blocks).
    struct Probe {
        Sources sources, base;
        std::vector<torch::Tensor> inputs;
        std::vector<int> actInput, errInput;
        int64_t len = 0;
        int blocks = 0;
    };
    Probe probe(int64_t B, int64_t len, int blocks) const;
    /// Each batch row's row over the full layout from the gradients of `p.inputs`, on positions
    /// < keep (default: all of the probe's).
    std::vector<std::vector<double>> assemble(const Probe& p, int64_t B, const std::vector<torch::Tensor>& grads,
                                              int64_t keep = -1) const;
    /// A forward pass of the replacement on a probe, kept for many backward passes: batches of
    /// targets that read the same blocks and about the same positions reuse it, as circuit-tracer
    /// reuses its one forward pass. The replacement is affine in the probe's inputs, so a pass serves
    /// any cotangent.
    struct Pass {
        Probe probe;
        std::vector<torch::Tensor> ffnIn; ///< per block run: its FFN input, B x len x d
        torch::Tensor lastNormed;         ///< B x d: the final-normed last position (all blocks run)
        int64_t rows = 0;
    };
    /// The kept pass for `rows` batch rows, `blocks` blocks and positions < len (rounded up to a
    /// bucket), made when it does not fit.
    Pass& pass(int64_t rows, int blocks, int64_t len);
    std::optional<Pass> m_pass;
    /// The sum of every batch row's target, read off a run's output and its FFN inputs.
    torch::Tensor targetSum(const std::vector<Target>& targets, const torch::Tensor& h,
                            const std::vector<torch::Tensor>& ffnIn) const;
    Replacement& m_R;
    Layout m_layout;
    torch::Tensor m_dirs; ///< K x d: unembedding rows minus their mean, of the logit tokens, or given directions
    std::vector<int64_t> m_logitTokens; ///< empty for given directions
};

/// The pruned graph's edges split across the units of every mixer between source and target:
/// one routed backward pass per (row, unit) for each block a kept edge crosses; the skip part is
/// what the units leave of the edge (by linearity; the tests measure it on its own route).
std::vector<EdgeLoading> edgeLoadings(RowRunner& runner, const AttributionGraph& graph,
                                      const std::vector<int64_t>& rowFull, const std::vector<int64_t>& colMap,
                                      const GraphPruning& pruning, int64_t batch,
                                      const std::function<void(double)>& progress);

} // namespace gwb::engine::graph
