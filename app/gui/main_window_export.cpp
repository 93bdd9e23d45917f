// MainWindow: File > Export Figure and Export Data (a view's figure at the paper presets, its
// numbers as CSV, NPY and JSON), written atomically; a failure says why and keeps nothing half.

#include "gui/main_window.h"

#include "gui/export_dialog.h"
#include "runs/figure_request.h"
#include "gui/recent_files.h"

#include "gwb/views/figure_export.h"

#include <QFileDialog>
#include <QFileInfo>

namespace gwb::app {

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

} // namespace gwb::app
