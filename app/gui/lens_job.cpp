#include "gui/lens_job.h"

namespace gwb::app {

LensRunner::LensRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::app::LensRunOutcome>();
}

LensRunner::~LensRunner() {
    m_cancel = true;
}

void LensRunner::run(const LensRunRequest& request) {
    m_lane.clear();
    if (request.grassmannChoice) m_cache.setImportChoice(request.grassmannPath, *request.grassmannChoice);
    if (request.baselineChoice) m_cache.setImportChoice(request.baselinePath, *request.baselineChoice);
    m_lane.run<LensRunner, LensRunOutcome>(
        this,
        [request, cache = m_cache, flag = &m_cancel]() mutable {
            LensRunOutcome out;
            try {
                out.comparison =
                    std::make_shared<const gwb::engine::LensComparison>(computeLensComparison(cache, request, flag));
            } catch (const std::exception& e) {
                out.error = QString::fromUtf8(e.what());
            }
            return out;
        },
        [](LensRunner* self, const LensRunOutcome& out) { Q_EMIT self->finished(out); });
}

LensRunner* wireLens(gwb::views::LensView* view, std::function<LensRunRequest()> context,
                     std::function<QString()> chooseFolder) {
    auto* runner = new LensRunner(view);
    QObject::connect(view, &gwb::views::LensView::lensesRequested, view, [view, chooseFolder] {
        const QString dir = chooseFolder ? chooseFolder() : QString();
        if (!dir.isEmpty()) view->setLensFolders(view->lensFolders() << dir);
    });
    QObject::connect(view, &gwb::views::LensView::comparisonRequested, runner,
                     [view, runner, context](const QStringList& folders) {
                         LensRunRequest r = context();
                         r.lensFolders = folders;
                         if (!r.data.grassmann && !r.data.baseline) {
                             view->setLensMessage(QStringLiteral("Run a prompt first: the lenses are read out on it."));
                             return;
                         }
                         view->setLensRunning(true);
                         runner->run(r);
                     });
    QObject::connect(runner, &LensRunner::finished, view, [view](const LensRunOutcome& out) {
        view->setLensRunning(false);
        if (!out.error.isEmpty()) {
            view->setComparison(nullptr);
            view->setLensMessage(QStringLiteral("The lenses could not be read out: %1").arg(out.error));
            return;
        }
        view->setComparison(out.comparison);
    });
    return runner;
}

} // namespace gwb::app
