// The Paths view's pairs-file part: the file chosen, the run asked for and its result shown. The
// figure's pairs part (estimates, caption, tables) is views/figures/paths_figure_pairs.cpp.

#include "gwb/views/paths_view.h"

#include "causal_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>

namespace gwb::views {

using detail::qs;

void PathsView::choosePairsFile() {
    if (m_running) return;
    const QString file = detail::choosePairsFile(this, pairsResult().inputs.file);
    if (!file.isEmpty()) runPairs(file);
}

void PathsView::runPairs(const QString& file) {
    if (m_running) return;
    if (file.isEmpty()) {
        m_message = QStringLiteral("Choose a pairs file (JSONL or CSV with clean, corrupt, answer and wrong).");
        m_status->setText(m_message);
        return;
    }
    const PathsInputs in = inputs();
    PathsPairsInputs p;
    p.file = file.toStdString();
    p.senders = in.senders;
    p.receivers = in.receivers;
    p.minDifference = in.minDifference;
    Q_EMIT settingsChanged();
    Q_EMIT pairsRequested(p);
}

void PathsView::setPairsResult(const PathsPairsData& result) {
    setRunning(false);
    if (!result.hasGrid()) { // nothing usable: say why; what is shown stays
        QString why = qs(result.error);
        if (why.isEmpty()) {
            QStringList parts;
            for (const gwb::engine::PairsGrid* g : {&result.grassmann, &result.transformer})
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
    showPanels();
    m_hover->clear();
    requestRefresh();
    Q_EMIT settingsChanged();
}

} // namespace gwb::views
