#pragma once
// Screenshot tour (hidden `--tour DIR` option): once the window's run has finished, bring each
// view to the front in turn and save a grab of the real screen (QScreen::grabWindow(0), so that
// what is saved is what a user would see), then quit. Used by scripts/screenshots under Xvfb.
// The Patching view, when its fields are complete (from a session), is run first and grabbed
// once its sweep is in.

#include <QObject>

#include <functional>
#include <QString>
#include <QStringList>

namespace gwb::views {
class PatchingView;
}

namespace gwb::app {

class MainWindow;

class Tour : public QObject {
    Q_OBJECT
public:
    /// Starts when `window` emits runFinished/runFailed; exit code 0 when the run finished.
    Tour(MainWindow* window, const QString& folder, int settleMs = 800);
    /// Selection to show (token, layer); negative token = two thirds into the prompt.
    void setSelection(int token, int layer) {
        m_token = token;
        m_layer = layer;
    }

private:
    /// After a run: start() once the rest of its analysis is in.
    void afterRun();
    void start(bool runOk);
    void next();
    void waitForPatching(gwb::views::PatchingView* view);
    /// Next view once `running` says the view's run is over.
    void waitForRun(const std::function<bool()>& running);
    void grab(const QString& name);

    MainWindow* m_window;
    QString m_folder;
    int m_settleMs;
    QStringList m_ids;
    int m_index = -1;
    bool m_runOk = true;
    bool m_started = false;
    int m_token = -1;
    int m_layer = 0;
};

} // namespace gwb::app
