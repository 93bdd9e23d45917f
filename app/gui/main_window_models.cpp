// MainWindow: the two models (bundled, opened, dropped; probed on the worker, an import choice
// asked for a checkpoint the importer cannot place) and the dictionary the Features view opens.
// Failures keep the models open before and say what went wrong.

#include "gui/main_window.h"

#include "gui/features_job.h"

#include "common/bundled_models.h"
#include "gui/import_dialog.h"
#include "gui/recent_files.h"
#include "gui/prompt_panel.h"
#include "gui/selection_bar.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>

namespace gwb::app {

using gwb::engine::ModelKind;

namespace {
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
    m_openingModels.insert(QFileInfo(path).absoluteFilePath());
    m_controller->probeModel(path, m_device->currentText());
}

void MainWindow::onModelProbed(const ModelInfo& info) {
    // A probe either confirms a model already chosen or assigns a newly opened one by its kind.
    // The probe of a model no longer chosen changes nothing: the bundled models the window starts
    // with are probed before the command line's --model and --baseline replace them, and their
    // probes (small files) come back first; taken as choices, they made the first Run trace the
    // bundled models while the toolbar named the others.
    const QString& chosen = info.kind == ModelKind::Grassmann ? m_grassmannPath : m_baselinePath;
    if (info.path != chosen && !m_openingModels.remove(info.path)) return;
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
    m_prompt->clearErrorNotice(); // the dictionary's own problems show in the Features view
    showView(gwb::views::view_id::kFeatures);
    m_featureRunner->open(path, featuresContext());
}

} // namespace gwb::app
