#pragma once
// One "Run": load the models (cached), trace the prompt through each, analyse each trace. The GUI
// runs it on a worker thread (trace_controller.h); `gwb figure` runs it directly. Qt Core only.

#include "gui/import_choice.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/model.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/workbench_data.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <cstdint>
#include <map>
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
    /// The Saliency view's result for the token the window will select after the run
    /// (gwb::views::tokenAfterRun of the new data and previousToken), computed at the end of the
    /// job, so that the view has it with the data instead of asking for it afterwards.
    bool withSaliency = false;
    int previousToken = -1; ///< the selected token before the run (-1 = none)
    QString saliencyTarget; ///< the view's target piece ("" = the actual next token)
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
    int generated = 0;              ///< tokens generated
    double tokensPerSecond = 0;     ///< generation speed
    std::optional<gwb::views::SaliencyResult> saliency; ///< with TraceRequest::withSaliency (Ok only)
};

/// Loaded models by (absolute path, device); a file changed on disk is loaded again.
/// Thread-safe; copies of gwb::engine::Model share weights, so handing them out is cheap.
class ModelCache {
public:
    /// The model at `path` on `device`; throws std::runtime_error naming the file and the problem.
    /// A PyTorch checkpoint is imported with the ImportChoice set for its path
    /// (gwb::engine::importCheckpoint), else with the detected layout and a vocabulary found
    /// next to it (loadOrImportModel); one that ends up without a tokenizer is refused with
    /// noVocabularyMessage(), since the GUI traces text.
    gwb::engine::Model get(const QString& path, const QString& device);
    /// Remembers how to import `path` (any spelling of it); a model loaded before is dropped.
    void setImportChoice(const QString& path, const ImportChoice& choice);
    /// The choice set for `path`, if any.
    std::optional<ImportChoice> importChoice(const QString& path) const;
    void clear();

private:
    struct Entry {
        gwb::engine::Model model;
        qint64 modified = 0; ///< file time (ms since epoch) when loaded
        qint64 size = 0;
    };
    mutable std::mutex m_mutex;
    std::map<std::pair<QString, QString>, Entry> m_entries;
    std::map<QString, ImportChoice> m_choices; ///< by absolute path
};

/// Checks the request (models named, prompt not empty). Returns "" when fine, else the message.
QString validateRequest(const TraceRequest& request);

/// Runs the whole job synchronously. Never throws: every problem comes back as the outcome's
/// message. `state` reports progress and carries the cancel flag.
TraceOutcome runTraceJob(const TraceRequest& request, ModelCache& cache, TraceJobState& state);

/// What continuing a prompt produced: the text to append (starting with the space the tokenizer
/// puts between pieces, if any) and how it went.
struct Continuation {
    QString appended;
    int generated = 0;
    double tokensPerSecond = 0;
    bool stoppedAtMaxLen = false;
};

/// Generates `options.maxNew` tokens after `prompt` with `model` (its tokenizer encodes the prompt
/// and decodes the result). Progress goes into `state` (done/total tokens); its cancel flag stops
/// it (gwb::engine::Cancelled). Throws std::runtime_error / std::invalid_argument naming the problem
/// (no tokenizer, prompt longer than the context, bad sampling settings).
Continuation continuePrompt(const gwb::engine::Model& model, const QString& prompt,
                            const gwb::engine::GenerateOptions& options, TraceJobState& state);

/// The generation settings of Continue (the window's button and `gwb figure --continue`): greedy,
/// or with `sample` temperature 1 and nucleus top-p 0.9 from `seed`.
gwb::engine::GenerateOptions continueOptions(int tokens, bool sample, quint64 seed);

/// The truncation notice for a trace ("" when nothing was dropped).
QString truncationNotice(const gwb::engine::Trace& trace, const QString& label);

} // namespace gwb::app
