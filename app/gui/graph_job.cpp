#include "gui/graph_job.h"

#include "gwb/engine/feature_runs.h"

#include <QDir>
#include <QPointer>

#include <memory>

namespace gwb::app {

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
        if (c.answer.isEmpty() != c.wrong.isEmpty()) {
            view->showMessage(QStringLiteral("Type both an answer and a wrong piece for the contrast logit[answer] "
                                             "\u2212 logit[wrong], or neither for the top logits."));
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
