#pragma once
// A most-recently-used list of files kept in QSettings and shown as a menu.

#include <QMenu>
#include <QObject>
#include <QString>
#include <QStringList>

namespace gwb::app {

/// The folder a file dialog for one kind of file opens in ("models", "prompts", "sessions",
/// "figures", "data", "corpus", "stats"): where the last file of that kind was chosen (kept in
/// QSettings, so it survives a restart); the home folder before any, so that saving a session
/// never proposes the folder a model came from.
QString dialogFolder(const QString& kind = {});
/// Remembers `path`'s folder for the next file dialog of that kind ("" is ignored).
void rememberDialogFolder(const QString& path, const QString& kind = {});

class RecentFiles : public QObject {
    Q_OBJECT
public:
    /// settingsKey: e.g. "recent/models"; the menu is created with `title`.
    RecentFiles(const QString& settingsKey, const QString& title, QWidget* parent);
    QMenu* menu() const { return m_menu; }
    QStringList files() const;
    void add(const QString& path);
    void remove(const QString& path);

Q_SIGNALS:
    void chosen(const QString& path);

private:
    void rebuild();
    void store(const QStringList& files);

    QString m_key;
    QMenu* m_menu;
};

} // namespace gwb::app
