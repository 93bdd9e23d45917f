#include "gui/paths_job.h"

#include "gui/patching_job.h"

namespace gwb::app {

PathsRunner::PathsRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::PathsData>();
    qRegisterMetaType<gwb::views::PathsInputs>();
    qRegisterMetaType<gwb::views::PatchingTopK>();
    qRegisterMetaType<gwb::views::PathsPairsData>();
    qRegisterMetaType<gwb::views::PathsPairsInputs>();
}

PathsRunner::~PathsRunner() {
    if (m_cancel) m_cancel->store(true);
    m_lane.clear();
    m_lane.waitForDone();
}

void PathsRunner::cancel() {
    if (m_cancel) m_cancel->store(true);
}

void PathsRunner::request(const PathsJobRequest& request) {
    const quint64 id = beginLatestRun(m_latest, m_cancel, m_cache, request);
    Q_EMIT started();
    ModelCache* cache = &m_cache;
    auto runs = std::make_shared<PathsRuns>();
    runLatest<PathsRunner, gwb::views::PathsData>(
        m_lane, this, id, m_cancel,
        [cache, request, runs](const std::function<bool(double)>& progress) {
            return computePaths(*cache, request, progress, runs.get());
        },
        [](PathsRunner* r, quint64 i) { return i == r->m_latest; },
        [](PathsRunner* r, double f) { Q_EMIT r->progress(f); },
        [runs](PathsRunner* r, const gwb::views::PathsData& data) {
            if (data.error.empty()) r->m_runs = runs;
            Q_EMIT r->finished(data);
        });
}

void PathsRunner::requestPairs(const PathsJobRequest& request, const gwb::views::PathsPairsInputs& inputs) {
    const quint64 id = beginLatestRun(m_latest, m_cancel, m_cache, request);
    Q_EMIT started();
    ModelCache* cache = &m_cache;
    runLatest<PathsRunner, gwb::views::PathsPairsData>(
        m_lane, this, id, m_cancel,
        [cache, request, inputs](const std::function<bool(double)>& progress) {
            return computePathsPairs(*cache, request, inputs, progress);
        },
        [](PathsRunner* r, quint64 i) { return i == r->m_latest; },
        [](PathsRunner* r, double f) { Q_EMIT r->progress(f); },
        [](PathsRunner* r, const gwb::views::PathsPairsData& data) { Q_EMIT r->pairsFinished(data); });
}

void PathsRunner::requestTopK(int model, const QString& sender, const QString& receiver) {
    const quint64 id = ++m_latestTopK;
    if (!m_runs) {
        gwb::views::PatchingTopK k;
        k.model = model;
        k.error = "run the senders first";
        Q_EMIT topKReady(k);
        return;
    }
    ModelCache* cache = &m_cache;
    std::shared_ptr<const PathsRuns> runs = m_runs;
    runLatest<PathsRunner, gwb::views::PatchingTopK>(
        m_lane, this, id, nullptr,
        [cache, runs, model, sender, receiver](const std::function<bool(double)>&) {
            return computePathsTopK(*cache, *runs, model, sender, receiver);
        },
        [](PathsRunner* r, quint64 i) { return i == r->m_latestTopK; }, {},
        [](PathsRunner* r, const gwb::views::PatchingTopK& k) { Q_EMIT r->topKReady(k); });
}

PathsRunner* wirePaths(gwb::views::PathsView* view, std::function<PathsJobRequest()> context) {
    auto* runner = new PathsRunner(view);
    QObject::connect(view, &gwb::views::PathsView::runRequested, runner,
                     [runner, context](const gwb::views::PathsInputs& inputs) {
                         PathsJobRequest r = context();
                         r.inputs = inputs;
                         runner->request(r);
                     });
    QObject::connect(
        view, &gwb::views::PathsView::pairsRequested, runner,
        [runner, context](const gwb::views::PathsPairsInputs& inputs) { runner->requestPairs(context(), inputs); });
    QObject::connect(runner, &PathsRunner::pairsFinished, view, &gwb::views::PathsView::setPairsResult);
    QObject::connect(view, &gwb::views::PathsView::cancelRequested, runner, &PathsRunner::cancel);
    QObject::connect(view, &gwb::views::PathsView::topKRequested, runner, &PathsRunner::requestTopK);
    QObject::connect(runner, &PathsRunner::started, view, [view] { view->setRunning(true); });
    QObject::connect(runner, &PathsRunner::progress, view, &gwb::views::PathsView::setProgress);
    QObject::connect(runner, &PathsRunner::finished, view, &gwb::views::PathsView::setResult);
    QObject::connect(runner, &PathsRunner::topKReady, view, &gwb::views::PathsView::setTopK);
    return runner;
}

} // namespace gwb::app
