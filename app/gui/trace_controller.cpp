#include "gui/trace_controller.h"

#include "gwb/engine/config_io.h"

#include <QFileInfo>

namespace gwb::app {

namespace {
constexpr int kPollMs = 100; ///< progress refresh while a job runs
}

TraceController::TraceController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::app::TraceOutcome>();
    qRegisterMetaType<gwb::app::AnalysisCompletion>();
    qRegisterMetaType<gwb::app::LensCompletion>();
    qRegisterMetaType<gwb::app::ModelInfo>();
    m_poll.setInterval(kPollMs);
    connect(&m_poll, &QTimer::timeout, this, &TraceController::pollProgress);
}

TraceController::~TraceController() {
    if (m_state) m_state->cancel.store(true);
    if (m_lensState) m_lensState->cancel.store(true);
    m_lane.waitForDone();
}

quint64 TraceController::run(const TraceRequest& request) {
    if (m_state) m_state->cancel.store(true); // the older run becomes stale
    if (m_lensState) m_lensState->cancel.store(true);
    m_lensRunning = false;
    const quint64 id = ++m_runId;
    m_runGrassmann = request.grassmannPath;
    m_runBaseline = request.baselinePath;
    m_runDevice = request.device;
    m_state = std::make_shared<TraceJobState>();
    m_withGrassmann = !request.grassmannPath.isEmpty();
    m_withBaseline = !request.baselinePath.isEmpty();
    m_threads = request.threads;
    m_running = true;
    m_completing = false; // the older run's completion, if any, is cancelled with it
    Q_EMIT started(id);
    m_poll.start();
    auto state = m_state;
    ModelCache* cache = &m_cache;
    m_lane.run<TraceController, TraceOutcome>(
        this, [request, state, cache] { return runTraceJob(request, *cache, *state); },
        [id](TraceController* self, const TraceOutcome& outcome) { self->onDone(id, outcome); });
    return id;
}

void TraceController::cancel() {
    if (m_state && m_running) m_state->cancel.store(true);
    if (m_lensState && m_lensRunning) m_lensState->cancel.store(true);
}

void TraceController::computeLens(const gwb::views::WorkbenchData& data, int topK) {
    if (m_lensRunning) return; // the one under way gives it
    m_lensRunning = true;
    m_lensState = std::make_shared<TraceJobState>();
    auto state = m_lensState;
    ModelCache* cache = &m_cache;
    const quint64 runId = m_runId;
    const QString g = m_runGrassmann, b = m_runBaseline, device = m_runDevice;
    const int threads = m_threads;
    m_poll.start();
    m_lane.run<TraceController, LensCompletion>(
        this,
        [data, g, b, device, threads, topK, cache, state] {
            return computeRunLens(data, g, b, device, threads, topK, *cache, *state);
        },
        [runId, state](TraceController* self, const LensCompletion& c) {
            if (runId != self->m_runId || state != self->m_lensState) return; // stale: a newer run was started
            self->m_lensRunning = false;
            if (!self->m_running) self->m_poll.stop();
            Q_EMIT self->lensComputed(runId, c);
        });
}

void TraceController::onDone(quint64 runId, const TraceOutcome& outcome) {
    if (runId != m_runId) return; // stale: a newer run was started
    m_running = false;
    if (!m_lensRunning) m_poll.stop();
    // A Cancel the user pressed wins over a result that finished just before the worker saw it:
    // what the window shows must not depend on that race (the earlier results stay).
    const bool cancelRequested = m_state && m_state->cancel.load();
    switch (cancelRequested ? TraceOutcome::Status::Cancelled : outcome.status) {
    case TraceOutcome::Status::Ok: {
        Q_EMIT progress(runId, stageName(TraceStage::Done), 1.0);
        const auto& a = outcome.data.grassmannAnalysis;
        const bool partial = outcome.data.grassmann && a && !a->has(gwb::engine::kAnalysisAll);
        m_completing = partial; // before finished(), so that its slots see what follows
        Q_EMIT finished(runId, outcome);
        if (partial && runId == m_runId) complete(runId, outcome.data);
        break;
    }
    case TraceOutcome::Status::Cancelled:
        Q_EMIT cancelled(runId);
        break;
    case TraceOutcome::Status::Failed:
        Q_EMIT failed(runId, outcome.message);
        break;
    }
}

void TraceController::complete(quint64 runId, const gwb::views::WorkbenchData& data) {
    // In the same lane, after the run: a new run cancels it (run() sets the state's flag) and
    // starts once it has stopped.
    auto state = m_state;
    const int threads = m_threads;
    m_lane.run<TraceController, AnalysisCompletion>(
        this, [data, state, threads] { return completeRunAnalysis(data, threads, *state); },
        [runId](TraceController* self, const AnalysisCompletion& c) {
            if (runId != self->m_runId) return; // stale: a newer run was started
            self->m_completing = false;
            Q_EMIT self->analysisCompleted(runId, c);
        });
}

void TraceController::pollProgress() {
    if (m_lensRunning && !m_running && m_lensState) {
        const int64_t total = m_lensState->total.load();
        Q_EMIT progress(m_runId, QStringLiteral("Computing the logit lens"),
                        total > 0 ? static_cast<double>(m_lensState->done.load()) / static_cast<double>(total) : 0.0);
        return;
    }
    if (!m_state || !m_running) return;
    const auto stage = static_cast<TraceStage>(m_state->stage.load());
    Q_EMIT progress(
        m_runId, stage == TraceStage::Idle ? QStringLiteral("Waiting for the previous run to stop") : stageName(stage),
        m_state->fraction(m_withGrassmann, m_withBaseline));
}

void TraceController::probeModel(const QString& path, const QString& device) {
    ModelCache* cache = &m_cache;
    struct Probe {
        bool ok = false;
        ModelInfo info;
        QString message;
    };
    m_lane.run<TraceController, Probe>(
        this,
        [path, device, cache] {
            Probe p;
            try {
                const gwb::engine::Model m = cache->get(path, device);
                p.info.path = QFileInfo(path).absoluteFilePath();
                p.info.kind = m.config().kind;
                p.info.name = QString::fromStdString(m.displayName());
                p.info.summary = QString::fromStdString(m.summary());
                p.info.maxLen = m.config().maxLen;
                p.info.config = m.config();
                p.ok = true;
            } catch (const std::exception& e) {
                p.message = QString::fromUtf8(e.what());
            }
            return p;
        },
        [path](TraceController* self, const Probe& p) {
            if (p.ok)
                Q_EMIT self->modelProbed(p.info);
            else
                Q_EMIT self->modelFailed(path, p.message);
        });
}

void TraceController::waitForIdle() {
    m_lane.waitForDone();
}

} // namespace gwb::app
