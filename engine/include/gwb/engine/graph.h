#pragma once
// Attribution graphs, the Torch-free half: the graph's nodes and edges, circuit-tracer's
// pruning by influence on the logits and its two faithfulness scores, and the two files (the graph
// JSON in circuit-tracer's format, the NPZ of the whole unpruned adjacency). The run that computes a
// graph from a model and its transcoders is gwb/engine/graph_run.h.
//
// Node order is circuit-tracer's: [features, errors (layer-major, then position), tokens, logits].
// Edges are direct effects in the frozen linear replacement: adjacency(target, source) is the part of
// the target's value that the source writes, so for every node with a row
//   value = sum over its sources of adjacency(node, source) + bias(node)
// (completeness; docs/attribution-graphs.md). Only features and logits have incoming edges.

#include "gwb/engine/array.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

enum class GraphNodeKind { Feature, Error, Token, Logit };

struct GraphNode {
    GraphNodeKind kind = GraphNodeKind::Feature;
    int layer = 0;        ///< feature, error: the block; token: -1; logit: the number of blocks
    int64_t position = 0; ///< token position (logits: the last one)
    int64_t index = 0;    ///< feature: its index in the layer's transcoder; token, logit: the vocabulary id; error: -1
    double value = 0; ///< feature: activation; logit: logit minus the mean logit; error: norm of the error; token: norm
                      ///< of the embedding
    double probability = 0; ///< logit: its probability; else 0
    std::string label;      ///< token, logit: the piece as the tokenizer spells it
};

/// One mixer's split of an edge (per-offset or per-head loadings): the part of the edge that goes
/// through each unit of block `layer`'s mixer (Grassmann offsets D, or heads) and the part that goes
/// around them (`skip`: the residual and the gate's a * x term). skip + sum(units) = the edge.
struct EdgeLoading {
    int64_t target = 0, source = 0; ///< node indices
    int layer = 0;
    double skip = 0;
    std::vector<double> units; ///< one per unit of the layer (GraphUnits)
};

/// circuit-tracer's graph scores: the replacement score (the tokens' share of the influence that
/// tokens and errors have on the logits) and the completeness score (the share of every node's
/// input, weighted by its influence, that does not come from an error node).
struct GraphScores {
    double replacement = 0, completeness = 0;
};

struct AttributionGraph {
    std::string modelName, architecture; ///< "grassmann" or "transformer"
    std::string prompt;                  ///< the prompt's text, if known
    std::vector<int32_t> ids;
    std::vector<std::string> pieces; ///< each token as the tokenizer spells it
    int layers = 0;
    /// Per block, its mixer's units as site names: offset.L.D (Grassmann) or head.L.H (Transformer).
    std::vector<std::vector<std::string>> units;

    std::vector<GraphNode> nodes;
    int64_t features = 0, errors = 0, tokens = 0, logits = 0; ///< counts of each kind, in node order
    int64_t activeFeatures = 0; ///< active transcoder features on the prompt (features <= this: the ones kept)

    /// The unpruned adjacency, kept by rows: only features and logits have incoming edges, so row r
    /// of `rows` (rowNodes.size() x nodes.size()) is node rowNodes[r]'s row; every other row is 0.
    std::vector<int64_t> rowNodes;
    FloatArray rows;
    std::vector<double> bias; ///< per row: the constant part of the node's value (biases)
    std::vector<double>
        completeness; ///< per row: |value - sum(row) - bias| / max(|value|, 1e-6), over every active feature

    double maxLogitError = 0; ///< max |replacement logit - model logit| over the vocabulary at the last position
    GraphScores scores;       ///< graphScores(*this), as the run left it
    double seconds = 0;       ///< wall time of the run

    std::vector<EdgeLoading> loadings; ///< filled for the pruned graph's edges that pass through a mixer

    int64_t nodeCount() const { return static_cast<int64_t>(nodes.size()); }
    /// adjacency(target, source): 0 where the target has no row.
    double edge(int64_t target, int64_t source) const;
    /// The node's id in circuit-tracer's format: "L_F_P" (feature), "L_-1_P" (error), "E_V_P" (token),
    /// "N+1_V_P" (logit, N = layers).
    std::string nodeId(int64_t node) const;
};

/// Which nodes and edges survive pruning (circuit-tracer's prune_graph) and each node's influence.
struct GraphPruning {
    std::vector<uint8_t> nodeKept;  ///< per node
    std::vector<uint8_t> edgeKept;  ///< per (row r, source): rowNodes.size() x nodes.size()
    std::vector<double> influence;  ///< per node: its influence on the logits (normalised adjacency)
    std::vector<double> cumulative; ///< per node: cumulative influence fraction at its rank
    int64_t keptNodes = 0, keptEdges = 0;
};

/// Both models' graphs on one prompt, as the window's Graph view draws them: index 0 the Grassmann
/// model, 1 the Transformer. A model left out (no model or no transcoders) has ran = false; a model
/// whose run failed has its message in errors and no graph.
struct GraphPair {
    AttributionGraph graphs[2];
    GraphPruning pruning[2];
    std::string errors[2];
    bool ran[2] = {false, false};
    std::string transcoders[2]; ///< the folders the sets came from
};

/// circuit-tracer's pruning: nodes kept while their cumulative influence is within nodeThreshold of
/// the total (tokens and logits always), then edges by edge influence within edgeThreshold, then
/// features and errors left without an outgoing edge, and features without an incoming one, dropped
/// until nothing changes. Edges of weight 0 are never kept. With `scores`, also graphScores(graph),
/// from the same influence (one pass instead of two).
GraphPruning pruneGraph(const AttributionGraph& graph, double nodeThreshold = 0.8, double edgeThreshold = 0.98,
                        GraphScores* scores = nullptr);

/// Computes them (attributeGraph keeps the result in AttributionGraph::scores).
GraphScores graphScores(const AttributionGraph& graph);

/// What a person marked on a graph (the window's Graph view), kept in the JSON's qParams as
/// circuit-tracer's front end reads them: pinnedIds, supernodes ([name, node_id, ...] each) and
/// clickedId. Node indices of the graph.
struct GraphAnnotations {
    std::vector<int64_t> pinned;
    std::vector<std::pair<std::string, std::vector<int64_t>>> supernodes;
    int64_t clicked = -1;
};

/// The pruned graph as circuit-tracer's front end reads it: {metadata, qParams, nodes, links}
/// (node_id, feature, layer, ctx_idx, feature_type, token_prob, is_target_logit, jsNodeId, clerp,
/// influence, activation; links source, target, weight), with gwb's own fields under
/// metadata.gwb and each link's "loadings" where it passes through a mixer.
std::string graphJson(const AttributionGraph& graph, const GraphPruning& pruning, const std::string& slug,
                      double nodeThreshold, const GraphAnnotations& annotations = {});
/// Writes the JSON atomically.
void writeGraphJson(const std::string& path, const AttributionGraph& graph, const GraphPruning& pruning,
                    const std::string& slug, double nodeThreshold, const GraphAnnotations& annotations = {});
/// The whole unpruned graph as an NPZ (atomically): row_nodes, adjacency_rows, bias, completeness,
/// node_kind (0 feature, 1 error, 2 token, 3 logit), node_layer, node_position, node_index,
/// node_value, node_probability, node_kept, edge_kept, influence, ids, and meta.json.
void writeGraphNpz(const std::string& path, const AttributionGraph& graph, const GraphPruning& pruning);

} // namespace gwb::engine
