#pragma once
// Language-model training and evaluation on text files. Std types only.
//
// Corpus: each file is read as UTF-8, every non-empty line is encoded separately and the ids are
// concatenated; the result is cached next to the output (key = tokenizer bytes + file bytes).
// Training samples contiguous blocks of max_len + 1 tokens (inputs and shifted targets).
// Optimizer: AdamW (no weight decay on LayerNorms, biases, embeddings), linear warm-up then
// cosine decay to 10% of the peak rate, gradient clipping at 1.0.

#include "gwb/engine/model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

struct TrainOptions {
    std::vector<std::string> trainFiles; ///< UTF-8 text
    std::vector<std::string> validFiles; ///< UTF-8 text (validation perplexity, best checkpoint)
    std::string outPath;                 ///< best checkpoint (.gwb); "<out>.optim" + "<out>.state.json" beside it
    int64_t steps = 0;                   ///< optimizer steps (0: use epochs)
    double epochs = 0;                   ///< passes over the training blocks when steps == 0
    int64_t batch = 16;                  ///< sequences per step
    double lr = 1e-3;                    ///< peak learning rate
    int64_t warmup = 200;                ///< linear warm-up steps
    double minLrRatio = 0.1;             ///< cosine decays to lr * minLrRatio
    double weightDecay = 0.01;           ///< AdamW decoupled weight decay (matrices only)
    double gradClip = 1.0;               ///< max global gradient norm
    uint64_t seed = 0;                   ///< weights, dropout and batch order
    int64_t evalEvery = 500;             ///< steps between validations (and checkpoint saves)
    int64_t evalMaxBlocks = 0;           ///< validation blocks per evaluation (0 = all)
    double timeLimitMinutes = 0;         ///< stop (validate + save) after this wall time (0 = none)
    bool resume = false;                 ///< continue from outPath + its optimizer state, or from the
                                         ///< later resume point a stopped run left (TrainResult::resumePath)
    SaveDtype saveDtype = SaveDtype::F32;
    std::string cacheDir;  ///< token cache folder ("" = "<out>.cache")
    int64_t logEvery = 10; ///< steps between progress reports
};

struct TrainProgress {
    int64_t step = 0; ///< optimizer steps done
    int64_t totalSteps = 0;
    double loss = 0;            ///< mean training loss (nats/token) since the last report
    double lr = 0;              ///< current learning rate
    double tokensPerSecond = 0; ///< training tokens per second since the last report
    double elapsedSeconds = 0;
    double etaSeconds = 0;
    bool validated = false; ///< this report follows a validation
    double validLoss = 0;   ///< nats/token (when validated)
    bool saved = false;     ///< a new best checkpoint was written
    std::string message;    ///< free-form event (corpus loaded, resumed, ...)
};
/// Return false to stop training cleanly (validate, save, return).
using TrainCallback = std::function<bool(const TrainProgress&)>;

struct TrainResult {
    int64_t steps = 0;
    int64_t tokensSeen = 0;
    double bestValidLoss = 0; ///< nats/token of the saved checkpoint
    int64_t bestStep = 0;
    double lastTrainLoss = 0;
    double seconds = 0;
    double tokensPerSecond = 0; ///< training throughput over the whole run (excluding validation)
    std::string stopReason;     ///< "finished", "time limit", "stopped"
    std::string summaryJson;    ///< what went into the checkpoint's training_summary
    /// Where the last step's weights went when the run stopped (a signal, the time limit) at a step
    /// whose weights were not the best: "<out>.resume.gwb" (+ .resume.optim, .resume.state.json),
    /// which --resume continues from; "" otherwise.
    std::string resumePath;
};

/// Trains `model` in place (its tokenizer must be set). `stop` (may be null) is polled every step.
TrainResult train(Model& model, const TrainOptions& options, const std::atomic<bool>* stop = nullptr,
                  const TrainCallback& callback = {});

/// The same on already tokenized streams (no tokenizer needed; files in `options` are ignored).
TrainResult trainOnTokens(Model& model, const std::vector<int32_t>& trainIds, const std::vector<int32_t>& validIds,
                          const TrainOptions& options, const std::atomic<bool>* stop = nullptr,
                          const TrainCallback& callback = {});

/// What a checkpoint's training summary's valid_loss and valid_perplexity are over, in words (gwb
/// info prints it beside them): they were scored at training time, on valid_tokens
/// tokens, which are a sample of the validation split when training's evalMaxBlocks was set
/// (valid_split_tokens, where recorded, says how many the split has), so they differ from
/// what `gwb eval` gives for the whole split. "" when the summary records no valid_tokens.
std::string validationScope(const std::string& trainingSummaryJson);

/// Mean next-token loss (nats/token) of a token stream, cut as evaluate() does.
double streamLoss(const Model& model, const std::vector<int32_t>& ids, int64_t batch = 8);

struct EvalResult {
    double loss = 0;             ///< mean next-token negative log-likelihood (nats/token)
    double perplexity = 0;       ///< exp(loss)
    double bitsPerCharacter = 0; ///< total NLL / ln 2 / characters (Unicode code points of the lines)
    int64_t tokens = 0;          ///< predicted tokens
    int64_t characters = 0;
};

/// Perplexity over files (same corpus rules as training; every token after the first predicted
/// once, with up to max_len tokens of context). progress(done, total) -> false cancels (throws
/// Cancelled from analysis.h).
EvalResult evaluate(const Model& model, const std::vector<std::string>& files, int64_t batch = 8,
                    const std::function<bool(int64_t, int64_t)>& progress = {}, const std::string& cacheDir = "");

/// Tokenized corpus: ids of all files and the number of characters they came from.
struct TokenizedCorpus {
    std::vector<int32_t> ids;
    int64_t characters = 0;
};
/// Encodes files line by line; with a non-empty cacheDir the result is cached there.
TokenizedCorpus tokenizeFiles(const Tokenizer& tokenizer, const std::vector<std::string>& files,
                              const std::string& cacheDir);

} // namespace gwb::engine
