#include "gui/main_window.h"

namespace gwb::app {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Grassmann Workbench"));
    resize(1400, 900);
}

} // namespace gwb::app
