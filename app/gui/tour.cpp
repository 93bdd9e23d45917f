#include "gui/tour.h"

#include "gui/main_window.h"
#include "gui/trace_controller.h"

#include "gwb/views/features_view.h"
#include "gwb/views/graph_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"

#include <QApplication>
#include <QDir>
#include <QPixmap>
#include <QScreen>
#include <QTextStream>
#include <QTimer>

#include <memory>
#include <optional>

namespace gwb::app {

namespace {

struct PinnedFeature {
    int model = 0, layer = 0;
    int64_t feature = 0;
};

/// Pins the kept feature with the most influence on the logits, the Grassmann graph's first.
std::optional<PinnedFeature> pinStrongestFeature(gwb::views::GraphView* gv) {
    const gwb::engine::GraphPair* pair = gv->graphs();
    for (int m = 0; pair && m < 2; ++m) {
        const auto& g = pair->graphs[m];
        const auto& p = pair->pruning[m];
        int64_t best = -1;
        for (int64_t i = 0; i < g.nodeCount(); ++i) {
            const auto k = static_cast<size_t>(i);
            if (g.nodes[k].kind != gwb::engine::GraphNodeKind::Feature || !p.nodeKept[k]) continue;
            if (best < 0 || p.influence[k] > p.influence[static_cast<size_t>(best)]) best = i;
        }
        if (best < 0) continue;
        gv->togglePin(m, best);
        const auto& n = g.nodes[static_cast<size_t>(best)];
        return PinnedFeature{m, n.layer, n.index};
    }
    return std::nullopt;
}

} // namespace

Tour::Tour(MainWindow* window, const QString& folder, int settleMs)
    : QObject(window), m_window(window), m_folder(folder), m_settleMs(settleMs) {
    connect(window, &MainWindow::runFinished, this, [this] { afterRun(); });
    connect(window, &MainWindow::runFailed, this, [this] { start(false); });
}

void Tour::afterRun() {
    // The whole analysis first, so that every view is shown with its numbers (the window computes
    // the parts of hidden views after the run; the state is polled, so a failed rest ends it too).
    if (m_window->controller()->isCompleting()) {
        QTimer::singleShot(50, this, &Tour::afterRun);
        return;
    }
    start(true);
}

void Tour::start(bool runOk) {
    if (m_started) return;
    m_started = true;
    m_runOk = runOk;
    // What the tour shows, for whoever drives it (scripts/screenshots, the process tests).
    const gwb::views::WorkbenchData& data = m_window->workbenchData();
    auto name = [](const gwb::engine::TracePtr& t) {
        return t ? QString::fromStdString(t->modelName) : QStringLiteral("none");
    };
    QTextStream(stdout) << "tour: " << (runOk ? "traced" : "run failed on") << " \"" << m_window->prompt() << "\" ("
                        << m_window->selection()->tokenCount() << " tokens; Grassmann " << name(data.grassmann)
                        << ", baseline " << name(data.baseline) << ")\n";
    QDir().mkpath(m_folder);
    for (const auto* v : m_window->views())
        m_ids << v->viewId();
    // Token 0 has no past and no surprisal: a later token makes every view say something.
    auto* sel = m_window->selection();
    sel->setLayer(m_layer);
    sel->setToken(m_token >= 0 ? m_token : sel->tokenCount() * 2 / 3);
    // Give the window time to lay out and the heatmaps time to compute their levels.
    QTimer::singleShot(m_settleMs, this, &Tour::next);
}

void Tour::grab(const QString& name) {
    QScreen* screen = m_window->screen() ? m_window->screen() : QGuiApplication::primaryScreen();
    const QPixmap shot = screen->grabWindow(0);
    const QString path = QDir(m_folder).filePath(name + QStringLiteral(".png"));
    if (shot.isNull() || !shot.save(path))
        QTextStream(stderr) << "gwb --tour: could not save " << path << "\n";
    else
        QTextStream(stdout) << "screenshot " << path << "\n";
}

void Tour::next() {
    if (m_index >= 0) grab(QStringLiteral("%1-%2").arg(m_index + 1, 2, 10, QLatin1Char('0')).arg(m_ids[m_index]));
    ++m_index;
    if (m_index >= m_ids.size()) {
        QApplication::exit(m_runOk ? 0 : 1);
        return;
    }
    m_window->showView(m_ids[m_index]);
    // The Patching view shows a sweep only once it has run: with complete fields (from a session)
    // press Run and take the picture when the sweep is in.
    // With a pairs file in the session, the view shows that file's means.
    if (auto* pv = qobject_cast<gwb::views::PatchingView*>(m_window->view(m_ids[m_index]));
        pv && !pv->pairsMode() && !pv->pairsFile().isEmpty()) {
        pv->runPairs(pv->pairsFile());
        waitForPatching(pv);
        return;
    }
    if (auto* pv = qobject_cast<gwb::views::PatchingView*>(m_window->view(m_ids[m_index]));
        pv && !pv->hasContent() && pv->checkInputs(pv->inputs()).isEmpty()) {
        pv->run();
        waitForPatching(pv);
        return;
    }
    // So does the Paths view.
    if (auto* paths = qobject_cast<gwb::views::PathsView*>(m_window->view(m_ids[m_index]));
        paths && !paths->hasContent() && paths->checkInputs(paths->inputs()).isEmpty()) {
        paths->run();
        waitForRun([paths] { return paths->running(); });
        return;
    }
    // The Graph view with transcoder sets: press Run; when the graphs are in, pin the Grassmann
    // graph's most influential feature and take the picture once its dashboard is in the panel
    // (at most 60 s).
    if (auto* gv = qobject_cast<gwb::views::GraphView*>(m_window->view(m_ids[m_index]));
        gv && !gv->hasContent() && (!gv->transcoders(0).isEmpty() || !gv->transcoders(1).isEmpty())) {
        Q_EMIT gv->runRequested();
        auto polls = std::make_shared<int>(0);
        auto pinned = std::make_shared<std::optional<PinnedFeature>>();
        waitForRun([gv, polls, pinned] {
            if (gv->running()) return true;
            if (!*pinned) *pinned = pinStrongestFeature(gv);
            if (!*pinned) return false; // no feature kept: nothing to wait for
            const PinnedFeature& f = **pinned;
            return gv->dashboard(f.model, f.layer, f.feature) == nullptr && ++*polls < 600;
        });
        return;
    }
    // The Lens view computes the logit lens when it is shown: the picture once it is in.
    if (m_ids[m_index] == QLatin1String("lens")) {
        QTimer::singleShot(m_settleMs, this, [this] {
            m_window->ensureLens();
            auto* w = m_window;
            waitForRun([w] { return w->controller()->isComputingLens(); });
        });
        return;
    }
    // The Features view with a dictionary: the most active feature's dashboard, once it is in
    // (at most 60 s: a dictionary whose files are elsewhere says so in its place).
    if (auto* fv = qobject_cast<gwb::views::FeaturesView*>(m_window->view(m_ids[m_index]))) {
        auto chosen = std::make_shared<int>(0);
        auto ready = [this, fv, chosen] {
            if (!fv->features() || fv->features()->perToken.empty()) return false;
            if (fv->chosenFeature() < 0) {
                const auto listed = fv->listedFeatures();
                if (listed.empty()) return true;
                fv->chooseFeature(listed.front().first);
            }
            return fv->dashboard().feature == fv->chosenFeature() || ++*chosen > 600;
        };
        waitForRun([fv, ready] { return fv->features() != nullptr && !ready(); });
        return;
    }
    QTimer::singleShot(m_settleMs, this, &Tour::next);
}

void Tour::waitForRun(const std::function<bool()>& running) {
    if (running()) {
        QTimer::singleShot(100, this, [this, running] { waitForRun(running); });
        return;
    }
    QTimer::singleShot(m_settleMs, this, &Tour::next);
}

void Tour::waitForPatching(gwb::views::PatchingView* view) {
    if (view->running()) {
        QTimer::singleShot(100, this, [this, view] { waitForPatching(view); });
        return;
    }
    QTimer::singleShot(m_settleMs, this, &Tour::next);
}

} // namespace gwb::app
