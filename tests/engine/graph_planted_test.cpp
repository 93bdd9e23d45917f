// Attribution graphs find a planted mechanism: one-block models of both kinds trained on sequences
// that repeat with period 3, so the next token x_{t+1} is x_{t-2}, two positions back from where it
// is predicted, and no other offset of {1, 2, 4} carries it. The graph's edge from that token to
// the top logit must go through offset 2 (Grassmann), or through the one head that attends two back
// (Transformer).

#include "engine_test_util.h"
#include "graph_test_util.h"

#include "gwb/engine/graph_run.h"
#include "gwb/engine/train.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>

#include <array>
#include <random>

using namespace gwb::engine;

namespace {

constexpr int kV = 8, kSeg = 24;

std::vector<int32_t> periodStream(int segments, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> out;
    for (int s = 0; s < segments; ++s) {
        const int32_t a[3] = {int32_t(rng() % kV), int32_t(rng() % kV), int32_t(rng() % kV)};
        for (int t = 0; t < kSeg; ++t)
            out.push_back(a[t % 3]);
    }
    return out;
}

Model trained(ModelKind kind) {
    ModelConfig c;
    c.kind = kind;
    c.name = kind == ModelKind::Grassmann ? "copy-grassmann" : "copy-transformer";
    c.vocabSize = kV;
    c.dModel = 32;
    c.reduced = 8;
    c.nLayers = 1;
    c.dFF = 64;
    c.maxLen = kSeg;
    c.nHeads = 2;
    c.dropout = 0.0;
    if (kind == ModelKind::Grassmann) c.layerOffsets = {{1, 2, 4}};
    Model m = Model::init(c, 0, nullptr, "cpu");
    test::TempDir dir;
    TrainOptions o;
    o.outPath = dir.file("m.gwb");
    o.steps = 300;
    o.batch = 8;
    o.lr = 5e-3;
    o.warmup = 20;
    o.evalEvery = 300;
    o.weightDecay = 0.0;
    o.logEvery = 0;
    trainOnTokens(m, periodStream(200, 1), periodStream(10, 2), o);
    return Model::load(dir.file("m.gwb"), "cpu");
}

/// The prompt: one fresh period-3 segment of 12 tokens whose three tokens differ.
std::vector<int32_t> prompt() {
    std::vector<int32_t> ids;
    for (int t = 0; t < 12; ++t)
        ids.push_back(std::array<int32_t, 3>{5, 2, 7}[t % 3]);
    return ids;
}

/// The top logit's token edges and the loading of the edge from the copied token (T - 3).
struct Planted {
    int64_t topToken = -1;
    int64_t strongestSource = -1; ///< position of the token with the largest edge into the top logit, the last excluded
    EdgeLoading copied;
};

Planted find(const Model& m) {
    GraphRequest r;
    r.ids = prompt();
    r.maxFeatureNodes = 1 << 20;
    r.nodeThreshold = 1.0; // keep every node and edge, so the copied token's edge has its loadings
    r.edgeThreshold = 1.0;
    const AttributionGraph g = attributeGraph(m, test::randomTranscoders(m, 16, "topk", 2, 4), r);
    Planted p;
    const int64_t top = g.nodeCount() - g.logits, T = g.tokens, tokens = g.features + g.errors;
    p.topToken = g.nodes[static_cast<size_t>(top)].index;
    double best = -1e300;
    for (int64_t t = 0; t < T - 1; ++t) {
        const double e = g.edge(top, tokens + t);
        if (e > best) {
            best = e;
            p.strongestSource = t;
        }
    }
    for (const EdgeLoading& e : g.loadings)
        if (e.target == top && e.source == tokens + T - 3) p.copied = e;
    return p;
}

} // namespace

TEST(GraphPlanted, GrassmannCopiesThroughOffsetTwo) {
    at::set_num_threads(1);
    const Model m = trained(ModelKind::Grassmann);
    const Planted p = find(m);
    ASSERT_EQ(p.topToken, 5) << "the model did not learn the copy"; // position 12 repeats position 9: token 5
    EXPECT_EQ(p.strongestSource, 12 - 3);                           // offset 2 from position 11 reads position 9 alone
    ASSERT_EQ(p.copied.units.size(), 3u);
    // One block: a token 3 back reaches the last position only through the mixer's offsets (skip is
    // the stored edge, float32, minus the units: zero to the edge's rounding).
    const double total = p.copied.units[0] + p.copied.units[1] + p.copied.units[2];
    EXPECT_NEAR(p.copied.skip, 0.0, 1e-7 * std::abs(total));
    std::printf("copied token's edge %.4f: offset 1 %.4f, offset 2 %.4f, offset 4 %.4f\n", total, p.copied.units[0],
                p.copied.units[1], p.copied.units[2]);
    EXPECT_GT(std::abs(p.copied.units[1]), std::abs(p.copied.units[0]) + std::abs(p.copied.units[2]));
}

TEST(GraphPlanted, TransformerCopiesThroughAHeadThatAttendsToTheAnswer) {
    at::set_num_threads(1);
    const Model m = trained(ModelKind::Transformer);
    const Planted p = find(m);
    ASSERT_EQ(p.topToken, 5) << "the model did not learn the copy";
    // Attention may read any earlier occurrence of the same phase (positions 0, 3, 6, 9 hold the
    // answer): the strongest token edge comes from one of them.
    const std::vector<int32_t> ids = prompt();
    EXPECT_EQ(ids[static_cast<size_t>(p.strongestSource)], 5) << "strongest source at " << p.strongestSource;
    ASSERT_EQ(p.copied.units.size(), 2u);
    EXPECT_NEAR(p.copied.skip, 0.0, 1e-7 * (std::abs(p.copied.units[0]) + std::abs(p.copied.units[1])));
    // The head carrying the copied token's edge is one whose last row attends mostly to the answer.
    const size_t head = std::abs(p.copied.units[0]) > std::abs(p.copied.units[1]) ? 0 : 1;
    std::printf("copied token's edge: head 0 %.4f, head 1 %.4f\n", p.copied.units[0], p.copied.units[1]);
    EXPECT_GT(std::abs(p.copied.units[head]), 1.5 * std::abs(p.copied.units[1 - head]));
    torch::NoGradGuard noGrad;
    ForwardCapture capture;
    m.impl().net->forward(torch::tensor(std::vector<int64_t>(ids.begin(), ids.end())).view({1, -1}), &capture);
    const torch::Tensor lastRow = capture.blocks[0].attn[0][static_cast<int64_t>(head)][11]; // 12 keys
    double answerMass = 0;
    for (int64_t t = 0; t < 12; t += 3)
        answerMass += lastRow[t].item<double>();
    std::printf("head %zu's attention on the answer's positions: %.3f\n", head, answerMass);
    EXPECT_GT(answerMass, 0.5);
}
