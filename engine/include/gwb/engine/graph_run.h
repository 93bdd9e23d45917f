#pragma once
// Attribution graphs, the run: a model's local replacement on one prompt (transcoders in
// place of its FFNs, with an error node for what they miss; attention patterns, gates, norms and the
// Plucker normalisers frozen at the prompt; the Plucker product split evenly between its two tokens)
// and the graph of its direct effects, from backward passes batched over targets.
// docs/attribution-graphs.md says what is frozen and why the graph is complete.

#include "gwb/engine/causal_runs.h"
#include "gwb/engine/features.h"
#include "gwb/engine/graph.h"
#include "gwb/engine/model.h"
#include "gwb/engine/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

/// A logit node of one's own choosing (circuit-tracer's custom target): a direction in the
/// unembedding space, sum over `tokens` of weight * (E[token] - mean E), or `direction` (d values)
/// itself. The contrast answer - wrong is {answer: +1, wrong: -1}: its node's value is
/// logit[answer] - logit[wrong] (the means cancel), the metric every patching run uses.
struct GraphTarget {
    std::string label;             ///< the node's name ("logit(▁she) - logit(▁he)")
    std::vector<int64_t> tokens;   ///< vocabulary ids
    std::vector<double> weights;   ///< one per token
    std::vector<double> direction; ///< d values; used instead of tokens when not empty
    double weight = 1.0;           ///< its weight in the influence on the logits (a top logit's: its probability)
};

/// The target `answer - wrong` for token ids of `model` (labels from its tokenizer).
GraphTarget contrastTarget(const Model& model, int64_t answer, int64_t wrong);
/// The target of one token alone: its demeaned logit (as a top logit's node), weight 1.
GraphTarget tokenTarget(const Model& model, int64_t token);

struct GraphRequest {
    std::vector<int32_t> ids;       ///< the prompt; the graph explains the next token after the last one
    std::string prompt;             ///< its text (for the files), optional
    int maxLogits = 10;             ///< logit nodes: the most probable tokens up to ...
    double logitProbability = 0.95; ///< ... this cumulative probability, at most maxLogits
    /// Not empty: the logit nodes are these targets instead of the top logits (a logit node's index
    /// is then the vocabulary size + k, circuit-tracer's virtual index of a custom target).
    std::vector<GraphTarget> targets;
    /// With targets empty: pieces as typed (gwb patch's rule) for the contrast logit[answer] -
    /// logit[wrong], resolved in each model's vocabulary (both, or neither).
    std::string answer, wrong;
    /// Features whose rows are computed, chosen by their influence on the logits as the graph grows
    /// (circuit-tracer's max_feature_nodes); every active feature when there are no more than this.
    int64_t maxFeatureNodes = 4096;
    int64_t batch = 32; ///< targets per backward pass, at most: batch * 256 / tokens (at least 4) for long prompts
    bool doublePrecision = true; ///< the replacement in float64 (completeness to ~1e-12), else float32
    bool loadings = true;        ///< split the pruned graph's edges across the offsets or heads of each mixer
    double nodeThreshold = 0.8, edgeThreshold = 0.98; ///< pruning (for the loadings)
    /// Progress in [0, 1] with a stage ("replacement", "rows", "loadings"); false stops the run.
    std::function<bool(double, const std::string&)> progress;
    const std::atomic<bool>* stop = nullptr;
};

/// The graph request's numeric options, declared once (gwb/engine/options.h), in the order `gwb graph
/// --help` lists them: its flags, Python's keywords (gwb.graph_options()) and the checks all read this
/// table, so a value out of range is refused in every front end with one sentence,
/// "max_logits (--max-logits) must be an integer, at least 1; got 0".
const OptionTable<GraphRequest>& graphOptions();
/// Checks every option of the request with the same sentences (attributeGraph calls it first; a
/// front end calls it before loading a model).
void validateGraphRequest(const GraphRequest& request);

/// The replacement of `model` by `transcoders` on request.ids and its attribution graph. Throws
/// std::invalid_argument naming the problem (an option out of range, an empty or over-long prompt,
/// transcoders of another model, a mixer variant the replacement does not cover),
/// std::runtime_error when stopped.
AttributionGraph attributeGraph(const Model& model, const TranscoderSet& transcoders, const GraphRequest& request);

/// A graph and its pruning with the request's thresholds, from one run.
struct PrunedGraph {
    AttributionGraph graph;
    GraphPruning pruning;
};
/// attributeGraph and the pruning it made (the one the loadings are split over), pruned once: what
/// the command line, Python and the window show and write.
PrunedGraph attributeAndPrune(const Model& model, const TranscoderSet& transcoders, const GraphRequest& request);

/// The two models of the window's Graph view: model files, their transcoder folders ("" leaves a
/// model out) and the device.
struct GraphModels {
    std::string paths[2];
    std::string transcoders[2];
    std::string device = "auto";
};

/// Both models' graphs (each on its own tokens of the prompt, ids[0] and ids[1]) with one progress
/// and cancel, each pruned with the request's thresholds. A model's failure (its transcoders do not
/// fit it, a variant not covered) is kept to its side; a cancel throws std::runtime_error.
GraphPair runGraphModels(const ModelOpener& open, const GraphModels& models, const std::vector<int32_t> ids[2],
                         const GraphRequest& request, const RunProgress& progress = {});

/// Tests: the frozen replacement as a function, to check the graph's edges against (the
/// replacement is affine in its sources, so scaling one source by 1 + s moves every node by s times
/// its edge from that source).
class GraphProbe {
public:
    GraphProbe(const Model& model, const TranscoderSet& transcoders, const std::vector<int32_t>& ids,
               bool doublePrecision = true);
    ~GraphProbe();
    GraphProbe(const GraphProbe&) = delete;
    GraphProbe& operator=(const GraphProbe&) = delete;
    /// Every node's value (features: pre-activation; logits: logit minus the mean logit; errors and
    /// tokens: 0) with source `source` (a feature's activation, an error's or a token's vector)
    /// scaled by 1 + scale; source -1: the prompt's own. Node order is the full graph's (every
    /// active feature), as attributeGraph builds it when maxFeatureNodes >= the active count.
    /// routeLayer >= 0: only one route of that block's mixer passes, routeUnit 0 the skip route
    /// (residual and the gate's a * x), 1 + i its i-th offset or head (loadings).
    std::vector<double> values(int64_t source = -1, double scale = 0, int routeLayer = -1, int routeUnit = 0) const;
    /// The model's own logits at the last position and the replacement's (frozen) logits there.
    std::pair<std::vector<double>, std::vector<double>> logits() const;

private:
    struct Impl;
    Impl* m_impl;
};

} // namespace gwb::engine
