// The prompt run of the runs layer (gwb/engine/prompt_run.h), without Qt: both bundled models
// traced and analysed from one store, stages to Done, a continuation's byte offsets and tokens
// traced as ids, cancel, a model file in the wrong slot, and the per-layer warnings said once;
// and the one rule for a prompt read from a file (gwb/engine/prompt_file.h).
#include "gwb/engine/prompt_run.h"

#include "engine_test_util.h"
#include "gwb/engine/model_store.h"
#include "gwb/engine/prompt_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
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

// Issue 67: the window, gwb figure and gwb trace read a prompt file by one rule, so a file saved
// by an editor (a final line end) gives the tokens of its text, not one more.
TEST(PromptFile, OneFinalLineEndIsNotPartOfThePrompt) {
    EXPECT_EQ(promptFromFileBytes("It is a truth\n"), "It is a truth");
    EXPECT_EQ(promptFromFileBytes("It is a truth\r\n"), "It is a truth");
    EXPECT_EQ(promptFromFileBytes("It is a truth"), "It is a truth");
    EXPECT_EQ(promptFromFileBytes("two\nlines\n\n"), "two\nlines\n"); // only one line end is the editor's
    EXPECT_EQ(promptFromFileBytes("\n"), "");

    test::TempDir dir;
    auto write = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir.file(name), std::ios::binary) << bytes;
        return dir.file(name);
    };
    EXPECT_EQ(readPromptFile(write("one.txt", "It is a truth\n")), "It is a truth");
    EXPECT_EQ(promptFileLines(write("lines.txt", "first\r\n\nsecond\n")),
              (std::vector<std::string>{"first", "second"}));
    // Refusals name the file.
    const std::string latin1 = write("latin1.txt", "caf\xe9 au lait\n");
    try {
        (void)readPromptFile(latin1);
        FAIL() << "read a Latin-1 file";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'" + latin1 + "' is not UTF-8 text"), std::string::npos) << e.what();
    }
    try {
        (void)readPromptFile(dir.file("missing.txt"));
        FAIL() << "read a missing file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot open prompt file '" + dir.file("missing.txt") + "'"),
                  std::string::npos)
            << e.what();
    }
}
