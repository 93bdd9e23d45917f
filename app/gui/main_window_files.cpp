// MainWindow: everything that reads or writes files (models, prompts, sessions, exports,
// drag and drop). Failures keep the current state and say what went wrong.

#include "gui/main_window.h"

#include "gui/features_job.h"

#include "common/bundled_models.h"
#include "gui/export_dialog.h"
#include "gui/figure_request.h"
#include "gui/import_dialog.h"
#include "gui/prompt_panel.h"
#include "gui/recent_files.h"
#include "gui/selection_bar.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/views/figure_export.h"

#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMimeData>
#include <QSpinBox>

namespace gwb::app {

using gwb::engine::ModelKind;

namespace {
constexpr qint64 kMaxPromptBytes = 16 << 20; ///< prompt files above this are refused
// The banners about models, by their opening words (an opened model clears only these).
const QString kCannotOpenModel = QStringLiteral("Cannot open model: ");
const QString kSessionModelsMissing = QStringLiteral("The session's model files are missing: ");

QString modelLabelText(const QString& path, const QString& name, const QString& missing) {
    if (path.isEmpty()) return QStringLiteral("<i>%1</i>").arg(missing);
    const QString shown = name.isEmpty() ? QFileInfo(path).fileName() : name;
    return QStringLiteral("<b>%1</b>").arg(shown.toHtmlEscaped());
}
} // namespace

void MainWindow::setModelPaths(const QString& grassmannPath, const QString& baselinePath) {
    m_grassmannPath = grassmannPath.isEmpty() ? QString() : QFileInfo(grassmannPath).absoluteFilePath();
    m_baselinePath = baselinePath.isEmpty() ? QString() : QFileInfo(baselinePath).absoluteFilePath();
    m_grassmannName.clear();
    m_baselineName.clear();
    m_grassmannConfig.reset();
    m_baselineConfig.reset();
    updatePromptCost();
    updateModelLabels();
    // Probing loads the files into the controller's cache (first Run is quicker) and shows names.
    const QString device = m_device->currentText();
    m_probeStatusSerial = m_statusSerial;
    if (!m_grassmannPath.isEmpty()) m_controller->probeModel(m_grassmannPath, device);
    if (!m_baselinePath.isEmpty()) m_controller->probeModel(m_baselinePath, device);
    Q_EMIT modelsChanged();
}

void MainWindow::useBundledModels() {
    const QString g = findBundledModel(ModelKind::Grassmann);
    const QString b = findBundledModel(ModelKind::Transformer);
    setModelPaths(g, b);
    QStringList missing;
    if (g.isEmpty()) missing << missingBundledModelMessage(ModelKind::Grassmann);
    if (b.isEmpty()) missing << missingBundledModelMessage(ModelKind::Transformer);
    if (!missing.isEmpty()) {
        m_prompt->setNotice(missing.join(QLatin1Char('\n')) +
                                QStringLiteral("\nUse File > Open Model (or drop a .gwb file on the window)."),
                            QStringLiteral("info"));
        showStatus(QStringLiteral("Bundled models not found: open a model file"));
    }
}

void MainWindow::updateModelLabels() {
    m_grassmannLabel->setText(modelLabelText(m_grassmannPath, m_grassmannName, QStringLiteral("none")));
    m_grassmannLabel->setToolTip(m_grassmannPath);
    m_baselineLabel->setText(modelLabelText(m_baselinePath, m_baselineName, QStringLiteral("none")));
    m_baselineLabel->setToolTip(m_baselinePath);
}

void MainWindow::openModel(const QString& path) {
    showStatus(QStringLiteral("Opening %1…").arg(QFileInfo(path).fileName()));
    m_probeStatusSerial = m_statusSerial;
    m_controller->probeModel(path, m_device->currentText());
}

void MainWindow::onModelProbed(const ModelInfo& info) {
    // A probe either confirms a model already chosen or assigns a newly opened one by its kind.
    if (info.kind == ModelKind::Grassmann) {
        m_grassmannPath = info.path;
        m_grassmannName = info.name;
        m_grassmannLabel->setToolTip(info.path + QStringLiteral("\n\n") + info.summary);
        m_grassmannConfig = info.config;
    } else {
        m_baselinePath = info.path;
        m_baselineName = info.name;
        m_baselineLabel->setToolTip(info.path + QStringLiteral("\n\n") + info.summary);
        m_baselineConfig = info.config;
    }
    updatePromptCost();
    // A model opened: an earlier "cannot open" (or a session's missing model) no longer holds; an
    // error about something else (a run that just failed on an empty prompt) stays.
    if (m_prompt->notice().startsWith(kCannotOpenModel) || m_prompt->notice().startsWith(kSessionModelsMissing))
        m_prompt->clearErrorNotice();
    const QString tipG = m_grassmannLabel->toolTip(), tipB = m_baselineLabel->toolTip();
    updateModelLabels();
    m_grassmannLabel->setToolTip(tipG);
    m_baselineLabel->setToolTip(tipB);
    m_recentModels->add(info.path);
    // Probes finish on a worker: their news shows only while nothing newer (a corpus result,
    // an error, a run's progress) has been posted since they began.
    if (m_statusSerial == m_probeStatusSerial) {
        showStatus(
            QStringLiteral("%1 model: %2 (context %3 tokens)")
                .arg(info.kind == ModelKind::Grassmann ? QStringLiteral("Grassmann") : QStringLiteral("Baseline"),
                     info.name)
                .arg(info.maxLen));
        m_probeStatusSerial = m_statusSerial;
    }
    Q_EMIT modelsChanged();
}

std::optional<ImportChoice> MainWindow::askImportChoice(const QString& path, const QString& message) {
    if (m_askImportChoice) return m_askImportChoice(path, message);
    ImportDialog dialog(path, message, m_controller->importChoice(path).value_or(ImportChoice{}), this);
    if (dialog.exec() != QDialog::Accepted) return std::nullopt;
    return dialog.choice();
}

void MainWindow::onModelFailed(const QString& path, const QString& message) {
    // A checkpoint whose layout or vocabulary the importer could not find: ask, then load it
    // again on the worker with the answer (asked again if the answer does not fit either).
    if (needsImportChoice(path, message)) {
        if (const std::optional<ImportChoice> choice = askImportChoice(path, message)) {
            m_controller->setImportChoice(path, *choice);
            openModel(path);
            return;
        }
    }
    // A chosen model that cannot be read is dropped so that Run does not fail on it again.
    const QString abs = QFileInfo(path).absoluteFilePath();
    if (abs == m_grassmannPath) m_grassmannPath.clear();
    if (abs == m_baselinePath) m_baselinePath.clear();
    updateModelLabels();
    m_recentModels->remove(path);
    const QString text = kCannotOpenModel + message;
    m_prompt->setNotice(text, QStringLiteral("error"));
    showError(QStringLiteral("Model not opened"), false); // the notice says why, once

    Q_EMIT modelsChanged();
}

void MainWindow::chooseModel() {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Open Model"), dialogFolder(QStringLiteral("models")),
                                     QStringLiteral("Models (*.gwb *.pt *.pth *.safetensors *.bin *.ckpt *.grasslm);;"
                                                    "Workbench models (*.gwb);;"
                                                    "PyTorch checkpoints (*.pt *.pth *.safetensors *.bin *.ckpt);;"
                                                    "GrassLM weight files (*.grasslm);;"
                                                    "All files (*)"));
    rememberDialogFolder(path, QStringLiteral("models"));
    if (!path.isEmpty()) openModel(path);
}

void MainWindow::openDictionary(const QString& path) {
    if (!m_featureRunner) return;
    showView(QStringLiteral("features"));
    m_featureRunner->open(path, featuresContext());
}

QString MainWindow::openPromptFile(const QString& path) {
    QFile f(path);
    QString error;
    if (!f.open(QIODevice::ReadOnly)) {
        error = QStringLiteral("cannot open prompt file '%1': %2").arg(path, f.errorString());
    } else if (f.size() > kMaxPromptBytes) {
        error = QStringLiteral("prompt file '%1' is larger than %2 MiB").arg(path).arg(kMaxPromptBytes >> 20);
    } else {
        const QByteArray bytes = f.readAll();
        try {
            gwb::engine::checkUtf8(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
            m_prompt->setPrompt(QString::fromUtf8(bytes));
            m_prompt->clearErrorNotice();
            showStatus(QStringLiteral("Prompt read from %1").arg(QFileInfo(path).fileName()));
            return {};
        } catch (const std::exception& e) {
            error = QStringLiteral("prompt file '%1' is not UTF-8 text: %2").arg(path, QString::fromUtf8(e.what()));
        }
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

// ---- export ---------------------------------------------------------------------------------

bool MainWindow::exportFigureTo(const QString& path, const QString& viewId, const FigureSettings& settings) {
    const gwb::views::View* v = view(viewId.isEmpty() ? m_currentView : viewId);
    if (!v) {
        showError(QStringLiteral("no view to export"), true);
        return false;
    }
    if (!lensForExport(v->viewId())) {
        showError(QStringLiteral("Export failed: the logit lens was not computed (cancelled or failed)"), true);
        return false;
    }
    QString error;
    if (figureFormat(path).isEmpty())
        error = QStringLiteral("'%1': choose a .png, .svg or .pdf file name").arg(path);
    else
        error = checkWritableTarget(path);
    gwb::views::ExportResult result;
    if (error.isEmpty()) {
        result = gwb::views::exportFigure(*v, figureOptions(settings), path);
        if (!result.ok) error = result.message;
    }
    if (!error.isEmpty()) {
        showError(QStringLiteral("Export failed: ") + error, true);
        return false;
    }
    showStatus(QStringLiteral("Figure written to %1").arg(path));
    return true;
}

bool MainWindow::exportDataTo(const QString& basePath, const QString& viewId) {
    const gwb::views::View* v = view(viewId.isEmpty() ? m_currentView : viewId);
    if (!v) {
        showError(QStringLiteral("no view to export"), true);
        return false;
    }
    if (!lensForExport(v->viewId())) {
        showError(QStringLiteral("Data export failed: the logit lens was not computed (cancelled or failed)"), true);
        return false;
    }
    QString error = checkWritableTarget(basePath);
    gwb::views::ExportResult result;
    if (error.isEmpty()) {
        result = gwb::views::exportData(*v, basePath);
        if (!result.ok) error = result.message;
    }
    if (!error.isEmpty()) {
        showError(QStringLiteral("Data export failed: ") + error, true);
        return false;
    }
    showStatus(QStringLiteral("Data written: %1").arg(result.files.join(QStringLiteral(", "))));
    return true;
}

void MainWindow::chooseExportFigure() {
    const gwb::views::View* v = view(m_currentView);
    if (!v) return;
    ExportDialog dialog(v->title(), v->settings().value(QStringLiteral("colormap")).toString(), this);
    if (dialog.exec() != QDialog::Accepted) return;
    exportFigureTo(dialog.path(), m_currentView, dialog.settings());
}

void MainWindow::chooseExportData() {
    const gwb::views::View* v = view(m_currentView);
    if (!v) return;
    QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export Data of %1").arg(v->title()),
                                                QDir(dialogFolder(QStringLiteral("data"))).filePath(m_currentView),
                                                QStringLiteral("CSV + NPY + JSON (base name) (*)"));
    if (path.isEmpty()) return;
    rememberDialogFolder(path, QStringLiteral("data"));
    for (const char* suffix : {".csv", ".npy", ".json"})
        if (path.endsWith(QLatin1String(suffix))) path.chop(static_cast<int>(qstrlen(suffix)));
    exportDataTo(path, m_currentView);
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
