#include "gui/recent_files.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace gwb::app {

namespace {
QString folderKey(const QString& kind) {
    return kind.isEmpty() ? QStringLiteral("dialogs/folder") : QStringLiteral("dialogs/folder/") + kind;
}
} // namespace

QString dialogFolder(const QString& kind) {
    const QString f = QSettings().value(folderKey(kind)).toString();
    return !f.isEmpty() && QFileInfo(f).isDir() ? f : QDir::homePath();
}

void rememberDialogFolder(const QString& path, const QString& kind) {
    if (path.isEmpty()) return;
    const QFileInfo info(path);
    QSettings().setValue(folderKey(kind), info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

namespace {
constexpr int kMaxRecent = 10;
}

RecentFiles::RecentFiles(const QString& settingsKey, const QString& title, QWidget* parent)
    : QObject(parent), m_key(settingsKey), m_menu(new QMenu(title, parent)) {
    rebuild();
}

QStringList RecentFiles::files() const {
    return QSettings().value(m_key).toStringList();
}

void RecentFiles::store(const QStringList& files) {
    QSettings().setValue(m_key, files);
    rebuild();
}

void RecentFiles::add(const QString& path) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    QStringList list = files();
    list.removeAll(abs);
    list.prepend(abs);
    while (list.size() > kMaxRecent)
        list.removeLast();
    store(list);
}

void RecentFiles::remove(const QString& path) {
    QStringList list = files();
    list.removeAll(QFileInfo(path).absoluteFilePath());
    store(list);
}

void RecentFiles::rebuild() {
    m_menu->clear();
    const QStringList list = files();
    for (int i = 0; i < list.size(); ++i) {
        const QString path = list[i];
        QAction* a = m_menu->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()));
        a->setToolTip(QDir::toNativeSeparators(path));
        a->setStatusTip(QDir::toNativeSeparators(path));
        connect(a, &QAction::triggered, this, [this, path] { Q_EMIT chosen(path); });
    }
    if (list.isEmpty()) m_menu->addAction(QStringLiteral("(none)"))->setEnabled(false);
    m_menu->addSeparator();
    connect(m_menu->addAction(QStringLiteral("Clear List")), &QAction::triggered, this, [this] { store({}); });
}

} // namespace gwb::app
