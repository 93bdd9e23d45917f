// The attribution graph's Torch-free half (gwb/engine/graph.h) on graphs small enough to work out by
// hand: circuit-tracer's influence, replacement and completeness scores, pruning (tokens and logits
// kept, a weak branch dropped, a feature left without inputs dropped), node ids, and the NPZ.

#include "gwb/engine/graph.h"
#include "gwb/engine/npy.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

using namespace gwb::engine;

namespace {

/// [f0 (feature), e0 (error), t0 (token), L (logit, p = 1)]: L <- f0 3, L <- e0 1; f0 <- t0 2, f0 <- e0 2.
AttributionGraph chain() {
    AttributionGraph g;
    g.layers = 1;
    g.nodes = {
        GraphNode{GraphNodeKind::Feature, 0, 0, 7, 4.0, 0, ""}, GraphNode{GraphNodeKind::Error, 0, 0, -1, 1, 0, ""},
        GraphNode{GraphNodeKind::Token, -1, 0, 11, 1, 0, "x"}, GraphNode{GraphNodeKind::Logit, 1, 0, 5, 2, 1.0, "y"}};
    g.features = g.errors = g.tokens = g.logits = 1;
    g.rowNodes = {0, 3};
    g.rows = FloatArray({2, 4}, {0, 2, 2, 0, 3, 1, 0, 0});
    g.bias = {0, 0};
    g.completeness = {0, 0};
    return g;
}

} // namespace

TEST(GraphPrune, ScoresOfAChainWorkedOutByHand) {
    const AttributionGraph g = chain();
    // Normalised rows: L: f0 .75, e0 .25; f0: t0 .5, e0 .5. Influence of L (weight 1): f0 .75,
    // e0 .25 + .375, t0 .375. Replacement = .375 / (.375 + .625).
    const GraphScores s = graphScores(g);
    EXPECT_NEAR(s.replacement, 0.375, 1e-12);
    // Non-error shares: L .75, f0 .5, others 1; weights influence + logit weight: 1, .75, .625, .375.
    EXPECT_NEAR(s.completeness, (0.75 * 1 + 0.5 * 0.75 + 0.625 + 0.375) / (1 + 0.75 + 0.625 + 0.375), 1e-12);
    const GraphPruning p = pruneGraph(g, 1.0, 1.0);
    EXPECT_NEAR(p.influence[0], 0.75, 1e-12);
    EXPECT_NEAR(p.influence[1], 0.625, 1e-12);
    EXPECT_NEAR(p.influence[2], 0.375, 1e-12);
    EXPECT_EQ(p.keptNodes, 4); // thresholds 1 keep everything with an edge
    EXPECT_EQ(p.keptEdges, 4);
    EXPECT_EQ(g.nodeId(0), "0_7_0");
    EXPECT_EQ(g.nodeId(1), "0_-1_0");
    EXPECT_EQ(g.nodeId(2), "E_11_0");
    EXPECT_EQ(g.nodeId(3), "2_5_0");
    EXPECT_DOUBLE_EQ(g.edge(3, 0), 3.0);
    EXPECT_DOUBLE_EQ(g.edge(2, 0), 0.0); // a token has no row
}

TEST(GraphPrune, AWeakBranchIsDroppedAndWhatItFedWithIt) {
    // Two features into the logit, one strong (f0, fed by the token) and one weak (f1, fed by f2).
    AttributionGraph g;
    g.layers = 2;
    g.nodes = {
        GraphNode{GraphNodeKind::Feature, 1, 0, 0, 1, 0, ""}, GraphNode{GraphNodeKind::Feature, 1, 0, 1, 1, 0, ""},
        GraphNode{GraphNodeKind::Feature, 0, 0, 2, 1, 0, ""}, GraphNode{GraphNodeKind::Error, 0, 0, -1, 1, 0, ""},
        GraphNode{GraphNodeKind::Error, 1, 0, -1, 1, 0, ""},  GraphNode{GraphNodeKind::Token, -1, 0, 3, 1, 0, ""},
        GraphNode{GraphNodeKind::Logit, 2, 0, 4, 1, 0.9, ""}};
    g.features = 3;
    g.errors = 2;
    g.tokens = g.logits = 1;
    g.rowNodes = {0, 1, 2, 6};
    g.rows = FloatArray::zeros({4, 7});
    auto set = [&](size_t r, size_t j, float v) { g.rows.data[r * 7 + j] = v; };
    set(0, 5, 5.0f);  // f0 <- token
    set(1, 2, 1.0f);  // f1 <- f2
    set(2, 5, 1.0f);  // f2 <- token
    set(3, 0, 10.0f); // logit <- f0
    set(3, 1, 0.1f);  // logit <- f1 (weak)
    g.bias.assign(4, 0.0);
    g.completeness.assign(4, 0.0);
    const GraphPruning p = pruneGraph(g, 0.8, 0.98);
    EXPECT_TRUE(p.nodeKept[0]);
    EXPECT_FALSE(p.nodeKept[1]); // under 1% of the logit's input
    EXPECT_FALSE(p.nodeKept[2]); // fed only the dropped f1
    EXPECT_TRUE(p.nodeKept[5] && p.nodeKept[6]);
    EXPECT_FALSE(p.nodeKept[3] || p.nodeKept[4]); // errors without an outgoing edge
    EXPECT_TRUE(p.edgeKept[3 * 7 + 0]);
    EXPECT_TRUE(p.edgeKept[0 * 7 + 5]);
    EXPECT_FALSE(p.edgeKept[3 * 7 + 1]);
    EXPECT_EQ(p.keptEdges, 2);
    EXPECT_THROW(pruneGraph(g, -0.1, 0.5), std::invalid_argument);
}

TEST(GraphPrune, TheNpzAndJsonCarryTheGraph) {
    AttributionGraph g = chain();
    g.units = {{"offset.0.1", "offset.0.2"}};
    g.loadings.push_back(EdgeLoading{3, 2, 0, 0.5, {1.0, 0.5}});
    g.scores = graphScores(g);
    const GraphPruning p = pruneGraph(g, 1.0, 1.0);
    const std::string dir = (std::filesystem::temp_directory_path() / "gwb-graph-prune-test").string();
    std::filesystem::create_directories(dir);
    writeGraphNpz(dir + "/g.npz", g, p);
    const auto members = readZipStored(readBinaryFile(dir + "/g.npz"));
    for (const char* m : {"row_nodes.npy", "adjacency_rows.npy", "node_kind.npy", "edge_kept.npy", "loadings.npy",
                          "loading_edges.npy", "meta.json"})
        EXPECT_TRUE(members.count(m)) << m;
    const std::string json = graphJson(g, p, "chain", 0.8);
    EXPECT_NE(json.find("\"node_id\": \"0_7_0\""), std::string::npos);
    EXPECT_NE(json.find("\"feature_type\": \"mlp reconstruction error\""), std::string::npos);
    EXPECT_NE(json.find("\"schema_version\": 1"), std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST(GraphPrune, PinsAndSupernodesGoIntoTheQParams) {
    AttributionGraph g = chain();
    g.scores = graphScores(g);
    const GraphPruning p = pruneGraph(g, 1.0, 1.0);
    GraphAnnotations a;
    a.pinned = {0, 3};
    a.supernodes = {{"say y", {0, 1}}};
    a.clicked = 3;
    const std::string json = graphJson(g, p, "chain", 0.8, a);
    const nlohmann::json q = nlohmann::json::parse(json).at("qParams");
    EXPECT_EQ(q.at("pinnedIds"), nlohmann::json::array({"0_7_0", "2_5_0"}));
    EXPECT_EQ(q.at("supernodes"), nlohmann::json::parse(R"([["say y", "0_7_0", "0_-1_0"]])"));
    EXPECT_EQ(q.at("clickedId"), "2_5_0");
    // Nothing marked: empty lists, as before.
    const std::string plain = graphJson(g, p, "chain", 0.8);
    EXPECT_NE(plain.find("\"pinnedIds\": []"), std::string::npos);
    EXPECT_NE(plain.find("\"supernodes\": []"), std::string::npos);
    a.pinned = {9};
    EXPECT_THROW(graphJson(g, p, "chain", 0.8, a), std::invalid_argument);
}
