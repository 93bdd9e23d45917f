// The views' workers (saliency, features, patching, paths): each view asks, its runner computes in
// its lane of the process pool (work_lane.h) with models from the process store, and the answer
// comes back to the view.

#include "gui/features_job.h"
#include "gui/graph_job.h"
#include "gui/lens_job.h"
#include "gui/main_window.h"
#include "gui/patching_job.h"
#include "gui/paths_job.h"
#include "gui/prompt_panel.h"
#include "gui/quick_ablation.h"
#include "gui/recent_files.h"
#include "gui/saliency_job.h"
#include "gui/trace_controller.h"

#include "gwb/views/features_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/saliency_view.h"

#include <QComboBox>
#include <QFileDialog>

namespace gwb::app {

template <class Request> void MainWindow::setModelSources(Request& r) const {
    r.grassmannPath = m_grassmannPath;
    r.baselinePath = m_baselinePath;
    r.grassmannChoice = m_controller->importChoice(m_grassmannPath);
    r.baselineChoice = m_controller->importChoice(m_baselinePath);
    r.device = m_device ? m_device->currentText() : QStringLiteral("auto");
}

FeaturesContext MainWindow::featuresContext() const {
    FeaturesContext c;
    setModelSources(c);
    c.data = m_data;
    return c;
}

void MainWindow::wireViewWorkers() {
    if (auto* fv = qobject_cast<gwb::views::FeaturesView*>(view(gwb::views::view_id::kFeatures)))
        m_featureRunner = wireFeatures(
            fv, [this] { return featuresContext(); }, m_strip,
            [this] {
                const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Open Dictionary"),
                                                                      dialogFolder(QStringLiteral("dictionaries")));
                rememberDialogFolder(dir, QStringLiteral("dictionaries"));
                return dir;
            },
            [this](const QString& message) {
                m_prompt->setNotice(message, QStringLiteral("error"));
                showError(QStringLiteral("Dictionary not opened (see the message under the prompt)"), false);
            },
            [this] {
                const QStringList files = QFileDialog::getOpenFileNames(
                    this, QStringLiteral("Dashboard Corpus"), dialogFolder(QStringLiteral("corpus")),
                    QStringLiteral("Text files (*.txt *.md *.raw *.tokens);;All files (*)"));
                if (!files.isEmpty()) rememberDialogFolder(files.front(), QStringLiteral("corpus"));
                return files;
            });
    if (auto* gv = qobject_cast<gwb::views::GraphView*>(view(gwb::views::view_id::kGraph)))
        wireGraph(
            gv,
            [this, gv] {
                GraphContext c;
                setModelSources(c);
                c.data = m_data;
                c.answer = gv->answer();
                c.wrong = gv->wrong();
                return c;
            },
            [this](int model) {
                const QString dir =
                    QFileDialog::getExistingDirectory(this,
                                                      model == 0 ? QStringLiteral("Transcoders of the Grassmann Model")
                                                                 : QStringLiteral("Transcoders of the Transformer"),
                                                      dialogFolder(QStringLiteral("transcoders")));
                rememberDialogFolder(dir, QStringLiteral("transcoders"));
                return dir;
            },
            [this] {
                const QString path =
                    QFileDialog::getSaveFileName(this, QStringLiteral("Save Attribution Graphs (circuit-tracer JSON)"),
                                                 dialogFolder(QStringLiteral("graphs")) + QStringLiteral("/graph.json"),
                                                 QStringLiteral("Graph JSON (*.json)"));
                if (!path.isEmpty()) rememberDialogFolder(path, QStringLiteral("graphs"));
                return path;
            });
    if (auto* lv = qobject_cast<gwb::views::LensView*>(view(gwb::views::view_id::kLens)))
        wireLens(
            lv,
            [this] {
                LensRunRequest r;
                setModelSources(r);
                r.data = m_data;
                return r;
            },
            [this] {
                const QString dir = QFileDialog::getExistingDirectory(
                    this, QStringLiteral("Lens Folder (gwb lens fit)"), dialogFolder(QStringLiteral("lenses")));
                rememberDialogFolder(dir, QStringLiteral("lenses"));
                return dir;
            });
    if (auto* sv = qobject_cast<gwb::views::SaliencyView*>(view(gwb::views::view_id::kSaliency)))
        wireSaliency(
            sv,
            [this] {
                SaliencyRequest r;
                setModelSources(r);
                r.data = m_data;
                return r;
            },
            m_strip);
    if (auto* pv = qobject_cast<gwb::views::PatchingView*>(view(gwb::views::view_id::kPatching))) {
        // Causal tests: the Patching view's sweeps and the quick ablations of the Plücker and
        // Attention views share one runner (one worker thread, its own model cache).
        PatchingRunner* runner = wirePatching(pv, [this] {
            PatchingJobRequest r;
            setModelSources(r);
            // Only the models of the current results: the sweep runs on their prompt.
            if (!m_data.grassmann) r.grassmannPath.clear();
            if (!m_data.baseline) r.baselinePath.clear();
            return r;
        });
        wireQuickAblations(
            runner, view(gwb::views::view_id::kPlucker), view(gwb::views::view_id::kAttention), m_strip, m_selection,
            [this] {
                AblationContext c;
                setModelSources(c);
                c.data = m_data;
                return c;
            },
            [this](const QString& text) { showStatus(text); });
    }
    if (auto* paths = qobject_cast<gwb::views::PathsView*>(view(gwb::views::view_id::kPaths))) {
        // Path patching: its own runner (worker thread and model cache), the models of the current results.
        wirePaths(paths, [this] {
            PathsJobRequest r;
            setModelSources(r);
            if (!m_data.grassmann) r.grassmannPath.clear();
            if (!m_data.baseline) r.baselinePath.clear();
            return r;
        });
        if (auto* pv = qobject_cast<gwb::views::PatchingView*>(view(gwb::views::view_id::kPatching))) {
            // The causal views share their metric: what one ran with, the other starts from.
            connect(pv, &gwb::views::PatchingView::runRequested, this,
                    [this] { carryCausalFields(gwb::views::view_id::kPaths, /*overwrite=*/true); });
            connect(paths, &gwb::views::PathsView::runRequested, this,
                    [this] { carryCausalFields(gwb::views::view_id::kPatching, /*overwrite=*/true); });
        }
        if (auto* pv = qobject_cast<gwb::views::PatchingView*>(view(gwb::views::view_id::kPatching)))
            connect(pv, &gwb::views::PatchingView::tracePathsRequested, this,
                    [this, pv, paths](int model, qint64 row, qint64 col) {
                        std::string sender;
                        const gwb::views::PathsInputs in =
                            gwb::views::pathsFromPatchingCell(pv->result(), model, row, col, &sender);
                        paths->setInputs(in);
                        paths->markSender(QString::fromStdString(sender));
                        showView(gwb::views::view_id::kPaths);
                        paths->run();
                    });
    }
}

} // namespace gwb::app
