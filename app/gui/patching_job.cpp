#include "gui/patching_job.h"

#include "gwb/engine/sites.h"
#include "gui/patching_pairs_job.h"

#include "common/patch_setup.h"

#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/views/token_strip.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gwb::app {

using gwb::engine::ModelKind;
using gwb::engine::PatchSite;

namespace {

QStringList pieceList(const gwb::engine::Model& model, const std::vector<int64_t>& ids) {
    QStringList out;
    for (const std::string& s : pieceTexts(model, ids))
        out << QString::fromStdString(s);
    return out;
}

/// The engine's sweep as the view draws it. Position columns are labelled with their tokens
/// ("clean/corrupt" where the prompts differ).
gwb::views::PatchingGrid toGrid(const gwb::engine::Model& model, const gwb::engine::PatchSweep& s, int which) {
    gwb::views::PatchingGrid g;
    g.model = causalModelWord(which);
    g.modelName = QString::fromStdString(model.displayName());
    g.site = QString::fromLatin1(gwb::engine::patchSiteName(s.site));
    g.rows = s.rows;
    g.cols = s.cols;
    for (const auto& l : s.rowLabels)
        g.rowLabels << QString::fromStdString(l);
    const bool positions = s.site != PatchSite::Offset && s.site != PatchSite::Head && s.cols == s.T;
    if (positions) {
        const QStringList clean = pieceList(model, s.clean);
        const QStringList corrupt = s.corrupt.empty() ? QStringList() : pieceList(model, s.corrupt);
        for (int64_t c = 0; c < s.cols; ++c) {
            const int i = static_cast<int>(c);
            g.colLabels << (corrupt.isEmpty() || corrupt[i] == clean[i] ? clean[i] : clean[i] + "/" + corrupt[i]);
        }
    } else {
        for (const auto& l : s.colLabels)
            g.colLabels << QString::fromStdString(l);
    }
    g.rowTitle = s.site == PatchSite::Resid ? QStringLiteral("block input") : QStringLiteral("layer");
    g.colTitle = s.site == PatchSite::Offset ? QStringLiteral("offset")
                 : s.site == PatchSite::Head ? QStringLiteral("head")
                                             : QStringLiteral("position");
    g.defined = s.defined;
    g.tokens = s.T;
    g.hasMetric = s.hasMetric;
    if (s.hasMetric) {
        g.cleanMetric = s.cleanMetric;
        g.corruptMetric = s.corruptMetric;
    }
    g.effectDefined = s.hasMetric && s.effectDefined;
    g.metric = s.metric;
    g.effect = s.effect;
    g.meanDelta = s.meanDeltaLogprob;
    return g;
}

} // namespace

QString causalModelWord(int model) {
    return model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
}

void fillTopK(const gwb::engine::Model& m, const std::vector<float>& logits, int k, gwb::views::PatchingTopK& out) {
    if (logits.empty()) throw std::runtime_error("the engine returned no logits");
    const double top = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (float v : logits)
        z += std::exp(static_cast<double>(v) - top);
    std::vector<int32_t> order(logits.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 1)), order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<int64_t>(n), order.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    const auto tok = m.tokenizer();
    for (size_t j = 0; j < n; ++j) {
        const int32_t id = order[j];
        const double lg = logits[static_cast<size_t>(id)];
        out.pieces << (tok ? QString::fromStdString(tok->pieceText(id)) : QString::number(id));
        out.logits.push_back(lg);
        out.probs.push_back(std::exp(lg - top) / z);
    }
}

QString siteFor(const QString& viewSite, ModelKind kind) {
    // The view's offset/head (and gwb figure's offset or head) is each model's own unit (sites.h).
    if (viewSite == QLatin1String("offset") || viewSite == QLatin1String("head"))
        return QString::fromUtf8(gwb::engine::unitSiteWord(kind));
    if (viewSite == QLatin1String("gate") && kind != ModelKind::Grassmann) return QString();
    return QString::fromStdString(gwb::engine::resolveUnitAlias(viewSite.toStdString(), kind));
}

gwb::views::PatchingData computePatching(ModelCache& cache, const PatchingJobRequest& r,
                                         const std::function<bool(double)>& progress, PatchingRuns* runs) {
    const QString paths[2] = {r.grassmannPath, r.baselinePath};
    auto prepare = [&r](int, const gwb::engine::Model& model,
                        gwb::views::PatchingGrid& grid) -> std::optional<gwb::engine::PatchRequest> {
        const QString site = siteFor(r.inputs.site, model.config().kind);
        if (site.isEmpty()) {
            grid.error = QStringLiteral("'%1' is a Grassmann site: a Transformer has no gate").arg(r.inputs.site);
            return std::nullopt;
        }
        grid.site = site;
        PatchInput in;
        in.clean = r.inputs.clean;
        in.corrupt = r.inputs.corrupt;
        in.answer = r.inputs.answer;
        in.wrong = r.inputs.wrong;
        in.site = site;
        in.mode = r.inputs.mode;
        return preparePatchRequest(model, in);
    };
    auto run = [runs](int m, const gwb::engine::Model& model, const gwb::engine::PatchRequest& request,
                      gwb::views::PatchingData& out, const std::function<bool(double)>& share) {
        const gwb::engine::PatchSweep s = gwb::engine::runPatchSweep(model, request, share);
        (m == 0 ? out.grassmann : out.transformer) = toGrid(model, s, m);
        if (out.cleanTokens.isEmpty()) {
            out.cleanTokens = pieceList(model, s.clean);
            out.corruptTokens = pieceList(model, s.corrupt);
            out.metricPosition = s.metricPosition >= 0 ? s.metricPosition : s.T - 1;
            if (request.answer >= 0) {
                out.answerPiece = pieceList(model, {request.answer}).value(0);
                out.wrongPiece = pieceList(model, {request.wrong}).value(0);
            }
        }
        if (runs) {
            runs->cells[m] = s.cells;
            runs->cols[m] = s.cols;
        }
    };
    return runCausalModels<gwb::views::PatchingData, gwb::engine::PatchRequest>(cache, paths, r.device, r.inputs,
                                                                                progress, runs, prepare, run);
}

gwb::views::PatchingTopK computePatchingTopK(ModelCache& cache, const PatchingRuns& runs, int model, int64_t row,
                                             int64_t col, int k) {
    gwb::views::PatchingTopK out;
    out.model = model;
    out.row = row;
    out.col = col;
    if (model < 0 || model > 1 || !runs.requests[model]) {
        out.error = QStringLiteral("no sweep of this model");
        return out;
    }
    const int64_t i = row * runs.cols[model] + col;
    if (row < 0 || col < 0 || col >= runs.cols[model] || i >= static_cast<int64_t>(runs.cells[model].size())) {
        out.error = QStringLiteral("no such cell");
        return out;
    }
    try {
        const gwb::engine::Model m = cache.get(runs.paths[model], runs.device);
        const gwb::engine::PatchRequest& req = *runs.requests[model];
        const int64_t pos = req.position >= 0 ? req.position : static_cast<int64_t>(req.clean.size()) - 1;
        const std::vector<float> logits =
            gwb::engine::interventionLogits(m, req, runs.cells[model][static_cast<size_t>(i)], pos);
        fillTopK(m, logits, k, out);
    } catch (const std::exception& e) {
        out.pieces.clear();
        out.logits.clear();
        out.probs.clear();
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

std::vector<double> computeAblation(ModelCache& cache, const AblationRequest& r, QString* error) {
    if (error) error->clear();
    try {
        if (r.path.isEmpty()) throw std::runtime_error("no model file");
        if (r.ids.size() < 2) throw std::runtime_error("the prompt needs at least 2 tokens");
        const gwb::engine::Model m = cache.get(r.path, r.device);
        const gwb::engine::Intervention& iv = r.intervention;
        if (iv.layer < 0 || iv.layer >= m.config().nLayers)
            throw std::invalid_argument("layer " + std::to_string(iv.layer) + " is out of range (the model has " +
                                        std::to_string(m.config().nLayers) + " layers)");
        if (iv.site == PatchSite::Offset) {
            const std::vector<int> offsets = gwb::engine::layerOffsets(m, iv.layer);
            if (std::find(offsets.begin(), offsets.end(), iv.offset) == offsets.end())
                throw std::invalid_argument("offset " + std::to_string(iv.offset) + " is not an offset of layer " +
                                            std::to_string(iv.layer));
        }
        if (iv.site == PatchSite::Head && (iv.head < 0 || iv.head >= m.config().nHeads))
            throw std::invalid_argument("head " + std::to_string(iv.head) + " is out of range (the model has " +
                                        std::to_string(m.config().nHeads) + " heads)");
        return gwb::engine::ablationDeltaLogprob(m, r.ids, iv);
    } catch (const std::exception& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return {};
    }
}

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
            if (data.error.isEmpty()) r->m_runs = runs;
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
        k.error = QStringLiteral("run the sweep first");
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
