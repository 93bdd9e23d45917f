// The two-model causal runs of the runs layer (gwb/engine/causal_runs.h), without Qt: a patching
// sweep and path patching of both bundled models from one model store (each model read once across
// the two kinds of run), grids equal to the one-model engine runs, a clicked cell's top pieces,
// cancel, a site one model lacks, and a model left out.
#include "gwb/engine/causal_runs.h"

#include "gwb/engine/model_store.h"
#include "gwb/engine/patch_input.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace gwb::engine;

namespace {

CausalModels bundledModels() {
    CausalModels m;
    m.paths[0] = std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb";
    m.paths[1] = std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb";
    m.device = "cpu";
    return m;
}

PatchingInputs patchingInputs(const std::string& site) {
    PatchingInputs in;
    in.clean = "She said that she was";
    in.corrupt = "He said that he was";
    in.answer = "she";
    in.wrong = "he";
    in.site = site;
    in.mode = "patch";
    return in;
}

/// Equal arrays where NaN equals NaN.
void expectSame(const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        if (!(std::isnan(a[i]) && std::isnan(b[i]))) {
            EXPECT_EQ(a[i], b[i]) << "at " << i;
        }
}

} // namespace

TEST(CausalRuns, BothModelsFromOneStoreEqualTheOneModelRuns) {
    ModelStore store;
    const ModelOpener open = plainModelOpener(store);
    const CausalModels models = bundledModels();
    PatchingRuns runs;
    const PatchingData d = runPatchingModels(open, models, patchingInputs("offset/head"), {}, &runs);
    ASSERT_TRUE(d.error.empty()) << d.error;
    ASSERT_TRUE(d.grassmann.hasGrid()) << d.grassmann.error;
    ASSERT_TRUE(d.transformer.hasGrid()) << d.transformer.error;
    EXPECT_EQ(d.grassmann.site, "offset"); // "offset/head" is each model's own unit
    EXPECT_EQ(d.transformer.site, "head");
    EXPECT_EQ(d.grassmann.model, "Grassmann");
    EXPECT_EQ(d.transformer.model, "Transformer");
    EXPECT_EQ(d.cleanTokens.size(), d.corruptTokens.size());
    EXPECT_EQ(d.metricPosition, static_cast<int64_t>(d.cleanTokens.size()) - 1);
    EXPECT_FALSE(d.answerPiece.empty());
    EXPECT_EQ(store.loads(), 2);

    // Each grid is the engine's one-model sweep of the same checked request.
    for (int m : {0, 1}) {
        const Model model = open(models.paths[m], "cpu");
        PatchText t;
        t.clean = "She said that she was";
        t.corrupt = "He said that he was";
        t.answer = "she";
        t.wrong = "he";
        t.site = m == 0 ? "offset" : "head";
        t.mode = "patch";
        const PatchSweep s = runPatchSweep(model, preparePatchRequest(model, t));
        const PatchingGrid& g = m == 0 ? d.grassmann : d.transformer;
        EXPECT_EQ(g.rows, s.rows);
        EXPECT_EQ(g.cols, s.cols);
        EXPECT_EQ(g.colLabels, s.colLabels);
        expectSame(g.effect, s.effect);
        expectSame(g.metric, s.metric);
        EXPECT_EQ(g.cleanMetric, s.cleanMetric);
        // A clicked cell's top pieces: probabilities in descending order, at most 1 in all.
        const PatchingTopK k = patchingTopK(open, runs, m, 0, 0, 5);
        ASSERT_TRUE(k.error.empty()) << k.error;
        ASSERT_EQ(k.pieces.size(), 5u);
        double sum = 0;
        for (size_t i = 0; i < k.probs.size(); ++i) {
            if (i > 0) {
                EXPECT_LE(k.probs[i], k.probs[i - 1]);
            }
            sum += k.probs[i];
        }
        EXPECT_LE(sum, 1.0 + 1e-9);
    }

    // Path patching is another kind of run on the same store: no model is read again.
    PathsInputs p;
    p.clean = "She said that she was";
    p.corrupt = "He said that he was";
    p.answer = "she";
    p.wrong = "he";
    p.senders = "offset/head";
    PathsRuns pathRuns;
    const PathsData paths = runPathsModels(open, models, p, {}, &pathRuns);
    ASSERT_TRUE(paths.error.empty()) << paths.error;
    ASSERT_TRUE(paths.grassmann.hasGrid()) << paths.grassmann.error;
    ASSERT_TRUE(paths.transformer.hasGrid()) << paths.transformer.error;
    EXPECT_EQ(paths.grassmann.senders.front().rfind("offset.", 0), 0u);
    EXPECT_EQ(paths.transformer.senders.front().rfind("head.", 0), 0u);
    EXPECT_EQ(paths.grassmann.receivers.front(), "logits");
    EXPECT_EQ(paths.metricPosition, d.metricPosition);
    const PatchingTopK k =
        pathsTopK(open, pathRuns, 1, paths.transformer.senders.front(), paths.transformer.receivers.front(), 3);
    EXPECT_TRUE(k.error.empty()) << k.error;
    EXPECT_EQ(k.pieces.size(), 3u);
    EXPECT_EQ(store.loads(), 2);
}

TEST(CausalRuns, CancelASiteOneModelLacksAndAModelLeftOut) {
    ModelStore store;
    const ModelOpener open = plainModelOpener(store);
    CausalModels models = bundledModels();

    // Cancel: the inputs only, and the message that the previous result stays.
    PatchingRuns runs;
    const PatchingData cancelled = runPatchingModels(
        open, models, patchingInputs("resid"), [](double) { return false; }, &runs);
    EXPECT_EQ(cancelled.error, kCancelledKeepsPrevious);
    EXPECT_FALSE(cancelled.hasGrid());
    EXPECT_EQ(cancelled.inputs.clean, "She said that she was");
    EXPECT_FALSE(runs.requests[0].has_value());

    // "gate" is a Grassmann site: the Transformer's grid says so and the Grassmann model still runs.
    const PatchingData gate = runPatchingModels(open, models, patchingInputs("gate"));
    EXPECT_TRUE(gate.error.empty()) << gate.error;
    EXPECT_TRUE(gate.grassmann.hasGrid());
    EXPECT_NE(gate.transformer.error.find("Grassmann site"), std::string::npos) << gate.transformer.error;

    // Bad input refuses the whole run, naming the model.
    PatchingInputs zebra = patchingInputs("resid");
    zebra.answer = "zebraqq";
    const PatchingData refused = runPatchingModels(open, models, zebra);
    EXPECT_EQ(refused.error.rfind("Grassmann model: ", 0), 0u) << refused.error;
    EXPECT_FALSE(refused.hasGrid());

    // A model left out: its grid says so, the other runs.
    models.paths[1].clear();
    const PatchingData one = runPatchingModels(open, models, patchingInputs("resid"));
    EXPECT_TRUE(one.grassmann.hasGrid());
    EXPECT_EQ(one.transformer.error, "no Transformer model loaded");
    models.paths[0].clear();
    EXPECT_EQ(runPatchingModels(open, models, patchingInputs("resid")).error,
              "No model is loaded: open a model and run a prompt first.");
}
