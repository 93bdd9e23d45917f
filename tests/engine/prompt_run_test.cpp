// The prompt run of the runs layer (gwb/engine/prompt_run.h), without Qt: both bundled models
// traced and analysed from one store, stages to Done, a continuation's byte offsets and tokens
// traced as ids, cancel, a model file in the wrong slot, and the per-layer warnings said once.
#include "gwb/engine/prompt_run.h"

#include "gwb/engine/model_store.h"

#include <gtest/gtest.h>

#include <string>

using namespace gwb::engine;

namespace {

PromptRunRequest bundled(const std::string& prompt) {
    PromptRunRequest r;
    r.paths[0] = std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb";
    r.paths[1] = std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb";
    r.prompt = prompt;
    r.device = "cpu";
    r.threads = 2;
    r.lensTopK = 0;
    return r;
}

} // namespace

TEST(PromptRun, BothModelsTracedAndAnalysedFromOneStore) {
    ModelStore store;
    PromptRunState state;
    const PromptRunResult r =
        runPrompt(plainModelOpener(store), bundled("It is a truth universally acknowledged"), state);
    ASSERT_EQ(r.status, PromptRunResult::Status::Ok) << r.message;
    ASSERT_TRUE(r.traces[0] && r.traces[1]);
    ASSERT_TRUE(r.analyses[0] && r.analyses[1]);
    EXPECT_TRUE(r.traces[0]->isGrassmann());
    EXPECT_FALSE(r.traces[1]->isGrassmann());
    EXPECT_EQ(r.traces[0]->length(), r.traces[1]->length()); // the bundled pair shares a tokenizer
    EXPECT_EQ(r.prompt, "It is a truth universally acknowledged");
    EXPECT_EQ(r.continuationFromByte, -1);
    EXPECT_EQ(static_cast<PromptStage>(state.stage.load()), PromptStage::Done);
    EXPECT_DOUBLE_EQ(state.fraction(true, true), 1.0);
    EXPECT_EQ(store.loads(), 2);
}

TEST(PromptRun, AContinuationIsTracedAsIdsWithItsByteOffset) {
    ModelStore store;
    const ModelOpener open = plainModelOpener(store);
    PromptRunRequest req = bundled("Emma was");
    req.paths[1].clear();
    req.continuation.maxNew = 4; // sampled as the window continues: top-p 0.9, seed 0
    req.continuation.greedy = false;
    req.continuation.topP = 0.9;
    req.continuation.seed = 0;
    PromptRunState state;
    const PromptRunResult r = runPrompt(open, req, state);
    ASSERT_EQ(r.status, PromptRunResult::Status::Ok) << r.message;
    EXPECT_EQ(r.generated, 4);
    EXPECT_EQ(r.continuationFromByte, 8); // the generated text starts after "Emma was"
    EXPECT_EQ(r.prompt.compare(0, 8, "Emma was"), 0);
    ASSERT_EQ(r.tokens.size(), static_cast<size_t>(r.traces[0]->length()));
    EXPECT_EQ(r.firstGeneratedToken, static_cast<int64_t>(r.tokens.size()) - 4);
    for (size_t i = 0; i < r.tokens.size(); ++i)
        EXPECT_EQ(r.traces[0]->tokens[i].id, r.tokens[i].id) << "token " << i;

    // A second Continue from those ids keeps the first one's marks.
    PromptRunRequest again = req;
    again.prompt = r.prompt;
    again.promptTokens = r.tokens;
    again.firstGeneratedToken = r.firstGeneratedToken;
    again.continuationFromByte = r.continuationFromByte;
    PromptRunState s2;
    const PromptRunResult r2 = runPrompt(open, again, s2);
    ASSERT_EQ(r2.status, PromptRunResult::Status::Ok) << r2.message;
    EXPECT_EQ(r2.continuationFromByte, 8);
    EXPECT_EQ(r2.firstGeneratedToken, r.firstGeneratedToken);
    EXPECT_EQ(r2.tokens.size(), r.tokens.size() + 4);
}

TEST(PromptRun, CancelAWrongSlotAndAnEmptyPromptAreMessages) {
    ModelStore store;
    const ModelOpener open = plainModelOpener(store);
    PromptRunState cancelled;
    cancelled.cancel.store(true);
    const PromptRunResult c = runPrompt(open, bundled("It is a truth"), cancelled);
    EXPECT_EQ(c.status, PromptRunResult::Status::Cancelled);
    EXPECT_FALSE(c.traces[0] || c.traces[1]);

    PromptRunRequest swapped = bundled("It is a truth");
    std::swap(swapped.paths[0], swapped.paths[1]);
    PromptRunState state;
    const PromptRunResult w = runPrompt(open, swapped, state);
    EXPECT_EQ(w.status, PromptRunResult::Status::Failed);
    EXPECT_EQ(w.message.rfind("Grassmann model: '", 0), 0u) << w.message;
    EXPECT_NE(w.message.find("is a Transformer model, not a Grassmann model"), std::string::npos) << w.message;

    PromptRunState s3;
    EXPECT_EQ(runPrompt(open, bundled(" \n\u3000"), s3).message, "the prompt is empty");
}

TEST(PromptRun, PerLayerWarningsAreSaidOnce) {
    const std::vector<std::string> w = {
        "layer 0: rank 3 < k", "layer 1: rank 3 < k", "layer 2: rank 3 < k", "odd", "layer 4: x", "layer 7: x", "odd"};
    EXPECT_EQ(collapseLayerWarnings(w),
              (std::vector<std::string>{"odd", "layers 0\u20132: rank 3 < k", "layers 4, 7: x"}));
}
