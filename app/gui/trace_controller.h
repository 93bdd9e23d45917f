#pragma once
// Runs trace jobs and model probes off the GUI thread, one at a time, in submission order.
// Progress comes from atomics polled by a timer; results come back queued and tagged with their
// run id, and a result whose id is no longer the latest is dropped (a new Run makes older ones
// stale). Cancel sets the job's flag, which the engine checks between steps.

#include "runs/trace_job.h"
#include "gui/work_lane.h"

#include <QObject>
#include <QTimer>

#include <memory>

namespace gwb::app {

/// What probing a model file found (File > Open Model, drag and drop).
struct ModelInfo {
    QString path;
    gwb::engine::ModelKind kind = gwb::engine::ModelKind::Grassmann;
    QString name;      ///< display name
    QString summary;   ///< multi-line architecture summary (tooltip)
    qint64 maxLen = 0; ///< context length in tokens
    gwb::engine::ModelConfig config;
};

class TraceController : public QObject {
    Q_OBJECT
public:
    explicit TraceController(QObject* parent = nullptr);
    ~TraceController() override;

    /// Starts a run; an unfinished earlier run is cancelled and its result will be dropped.
    /// Returns the new run id. An invalid request fails at once (failed() is still queued).
    quint64 run(const TraceRequest& request);
    /// Asks the running job to stop; cancelled() follows when it has.
    void cancel();
    bool isRunning() const { return m_running; }
    /// Whether the latest run's Grassmann analysis is still being completed (after finished():
    /// the parts of the analysis the run did not ask for; analysisCompleted() follows).
    bool isCompleting() const { return m_completing; }
    quint64 currentRunId() const { return m_runId; }

    /// Computes the logit lens (top-K) of the latest run's traces in `data` that have none, with the
    /// models that run used, on the worker after what is queued; lensComputed() follows (not for a
    /// run a newer one made stale). cancel() and a new run stop it.
    void computeLens(const gwb::views::WorkbenchData& data, int topK);
    bool isComputingLens() const { return m_lensRunning; }

    /// Loads `path` on a worker to learn its kind; modelProbed() or modelFailed() follows.
    void probeModel(const QString& path, const QString& device);

    /// How to import the PyTorch checkpoint at `path` from now on (the user's answer to
    /// needsImportChoice()); the next probe or run loads it with these options on the worker.
    void setImportChoice(const QString& path, const ImportChoice& choice) { m_cache.setImportChoice(path, choice); }
    std::optional<ImportChoice> importChoice(const QString& path) const { return m_cache.importChoice(path); }

    /// Blocks until queued work has finished (for tests and shutdown; never called from a slot).
    void waitForIdle();

Q_SIGNALS:
    void started(quint64 runId);
    /// stage: what is being done now; fraction in [0, 1] over the whole run.
    void progress(quint64 runId, const QString& stage, double fraction);
    void finished(quint64 runId, const gwb::app::TraceOutcome& outcome);
    /// The rest of the run's Grassmann analysis (when finished() had only some parts), or why not.
    /// Not emitted for a run that a newer one made stale.
    void analysisCompleted(quint64 runId, const gwb::app::AnalysisCompletion& completion);
    void cancelled(quint64 runId);
    /// The latest run's logit lenses (computeLens), or why not.
    void lensComputed(quint64 runId, const gwb::app::LensCompletion& completion);
    void failed(quint64 runId, const QString& message);
    void modelProbed(const gwb::app::ModelInfo& info);
    void modelFailed(const QString& path, const QString& message);

private:
    void pollProgress();
    void onDone(quint64 runId, const TraceOutcome& outcome);
    void complete(quint64 runId, const gwb::views::WorkbenchData& data);

    WorkLane m_lane; ///< on the process's pool: jobs run one after another and never share the engine
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    QTimer m_poll;
    quint64 m_runId = 0;
    bool m_running = false;
    bool m_completing = false;
    bool m_lensRunning = false;
    std::shared_ptr<TraceJobState> m_lensState;         ///< progress and cancel of the lens job
    QString m_runGrassmann, m_runBaseline, m_runDevice; ///< the latest run's models (its traces' makers)
    int m_threads = 0;                                  ///< the latest run's engine threads
    bool m_withGrassmann = false;
    bool m_withBaseline = false;
    std::shared_ptr<TraceJobState> m_state; ///< state of the latest run
};

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::app::TraceOutcome)
Q_DECLARE_METATYPE(gwb::app::AnalysisCompletion)
Q_DECLARE_METATYPE(gwb::app::LensCompletion)
Q_DECLARE_METATYPE(gwb::app::ModelInfo)
