#include "gui/gui_main.h"

#include "gui/main_window.h"

#include <QApplication>

namespace gwb::app {

int runGui(QApplication& app) {
    MainWindow window;
    window.show();
    return app.exec();
}

} // namespace gwb::app
