// Causal tests (gwb/engine/patching.h): the exactness properties of issue 21, checked against the
// engine's own plain forward pass. The independent PyTorch reference is patching_parity_test.cpp.

#include "engine_test_util.h"

#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace gwb::engine {
namespace {

/// Every parameter random and non-zero (biases, LayerNorm), so no site is trivially zero.
Model randomModel(const ModelConfig& config, uint64_t seed) {
    Model m = Model::init(config, seed, nullptr, "cpu");
    torch::NoGradGuard noGrad;
    torch::manual_seed(static_cast<int64_t>(seed));
    for (auto& p : m.impl().net->named_parameters()) {
        const std::string& n = p.key();
        torch::Tensor t = p.value();
        if (n.find("ln") != std::string::npos && n.find("weight") != std::string::npos)
            t.copy_(1.0 + 0.2 * torch::randn_like(t));
        else if (n.find("bias") != std::string::npos || n.find("ln") != std::string::npos)
            t.copy_(0.1 * torch::randn_like(t));
        else if (n.find("embed") != std::string::npos)
            t.copy_(0.5 * torch::randn_like(t));
        else
            t.copy_(torch::randn_like(t) / std::sqrt(static_cast<double>(t.size(-1))));
    }
    return m;
}

std::vector<int64_t> prompt(int64_t T, int64_t V, int64_t seed) {
    std::vector<int64_t> ids;
    for (int64_t t = 0; t < T; ++t)
        ids.push_back((seed * 7 + t * 13 + t * t) % V);
    return ids;
}

/// The plain forward pass's logits (T x V) of ids.
torch::Tensor plainLogits(const Model& m, const std::vector<int64_t>& ids) {
    torch::NoGradGuard noGrad;
    m.impl().net->eval();
    return m.impl().net->forward(torch::tensor(ids, torch::kLong).view({1, -1}))[0];
}

/// A clean/corrupt pair differing at position `diff`, with answer/wrong ids.
PatchRequest pairRequest(const ModelConfig& c, PatchSite site, int64_t T = 12, int64_t diff = 8) {
    PatchRequest r;
    r.clean = prompt(T, c.vocabSize, 1);
    r.corrupt = r.clean;
    r.corrupt[static_cast<size_t>(diff)] = (r.clean[static_cast<size_t>(diff)] + 11) % c.vocabSize;
    r.site = site;
    r.mode = PatchMode::Patch;
    r.answer = 3;
    r.wrong = 4;
    // These tests check the sweep's arithmetic on random tiny models, whose clean and corrupted
    // metrics may differ by less than the default threshold: the quotient is asked for at any
    // difference (effect_claims_test.cpp tests the threshold).
    r.minDifference = 0;
    return r;
}

std::vector<PatchSite> sitesOf(const ModelConfig& c) {
    if (c.kind == ModelKind::Grassmann)
        return {PatchSite::Resid, PatchSite::Mixer, PatchSite::Gate, PatchSite::Ffn, PatchSite::Offset};
    return {PatchSite::Resid, PatchSite::Mixer, PatchSite::Ffn, PatchSite::Head};
}

class PatchingVariants : public ::testing::TestWithParam<int> {
protected:
    ModelConfig config() const { return test::allVariants()[static_cast<size_t>(GetParam())]; }
};

TEST_P(PatchingVariants, EqualValuesChangeNothingAndLaterPositionsDo) {
    const ModelConfig c = config();
    const Model m = randomModel(c, 5);
    // Token 8 reaches the last position (11) in both models: in the Grassmann one through offsets
    // 3 (layer 1) and 0 / 1 + 2; token 5 does not (no path of offsets sums to 6).
    const int64_t diff = 8;
    for (PatchSite site : {PatchSite::Resid, PatchSite::Mixer, PatchSite::Ffn}) {
        const PatchRequest r = pairRequest(c, site, 12, diff);
        const PatchSweep s = runPatchSweep(m, r);
        ASSERT_EQ(s.cols, 12);
        ASSERT_NE(s.cleanMetric, s.corruptMetric);
        bool someChange = false;
        for (int64_t row = 0; row < s.rows; ++row)
            for (int64_t t = 0; t < s.cols; ++t) {
                const double v = s.metric[static_cast<size_t>(row * s.cols + t)];
                // Before the first differing token both runs hold the same values: bitwise equal.
                if (t < diff) {
                    EXPECT_EQ(v, s.corruptMetric) << patchSiteName(site) << " row " << row << " t " << t;
                }
                if (t == diff && v != s.corruptMetric) someChange = true;
            }
        EXPECT_TRUE(someChange) << patchSiteName(site) << ": patching the differing token changed nothing";
    }
}

TEST_P(PatchingVariants, ResidAtTheLastLayerGivesTheCleanMetric) {
    const ModelConfig c = config();
    const Model m = randomModel(c, 6);
    const PatchRequest r = pairRequest(c, PatchSite::Resid);
    const PatchSweep s = runPatchSweep(m, r);
    const double v = s.metric[static_cast<size_t>(c.nLayers * s.cols + s.metricPosition)];
    EXPECT_NEAR(v, s.cleanMetric, 1e-6 * std::max(1.0, std::abs(s.cleanMetric)));
    EXPECT_NEAR(s.effect[static_cast<size_t>(c.nLayers * s.cols + s.metricPosition)], 1.0, 1e-6);
    // And the clean/corrupted metrics are the plain forward pass's.
    const torch::Tensor clean = plainLogits(m, r.clean), corrupt = plainLogits(m, r.corrupt);
    const int64_t t = s.metricPosition;
    EXPECT_NEAR(s.cleanMetric, (clean[t][r.answer] - clean[t][r.wrong]).item<double>(), 1e-4);
    EXPECT_NEAR(s.corruptMetric, (corrupt[t][r.answer] - corrupt[t][r.wrong]).item<double>(), 1e-4);
}

TEST_P(PatchingVariants, ResidAtLayerZeroEverywhereGivesTheCleanRun) {
    const ModelConfig c = config();
    const Model m = randomModel(c, 7);
    const PatchRequest r = pairRequest(c, PatchSite::Resid);
    Intervention all;
    all.site = PatchSite::Resid;
    all.mode = PatchMode::Patch;
    all.layer = 0;
    all.position = -1;
    const torch::Tensor clean = plainLogits(m, r.clean);
    for (int64_t t = 0; t < static_cast<int64_t>(r.clean.size()); ++t) {
        const std::vector<float> got = interventionLogits(m, r, all, t);
        const torch::Tensor g = torch::tensor(got);
        EXPECT_LT((g - clean[t]).abs().max().item<double>(), 1e-5) << "position " << t;
    }
}

TEST_P(PatchingVariants, AnInterventionAtPLeavesEarlierPositionsBitwiseAndChangesLaterOnes) {
    const ModelConfig c = config();
    const Model m = randomModel(c, 8);
    const std::vector<int64_t> ids = prompt(12, c.vocabSize, 3);
    for (PatchSite site : sitesOf(c)) {
        Intervention i;
        i.site = site;
        i.mode = PatchMode::Zero;
        i.layer = 1;
        i.position = site == PatchSite::Offset || site == PatchSite::Head ? -1 : 6;
        if (site == PatchSite::Offset) i.offset = c.layerOffsets[1][1]; // 3
        if (site == PatchSite::Head) i.head = 1;
        const std::vector<double> d = ablationDeltaLogprob(m, ids, i);
        ASSERT_EQ(d.size(), ids.size());
        EXPECT_TRUE(std::isnan(d.back()));
        const int64_t p = site == PatchSite::Offset ? i.offset : site == PatchSite::Head ? 0 : 6;
        double later = 0.0;
        for (int64_t t = 0; t + 1 < static_cast<int64_t>(ids.size()); ++t) {
            if (t < p) {
                EXPECT_EQ(d[static_cast<size_t>(t)], 0.0) << patchSiteName(site) << " t " << t;
            } else {
                later = std::max(later, std::abs(d[static_cast<size_t>(t)]));
            }
        }
        EXPECT_GT(later, 1e-6) << patchSiteName(site) << ": zeroing it changed nothing at or after " << p;
    }
}

TEST_P(PatchingVariants, DroppingEveryOffsetEqualsTheEmptyRule) {
    const ModelConfig c = config();
    if (c.kind != ModelKind::Grassmann) GTEST_SKIP() << "offsets are a Grassmann site";
    const Model m = randomModel(c, 9);
    torch::NoGradGuard noGrad;
    m.impl().net->eval();
    auto& block = dynamic_cast<GrassmannBlockImpl&>(*m.impl().net->blocks()[1]);
    const int64_t T = 12, d = c.dModel;
    const torch::Tensor h = torch::randn({1, T, d});
    const int64_t W = static_cast<int64_t>(block.offsets().size());
    BlockEdit drop;
    drop.site = BlockEdit::Site::Offset;
    drop.keep = torch::zeros({1, 1, W, 1});
    const torch::Tensor dropped = block.run(h, SuffixContext{}, &drop, nullptr);
    // The empty rule at every position: g = 0 (zero) or b_plu (bias), put in as the mixer.
    BlockEdit empty;
    empty.site = BlockEdit::Site::Mixer;
    empty.mask = torch::ones({1, T, 1}, torch::kBool);
    empty.value =
        c.empty == EmptyRule::Zero ? torch::zeros({1, T, d}) : block.wPlu->bias.view({1, 1, d}).expand({1, T, d});
    if (block.lnGeo) empty.value = block.lnGeo(empty.value); // a norm of g follows the empty rule
    const torch::Tensor expected = block.run(h, SuffixContext{}, &empty, nullptr);
    EXPECT_LT((dropped - expected).abs().max().item<double>(), 1e-6);
    // The record-free run without an edit is the block's forward pass.
    EXPECT_LT((block.run(h, SuffixContext{}, nullptr, nullptr) - block.forward(h, nullptr)).abs().max().item<double>(),
              1e-6);
}

TEST_P(PatchingVariants, SuffixRunsEqualTheWholeRun) {
    const ModelConfig c = config();
    const Model m = randomModel(c, 10);
    torch::NoGradGuard noGrad;
    m.impl().net->eval();
    const int64_t T = 14, start = 9;
    const torch::Tensor h = torch::randn({1, T, c.dModel});
    for (const auto& block : m.impl().net->blocks()) {
        BlockRecord rec;
        const torch::Tensor whole = block->run(h, SuffixContext{}, nullptr, &rec);
        EXPECT_LT((whole - block->forward(h, nullptr)).abs().max().item<double>(), 1e-6);
        SuffixContext ctx;
        ctx.start = start;
        ctx.z = rec.z;
        ctx.k = rec.k;
        ctx.v = rec.v;
        const torch::Tensor suffix = block->run(h.narrow(1, start, T - start), ctx, nullptr, nullptr);
        EXPECT_LT((suffix - whole.narrow(1, start, T - start)).abs().max().item<double>(), 1e-6);
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, PatchingVariants, ::testing::Range(0, static_cast<int>(test::allVariants().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                             std::string n = test::variantName(test::allVariants()[static_cast<size_t>(info.param)]);
                             for (char& ch : n)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n + "_" + std::to_string(info.param);
                         });

TEST(Patching, BadRequestsSayWhatIsWrong) {
    const Model g = randomModel(test::tinyConfig(ModelKind::Grassmann), 1);
    const Model t = randomModel(test::tinyConfig(ModelKind::Transformer), 1);
    PatchRequest r = pairRequest(g.config(), PatchSite::Resid);
    r.corrupt.pop_back();
    auto message = [](const Model& m, const PatchRequest& req) {
        try {
            validatePatchRequest(m, req);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(message(g, r).find("12 tokens and the corrupted one 11"), std::string::npos) << message(g, r);
    r = pairRequest(g.config(), PatchSite::Head);
    EXPECT_NE(message(g, r).find("only in the Transformer"), std::string::npos);
    r = pairRequest(t.config(), PatchSite::Offset);
    EXPECT_NE(message(t, r).find("only in Grassmann"), std::string::npos);
    r = pairRequest(g.config(), PatchSite::Resid);
    r.answer = 1000;
    EXPECT_NE(message(g, r).find("outside the vocabulary"), std::string::npos);
    r = pairRequest(g.config(), PatchSite::Resid);
    r.corrupt.clear();
    EXPECT_NE(message(g, r).find("needs a corrupted prompt"), std::string::npos);
    Intervention i;
    i.site = PatchSite::Offset;
    i.mode = PatchMode::Zero;
    i.layer = 0;
    i.offset = 3; // layer 0 has {1, 2, 4}
    try {
        ablationDeltaLogprob(g, prompt(8, 37, 1), i);
        FAIL() << "offset 3 is not in layer 0";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("offset 3 is not in layer 0 (its offsets are 1, 2, 4)"), std::string::npos)
            << e.what();
    }
    i.site = PatchSite::Head;
    i.head = 2;
    try {
        ablationDeltaLogprob(t, prompt(8, 37, 1), i);
        FAIL() << "head 2 of 2";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("head 2 is out of range"), std::string::npos) << e.what();
    }
}

TEST(Patching, EqualMetricsLeaveTheEffectUndefined) {
    const Model g = randomModel(test::tinyConfig(ModelKind::Grassmann), 2);
    PatchRequest r = pairRequest(g.config(), PatchSite::Resid);
    r.answer = r.wrong = 5; // logit difference 0 in every run
    const PatchSweep s = runPatchSweep(g, r);
    EXPECT_FALSE(s.effectDefined);
    for (double e : s.effect)
        EXPECT_TRUE(std::isnan(e));
}

TEST(Patching, OffsetAndHeadSweepsHaveTheirShapes) {
    const ModelConfig gc = test::tinyConfig(ModelKind::Grassmann);
    const Model g = randomModel(gc, 3);
    PatchRequest r = pairRequest(gc, PatchSite::Offset);
    const PatchSweep s = runPatchSweep(g, r);
    // Offsets {1,2,4} and {1,3,8}: columns D = 1, 2, 3, 4, 8; layer 0 lacks 3 and 8.
    ASSERT_EQ(s.rows, 2);
    ASSERT_EQ(s.cols, 5);
    EXPECT_EQ(s.colLabels[2], "D=3");
    EXPECT_FALSE(s.defined[2]);
    EXPECT_TRUE(std::isnan(s.metric[2]));
    EXPECT_TRUE(s.defined[5 + 2]);
    const Model t = randomModel(test::tinyConfig(ModelKind::Transformer), 3);
    r = pairRequest(t.config(), PatchSite::Head);
    const PatchSweep h = runPatchSweep(t, r);
    EXPECT_EQ(h.rows, 2);
    EXPECT_EQ(h.cols, 2);
    int changed = 0;
    for (double v : h.metric)
        changed += v != h.corruptMetric;
    EXPECT_GT(changed, 0);
}

// Issue 31: an offset that reaches before the prompt at every position (D >= T) never pairs two
// real tokens; its cells are undefined (NaN), not "effect 0".
TEST(Patching, OffsetsThatNeverReachARealTokenAreUndefined) {
    const ModelConfig gc = test::tinyConfig(ModelKind::Grassmann);
    const Model g = randomModel(gc, 3);
    // Offsets {1,2,4} and {1,3,8}; a 6-token prompt: D = 8 never reaches a real token.
    PatchRequest r = pairRequest(gc, PatchSite::Offset, 6, 2);
    const PatchSweep s = runPatchSweep(g, r);
    ASSERT_EQ(s.cols, 5);
    ASSERT_EQ(s.colLabels[4], "D=8");
    EXPECT_FALSE(s.defined[5 + 4]) << "layer 1 has offset 8, but 8 >= T = 6";
    EXPECT_TRUE(std::isnan(s.metric[5 + 4]));
    EXPECT_TRUE(std::isnan(s.effect[5 + 4]));
    EXPECT_TRUE(s.defined[5 + 3 - 1]) << "D = 3 < T in layer 1 is defined";
    // Ablation too.
    r.mode = PatchMode::Zero;
    const PatchSweep z = runPatchSweep(g, r);
    EXPECT_FALSE(z.defined[5 + 4]);
    EXPECT_TRUE(std::isnan(z.metric[5 + 4]));
}

TEST(Patching, APartOfTheSweepComputesOnlyItsCellsWithTheWholeSweepsValues) {
    const ModelConfig gc = test::tinyConfig(ModelKind::Grassmann);
    const Model g = randomModel(gc, 5);
    const Model t = randomModel(test::tinyConfig(ModelKind::Transformer), 5);
    struct Case {
        const Model* model;
        PatchSite site;
        int layer, offset, head;
        int64_t rows, cols;
    };
    // Offsets {1,2,4} and {1,3,8}; 2 heads; resid rows h^0..h^2.
    for (const Case& c : {Case{&g, PatchSite::Resid, 2, -1, -1, 1, 12}, Case{&g, PatchSite::Gate, 0, -1, -1, 1, 12},
                          Case{&g, PatchSite::Offset, 1, 3, -1, 1, 1}, Case{&g, PatchSite::Offset, -1, 1, -1, 2, 1},
                          Case{&t, PatchSite::Head, -1, -1, 1, 2, 1}, Case{&t, PatchSite::Head, 0, -1, 0, 1, 1}}) {
        SCOPED_TRACE(std::string(patchSiteName(c.site)) + " layer " + std::to_string(c.layer) + " offset " +
                     std::to_string(c.offset) + " head " + std::to_string(c.head));
        PatchRequest r = pairRequest(c.model->config(), c.site);
        const PatchSweep whole = runPatchSweep(*c.model, r);
        r.layer = c.layer;
        r.offset = c.offset;
        r.head = c.head;
        size_t progressCalls = 0;
        const PatchSweep part = runPatchSweep(*c.model, r, [&](double) { return ++progressCalls, true; });
        ASSERT_EQ(part.rows, c.rows);
        ASSERT_EQ(part.cols, c.cols);
        ASSERT_EQ(part.cells.size(), static_cast<size_t>(c.rows * c.cols));
        EXPECT_EQ(part.cleanMetric, whole.cleanMetric);
        EXPECT_EQ(part.corruptMetric, whole.corruptMetric);
        for (size_t i = 0; i < part.cells.size(); ++i) {
            const Intervention& cell = part.cells[i];
            if (c.layer >= 0) {
                EXPECT_EQ(cell.layer, c.layer);
            }
            if (c.offset >= 0) {
                EXPECT_EQ(cell.offset, c.offset);
            }
            if (c.head >= 0) {
                EXPECT_EQ(cell.head, c.head);
            }
            // The same cell of the whole sweep has the same metric (NaN where undefined).
            size_t j = 0;
            while (j < whole.cells.size() &&
                   !(whole.cells[j].layer == cell.layer && whole.cells[j].position == cell.position &&
                     whole.cells[j].offset == cell.offset && whole.cells[j].head == cell.head))
                ++j;
            ASSERT_LT(j, whole.cells.size());
            EXPECT_EQ(part.defined[i], whole.defined[j]);
            if (std::isnan(whole.metric[j])) {
                EXPECT_TRUE(std::isnan(part.metric[i]));
            } else {
                // Equal up to the batch's rounding (cells are batched differently in a part).
                EXPECT_NEAR(part.metric[i], whole.metric[j], 1e-5 * (1.0 + std::abs(whole.metric[j])));
            }
            const size_t row = i / static_cast<size_t>(part.cols), col = i % static_cast<size_t>(part.cols);
            EXPECT_EQ(part.rowLabels[row], whole.rowLabels[j / static_cast<size_t>(whole.cols)]);
            EXPECT_EQ(part.colLabels[col], whole.colLabels[j % static_cast<size_t>(whole.cols)]);
        }
    }
    // A part that does not exist is refused by name.
    auto message = [](const Model& m, PatchRequest r) {
        try {
            validatePatchRequest(m, r);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    PatchRequest r = pairRequest(gc, PatchSite::Offset);
    r.layer = 0;
    r.offset = 3;
    EXPECT_NE(message(g, r).find("offset 3 is not an offset of layer 0 (it has 1, 2, 4)"), std::string::npos)
        << message(g, r);
    r.layer = -1;
    r.offset = 5;
    EXPECT_NE(message(g, r).find("offset 5 is not an offset of any layer (it has 1, 2, 3, 4, 8)"), std::string::npos)
        << message(g, r);
    r = pairRequest(gc, PatchSite::Resid);
    r.layer = 3;
    EXPECT_NE(message(g, r).find("layer 3 is out of range: site resid has layers 0..2"), std::string::npos)
        << message(g, r);
    r.layer = 2;
    EXPECT_EQ(message(g, r), "");
    r.head = 0;
    EXPECT_NE(message(g, r).find("only of site 'head'"), std::string::npos) << message(g, r);
    r = pairRequest(t.config(), PatchSite::Head);
    r.head = 2;
    EXPECT_NE(message(t, r).find("head 2 is out of range"), std::string::npos) << message(t, r);
}

TEST(Patching, AblationSweepsReportTheChangeOfLogProbEverywhere) {
    const ModelConfig gc = test::tinyConfig(ModelKind::Grassmann);
    const Model g = randomModel(gc, 4);
    PatchRequest r;
    r.clean = prompt(10, gc.vocabSize, 2);
    r.site = PatchSite::Resid;
    r.mode = PatchMode::Mean;
    const PatchSweep s = runPatchSweep(g, r);
    ASSERT_EQ(s.deltaLogprob.size(), static_cast<size_t>(s.rows * s.cols * s.T));
    // Cell (layer 1, position 4) equals the quick ablation of the same intervention.
    Intervention i = s.cells[static_cast<size_t>(1 * s.cols + 4)];
    const std::vector<double> quick = ablationDeltaLogprob(g, r.clean, i);
    for (int64_t t = 0; t + 1 < s.T; ++t)
        EXPECT_NEAR(s.deltaLogprob[static_cast<size_t>((1 * s.cols + 4) * s.T + t)], quick[static_cast<size_t>(t)],
                    1e-6);
    PatchProgress cancel = [](double) { return false; };
    EXPECT_THROW(runPatchSweep(g, r, cancel), PatchCancelled);
}

} // namespace
} // namespace gwb::engine
