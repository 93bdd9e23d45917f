#pragma once

#include <QMainWindow>

namespace gwb::app {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
};

} // namespace gwb::app
