// MainWindow: File > Open Statistics and Run > Corpus (the Corpus view's data).

#include "gui/recent_files.h"
#include "gui/corpus_dialog.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"

#include "gwb/views/corpus_view.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QComboBox>
#include <QStatusBar>

namespace gwb::app {

void MainWindow::buildCorpusUi() {
    m_corpusRunner = new CorpusRunner(this);
    m_corpusStatus = new QLabel(this);
    m_corpusStatus->setObjectName(QStringLiteral("corpusStatus"));
    m_corpusProgress = new QProgressBar(this);
    m_corpusProgress->setObjectName(QStringLiteral("corpusProgress"));
    m_corpusProgress->setMaximumWidth(160);
    m_corpusProgress->setTextVisible(false);
    m_corpusCancel = new QPushButton(QStringLiteral("Cancel Corpus"), this);
    m_corpusCancel->setObjectName(QStringLiteral("corpusCancel"));
    for (QWidget* w : std::initializer_list<QWidget*>{m_corpusStatus, m_corpusProgress, m_corpusCancel}) {
        statusBar()->addPermanentWidget(w);
        w->hide();
    }
    connect(m_corpusCancel, &QPushButton::clicked, this, &MainWindow::cancelCorpus);
    connect(m_corpusRunner, &CorpusRunner::progress, this, [this](qint64 done, qint64 total, const QString& text) {
        m_corpusProgress->setRange(0, static_cast<int>(std::max<qint64>(1, total)));
        m_corpusProgress->setValue(static_cast<int>(done));
        m_corpusStatus->setText(QStringLiteral("Corpus: ") + text);
    });
    connect(m_corpusRunner, &CorpusRunner::finished, this, &MainWindow::onCorpusFinished);
    m_lastCorpus.outPath = QDir::home().filePath(QStringLiteral("gwb-stats.npz"));
}

QString MainWindow::openStatistics(const QString& path) {
    std::shared_ptr<gwb::engine::CorpusStats> stats;
    try {
        stats = std::make_shared<gwb::engine::CorpusStats>(gwb::engine::CorpusStats::read(path.toStdString()));
    } catch (const std::exception& e) {
        const QString message = QStringLiteral("Cannot open statistics '%1': %2")
                                    .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what()));
        showError(message, true);
        return message;
    }
    gwb::views::WorkbenchData data = m_data;
    data.corpus = std::move(stats);
    data.corpusPath = QFileInfo(path).absoluteFilePath().toStdString();
    setData(data);
    showView(gwb::views::view_id::kCorpus);
    m_prompt->clearErrorNotice(); // an error about an earlier action (a prompt file) is not news now
    showStatus(QStringLiteral("Opened statistics %1: %2 windows")
                   .arg(QFileInfo(path).fileName())
                   .arg(m_data.corpus->windows.size()));
    return {};
}

void MainWindow::chooseStatistics() {
    const QString path =
        QFileDialog::getOpenFileName(this, QStringLiteral("Open Statistics"), dialogFolder(QStringLiteral("stats")),
                                     QStringLiteral("Corpus statistics (*.npz);;All files (*)"));
    rememberDialogFolder(path, QStringLiteral("stats"));
    if (!path.isEmpty()) openStatistics(path);
}

CorpusRequest MainWindow::corpusRequest() const {
    CorpusRequest r = m_lastCorpus;
    r.grassmannPath = m_grassmannPath;
    r.baselinePath = m_baselinePath;
    r.device = m_device->currentText();
    r.threads = m_threads->value();
    return r;
}

void MainWindow::showCorpusDialog() {
    if (isCorpusRunning()) {
        showError(QStringLiteral("A corpus run is still going: cancel it first"), true);
        return;
    }
    QStringList models;
    if (!m_grassmannPath.isEmpty())
        models << QStringLiteral("the Grassmann model (%1)")
                      .arg(m_grassmannName.isEmpty() ? QFileInfo(m_grassmannPath).fileName() : m_grassmannName);
    if (!m_baselinePath.isEmpty())
        models << QStringLiteral("the baseline (%1)")
                      .arg(m_baselineName.isEmpty() ? QFileInfo(m_baselinePath).fileName() : m_baselineName);
    CorpusDialog dialog(models.isEmpty() ? QStringLiteral("no model (open one first)")
                                         : models.join(QStringLiteral(" and ")),
                        corpusRequest(), this);
    if (dialog.exec() == QDialog::Accepted) runCorpus(dialog.request());
}

bool MainWindow::runCorpus(const CorpusRequest& request) {
    const QString problem = validateCorpusRequest(request);
    if (!problem.isEmpty() || !m_corpusRunner->start(request)) {
        const QString message = problem.isEmpty() ? QStringLiteral("A corpus run is still going") : problem;
        showError(QStringLiteral("Corpus: ") + message, false);
        Q_EMIT corpusFailed(message);
        return false;
    }
    m_lastCorpus = request;
    m_prompt->clearErrorNotice(); // e.g. a model that could not be opened: not this run's news
    m_corpusStatus->setText(QStringLiteral("Corpus: loading the models…"));
    m_corpusProgress->setRange(0, 0); // busy until the first window
    for (QWidget* w : std::initializer_list<QWidget*>{m_corpusStatus, m_corpusProgress, m_corpusCancel})
        w->show();
    m_corpusCancel->setEnabled(true);
    return true;
}

void MainWindow::cancelCorpus() {
    if (!isCorpusRunning()) return;
    m_corpusRunner->cancel();
    m_corpusCancel->setEnabled(false);
    m_corpusStatus->setText(QStringLiteral("Corpus: cancelling after the current window…"));
}

bool MainWindow::isCorpusRunning() const {
    return m_corpusRunner && m_corpusRunner->isRunning();
}

void MainWindow::onCorpusFinished(const CorpusOutcome& outcome) {
    for (QWidget* w : std::initializer_list<QWidget*>{m_corpusStatus, m_corpusProgress, m_corpusCancel})
        w->hide();
    if (outcome.stats) {
        gwb::views::WorkbenchData data = m_data;
        data.corpus = outcome.stats;
        data.corpusPath = QFileInfo(outcome.path).absoluteFilePath().toStdString();
        setData(data);
        showView(gwb::views::view_id::kCorpus);
        QString text = QStringLiteral("Corpus: ") + outcome.message;
        if (!outcome.warnings.isEmpty())
            text += QStringLiteral(" · skipped: ") + outcome.warnings.join(QStringLiteral("; "));
        showStatus(text);
        Q_EMIT corpusFinished(outcome.path);
        return;
    }
    const bool cancelled = outcome.status == CorpusOutcome::Status::Cancelled;
    if (cancelled)
        showStatus(QStringLiteral("Corpus: ") + outcome.message);
    else
        showError(QStringLiteral("Corpus run failed: ") + outcome.message, true);
    Q_EMIT corpusFailed(outcome.message);
}

} // namespace gwb::app
