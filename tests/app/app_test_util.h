#pragma once
// A QApplication for widget tests (offscreen platform, test-mode settings so the user's saved
// layout and recent files are never touched).

#include <QApplication>
#include <QStandardPaths>

namespace gwb::app::test {

inline QApplication& ensureApp() {
    static int argc = 1;
    static char name[] = "app_tests";
    static char* argv[] = {name, nullptr};
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    static QApplication* app = [] {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("GrassmannWorkbenchTests"));
        QCoreApplication::setApplicationName(QStringLiteral("app_tests"));
        return new QApplication(argc, argv);
    }();
    return *app;
}

} // namespace gwb::app::test
