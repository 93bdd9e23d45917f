// Attribution graphs (gwb/engine/graph_run.h, graph.h): the frozen replacement reproduces the
// model's logits for every variant it covers; every row is complete (edges + bias = value); the
// edges equal the replacement's Jacobian, measured independently by scaling one source at a time;
// loadings split an edge exactly across a mixer's units; pruning and the two files.

#include "engine_test_util.h"
#include "features_test_util.h"
#include "graph_test_util.h"

#include "gwb/engine/graph_run.h"
#include "gwb/engine/npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>
#include <map>
#include <set>

using namespace gwb::engine;
using test::randomTranscoders;

namespace {

std::vector<int32_t> promptIds(int64_t vocab, int T) {
    std::vector<int32_t> ids;
    for (int t = 0; t < T; ++t)
        ids.push_back(static_cast<int32_t>((7 * t + 3) % vocab));
    return ids;
}

/// Every active feature gets a row (the node order is then the full one GraphProbe uses).
GraphRequest fullRequest(const std::vector<int32_t>& ids) {
    GraphRequest r;
    r.ids = ids;
    r.maxFeatureNodes = 1 << 20;
    r.batch = 16;
    return r;
}

class GraphVariants : public ::testing::TestWithParam<size_t> {};

/// Each part of the first `most` loadings measured on its own route, independently: the
/// replacement run forward with only that unit (or only the skip route) open at the block, the
/// source scaled by 2, the change read off (no autograd, no batching, no cotangents).
void expectLoadingsOnTheirRoutes(const GraphProbe& probe, const AttributionGraph& g, size_t most) {
    std::map<std::pair<int, int>, std::vector<double>> routedBase;
    auto routed = [&](int64_t source, int layer, int unit, int64_t target) {
        auto& base = routedBase[{layer, unit}];
        if (base.empty()) base = probe.values(-1, 0, layer, unit);
        return probe.values(source, 1.0, layer, unit)[static_cast<size_t>(target)] - base[static_cast<size_t>(target)];
    };
    for (size_t k = 0; k < std::min(most, g.loadings.size()); ++k) {
        const EdgeLoading& e = g.loadings[k];
        const double edge = g.edge(e.target, e.source);
        const double tol = 1e-6 * std::max(1.0, std::abs(edge));
        // skip is the stored (float32) edge minus the units
        EXPECT_NEAR(routed(e.source, e.layer, 0, e.target), e.skip, 1e-5 * std::max(1.0, std::abs(edge)))
            << "skip of " << g.nodeId(e.target) << " <- " << g.nodeId(e.source) << " at block " << e.layer;
        for (size_t u = 0; u < e.units.size(); ++u)
            EXPECT_NEAR(routed(e.source, e.layer, static_cast<int>(u) + 1, e.target), e.units[u], tol)
                << g.units[static_cast<size_t>(e.layer)][u] << " of " << g.nodeId(e.target) << " <- "
                << g.nodeId(e.source);
    }
}

} // namespace

TEST_P(GraphVariants, TheReplacementReproducesTheLogitsAndEveryRowIsComplete) {
    const ModelConfig c = test::allVariants().at(GetParam());
    const Model m = test::randomModel(c, 11);
    const TranscoderSet set = randomTranscoders(m, 24, "relu", 0, 5);
    const std::vector<int32_t> ids = promptIds(c.vocabSize, 12);
    if (c.kind == ModelKind::Grassmann && c.aggregation == Aggregation::PerOffsetMlp) {
        try {
            attributeGraph(m, set, fullRequest(ids));
            ADD_FAILURE() << "per_offset_mlp was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("per_offset_mlp"), std::string::npos) << e.what();
        }
        return;
    }
    const GraphProbe probe(m, set, ids);
    const auto [model, replacement] = probe.logits();
    ASSERT_EQ(model.size(), replacement.size());
    for (size_t v = 0; v < model.size(); ++v)
        ASSERT_NEAR(replacement[v], model[v], 2e-5 * std::max(1.0, std::abs(model[v]))) << "logit " << v;

    const AttributionGraph g = attributeGraph(m, set, fullRequest(ids));
    EXPECT_EQ(g.features, g.activeFeatures);
    EXPECT_GT(g.features, 10);
    EXPECT_EQ(g.errors, c.nLayers * 12);
    EXPECT_EQ(g.tokens, 12);
    EXPECT_GE(g.logits, 1);
    ASSERT_EQ(g.rowNodes.size(), static_cast<size_t>(g.features + g.logits));
    for (size_t r = 0; r < g.completeness.size(); ++r)
        EXPECT_LT(g.completeness[r], 1e-9) << g.nodeId(g.rowNodes[r]);
    // The loadings of every variant's mixer, each part against its own route.
    EXPECT_FALSE(g.loadings.empty());
    expectLoadingsOnTheirRoutes(probe, g, 12);
    // Causality: no edge from a later position.
    for (size_t r = 0; r < g.rowNodes.size(); ++r) {
        const GraphNode& t = g.nodes[static_cast<size_t>(g.rowNodes[r])];
        for (int64_t j = 0; j < g.nodeCount(); ++j)
            if (g.nodes[static_cast<size_t>(j)].position > t.position) {
                ASSERT_EQ(g.rows.data[r * static_cast<size_t>(g.nodeCount()) + static_cast<size_t>(j)], 0.0f);
            }
    }
}

INSTANTIATE_TEST_SUITE_P(Graph, GraphVariants, ::testing::Range<size_t>(0, test::allVariants().size()),
                         [](const auto& info) { return test::variantTestName(info.param); });

TEST(Graph, EdgesEqualTheJacobianOfTheFrozenReplacement) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const Model m = test::randomModel(test::tinyConfig(kind), 3);
        const TranscoderSet set = randomTranscoders(m, 20, "topk", 4, 9);
        const std::vector<int32_t> ids = promptIds(37, 10);
        GraphRequest request = fullRequest(ids);
        request.loadings = false;
        const AttributionGraph g = attributeGraph(m, set, request);
        const GraphProbe probe(m, set, ids);
        const std::vector<double> base = probe.values();
        // Every source (features, errors, tokens): scaling it by 2 moves each node by its edge.
        const int64_t sources = g.features + g.errors + g.tokens;
        double worst = 0;
        for (int64_t s = 0; s < sources; ++s) {
            const std::vector<double> moved = probe.values(s, 1.0);
            for (size_t r = 0; r < g.rowNodes.size(); ++r) {
                const auto node = static_cast<size_t>(g.rowNodes[r]);
                const double jac = moved[node] - base[node];
                const double edge = g.rows.data[r * static_cast<size_t>(g.nodeCount()) + static_cast<size_t>(s)];
                worst = std::max(worst, std::abs(jac - edge) / std::max(1e-3, std::abs(jac)));
                ASSERT_NEAR(edge, jac, 1e-5 * std::max(1.0, std::abs(jac)))
                    << kindName(kind) << ": " << g.nodeId(g.rowNodes[r]) << " <- " << g.nodeId(s);
            }
        }
        EXPECT_LT(worst, 1e-4) << kindName(kind);
        // The recorded values are the replacement's own.
        for (size_t r = 0; r < g.rowNodes.size(); ++r)
            EXPECT_NEAR(base[static_cast<size_t>(g.rowNodes[r])], g.nodes[static_cast<size_t>(g.rowNodes[r])].value,
                        1e-9 * std::max(1.0, std::abs(base[static_cast<size_t>(g.rowNodes[r])])));
    }
}

TEST(Graph, LoadingsSplitEachKeptEdgeAcrossTheMixerUnits) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const Model m = test::randomModel(test::tinyConfig(kind), 4);
        const TranscoderSet set = randomTranscoders(m, 20, "topk", 4, 2);
        GraphRequest request = fullRequest(promptIds(37, 10));
        const PrunedGraph run = attributeAndPrune(m, set, request);
        const AttributionGraph& g = run.graph;
        const GraphPruning p = pruneGraph(g, request.nodeThreshold, request.edgeThreshold);
        // Pruned once, in the run: its pruning is the one a caller would make of its graph.
        EXPECT_EQ(run.pruning.nodeKept, p.nodeKept);
        EXPECT_EQ(run.pruning.edgeKept, p.edgeKept);
        EXPECT_EQ(run.pruning.keptEdges, p.keptEdges);
        ASSERT_GT(p.keptEdges, 0);
        ASSERT_FALSE(g.loadings.empty());
        std::set<std::pair<int64_t, int64_t>> covered;
        for (const EdgeLoading& e : g.loadings) {
            ASSERT_EQ(e.units.size(), g.units[static_cast<size_t>(e.layer)].size());
            double sum = e.skip;
            for (double u : e.units)
                sum += u;
            const double edge = g.edge(e.target, e.source); // kept as float32
            EXPECT_NEAR(sum, edge, 1e-6 * std::max(1.0, std::abs(edge)))
                << g.nodeId(e.target) << " <- " << g.nodeId(e.source);
            covered.insert({e.target, e.source});
        }
        expectLoadingsOnTheirRoutes(GraphProbe(m, set, request.ids), g, 40);
        // Every kept edge that crosses a mixer has its loadings; a token's edge crosses every mixer below.
        const size_t n = static_cast<size_t>(g.nodeCount());
        for (size_t r = 0; r < g.rowNodes.size(); ++r)
            for (size_t j = 0; j < n; ++j)
                if (p.edgeKept[r * n + j] && g.nodes[j].kind == GraphNodeKind::Token) {
                    EXPECT_TRUE(covered.count({g.rowNodes[r], static_cast<int64_t>(j)}));
                }
        EXPECT_EQ(g.units[0].front(), kind == ModelKind::Grassmann ? "offset.0.1" : "head.0.0");
    }
}

TEST(Graph, PruningKeepsTokensAndLogitsAndTheFilesReadBack) {
    const Model m = test::randomModel(test::tinyConfig(ModelKind::Grassmann), 6);
    const TranscoderSet set = randomTranscoders(m, 20, "topk", 4, 1);
    GraphRequest request = fullRequest(promptIds(37, 9));
    request.prompt = "a test prompt";
    const AttributionGraph g = attributeGraph(m, set, request);
    const GraphPruning p = pruneGraph(g);
    for (int64_t i = 0; i < g.nodeCount(); ++i) {
        const GraphNodeKind k = g.nodes[static_cast<size_t>(i)].kind;
        if (k == GraphNodeKind::Token || k == GraphNodeKind::Logit) {
            EXPECT_TRUE(p.nodeKept[static_cast<size_t>(i)]);
        }
    }
    EXPECT_LT(p.keptNodes, g.nodeCount());
    const GraphScores s = graphScores(g);
    EXPECT_GT(s.replacement, 0.0);
    EXPECT_LE(s.replacement, 1.0);
    EXPECT_GT(s.completeness, 0.0);
    EXPECT_LE(s.completeness, 1.0);
    // Pruning everything but the strongest: thresholds 0 keep the top node and edge only.
    EXPECT_THROW(pruneGraph(g, 1.5, 0.9), std::invalid_argument);

    test::TempDir tmp;
    writeGraphJson(tmp.file("g.json"), g, p, "test", 0.8);
    std::ifstream in(tmp.file("g.json"));
    const nlohmann::json j = nlohmann::json::parse(in);
    ASSERT_TRUE(j.contains("metadata") && j.contains("qParams") && j.contains("nodes") && j.contains("links"));
    EXPECT_EQ(j["metadata"]["prompt"], "a test prompt");
    EXPECT_EQ(static_cast<int64_t>(j["nodes"].size()), p.keptNodes);
    EXPECT_EQ(static_cast<int64_t>(j["links"].size()), p.keptEdges);
    std::set<std::string> ids;
    for (const auto& node : j["nodes"])
        ids.insert(node["node_id"].get<std::string>());
    for (const auto& link : j["links"]) {
        EXPECT_TRUE(ids.count(link["source"].get<std::string>())) << link["source"];
        EXPECT_TRUE(ids.count(link["target"].get<std::string>())) << link["target"];
    }
    EXPECT_EQ(j["nodes"].back()["feature_type"], "logit");

    writeGraphNpz(tmp.file("g.npz"), g, p);
    const auto members = readZipStored(readBinaryFile(tmp.file("g.npz")));
    for (const char* name : {"row_nodes.npy", "adjacency_rows.npy", "bias.npy", "node_kind.npy", "edge_kept.npy",
                             "loadings.npy", "meta.json"})
        EXPECT_TRUE(members.count(name)) << name;
}

TEST(Graph, AFeatureBudgetKeepsTheMostInfluentialFeatures) {
    const Model m = test::randomModel(test::tinyConfig(ModelKind::Transformer), 8);
    const TranscoderSet set = randomTranscoders(m, 24, "relu", 0, 3);
    GraphRequest request = fullRequest(promptIds(37, 12));
    request.loadings = false;
    const AttributionGraph all = attributeGraph(m, set, request);
    request.maxFeatureNodes = all.activeFeatures / 3;
    const AttributionGraph some = attributeGraph(m, set, request);
    EXPECT_EQ(some.features, request.maxFeatureNodes);
    EXPECT_EQ(some.activeFeatures, all.activeFeatures);
    for (double c : some.completeness) // complete over every active feature, chosen or not
        EXPECT_LT(c, 1e-9);
}

TEST(Graph, BadRequestsAreNamed) {
    const Model m = test::randomModel(test::tinyConfig(ModelKind::Grassmann), 6);
    TranscoderSet set = randomTranscoders(m, 8, "topk", 2, 1);
    EXPECT_THROW(attributeGraph(m, set, fullRequest({})), std::invalid_argument);
    try {
        attributeGraph(m, set, fullRequest(promptIds(37, 30)));
        ADD_FAILURE();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("at most 24"), std::string::npos) << e.what();
    }
    set.layers.pop_back();
    EXPECT_THROW(attributeGraph(m, set, fullRequest(promptIds(37, 5))), std::invalid_argument);
    // A set of another model is refused by its weights' hash.
    const Model other = test::randomModel(test::tinyConfig(ModelKind::Grassmann), 7);
    EXPECT_THROW(attributeGraph(other, randomTranscoders(m, 8, "topk", 2, 1), fullRequest(promptIds(37, 5))),
                 std::invalid_argument);
    // An option out of its range (graphOptions), with the sentence every front end gives.
    try {
        GraphRequest r = fullRequest(promptIds(37, 5));
        r.edgeThreshold = 1.5;
        attributeGraph(m, randomTranscoders(m, 8, "topk", 2, 1), r);
        ADD_FAILURE();
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "edge_threshold (--edge-threshold) must be a number in [0, 1]; got 1.5");
    }
    GraphRequest r0;
    const auto option = [](const std::string& name) -> const Option<GraphRequest>& {
        return findOption(graphOptions(), name, "the graph");
    };
    EXPECT_THROW(setOptionNumber(option("max_features"), r0, -1), std::invalid_argument);
    EXPECT_THROW(setOptionNumber(option("batch"), r0, 2.5), std::invalid_argument);
    EXPECT_THROW(option("no_such_option"), std::invalid_argument);
    EXPECT_THROW(setOptionText(option("batch"), r0, "many"), std::invalid_argument);
    setOptionText(option("max-features"), r0, "64"); // the command line's spelling and text too
    EXPECT_EQ(r0.maxFeatureNodes, 64);
    // Stopped: a runtime_error, no graph.
    std::atomic<bool> stop{true};
    GraphRequest r = fullRequest(promptIds(37, 5));
    r.stop = &stop;
    EXPECT_THROW(attributeGraph(m, randomTranscoders(m, 8, "topk", 2, 1), r), std::runtime_error);
}

TEST(Graph, AContrastiveTargetsRowIsTheDifferenceOfItsTwoLogitsRows) {
    // Issue 65: "why ' she' rather than ' he'" is the target logit[answer] - logit[wrong]. The
    // replacement is linear in what reads it, so the contrast's row equals the answer's row minus
    // the wrong piece's (the means cancel), and its value the logit difference, in float64.
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const Model m = test::randomModel(test::tinyConfig(kind), 11);
        const TranscoderSet set = randomTranscoders(m, 16, "relu", 0, 4);
        GraphRequest request = fullRequest(promptIds(37, 9));
        request.loadings = false;
        const int64_t answer = 5, wrong = 12;
        request.targets = {tokenTarget(m, answer), tokenTarget(m, wrong)};
        const AttributionGraph both = attributeGraph(m, set, request);
        request.targets = {contrastTarget(m, answer, wrong)};
        const AttributionGraph contrast = attributeGraph(m, set, request);
        ASSERT_EQ(both.logits, 2);
        ASSERT_EQ(contrast.logits, 1);
        ASSERT_EQ(both.features, contrast.features);
        const int64_t V = m.config().vocabSize;
        const GraphNode& node = contrast.nodes.back();
        EXPECT_EQ(node.kind, GraphNodeKind::Logit);
        EXPECT_EQ(node.index, V); // circuit-tracer's virtual index, past the vocabulary
        EXPECT_NE(node.label.find(") - logit("), std::string::npos) << node.label;
        const int64_t na = both.nodeCount() - 2, nw = both.nodeCount() - 1, nc = contrast.nodeCount() - 1;
        EXPECT_NEAR(node.value, both.nodes[static_cast<size_t>(na)].value - both.nodes[static_cast<size_t>(nw)].value,
                    1e-9);
        // The model's own logit difference (the float64 replacement reproduces its float32 logits).
        GraphProbe probe(m, set, request.ids);
        const std::vector<double> logits = probe.logits().first;
        EXPECT_NEAR(node.value, logits[static_cast<size_t>(answer)] - logits[static_cast<size_t>(wrong)], 1e-4);
        const int64_t sources = contrast.nodeCount() - contrast.logits; // every node but the logits
        // The rows are computed in float64 and stored in float32: edges agree to float32's rounding,
        // the float64 quantities (value, constant part, completeness) to 1e-9.
        for (int64_t j = 0; j < sources; ++j)
            EXPECT_NEAR(contrast.edge(nc, j), both.edge(na, j) - both.edge(nw, j),
                        3e-7 * std::max(1.0, std::abs(both.edge(na, j)) + std::abs(both.edge(nw, j))))
                << contrast.nodeId(j);
        const auto row = [](const AttributionGraph& g, int64_t node) {
            return static_cast<size_t>(std::find(g.rowNodes.begin(), g.rowNodes.end(), node) - g.rowNodes.begin());
        };
        EXPECT_NEAR(contrast.bias[row(contrast, nc)], both.bias[row(both, na)] - both.bias[row(both, nw)], 1e-9);
        for (double c : contrast.completeness)
            EXPECT_LT(c, 1e-9);
        // A direction given as numbers: the same as the tokens' contrast.
        GraphTarget direction;
        direction.label = "she - he";
        const int64_t d = m.config().dModel;
        const FloatArray& E = m.parameters().at("tok_embed.weight");
        for (int64_t j = 0; j < d; ++j)
            direction.direction.push_back(static_cast<double>(E.data[static_cast<size_t>(answer * d + j)]) -
                                          static_cast<double>(E.data[static_cast<size_t>(wrong * d + j)]));
        request.targets = {direction};
        const AttributionGraph byDirection = attributeGraph(m, set, request);
        EXPECT_NEAR(byDirection.nodes.back().value, node.value, 1e-6);
        direction.direction.pop_back();
        request.targets = {direction};
        EXPECT_THROW(attributeGraph(m, set, request), std::invalid_argument);
    }
}
