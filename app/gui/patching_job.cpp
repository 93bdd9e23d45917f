#include "gui/patching_job.h"

#include "gwb/views/token_strip.h"

namespace gwb::app {

PatchingRunner::PatchingRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::PatchingData>();
    qRegisterMetaType<gwb::views::PatchingTopK>();
    qRegisterMetaType<gwb::views::PatchingInputs>();
    qRegisterMetaType<gwb::views::PairsData>();
    qRegisterMetaType<gwb::views::PairsInputs>();
    qRegisterMetaType<std::vector<double>>();
}

PatchingRunner::~PatchingRunner() {
    if (m_cancel) m_cancel->store(true);
    m_lane.clear();
    m_lane.waitForDone();
}

void PatchingRunner::cancel() {
    if (m_cancel) m_cancel->store(true);
}

quint64 PatchingRunner::startRun(const PatchingJobRequest& request) {
    // A sweep and a pairs run share the heatmaps: either one still going is stale now.
    const quint64 id = beginLatestRun(m_latest, m_cancel, m_cache, request);
    m_busy = true;
    Q_EMIT started();
    return id;
}

void PatchingRunner::request(const PatchingJobRequest& request) {
    const quint64 id = startRun(request);
    ModelCache* cache = &m_cache;
    auto runs = std::make_shared<PatchingRuns>();
    runLatest<PatchingRunner, gwb::views::PatchingData>(
        m_lane, this, id, m_cancel,
        [cache, request, runs](const std::function<bool(double)>& progress) {
            return computePatching(*cache, request, progress, runs.get());
        },
        [](PatchingRunner* r, quint64 i) { return i == r->m_latest; },
        [](PatchingRunner* r, double f) { Q_EMIT r->progress(f); },
        [runs](PatchingRunner* r, const gwb::views::PatchingData& data) {
            r->m_busy = false;
            if (data.error.empty()) r->m_runs = runs;
            Q_EMIT r->finished(data);
        });
}

void PatchingRunner::requestPairs(const PatchingJobRequest& request, const gwb::views::PairsInputs& inputs) {
    const quint64 id = startRun(request);
    ModelCache* cache = &m_cache;
    runLatest<PatchingRunner, gwb::views::PairsData>(
        m_lane, this, id, m_cancel,
        [cache, request, inputs](const std::function<bool(double)>& progress) {
            return computePatchingPairs(*cache, request, inputs, progress);
        },
        [](PatchingRunner* r, quint64 i) { return i == r->m_latest; },
        [](PatchingRunner* r, double f) { Q_EMIT r->progress(f); },
        [](PatchingRunner* r, const gwb::views::PairsData& data) {
            r->m_busy = false;
            Q_EMIT r->pairsFinished(data);
        });
}

void PatchingRunner::requestTopK(int model, qint64 row, qint64 col) {
    const quint64 id = ++m_latestTopK;
    if (!m_runs) {
        gwb::views::PatchingTopK k;
        k.model = model;
        k.row = row;
        k.col = col;
        k.error = "run the sweep first";
        Q_EMIT topKReady(k);
        return;
    }
    ModelCache* cache = &m_cache;
    std::shared_ptr<const PatchingRuns> runs = m_runs;
    runLatest<PatchingRunner, gwb::views::PatchingTopK>(
        m_lane, this, id, nullptr,
        [cache, runs, model, row, col](const std::function<bool(double)>&) {
            return computePatchingTopK(*cache, *runs, model, row, col);
        },
        [](PatchingRunner* r, quint64 i) { return i == r->m_latestTopK; }, {},
        [](PatchingRunner* r, const gwb::views::PatchingTopK& k) { Q_EMIT r->topKReady(k); });
}

void PatchingRunner::requestAblation(const AblationRequest& request) {
    const quint64 id = ++m_latestAblation;
    if (request.choice) m_cache.setImportChoice(request.path, *request.choice);
    ModelCache* cache = &m_cache;
    using Reply = std::pair<std::vector<double>, QString>;
    runLatest<PatchingRunner, Reply>(
        m_lane, this, id, nullptr,
        [cache, request](const std::function<bool(double)>&) {
            Reply reply;
            reply.first = computeAblation(*cache, request, &reply.second);
            return reply;
        },
        [](PatchingRunner* r, quint64 i) { return i == r->m_latestAblation; }, {},
        [label = request.label](PatchingRunner* r, const Reply& reply) {
            Q_EMIT r->ablationReady(label, reply.first, reply.second);
        });
}

PatchingRunner* wirePatching(gwb::views::PatchingView* view, std::function<PatchingJobRequest()> context) {
    auto* runner = new PatchingRunner(view);
    QObject::connect(view, &gwb::views::PatchingView::runRequested, runner,
                     [runner, context](const gwb::views::PatchingInputs& inputs) {
                         PatchingJobRequest r = context();
                         r.inputs = inputs;
                         runner->request(r);
                     });
    QObject::connect(
        view, &gwb::views::PatchingView::pairsRequested, runner,
        [runner, context](const gwb::views::PairsInputs& inputs) { runner->requestPairs(context(), inputs); });
    QObject::connect(runner, &PatchingRunner::pairsFinished, view, &gwb::views::PatchingView::setPairsResult);
    QObject::connect(view, &gwb::views::PatchingView::cancelRequested, runner, &PatchingRunner::cancel);
    QObject::connect(view, &gwb::views::PatchingView::topKRequested, runner, &PatchingRunner::requestTopK);
    QObject::connect(runner, &PatchingRunner::started, view, [view] { view->setRunning(true); });
    QObject::connect(runner, &PatchingRunner::progress, view, &gwb::views::PatchingView::setProgress);
    QObject::connect(runner, &PatchingRunner::finished, view, &gwb::views::PatchingView::setResult);
    QObject::connect(runner, &PatchingRunner::topKReady, view, &gwb::views::PatchingView::setTopK);
    return runner;
}

void showAblationOnStrip(gwb::views::TokenStrip* strip, const QString& label, const std::vector<double>& delta) {
    if (!strip) return;
    std::vector<float> v(delta.size());
    for (size_t i = 0; i < delta.size(); ++i)
        v[i] = static_cast<float>(delta[i]);
    strip->setSignedOverlay(v, QStringLiteral("\u0394 log p(next token), %1").arg(label));
}

} // namespace gwb::app
