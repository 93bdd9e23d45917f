// MainWindow: running a prompt through both models (Run, Continue, Cancel) and taking the
// worker's results, progress and failures into the views.

#include "gui/main_window.h"

#include "gui/prompt_limit.h"
#include "gui/prompt_panel.h"
#include "gui/features_job.h"
#include "gui/saliency_job.h"
#include "gui/selection_bar.h"
#include "gui/token_scalars.h"

#include "gwb/views/saliency_view.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/token_strip.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QEventLoop>
#include <QDockWidget>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QTimer>

#include <algorithm>
#include <QSpinBox>
#include <QStatusBar>

namespace gwb::app {

using gwb::views::Selection;
using gwb::views::View;

void MainWindow::run() {
    continueRun(0, false);
}

void MainWindow::continueRun(int tokens, bool sample) {
    TraceRequest request;
    // Sampled with one fixed seed (reproducible, as `gwb figure --continue N --sample`).
    request.continuation = continueOptions(tokens, sample, kContinueSeed);
    request.grassmannPath = m_grassmannPath;
    request.baselinePath = m_baselinePath;
    request.prompt = m_prompt->prompt();
    if (!m_idTokens.tokens.empty() && m_prompt->continuationFrom() >= 0 && request.prompt == m_idTokens.text) {
        // Unedited since a Continue: trace (and extend) the generated ids, not a new encoding.
        request.promptTokens = m_idTokens.tokens;
        request.firstGeneratedToken = m_idTokens.firstGenerated;
        request.continuationFrom = m_idTokens.continuationFrom;
    }
    request.device = m_device->currentText();
    request.threads = m_threads->value();
    request.analysisParts = visibleAnalysisParts();
    // The logit lens (N + 1 passes through the T x V head: most of a long prompt's trace) is
    // traced with the prompt only when its view is on screen; otherwise when that view is shown.
    request.lensTopK = lensViewShown() ? kLensTopK : 0;
    request.maxTokens = m_promptLimit->tokens();
    if (auto* sv = qobject_cast<gwb::views::SaliencyView*>(view(gwb::views::view_id::kSaliency))) {
        // The job computes the Saliency view's result for the token selected after the run.
        request.withSaliency = true;
        request.previousToken = selectedTokenBeforeRun();
        request.saliencyTarget = sv->target();
    }
    const QString problem = validateRequest(request);
    if (!problem.isEmpty()) {
        // Nothing starts; the last results stay on screen.
        // Said once, in the banner under the prompt; the status bar only says nothing ran.
        m_prompt->setNotice(problem, QStringLiteral("error"));
        showError(QStringLiteral("Run not started (see the message under the prompt)"), false);
        Q_EMIT runFailed(problem);
        return;
    }
    if (auto* sv = qobject_cast<gwb::views::SaliencyView*>(view(gwb::views::view_id::kSaliency))) {
        // A typed target explains one prompt's tokens: new tokens (another prompt, or a Continue)
        // start from the actual next token again, and the view says which target was cleared.
        if (tokens > 0)
            sv->releaseTarget(QStringLiteral("it was typed before the Continue"));
        else if (request.prompt != QString::fromStdString(m_data.prompt()))
            sv->releaseTarget(QStringLiteral("it was typed for the previous prompt"));
        request.saliencyTarget = sv->target();
    }
    m_prompt->setNotice({});
    m_runId = m_controller->run(request);
}

void MainWindow::cancelRun() {
    if (m_controller->isComputingLens() && !m_controller->isRunning()) {
        m_controller->cancel();
        showStatus(QStringLiteral("Cancelling the logit lens…"));
        return;
    }
    if (!m_controller->isRunning()) return;
    m_controller->cancel();
    showStatus(QStringLiteral("Cancelling…"));
}

bool MainWindow::isRunning() const {
    return m_controller->isRunning();
}

void MainWindow::setRunningUi(bool running) {
    m_prompt->setRunning(running);
    m_progress->setVisible(running);
    m_statusCancel->setVisible(running);
    if (running) m_progress->setValue(0);
}

void MainWindow::onRunStarted(quint64 id) {
    if (id != m_controller->currentRunId()) return;
    setRunningUi(true);
    m_runStartedMs = QDateTime::currentMSecsSinceEpoch();
    showStatus(QStringLiteral("Running…"));
}

void MainWindow::onProgress(quint64 id, const QString& stage, double fraction) {
    if (id != m_controller->currentRunId()) return;
    m_progress->setValue(static_cast<int>(fraction * 1000));
    showStatus(stage + QStringLiteral("…"));
}

int MainWindow::selectedTokenBeforeRun() const {
    return m_data.tokenCount() > 0 ? m_selection->token() : -1;
}

void MainWindow::onFinished(quint64 id, const TraceOutcome& outcome) {
    if (id != m_controller->currentRunId()) return; // stale
    setRunningUi(false);
    const int previousToken = selectedTokenBeforeRun();
    m_idTokens = {};
    if (outcome.continuationFrom >= 0) {
        // The generated text joins the prompt, tinted until the user edits it.
        if (m_prompt->prompt() != outcome.prompt) m_prompt->setPrompt(outcome.prompt);
        m_prompt->markContinuation(outcome.continuationFrom);
        m_idTokens = {outcome.prompt, outcome.tokens, outcome.data.firstGeneratedToken, outcome.continuationFrom};
    }
    {
        // New data, extents and token: each view refreshes once, with all of them in place.
        const gwb::views::View::RefreshBatch batch;
        setData(outcome.data);
        // A token every view can show: the user's if it still is one, else the first fully defined.
        m_selection->setToken(gwb::views::tokenAfterRun(m_data, previousToken));
        if (m_pendingSelection) {
            m_selection->setLayer(m_pendingSelection->layer);
            m_selection->setToken(m_pendingSelection->token);
            m_selection->setHead(m_pendingSelection->head);
            m_selection->setOffsetIndex(m_pendingSelection->offsetIndex);
            m_pendingSelection.reset();
        }
        // The saliency the job computed (the view ignores it if the selection went elsewhere).
        if (outcome.saliency)
            if (auto* sv = view(gwb::views::view_id::kSaliency))
                if (auto* runner = sv->findChild<SaliencyRunner*>()) runner->deliver(*outcome.saliency);
    }
    m_runNotices = outcome.notices;
    if (!outcome.notices.isEmpty()) m_prompt->setNotice(outcome.notices.join(QLatin1Char('\n')));
    const auto primary = m_data.primary();
    const QString generated = outcome.continuationFrom >= 0 ? QStringLiteral("Generated %1 tokens (%2 tokens/s); ")
                                                                  .arg(outcome.generated)
                                                                  .arg(outcome.tokensPerSecond, 0, 'f', 1)
                                                            : QString();
    m_runStatus = QStringLiteral("%1Traced %2 tokens").arg(generated).arg(primary ? primary->length() : 0);
    showStatus(tracedStatus(m_controller->isCompleting()));
    updateDeviceLabel();
    // The cost beside the longest-prompt setting: these models, this Run's rate.
    if (m_data.grassmann) m_grassmannConfig = m_data.grassmann->config;
    if (m_data.baseline) m_baselineConfig = m_data.baseline->config;
    if (primary && m_runStartedMs > 0 && outcome.generated == 0)
        m_promptLimit->setLastRun(primary->length(), (QDateTime::currentMSecsSinceEpoch() - m_runStartedMs) / 1000.0);
    updatePromptCost();
    Q_EMIT runFinished();
    // The Lens view came on screen during the run (which then traced without the lens).
    QTimer::singleShot(0, this, &MainWindow::ensureLens);
}

QString MainWindow::tracedStatus(bool pending) const {
    QString s = m_runStatus;
    if (const QString names = gwb::views::pendingAnalysisParts(m_data); pending && !names.isEmpty())
        s += QStringLiteral("; still computing the %1 (for the views that show them)").arg(names);
    if (!m_runNotices.isEmpty()) s += QStringLiteral(" (see the notice above the tokens)");
    return s;
}

unsigned MainWindow::visibleAnalysisParts() const {
    unsigned parts = 0;
    for (const View* v : m_views) // on screen: a dock tabbed away keeps isVisible() but shows nothing
        if (v->isVisible() && !v->visibleRegion().isEmpty()) parts |= v->analysisParts();
    // With no view on screen (a window not shown yet, or every dock closed) there is no first.
    return parts == 0 ? static_cast<unsigned>(gwb::engine::kAnalysisAll) : parts | gwb::engine::kAnalysisCore;
}

void MainWindow::onAnalysisCompleted(quint64 id, const AnalysisCompletion& completion) {
    if (id != m_controller->currentRunId() || m_controller->isRunning()) return;
    if (completion.status == AnalysisCompletion::Status::Cancelled) return;
    if (completion.status == AnalysisCompletion::Status::Failed) {
        m_prompt->setNotice(completion.message, QStringLiteral("error"));
        showError(QStringLiteral("The rest of the analysis failed (see the message under the prompt)"), false);
        return;
    }
    // The same traces, the whole analysis: the views that waited for a part draw it now.
    m_data.grassmannAnalysis = completion.analysis;
    showDataInViews();
    if (!completion.notices.isEmpty()) {
        m_runNotices << completion.notices;
        m_prompt->setNotice(m_runNotices.join(QLatin1Char('\n')));
    }
    showStatus(tracedStatus(false));
    Q_EMIT analysisCompleted();
}

int MainWindow::promptLimit() const {
    return m_promptLimit->tokens();
}

void MainWindow::setPromptLimit(int tokens) {
    m_promptLimit->setTokens(tokens);
}

QString MainWindow::promptCostText() const {
    return m_promptLimit->costText();
}

void MainWindow::updatePromptCost() {
    if (!m_promptLimit) return;
    m_promptLimit->setModels(m_grassmannPath.isEmpty() ? std::nullopt : m_grassmannConfig,
                             m_baselinePath.isEmpty() ? std::nullopt : m_baselineConfig);
}

bool MainWindow::lensViewShown() const {
    const View* v = view(gwb::views::view_id::kLens);
    return v && v->isVisible() && !v->visibleRegion().isEmpty();
}

void MainWindow::ensureLens() {
    if (lensViewShown()) startLens();
}

void MainWindow::startLens() {
    if (m_controller->isRunning() || m_controller->isComputingLens()) return;
    if ((!m_data.grassmann && !m_data.baseline) || m_data.hasLenses()) return;
    m_data.lensPending = true;
    if (View* v = view(gwb::views::view_id::kLens)) v->setData(m_data);
    m_progress->setValue(0);
    m_progress->setVisible(true);
    m_statusCancel->setVisible(true);
    m_controller->computeLens(m_data, kLensTopK);
}

bool MainWindow::lensForExport(const QString& viewId) {
    if (viewId != gwb::views::view_id::kLens || (!m_data.grassmann && !m_data.baseline) || m_data.hasLenses())
        return true;
    if (m_controller->isRunning()) return true; // the view says what it has
    // Off the GUI thread as when the view is shown; the window keeps responding (and Cancel works)
    // while this waits for it.
    QEventLoop loop;
    const auto done = connect(this, &MainWindow::lensComputed, &loop, &QEventLoop::quit);
    startLens();
    if (m_controller->isComputingLens()) loop.exec();
    disconnect(done);
    return m_data.hasLenses();
}

void MainWindow::onLensComputed(quint64 id, const LensCompletion& completion) {
    if (id != m_controller->currentRunId()) return;
    m_data.lensPending = false;
    if (!m_controller->isRunning()) {
        m_progress->setVisible(false);
        m_statusCancel->setVisible(false);
    }
    if (completion.status == LensCompletion::Status::Failed) {
        m_prompt->setNotice(completion.message, QStringLiteral("error"));
        showError(QStringLiteral("The logit lens failed (see the message under the prompt)"), false);
    } else if (completion.status == LensCompletion::Status::Ok) {
        if (completion.grassmann) m_data.grassmannLens = completion.grassmann;
        if (completion.baseline) m_data.baselineLens = completion.baseline;
        showStatus(tracedStatus(m_controller->isCompleting()));
    } else {
        showStatus(QStringLiteral("Logit lens cancelled: show the Lens view again to compute it"));
    }
    if (View* v = view(gwb::views::view_id::kLens)) v->setData(m_data);
    Q_EMIT lensComputed();
}

void MainWindow::onFailed(quint64 id, const QString& message) {
    if (id != m_controller->currentRunId()) return;
    setRunningUi(false);
    m_pendingSelection.reset();
    m_prompt->setNotice(message, QStringLiteral("error"));
    showError(QStringLiteral("Run failed (see the message under the prompt)"), false);
    Q_EMIT runFailed(message);
    if (m_data.lensPending) {
        m_data.lensPending = false;
        QTimer::singleShot(0, this, &MainWindow::ensureLens);
    }
}

void MainWindow::onCancelled(quint64 id) {
    if (id != m_controller->currentRunId()) return;
    setRunningUi(false);
    m_pendingSelection.reset();
    showStatus(QStringLiteral("Cancelled; the previous results are still shown"));
    Q_EMIT runCancelled();
    if (m_data.lensPending) { // the run stopped the lens of the shown results: start it again
        m_data.lensPending = false;
        QTimer::singleShot(0, this, &MainWindow::ensureLens);
    }
}

void MainWindow::setData(const gwb::views::WorkbenchData& data) {
    const gwb::views::View::RefreshBatch batch; // the extents and the data: one refresh per view
    const auto corpus = m_data.corpus;
    const std::string corpusPath = m_data.corpusPath;
    m_data = data;
    if (!m_data.corpus) { // prompt runs keep the open statistics
        m_data.corpus = corpus;
        m_data.corpusPath = corpusPath;
    }
    m_selection->setExtents(m_data);
    showDataInViews();
    // The dictionary's features on the new tokens (off the GUI thread).
    if (m_featureRunner && m_featureRunner->dictionary()) m_featureRunner->activations(featuresContext());
    updateStaleness();
    QTimer::singleShot(0, this, &MainWindow::fitTopDocks); // after the strip has its new width
}

void MainWindow::showDataInViews() {
    const gwb::views::View::RefreshBatch batch; // one refresh per view
    for (View* v : m_views)
        v->setData(m_data);
    m_selectionBar->setData(m_data);
    m_strip->setData(m_data);
    updateTokenStrip();
}

void MainWindow::fitTopDocks() {
    if (m_viewDocks.empty() || !m_stripDock->isVisible() || m_stripDock->isFloating() || !m_promptDock->isVisible() ||
        m_promptDock->isFloating())
        return;
    auto* scroll = qobject_cast<QScrollArea*>(m_stripDock->widget());
    const int width = std::max(scroll ? scroll->viewport()->width() : m_strip->width(), m_stripDock->width() - 24);
    // Up to four rows of chips without scrolling; the legend line is part of heightForWidth.
    const int rowH = QFontMetrics(m_strip->font()).height() + 12;
    const int strip = std::clamp(m_strip->heightForWidth(width) + 2, m_strip->minimumHeight(), rowH * 4 + 24);
    const int stripDock = strip + m_stripDock->height() - m_stripDock->widget()->height();
    // The prompt dock as on the first layout (eventFilter): its panel's height hint, which grows
    // with a notice; the editor keeps its three lines within it.
    const int promptDock = m_prompt->sizeHint().height();
    const int total = m_promptDock->height() + m_stripDock->height() + m_viewDocks.front()->height();
    resizeDocks({m_promptDock, m_stripDock, m_viewDocks.front()},
                {promptDock, stripDock, std::max(100, total - promptDock - stripDock)}, Qt::Vertical);
    // resizeDocks across two dock areas only approximates: a maximum held for one layout pass
    // makes the top docks give their spare height to the views (as in the resize handler).
    m_promptDock->setMaximumHeight(promptDock);
    m_stripDock->setMaximumHeight(stripDock);
    QTimer::singleShot(0, this, [this] {
        for (QDockWidget* d : {m_promptDock, m_stripDock})
            d->setMaximumHeight(QWIDGETSIZE_MAX);
    });
}

bool MainWindow::resultsAreStale() const {
    return m_data.tokenCount() > 0 && m_prompt->prompt() != QString::fromStdString(m_data.prompt());
}

void MainWindow::updateStaleness() {
    // Edited text: the tokens and the views still show the last run; say so where they are.
    static const QString kStale =
        QStringLiteral("The prompt was edited: the tokens and the views still show the last run. "
                       "Run (Ctrl+Return) to trace the new text.");
    const bool stale = resultsAreStale();
    m_stripDock->setWindowTitle(stale ? QStringLiteral("Tokens (of the last run; the prompt was edited since)")
                                      : QStringLiteral("Tokens"));
    if (stale && m_prompt->notice().isEmpty())
        m_prompt->setNotice(kStale, QStringLiteral("info"));
    else if (!stale && m_prompt->notice() == kStale)
        m_prompt->setNotice({});
}

void MainWindow::updateTokenStrip() {
    m_strip->setScalar(tokenScalarFromId(m_tokenScalar));
}

} // namespace gwb::app
