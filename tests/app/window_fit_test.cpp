// The window on a laptop screen: at 1280 x 720 and 1366 x 768 with the bundled models and the sample prompt,
// every view is visible whole (no scrolling) with its heatmaps drawn (no "panel too small"), the
// status bar is on screen, the minimum size is at most 1024 x 640, a run never makes the window
// grow, and spare height goes to the views, not to the prompt.
#include "gui/first_start.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"

#include "app_test_util.h"

#include "gwb/views/heatmap_widget.h"
#include "gwb/views/token_strip.h"

#include <QDockWidget>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTest>

#include <gtest/gtest.h>

#include <memory>

using namespace gwb::app;
using gwb::app::test::ensureApp;

namespace {

constexpr int kWaitMs = 120000;

bool runAndWait(MainWindow& w) {
    QSignalSpy done(&w, &MainWindow::runFinished);
    QSignalSpy failed(&w, &MainWindow::runFailed);
    w.run();
    return failed.isEmpty() && done.wait(kWaitMs);
}

QRect inWindow(const QWidget* w, const QWidget* window) {
    return QRect(w->mapTo(window, QPoint(0, 0)), w->size());
}

/// The bundled models, the sample prompt and every view at one laptop screen size.
void checkEveryViewFits(const QSize laptop) {
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    MainWindow w(o); // the bundled models
    ASSERT_FALSE(w.grassmannPath().isEmpty()) << "the bundled models are needed";
    w.resize(laptop);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    EXPECT_LE(w.minimumSizeHint().width(), 1024);
    EXPECT_LE(w.minimumSizeHint().height(), 640);
    w.setPrompt(samplePrompt());
    ASSERT_TRUE(runAndWait(w)) << w.statusText().toStdString();
    QTest::qWait(50);
    EXPECT_EQ(w.size(), laptop) << "a run must not resize the window";

    // The status bar is inside the window.
    ASSERT_TRUE(w.statusBar()->isVisible());
    EXPECT_LE(inWindow(w.statusBar(), &w).bottom(), w.height());

    for (const auto* v : w.views()) {
        const QString id = v->viewId();
        SCOPED_TRACE(id.toStdString());
        w.showView(id);
        QTest::qWait(20);
        auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock_") + id);
        ASSERT_TRUE(dock);
        ASSERT_TRUE(v->isVisible());
        const QRect area = inWindow(dock, &w);
        EXPECT_TRUE(QRect(QPoint(0, 0), w.size()).contains(area)) << "dock outside the window";
        // The views get the window's room: most of its width and more than half its height.
        EXPECT_GE(area.width(), w.width() * 9 / 10);
        EXPECT_GE(area.height(), w.height() / 2) << area.height();
        // Visible whole: the view fits its dock without scrolling.
        auto* scroll = w.findChild<QScrollArea*>(QStringLiteral("scroll_") + id);
        ASSERT_TRUE(scroll);
        EXPECT_FALSE(scroll->verticalScrollBar()->isVisible()) << v->minimumSizeHint().height();
        EXPECT_FALSE(scroll->horizontalScrollBar()->isVisible()) << v->minimumSizeHint().width();
        // Every heatmap draws its matrix (no "panel too small").
        w.grab();
        for (const auto* h : v->findChildren<gwb::views::HeatmapWidget*>())
            if (h->isVisible() && h->hasMatrix()) {
                EXPECT_FALSE(h->plotRect().isEmpty())
                    << h->objectName().toStdString() << " " << h->width() << "x" << h->height();
            }
    }

    // A one-token prompt (analysis warnings, short views) leaves the size alone too.
    w.setPrompt(QStringLiteral("It"));
    ASSERT_TRUE(runAndWait(w)) << w.statusText().toStdString();
    QTest::qWait(50);
    EXPECT_EQ(w.size(), laptop);
}

} // namespace

TEST(WindowFit, EveryViewFitsA1280x720Screen) {
    checkEveryViewFits(QSize(1280, 720));
}

TEST(WindowFit, EveryViewFitsA1366x768Screen) {
    checkEveryViewFits(QSize(1366, 768));
}

TEST(WindowFit, SpareHeightGoesToTheViews) {
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    o.useBundledModels = false;
    MainWindow w(o);
    w.resize(1280, 720);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    auto* prompt = w.findChild<PromptPanel*>();
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("dock_gate"));
    ASSERT_TRUE(prompt && dock);
    const int promptBefore = prompt->height(), viewsBefore = dock->height();
    w.resize(1600, 1000);
    QTest::qWait(50);
    ASSERT_EQ(w.size(), QSize(1600, 1000));
    EXPECT_LE(prompt->height() - promptBefore, 20) << "the prompt took the spare height";
    EXPECT_GE(dock->height() - viewsBefore, 240);
    // Down to the minimum, everything is still laid out inside the window.
    w.resize(1024, 640);
    QTest::qWait(50);
    EXPECT_EQ(w.size(), QSize(1024, 640));
    EXPECT_LE(inWindow(w.statusBar(), &w).bottom(), w.height());
}

/// The widget's height once the layout has settled: the same over three rounds of event
/// processing in a row (a condition, however long a loaded machine takes to get there).
static int settledHeight(QWidget* widget) {
    int last = -1, same = 0;
    [[maybe_unused]] const bool settled = QTest::qWaitFor(
        [&] {
            const int h = widget->height();
            same = h == last ? same + 1 : 0;
            last = h;
            return same >= 3;
        },
        10000);
    return last;
}

/// A 1280 x 720 window, shown, that has traced a short prompt (null when it could not run).
static std::unique_ptr<MainWindow> windowAfterARun() {
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    auto w = std::make_unique<MainWindow>(o);
    w->resize(1280, 720);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get())) return nullptr;
    w->setPrompt(QStringLiteral("They could not help laughing, and"));
    if (!runAndWait(*w)) return nullptr;
    return w;
}

TEST(WindowFit, TheTopDocksGiveBackTheHeightTheyDoNotUse) {
    // After the "prompt edited" notice went, the prompt box kept its extra height, and the token
    // strip's dock kept an empty band under one row of chips: both now fit what they show.
    const std::unique_ptr<MainWindow> window = windowAfterARun();
    ASSERT_TRUE(window) << "the window did not trace the prompt";
    MainWindow& w = *window;
    auto* prompt = w.findChild<PromptPanel*>();
    auto* promptDock = w.findChild<QDockWidget*>(QStringLiteral("dock_prompt"));
    auto* stripDock = w.findChild<QDockWidget*>(QStringLiteral("dock_tokens"));
    auto* strip = w.findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
    ASSERT_TRUE(prompt && promptDock && stripDock && strip);
    // Conditions, not times: a loaded machine runs the layout passes later, never differently.
    // One row of chips: the strip's dock holds it and its legend, with no band of spare height.
    EXPECT_TRUE(QTest::qWaitFor(
        [&] { return stripDock->widget()->height() <= strip->heightForWidth(strip->width()) + 8; }, 10000))
        << stripDock->widget()->height() << " against " << strip->heightForWidth(strip->width()) + 8;
    const int before = settledHeight(promptDock);
    prompt->setNotice(QStringLiteral("A notice of two lines,\nas an edited prompt shows."), QStringLiteral("info"));
    EXPECT_TRUE(QTest::qWaitFor([&] { return promptDock->height() > before; }, 10000))
        << promptDock->height() << " after the notice, " << before << " before";
    prompt->setNotice({});
    EXPECT_TRUE(QTest::qWaitFor([&] { return promptDock->height() <= before + 2; }, 10000))
        << promptDock->height() << " after the notice went, " << before << " before";
    EXPECT_LE(settledHeight(promptDock), before + 2);
}

TEST(WindowFit, AOneLineBannerTakesOneLine) {
    // A one-line error banner pushed the views down 50-60 px (the notice kept room for three lines):
    // it now takes its text's height, and gives it back when it goes.
    const std::unique_ptr<MainWindow> window = windowAfterARun();
    ASSERT_TRUE(window) << "the window did not trace the prompt";
    MainWindow& w = *window;
    auto* prompt = w.findChild<PromptPanel*>();
    auto* promptDock = w.findChild<QDockWidget*>(QStringLiteral("dock_prompt"));
    ASSERT_TRUE(prompt && promptDock);
    const int before = settledHeight(promptDock);
    prompt->setNotice(QStringLiteral("cannot open prompt file 'x.txt': no such file"), QStringLiteral("error"));
    EXPECT_TRUE(QTest::qWaitFor([&] { return promptDock->height() > before; }, 10000));
    // One line of text, its padding and border, and the layout's spacing (three lines' room was
    // about 60 px more than the dock had).
    const int line = QFontMetrics(prompt->font()).lineSpacing();
    EXPECT_LE(settledHeight(promptDock), before + line + 24) << "a one-line banner takes about one line";
    prompt->setNotice({});
    EXPECT_TRUE(QTest::qWaitFor([&] { return promptDock->height() <= before + 2; }, 10000)) << promptDock->height();
    // And the token strip, one row of chips, is left without a scroll bar.
    auto* stripDock = w.findChild<QDockWidget*>(QStringLiteral("dock_tokens"));
    auto* stripScroll = stripDock ? qobject_cast<QScrollArea*>(stripDock->widget()) : nullptr;
    ASSERT_TRUE(stripScroll);
    settledHeight(stripDock);
    EXPECT_FALSE(stripScroll->verticalScrollBar()->isVisible()) << stripDock->height();
}

TEST(WindowFit, AFirstRowTokenShowsTheLegendAboveIt) {
    // With a prompt of 256 tokens (and the truncation notice), selecting a token of the first row
    // after a later one scrolled the strip just far enough for the chip and cut its legend in half.
    const std::unique_ptr<MainWindow> window = windowAfterARun();
    ASSERT_TRUE(window) << "the window did not trace the prompt";
    MainWindow& w = *window;
    QString longPrompt;
    for (int i = 0; i < 40; ++i)
        longPrompt += QStringLiteral("It is a truth universally acknowledged, that a single man in want. ");
    w.setPrompt(longPrompt);
    ASSERT_TRUE(runAndWait(w)) << w.statusText().toStdString();
    auto* stripDock = w.findChild<QDockWidget*>(QStringLiteral("dock_tokens"));
    auto* scroll = stripDock ? qobject_cast<QScrollArea*>(stripDock->widget()) : nullptr;
    ASSERT_TRUE(scroll);
    QScrollBar* bar = scroll->verticalScrollBar();
    ASSERT_TRUE(QTest::qWaitFor([&] { return bar->maximum() > 0; }, 10000)) << "the strip should scroll";
    w.selection()->setToken(200);
    ASSERT_TRUE(QTest::qWaitFor([&] { return bar->value() > 0; }, 10000)) << "a later row scrolls into view";
    w.selection()->setToken(3);
    EXPECT_TRUE(QTest::qWaitFor([&] { return bar->value() == 0; }, 10000))
        << "scrolled to " << bar->value() << ": the legend is cut";
}

TEST(WindowFit, AFirstRunThatFailsShowsItsBannerWhereTheUserIs) {
    // Under Xvfb, Run on an empty prompt in a fresh window left the message only in the status
    // bar: the banner was shown inside a prompt dock that never grew to hold it.
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    MainWindow w(o);
    w.resize(1280, 720);
    w.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
    w.setPrompt(QStringLiteral(" "));
    QSignalSpy failed(&w, &MainWindow::runFailed);
    w.run();
    ASSERT_EQ(failed.count(), 1);
    auto* notice = w.findChild<QLabel*>(QStringLiteral("promptNotice"));
    ASSERT_TRUE(notice);
    EXPECT_TRUE(notice->text().contains(QStringLiteral("the prompt is empty")));
    // Visible whole, inside the window: the banner's text is at least one line high.
    const int line = QFontMetrics(notice->font()).lineSpacing();
    EXPECT_TRUE(QTest::qWaitFor([&] { return notice->isVisible() && notice->height() >= line; }, 10000))
        << "banner " << notice->isVisible() << " " << notice->height() << " px";
    EXPECT_TRUE(QRect(QPoint(0, 0), w.size()).contains(inWindow(notice, &w)));
    // Said once: the status bar does not repeat the message.
    EXPECT_FALSE(w.statusText().contains(QStringLiteral("the prompt is empty"))) << w.statusText().toStdString();
    // The window's models finished opening after the failed run and took the banner with them
    // (an opened model cleared every error, not only its own "Cannot open model").
    QSignalSpy models(&w, &MainWindow::modelsChanged);
    w.openModel(w.grassmannPath());
    ASSERT_TRUE(models.wait(kWaitMs));
    EXPECT_TRUE(notice->isVisible() && notice->text().contains(QStringLiteral("the prompt is empty")))
        << "banner gone: " << notice->text().toStdString();
}
