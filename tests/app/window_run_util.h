#pragma once
// What the window tests that need a finished Run share: the bundled models' paths and a shown
// window (the bundled models, default settings) after one Run of a prompt.

#include "gui/main_window.h"

#include "app_test_util.h"

#include <QSignalSpy>
#include <QTest>

#include <memory>
#include <string>

namespace gwb::app::test {

inline std::string bundledModelPath(const char* name) {
    return std::string(GWB_SOURCE_DIR) + "/resources/models/" + name;
}

/// The window shown at 1280 x 720 after a Run of `prompt`; null when it did not finish in waitMs.
inline std::unique_ptr<MainWindow> windowAfterARun(const QString& prompt, int waitMs) {
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    auto w = std::make_unique<MainWindow>(o); // the bundled models
    w->resize(1280, 720);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get())) return nullptr;
    w->setPrompt(prompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    if (!done.wait(waitMs)) return nullptr;
    return w;
}

} // namespace gwb::app::test
