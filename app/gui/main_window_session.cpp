// MainWindow: the prompt and the state around it as files: prompt files, session files (save,
// open, recent) and files dropped on the window. Failures keep the current state and say why.

#include "gui/main_window.h"

#include "gui/features_job.h"

#include "gui/prompt_panel.h"
#include "gui/recent_files.h"
#include "gui/selection_bar.h"

#include "gwb/engine/prompt_file.h"

#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMimeData>
#include <QSpinBox>

#include <exception>

namespace gwb::app {

QString MainWindow::openPromptFile(const QString& path) {
    // The engine's one rule for a prompt file (gwb/engine/prompt_file.h), as gwb figure and
    // gwb trace read it: UTF-8, and an editor's final line end is not part of the prompt.
    QString error;
    try {
        m_prompt->setPrompt(QString::fromStdString(gwb::engine::readPromptFile(path.toStdString())));
        m_prompt->clearErrorNotice();
        showStatus(QStringLiteral("Prompt read from %1").arg(QFileInfo(path).fileName()));
        return {};
    } catch (const std::exception& e) {
        error = QString::fromUtf8(e.what());
    }
    // Said once, in the notice above the prompt where the file was meant to go; the status bar
    // only says that it did not open (no dialog on top).
    m_prompt->setNotice(error, QStringLiteral("error"));
    showError(QStringLiteral("Prompt file not opened"), false);
    return error;
}

void MainWindow::choosePromptFile() {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Open Prompt File"), dialogFolder(QStringLiteral("prompts")),
                                     QStringLiteral("Text (*.txt);;All files (*)"));
    rememberDialogFolder(path, QStringLiteral("prompts"));
    if (!path.isEmpty()) openPromptFile(path);
}

// ---- sessions -------------------------------------------------------------------------------

Session MainWindow::currentSession() const {
    Session s;
    s.grassmannModel = m_grassmannPath;
    s.baselineModel = m_baselinePath;
    s.prompt = m_prompt->prompt();
    s.device = m_device->currentText();
    s.threads = m_threads->value();
    s.token = m_selection->token();
    s.layer = m_selection->layer();
    s.head = m_selection->head();
    s.offsetIndex = m_selection->offsetIndex();
    s.tokenScalar = m_tokenScalar;
    s.currentView = m_currentView;
    for (const auto* v : m_views)
        s.viewSettings.insert(v->viewId(), v->settings());
    return s;
}

QString MainWindow::saveSession(const QString& path) {
    const QString error = currentSession().save(path);
    if (!error.isEmpty()) {
        showError(error, true);
        return error;
    }
    m_sessionPath = path;
    m_recentSessions->add(path);
    setWindowTitle(QStringLiteral("%1 — Grassmann Workbench").arg(QFileInfo(path).fileName()));
    showStatus(QStringLiteral("Session saved to %1").arg(path));
    return {};
}

void MainWindow::saveSessionAs() {
    QString path =
        QFileDialog::getSaveFileName(this, QStringLiteral("Save Session"),
                                     m_sessionPath.isEmpty() ? dialogFolder(QStringLiteral("sessions")) : m_sessionPath,
                                     QStringLiteral("Workbench sessions (*.json)"));
    if (path.isEmpty()) return;
    rememberDialogFolder(path, QStringLiteral("sessions"));
    if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
    saveSession(path);
}

QString MainWindow::openSession(const QString& path) {
    try {
        const Session s = Session::load(path);
        m_sessionPath = path;
        m_recentSessions->add(path);
        setWindowTitle(QStringLiteral("%1 — Grassmann Workbench").arg(QFileInfo(path).fileName()));
        applySession(s, true);
        return {};
    } catch (const std::exception& e) {
        const QString error = QStringLiteral("Cannot open session: %1").arg(QString::fromUtf8(e.what()));
        showError(error, true);
        return error;
    }
}

void MainWindow::applySession(const Session& s, bool runNow) {
    setModelPaths(s.grassmannModel, s.baselineModel);
    m_prompt->setPrompt(s.prompt);
    m_device->setCurrentText(s.device);
    m_threads->setValue(s.threads);
    m_selectionBar->setTokenScalar(s.tokenScalar);
    m_tokenScalar = m_selectionBar->tokenScalar();
    for (gwb::views::View* v : m_views) {
        const auto it = s.viewSettings.find(v->viewId());
        if (it != s.viewSettings.end()) v->setSettings(it.value());
    }
    if (!s.currentView.isEmpty()) showView(s.currentView);
    QStringList missing;
    for (const QString& p : {s.grassmannModel, s.baselineModel})
        if (!p.isEmpty() && !QFileInfo::exists(p)) missing << p;
    if (!missing.isEmpty()) {
        m_prompt->setNotice(
            kSessionModelsMissing +
                QStringLiteral("%1. Open them with File > Open Model.").arg(missing.join(QStringLiteral(", "))),
            QStringLiteral("error"));
        return;
    }
    // The selection applies to the traces of this session's run.
    m_pendingSelection = s;
    m_selection->setLayer(s.layer);
    m_selection->setToken(s.token);
    m_selection->setHead(s.head);
    m_selection->setOffsetIndex(s.offsetIndex);
    if (runNow) run();
}

void MainWindow::chooseSession() {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Open Session"), dialogFolder(QStringLiteral("sessions")),
                                     QStringLiteral("Workbench sessions (*.json);;All files (*)"));
    rememberDialogFolder(path, QStringLiteral("sessions"));
    if (!path.isEmpty()) openSession(path);
}

void MainWindow::openRecent(const QString& path) {
    if (!QFileInfo::exists(path)) {
        showError(QStringLiteral("'%1' no longer exists").arg(path), true);
        m_recentModels->remove(path);
        m_recentSessions->remove(path);
        return;
    }
    openDroppedFile(path);
}

// ---- drag and drop --------------------------------------------------------------------------

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile()) openDroppedFile(url.toLocalFile());
    event->acceptProposedAction();
}

void MainWindow::openDroppedFile(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("json"))
        openSession(path);
    else if (suffix == QLatin1String("txt"))
        openPromptFile(path);
    else
        openModel(path); // .gwb or anything else: the loader names the problem
}

} // namespace gwb::app
