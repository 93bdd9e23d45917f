#include "gui/graph_job.h"

#include "gwb/engine/feature_runs.h"
#include "gwb/engine/graph_run.h"

#include <QDir>
#include <QPointer>

#include <memory>
#include <mutex>

namespace gwb::app {

gwb::views::GraphPairPtr computeGraphs(ModelCache& cache, const GraphContext& c,
                                       const std::function<bool(double)>& progress) {
    gwb::engine::GraphModels models;
    models.paths[0] = c.data.grassmann ? c.grassmannPath.toStdString() : std::string();
    models.paths[1] = c.data.baseline ? c.baselinePath.toStdString() : std::string();
    for (int m = 0; m < 2; ++m)
        models.transcoders[m] = c.transcoders[m].toStdString();
    models.device = c.device.toStdString();
    std::vector<int32_t> ids[2];
    for (int m = 0; m < 2; ++m) {
        const gwb::views::TracePtr& tr = m == 0 ? c.data.grassmann : c.data.baseline;
        if (tr)
            for (const auto& t : tr->tokens)
                ids[m].push_back(t.id);
    }
    gwb::engine::GraphRequest request;
    try {
        auto pair = std::make_shared<gwb::engine::GraphPair>(
            gwb::engine::runGraphModels(cache.opener(), models, ids, request, progress));
        return pair;
    } catch (const std::exception&) {
        return nullptr; // cancelled
    }
}

gwb::engine::FeatureDashboardRun computeGraphDashboard(ModelCache& cache, const QString& folder, int layer,
                                                       int64_t feature, const GraphContext& c) {
    // The last set opened stays loaded: hovering one graph asks for many features of the same set.
    static std::mutex mutex;
    static std::string lastFolder;
    static std::shared_ptr<const gwb::engine::TranscoderSet> lastSet;
    gwb::engine::FeatureDashboardRun out;
    out.feature = feature;
    try {
        std::shared_ptr<const gwb::engine::TranscoderSet> set;
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (lastFolder != folder.toStdString() || !lastSet) {
                lastSet = std::make_shared<const gwb::engine::TranscoderSet>(
                    gwb::engine::loadTranscoderSet(folder.toStdString()));
                lastFolder = folder.toStdString();
            }
            set = lastSet;
        }
        if (layer < 0 || layer >= static_cast<int>(set->layers.size()))
            throw std::invalid_argument("the set has no transcoder at block " + std::to_string(layer));
        auto dictionary = std::make_shared<const gwb::engine::Dictionary>(set->layers[static_cast<size_t>(layer)]);
        FeaturesContext fc; // the Features view's dashboard, over the set's training corpus
        fc.grassmannPath = c.grassmannPath;
        fc.baselinePath = c.baselinePath;
        fc.device = c.device;
        fc.data = c.data;
        out = computeDashboard(cache, dictionary, feature, fc);
    } catch (const std::exception& e) {
        out.error = std::string("no dashboard: ") + e.what();
    }
    return out;
}

GraphRunner::GraphRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::GraphPairPtr>();
    qRegisterMetaType<gwb::engine::FeatureDashboardRun>();
}

void GraphRunner::dashboard(int model, int layer, int64_t feature, const QString& folder, const GraphContext& context) {
    m_dashboards.run<GraphRunner, gwb::engine::FeatureDashboardRun>(
        this,
        [folder, layer, feature, context, cache = m_cache]() mutable {
            return computeGraphDashboard(cache, folder, layer, feature, context);
        },
        [model, layer](GraphRunner* self, const gwb::engine::FeatureDashboardRun& d) {
            Q_EMIT self->dashboardReady(model, layer, d);
        });
}

GraphRunner::~GraphRunner() {
    m_cancel = true;
}

void GraphRunner::run(const GraphContext& context) {
    m_cancel = false;
    if (context.grassmannChoice) m_cache.setImportChoice(context.grassmannPath, *context.grassmannChoice);
    if (context.baselineChoice) m_cache.setImportChoice(context.baselinePath, *context.baselineChoice);
    QPointer<GraphRunner> self(this);
    m_lane.run<GraphRunner, gwb::views::GraphPairPtr>(
        this,
        [self, context, cache = m_cache, flag = &m_cancel]() mutable {
            return computeGraphs(cache, context, [self, flag](double f) {
                if (flag->load()) return false;
                if (self)
                    QMetaObject::invokeMethod(
                        self.data(),
                        [self, f] {
                            if (self) Q_EMIT self->progress(f);
                        },
                        Qt::QueuedConnection);
                return true;
            });
        },
        [](GraphRunner* self, const gwb::views::GraphPairPtr& graphs) { Q_EMIT self->finished(graphs); });
}

GraphRunner* wireGraph(gwb::views::GraphView* view, std::function<GraphContext()> context,
                       std::function<QString(int)> chooseFolder, std::function<QString()> chooseJsonPath) {
    auto* runner = new GraphRunner(view);
    QObject::connect(view, &gwb::views::GraphView::dashboardRequested, runner,
                     [view, runner, context](int model, int layer, qint64 feature) {
                         // The graphs' own sets (the buttons may name another folder since).
                         const gwb::engine::GraphPair* pair = view->graphs();
                         const QString folder = pair ? QString::fromStdString(pair->transcoders[model]) : QString();
                         runner->dashboard(model, layer, feature, folder.isEmpty() ? view->transcoders(model) : folder,
                                           context());
                     });
    QObject::connect(runner, &GraphRunner::dashboardReady, view, &gwb::views::GraphView::setDashboard);
    QObject::connect(view, &gwb::views::GraphView::saveJsonRequested, view, [view, chooseJsonPath] {
        const QString path = chooseJsonPath ? chooseJsonPath() : QString();
        if (path.isEmpty()) return;
        try {
            const QStringList files = view->saveJson(path);
            view->showMessage(QStringLiteral("Saved %1.").arg(files.join(QStringLiteral(" and "))));
        } catch (const std::exception& e) {
            view->showMessage(QStringLiteral("Not saved: %1").arg(QString::fromUtf8(e.what())));
        }
    });
    QObject::connect(view, &gwb::views::GraphView::transcodersRequested, view, [view, chooseFolder](int m) {
        const QString dir = chooseFolder ? chooseFolder(m) : QString();
        if (!dir.isEmpty()) view->setTranscoders(m, dir);
    });
    QObject::connect(view, &gwb::views::GraphView::runRequested, runner, [view, runner, context] {
        GraphContext c = context();
        for (int m = 0; m < 2; ++m)
            c.transcoders[m] = view->transcoders(m);
        if (!c.data.grassmann && !c.data.baseline) {
            view->showMessage(QStringLiteral("Run a prompt first: the graph explains the next token after it."));
            return;
        }
        const bool any =
            (c.data.grassmann && !c.transcoders[0].isEmpty()) || (c.data.baseline && !c.transcoders[1].isEmpty());
        if (!any) {
            view->showMessage(QStringLiteral("Open a transcoder set first (Transcoders…): one per model, made with "
                                             "gwb features train --transcoders."));
            return;
        }
        view->setRunning(true);
        runner->run(c);
    });
    QObject::connect(view, &gwb::views::GraphView::cancelRequested, runner, [runner] { runner->cancel(); });
    QObject::connect(runner, &GraphRunner::progress, view, &gwb::views::GraphView::setProgress);
    QObject::connect(runner, &GraphRunner::finished, view, [view](const gwb::views::GraphPairPtr& graphs) {
        view->setRunning(false);
        if (!graphs) {
            view->showMessage(QStringLiteral("Cancelled: the previous graphs stay."));
            return;
        }
        view->showMessage({});
        view->setGraphs(graphs);
    });
    return runner;
}

} // namespace gwb::app
