#pragma once

class QApplication;

namespace gwb::app {
/// Opens the main window with the bundled models and runs the event loop.
int runGui(QApplication& app);
} // namespace gwb::app
