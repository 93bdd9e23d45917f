#include "gui/paths_job.h"

#include "gui/patching_job.h"

#include "common/patch_setup.h"

#include "gwb/engine/model.h"
#include "gwb/engine/sites.h"

namespace gwb::app {

namespace {

QStringList toList(const std::vector<std::string>& v) {
    QStringList out;
    for (const std::string& s : v)
        out << QString::fromStdString(s);
    return out;
}

} // namespace

gwb::engine::PathRequest pathsRequestFor(const gwb::engine::Model& model, const gwb::views::PathsInputs& in) {
    PatchInput p;
    p.clean = in.clean;
    p.corrupt = in.corrupt;
    p.answer = in.answer;
    p.wrong = in.wrong;
    p.site = QStringLiteral("resid");
    p.mode = QStringLiteral("patch");
    const gwb::engine::PatchRequest r = preparePatchRequest(model, p);
    gwb::engine::PathRequest q;
    q.clean = r.clean;
    q.corrupt = r.corrupt;
    q.answer = r.answer;
    q.wrong = r.wrong;
    q.position = r.position;
    if (in.position >= static_cast<int>(r.clean.size()))
        throw std::invalid_argument("token " + std::to_string(in.position) + " is outside the prompt (tokens 0.." +
                                    std::to_string(r.clean.size() - 1) + ")");
    q.senderPosition = in.position;
    if (in.senders != QLatin1String("all"))
        q.senders = {gwb::engine::resolveUnitAlias(in.senders.toStdString(), model.config().kind)};
    q.logits = in.receivers != QLatin1String("resid");
    q.resid = in.receivers != QLatin1String("logits");
    return q;
}

gwb::views::PathsData computePaths(ModelCache& cache, const PathsJobRequest& r,
                                   const std::function<bool(double)>& progress, PathsRuns* runs) {
    const QString paths[2] = {r.grassmannPath, r.baselinePath};
    auto prepare = [&r](int, const gwb::engine::Model& model,
                        gwb::views::PathsGrid& grid) -> std::optional<gwb::engine::PathRequest> {
        if (r.inputs.senders == QLatin1String("gate") && model.config().kind != gwb::engine::ModelKind::Grassmann) {
            grid.error = QStringLiteral("'gate' is a Grassmann sender: a Transformer has no gate");
            return std::nullopt;
        }
        return pathsRequestFor(model, r.inputs);
    };
    auto run = [](int m, const gwb::engine::Model& model, const gwb::engine::PathRequest& request,
                  gwb::views::PathsData& out, const std::function<bool(double)>& share) {
        const gwb::engine::PathResult res = gwb::engine::pathPatching(model, request, share);
        gwb::views::PathsGrid& g = m == 0 ? out.grassmann : out.transformer;
        g.modelName = QString::fromStdString(model.displayName());
        g.senders = toList(res.senderLabels);
        g.receivers = toList(res.receiverLabels);
        g.senderLayers = res.senderLayers;
        g.cleanMetric = res.cleanMetric;
        g.corruptMetric = res.corruptMetric;
        g.effectDefined = res.effectDefined;
        g.metric = res.metric;
        g.effect = res.effect;
        if (out.metricPosition < 0) {
            out.metricPosition = res.metricPosition;
            out.answerPiece = QString::fromStdString(pieceTexts(model, {request.answer}).front());
            out.wrongPiece = QString::fromStdString(pieceTexts(model, {request.wrong}).front());
        }
    };
    return runCausalModels<gwb::views::PathsData, gwb::engine::PathRequest>(cache, paths, r.device, r.inputs, progress,
                                                                            runs, prepare, run);
}

gwb::views::PatchingTopK computePathsTopK(ModelCache& cache, const PathsRuns& runs, int model, const QString& sender,
                                          const QString& receiver, int k) {
    gwb::views::PatchingTopK out;
    out.model = model;
    if (model < 0 || model > 1 || !runs.requests[model]) {
        out.error = QStringLiteral("no result of this model");
        return out;
    }
    try {
        const gwb::engine::Model m = cache.get(runs.paths[model], runs.device);
        const std::vector<float> logits =
            gwb::engine::pathCellLogits(m, *runs.requests[model], sender.toStdString(), receiver.toStdString());
        fillTopK(m, logits, k, out);
    } catch (const std::exception& e) {
        out.pieces.clear();
        out.logits.clear();
        out.probs.clear();
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

PathsRunner::PathsRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::PathsData>();
    qRegisterMetaType<gwb::views::PathsInputs>();
    qRegisterMetaType<gwb::views::PatchingTopK>();
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
            if (data.error.isEmpty()) r->m_runs = runs;
            Q_EMIT r->finished(data);
        });
}

void PathsRunner::requestTopK(int model, const QString& sender, const QString& receiver) {
    const quint64 id = ++m_latestTopK;
    if (!m_runs) {
        gwb::views::PatchingTopK k;
        k.model = model;
        k.error = QStringLiteral("run the senders first");
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
    QObject::connect(view, &gwb::views::PathsView::cancelRequested, runner, &PathsRunner::cancel);
    QObject::connect(view, &gwb::views::PathsView::topKRequested, runner, &PathsRunner::requestTopK);
    QObject::connect(runner, &PathsRunner::started, view, [view] { view->setRunning(true); });
    QObject::connect(runner, &PathsRunner::progress, view, &gwb::views::PathsView::setProgress);
    QObject::connect(runner, &PathsRunner::finished, view, &gwb::views::PathsView::setResult);
    QObject::connect(runner, &PathsRunner::topKReady, view, &gwb::views::PathsView::setTopK);
    return runner;
}

} // namespace gwb::app
