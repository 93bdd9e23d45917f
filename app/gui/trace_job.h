#pragma once
// One "Run": load the models (cached), trace the prompt through each, analyse each trace. The GUI
// runs it on a worker thread (trace_controller.h); `gwb figure` runs it directly. Qt Core only.

#include "gui/import_choice.h"
#include "common/layer_warnings.h"

#include "gwb/engine/causal_runs.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/model.h"
#include "gwb/engine/model_store.h"
#include "gwb/engine/saliency.h"
#include "gwb/views/workbench_data.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace gwb::app {

/// What to run. An empty model path means "leave that model out".
struct TraceRequest {
    QString grassmannPath;                   ///< .gwb of the Grassmann model ("" = none)
    QString baselinePath;                    ///< .gwb of the Transformer baseline ("" = none)
    QString prompt;                          ///< UTF-8 text; must contain a non-space character
    QString device = QStringLiteral("auto"); ///< "auto", "cpu", "cuda", "cuda:N"
    int threads = 0;                         ///< CPU threads for the engine (0 = all cores)
    int promptSubspaceK = 4;                 ///< k of the prompt subspaces (analysis)
    /// Continue: before tracing, generate continuation.maxNew tokens after the prompt with the
    /// incremental generator of the Grassmann model (the baseline when there is no Grassmann
    /// model), append their text to the prompt and trace prompt + continuation. 0 = a plain run.
    gwb::engine::GenerateOptions continuation{.maxNew = 0, .greedy = true};
    /// The tokens an earlier Continue traced for exactly this `prompt` (ids, pieces and byte spans),
    /// while the text is unedited: Run and Continue then trace (and continue from) these ids
    /// instead of encoding the text again, which could merge a generated piece with its
    /// neighbour. Empty = encode the prompt.
    std::vector<gwb::engine::TraceToken> promptTokens;
    int64_t firstGeneratedToken = -1; ///< the first generated token of promptTokens (-1 = none)
    int continuationFrom = -1;        ///< index in `prompt` (QChar) where that generated text starts
    /// The Saliency view's result for the token the window will select after the run
    /// (gwb::views::tokenAfterRun of the new data and previousToken), computed at the end of the
    /// job, so that the view has it with the data instead of asking for it afterwards.
    bool withSaliency = false;
    int previousToken = -1; ///< the selected token before the run (-1 = none)
    QString saliencyTarget; ///< the view's target piece ("" = the actual next token)
    /// Made by a command (gwb figure), not the window: messages name options, not buttons.
    bool headless = false;
    /// The parts of the Grassmann analysis the run computes (gwb::engine::AnalysisPart bits; the
    /// core part always): the window asks for what its visible views draw and completes the rest
    /// afterwards with completeRunAnalysis. Commands take every part.
    unsigned analysisParts = gwb::engine::kAnalysisAll;
    /// K of the logit lens traced with the prompt; 0 = none now (the window computes it when the
    /// Lens view is shown: computeRunLens). Commands take it.
    int lensTopK = 5;
    /// Longest prompt traced, in tokens (0 = each model's context): the window's setting.
    int64_t maxTokens = 0;
};

/// Steps of a run, in order; the progress bar shows the step's name.
enum class TraceStage : int {
    Idle,
    Generate, ///< continuing the prompt (only when asked for)
    LoadGrassmann,
    TraceGrassmann,
    AnalyseGrassmann,
    LoadBaseline,
    TraceBaseline,
    AnalyseBaseline,
    Done
};
QString stageName(TraceStage stage);

/// Shared between the worker and the GUI, which polls it (Tracy-style atomics).
struct TraceJobState {
    std::atomic<int> stage{0};           ///< a TraceStage
    std::atomic<int64_t> done{0};        ///< units done within the stage
    std::atomic<int64_t> total{0};       ///< units in the stage (0 = unknown)
    std::atomic<bool> cancel{false};     ///< set by the GUI; the engine stops at its next check
    std::atomic<bool> continuing{false}; ///< the run starts by generating (Generate stage)
    /// Overall fraction in [0, 1] given which models take part.
    double fraction(bool withGrassmann, bool withBaseline) const;
};

/// What a run produced.
struct TraceOutcome {
    enum class Status { Ok, Cancelled, Failed } status = Status::Failed;
    QString message;                ///< the error for Failed; "" otherwise
    gwb::views::WorkbenchData data; ///< traces and analyses (Ok only)
    QStringList notices;            ///< things the user must see: truncation, analysis warnings
    QString prompt;                 ///< the text traced: the request's prompt, plus the continuation
    int continuationFrom = -1;      ///< index in `prompt` (QChar) where the generated text starts; -1 = none
    int generated = 0;              ///< tokens generated by this run (earlier Continues not counted)
    /// The traced tokens when they came from ids (a Continue, or a Run of text a Continue left
    /// unedited): hand them back as TraceRequest::promptTokens to extend the same ids.
    std::vector<gwb::engine::TraceToken> tokens;
    double tokensPerSecond = 0;                          ///< generation speed
    std::optional<gwb::engine::SaliencyResult> saliency; ///< with TraceRequest::withSaliency (Ok only)
};

/// The window's handle on a gwb::engine::ModelStore (loaded models by file and device), with the
/// import choices the user made for checkpoints. Copies share the store and the choices; the
/// window's runners and `gwb figure` all hold process(), so a model is loaded once per process
/// whichever view asks first. Thread-safe.
class ModelCache {
public:
    ModelCache(); ///< a store of its own (tests)
    /// The process's store (gwb::engine::ModelStore::process()) and its choices.
    static ModelCache process();
    /// The model at `path` on `device`; throws std::runtime_error naming the file and the problem.
    /// A PyTorch checkpoint is imported with the ImportChoice set for its path
    /// (gwb::engine::importCheckpoint), else with the detected layout and a vocabulary found
    /// next to it (loadOrImportModel); one that ends up without a tokenizer is refused with
    /// noVocabularyMessage(), since the GUI traces text. A changed file or choice loads again.
    gwb::engine::Model get(const QString& path, const QString& device);
    /// get() as the engine's runs take it (gwb/engine/causal_runs.h): the handle is copied in, so
    /// the opener may outlive this copy.
    gwb::engine::ModelOpener opener() const;
    /// Remembers how to import `path` (any spelling of it); the next get loads it again if the
    /// choice changed.
    void setImportChoice(const QString& path, const ImportChoice& choice);
    /// The choice set for `path`, if any.
    std::optional<ImportChoice> importChoice(const QString& path) const;
    /// The store behind this handle.
    gwb::engine::ModelStore& store() const { return *m_store; }

private:
    struct Choices {
        mutable std::mutex mutex;
        std::map<QString, ImportChoice> byPath; ///< by absolute path
    };
    ModelCache(std::shared_ptr<gwb::engine::ModelStore> store, std::shared_ptr<Choices> choices);
    std::shared_ptr<gwb::engine::ModelStore> m_store;
    std::shared_ptr<Choices> m_choices;
};

/// Checks the request (models named, prompt not empty). Returns "" when fine, else the message.
QString validateRequest(const TraceRequest& request);

/// Runs the whole job synchronously. Never throws: every problem comes back as the outcome's
/// message. `state` reports progress and carries the cancel flag.
TraceOutcome runTraceJob(const TraceRequest& request, ModelCache& cache, TraceJobState& state);

/// What continuing a prompt produced: the text to append (starting with the space the tokenizer
/// puts between pieces, if any), every token of prompt + continuation, and how it went.
struct Continuation {
    QString appended;
    int generated = 0;
    double tokensPerSecond = 0;
    bool stoppedAtMaxLen = false;
    /// Prompt tokens then the generated ones, with byte spans in prompt + appended (a generated
    /// token's span is the text that decoding it added; it may be empty).
    std::vector<gwb::engine::TraceToken> tokens;
};

/// Generates `options.maxNew` tokens after `prompt` with `model` (its tokenizer encodes the prompt,
/// unless `promptTokens` gives its tokens, and decodes the result). Progress goes into `state`
/// (done/total tokens); its cancel flag stops it (gwb::engine::Cancelled). Throws
/// std::runtime_error / std::invalid_argument naming the problem (no tokenizer, prompt longer
/// than the context, bad sampling settings).
Continuation continuePrompt(const gwb::engine::Model& model, const QString& prompt,
                            const std::vector<gwb::engine::TraceToken>& promptTokens,
                            const gwb::engine::GenerateOptions& options, TraceJobState& state);

/// The generation settings of Continue (the window's button and `gwb figure --continue`): greedy,
/// or with `sample` temperature 1 and nucleus top-p 0.9 from `seed`.
/// The window samples by default with kContinueSeed: the bundled models, greedy, soon write
/// nothing but white space.
gwb::engine::GenerateOptions continueOptions(int tokens, bool sample, quint64 seed);
constexpr quint64 kContinueSeed = 0; ///< the window's seed (as `gwb figure --continue N --sample`)

/// What completing a run's Grassmann analysis gave (completeRunAnalysis).
struct AnalysisCompletion {
    enum class Status { Ok, Cancelled, Failed } status = Status::Failed;
    gwb::engine::AnalysisPtr analysis; ///< the whole analysis (Ok only)
    QStringList notices;               ///< warnings of the parts computed now, as runTraceJob words them
    QString message;                   ///< the error for Failed
};

/// Computes the parts a run's Grassmann analysis lacks (TraceRequest::analysisParts), with the
/// process's weight-only cache, `threads` engine threads and `state`'s cancel flag. Never throws.
AnalysisCompletion completeRunAnalysis(const gwb::views::WorkbenchData& data, int threads, TraceJobState& state);

/// What computing a run's logit lenses gave (computeRunLens).
struct LensCompletion {
    enum class Status { Ok, Cancelled, Failed } status = Status::Failed;
    gwb::engine::LensPtr grassmann, baseline; ///< the lens of each trace present (Ok only)
    QString message;                          ///< the error for Failed
};

/// The logit lens (top-K) of each trace in `data` that has none, from the states it keeps, with the
/// models that made them (`grassmannPath`, `baselinePath` on `device`, from `cache`: loaded once).
/// Progress (head passes) and the cancel flag go through `state`. Never throws.
LensCompletion computeRunLens(const gwb::views::WorkbenchData& data, const QString& grassmannPath,
                              const QString& baselinePath, const QString& device, int threads, int topK,
                              ModelCache& cache, TraceJobState& state);

/// The truncation notice for a trace ("" when nothing was dropped): which limit cut it, the
/// model's context or `maxTokens` (the window's longest-prompt setting; 0 = none).
QString truncationNotice(const gwb::engine::Trace& trace, const QString& label, int64_t maxTokens = 0);

} // namespace gwb::app
