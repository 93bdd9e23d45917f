// A window Run computes first the parts of the Grassmann analysis that the visible views draw; the
// rest follows off the GUI thread. Meanwhile the views that need it say that it is being computed
// (no stale or empty number shown as a result) and the status bar says what is left; afterwards
// the window holds exactly the analysis one pass gives.

#include "gui/main_window.h"
#include "gui/trace_controller.h"

#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/analysis.h"
#include "gwb/views/angles_view.h"
#include "gwb/views/chart_widget.h"

#include <QSignalSpy>
#include <QTest>

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

using namespace gwb::app;
using gwb::app::test::ensureApp;
using gwb::app::test::testModels;

namespace {

constexpr int kWaitMs = 120000;
const QString kPrompt = QStringLiteral("it is a truth universally acknowledged that a single man");

bool same(const gwb::engine::FloatArray& a, const gwb::engine::FloatArray& b) {
    return a.shape == b.shape && std::equal(a.data.begin(), a.data.end(), b.data.begin(), [](float x, float y) {
               return x == y || (std::isnan(x) && std::isnan(y));
           });
}

/// What the window showed when its run finished (before the rest of the analysis came).
struct AtFinish {
    unsigned parts = 0;
    bool completing = false;
    bool readoutContent = true;
    size_t readoutTables = 0;
    QString anglesChart;
    QString status;
};

} // namespace

TEST(StagedAnalysis, TheVisibleViewsPartsComeFirstAndTheRestFollows) {
    ensureApp();
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    MainWindow w(o);
    w.setModelPaths(testModels().grassmann, testModels().transformer);
    w.resize(1280, 720);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    w.setPrompt(kPrompt);
    auto* readout = w.view(QStringLiteral("readout"));
    auto* angles = qobject_cast<gwb::views::AnglesView*>(w.view(QStringLiteral("angles")));
    ASSERT_TRUE(readout && angles);

    AtFinish seen;
    QObject::connect(&w, &MainWindow::runFinished, &w, [&] {
        const auto& a = w.workbenchData().grassmannAnalysis;
        seen.parts = a ? a->parts : 0;
        seen.completing = w.controller()->isCompleting();
        seen.readoutContent = readout->hasContent();
        seen.readoutTables = readout->dataTables().size();
        seen.anglesChart = angles->chart()->placeholder();
        seen.status = w.statusText();
    });
    QSignalSpy done(&w, &MainWindow::runFinished);
    QSignalSpy completed(&w, &MainWindow::analysisCompleted);

    // The Gates view in front: the core part first.
    // On screen: a tabbed-away dock's view stays isVisible() but has nothing of it on screen.
    auto onScreen = [](const QWidget* v) { return v->isVisible() && !v->visibleRegion().isEmpty(); };
    w.showView(QStringLiteral("gate"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !onScreen(readout) && !onScreen(angles); }, kWaitMs));
    w.run();
    ASSERT_TRUE(done.wait(kWaitMs)) << w.statusText().toStdString();
    EXPECT_EQ(seen.parts, static_cast<unsigned>(gwb::engine::kAnalysisCore));
    EXPECT_TRUE(seen.completing);
    EXPECT_FALSE(seen.readoutContent);
    EXPECT_EQ(seen.readoutTables, 0u) << "no read-out numbers before they are computed";
    EXPECT_TRUE(seen.anglesChart.startsWith(QStringLiteral("Computing the angles between layers")))
        << seen.anglesChart.toStdString();
    EXPECT_TRUE(seen.status.contains(QStringLiteral("still computing the read-out planes")))
        << seen.status.toStdString();
    ASSERT_TRUE(completed.count() > 0 || completed.wait(kWaitMs));
    EXPECT_FALSE(w.controller()->isCompleting());
    EXPECT_FALSE(w.statusText().contains(QStringLiteral("still computing"))) << w.statusText().toStdString();

    // The whole analysis, equal to one pass over the same trace.
    const auto& data = w.workbenchData();
    ASSERT_TRUE(data.grassmann && data.grassmannAnalysis);
    const gwb::engine::TraceAnalysis& staged = *data.grassmannAnalysis;
    EXPECT_TRUE(staged.has(gwb::engine::kAnalysisAll));
    const gwb::engine::TraceAnalysis once = gwb::engine::analyzeTrace(*data.grassmann);
    EXPECT_EQ(staged.warnings, once.warnings);
    EXPECT_TRUE(same(staged.readingSubspaceDistance, once.readingSubspaceDistance));
    EXPECT_TRUE(same(staged.promptSubspaceDistance, once.promptSubspaceDistance));
    ASSERT_EQ(staged.grassmann.size(), once.grassmann.size());
    for (size_t l = 0; l < once.grassmann.size(); ++l) {
        EXPECT_TRUE(same(staged.grassmann[l].readoutContribution, once.grassmann[l].readoutContribution)) << l;
        EXPECT_TRUE(same(staged.grassmann[l].readoutAngles, once.grassmann[l].readoutAngles)) << l;
        EXPECT_TRUE(same(staged.grassmann[l].anglesNext, once.grassmann[l].anglesNext)) << l;
        EXPECT_TRUE(same(staged.grassmann[l].influence, once.grassmann[l].influence)) << l;
    }
    EXPECT_TRUE(readout->hasContent());
    EXPECT_FALSE(readout->dataTables().empty());
    EXPECT_FALSE(angles->chart()->placeholder().startsWith(QStringLiteral("Computing")));

    // The Read-out view in front: its part comes with the run.
    w.showView(QStringLiteral("readout"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return onScreen(readout); }, kWaitMs));
    completed.clear();
    w.run();
    ASSERT_TRUE(done.wait(kWaitMs)) << w.statusText().toStdString();
    EXPECT_TRUE(seen.parts & gwb::engine::kAnalysisReadout) << seen.parts;
    EXPECT_TRUE(seen.readoutContent);
    if (seen.completing) {
        ASSERT_TRUE(completed.count() > 0 || completed.wait(kWaitMs));
    }
    EXPECT_TRUE(w.workbenchData().grassmannAnalysis->has(gwb::engine::kAnalysisAll));

    // A new run while the rest is computed: the older run's rest never arrives.
    w.showView(QStringLiteral("gate"));
    completed.clear();
    int finishedRuns = 0;
    QObject::connect(&w, &MainWindow::runFinished, &w, [&] {
        if (++finishedRuns == 1) w.run(); // at once, while the first run's rest is queued
    });
    w.run();
    ASSERT_TRUE(QTest::qWaitFor([&] { return finishedRuns == 2; }, kWaitMs));
    ASSERT_TRUE(completed.count() > 0 || completed.wait(kWaitMs));
    QTest::qWait(50);
    EXPECT_EQ(completed.count(), 1) << "only the newest run's analysis is completed";
    EXPECT_TRUE(w.workbenchData().grassmannAnalysis->has(gwb::engine::kAnalysisAll));
}
