#pragma once
// A most-recently-used list of files kept in QSettings and shown as a menu.

#include <QMenu>
#include <QObject>
#include <QStringList>

namespace gwb::app {

/// The folder file dialogs open in: where the last file was chosen (kept in QSettings, so it
/// survives a restart); the home folder before any.
QString dialogFolder();
/// Remembers `path`'s folder for the next file dialog ("" is ignored).
void rememberDialogFolder(const QString& path);

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
