// The Patching view's pairs-file part (a causal claim over a dataset): the run, the side panel of
// a clicked cell and the clicks. The figure's pairs part (means, caption, tables) is
// views/figures/patching_figure_pairs.cpp; the single-pair sweep is patching_view.cpp.

#include "gwb/views/patching_view.h"

#include "causal_common.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>

namespace gwb::views {

using detail::qs;

QString PatchingView::pairsMethod() const {
    return fig().pairsMethod();
}

void PatchingView::setPairsMethod(const QString& method) {
    if (const int i = m_method->findText(method); i >= 0) m_method->setCurrentIndex(i);
}

void PatchingView::choosePairsFile() {
    if (m_running) return;
    const QString file = detail::choosePairsFile(this, pairsResult().inputs.file);
    if (!file.isEmpty()) runPairs(file);
}

void PatchingView::runPairs(const QString& file) {
    if (m_running) return;
    const PatchingInputs in = inputs();
    QString problem;
    if (file.isEmpty())
        problem = QStringLiteral("Choose a pairs file (JSONL or CSV with clean, corrupt, answer and wrong).");
    else
        problem = PatchingFigure::siteProblem(in.site);
    if (!problem.isEmpty()) {
        m_message = problem;
        m_status->setText(problem);
        return;
    }
    PairsInputs p;
    p.file = file.toStdString();
    p.site = in.site;
    p.mode = in.mode;
    p.method = pairsMethod().toStdString();
    p.minDifference = in.minDifference;
    fig().setPairsFile(file);
    Q_EMIT settingsChanged();
    Q_EMIT pairsRequested(p);
}

void PatchingView::setPairsResult(const PairsData& result) {
    setRunning(false);
    if (!result.hasGrid()) { // nothing usable: say why; what is shown stays
        QString why = qs(result.error);
        if (why.isEmpty()) {
            QStringList parts;
            for (const PairsGrid* g : {&result.grassmann, &result.transformer})
                if (!g->error.empty()) parts << QStringLiteral("%1: %2").arg(qs(g->model), qs(g->error));
            why = parts.join(QStringLiteral("; "));
        }
        m_message = QStringLiteral("Pairs file %1: %2").arg(QFileInfo(qs(result.inputs.file)).fileName(), why);
        m_status->setText(m_message);
        return;
    }
    fig().setPairsResult(result);
    m_message.clear();
    m_refused.clear();
    m_pairsPlots->setData(&fig().pairsResult());
    // The side panel starts with the figure's cell: the largest |mean| whose pairs differ.
    if (fig().pairsCellModel() >= 0)
        m_pairsPlots->setCell(fig().pairsCellModel(), fig().pairsCellRow(), fig().pairsCellCol());
    showSide(true);
    showPanels();
    m_hover->clear();
    requestRefresh();
    Q_EMIT settingsChanged();
}

void PatchingView::showSide(bool pairs) {
    if ((m_side->currentWidget() == m_pairsScroll) == pairs) return;
    m_side->setCurrentWidget(pairs ? static_cast<QWidget*>(m_pairsScroll) : m_topK);
    const int total = m_split->sizes().value(0) + m_split->sizes().value(1) + m_split->sizes().value(2);
    const int side = pairs ? total * 36 / 100 : total * 16 / 100;
    m_split->setSizes({(total - side) / 2, (total - side) / 2, side});
}

void PatchingView::clickCell(int model, int64_t r, int64_t c) {
    if (pairsMode()) {
        const PairsGrid& g = pairsResult().grid(model);
        if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return;
        fig().setPairsCell(model, r, c);
        m_pairsPlots->setCell(model, r, c);
        return;
    }
    const PatchingGrid& g = model == 0 ? result().grassmann : result().transformer;
    if (!g.hasGrid()) return;
    const size_t i = static_cast<size_t>(r * g.cols + c);
    if (i < g.defined.size() && !g.defined[i]) {
        m_status->setText(qs(g.undefinedReason(r, c)));
        return;
    }
    m_topK->setRowCount(0);
    m_topK->setToolTip(QString());
    m_topK->setHorizontalHeaderLabels(
        {QStringLiteral("piece (computing\u2026)"), QStringLiteral("p"), QStringLiteral("logit")});
    Q_EMIT topKRequested(model, r, c);
}

} // namespace gwb::views
