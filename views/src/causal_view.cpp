#include "gwb/views/causal_view.h"

#include "causal_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QLabel>
#include <QProgressBar>
#include <QTableWidget>

#include <algorithm>

namespace gwb::views {

QString CausalView::message() const {
    return m_status->text();
}

void CausalView::setProgress(double fraction) {
    m_progress->setValue(static_cast<int>(std::clamp(fraction, 0.0, 1.0) * 1000));
}

bool CausalView::showProblem(const QString& problem) {
    if (problem.isEmpty()) return false;
    m_message = problem;
    m_status->setText(problem);
    return true;
}

void CausalView::refuse(const QString& error) {
    m_message = error;
    m_status->setText(error);
    m_refused = error;
    updateStale();
}

void CausalView::showRunningState(bool running, const QString& what) {
    m_running = running;
    detail::showRunning(m_controls, running, what);
}

void CausalView::syncFigure(Figure& figure) const {
    for (int model : {0, 1}) {
        const HeatmapWidget* h = heatmap(model);
        figure.setPanelWindow(detail::panelName(model), h->hasMatrix() ? h->window() : QRectF());
    }
}

void CausalView::acceptResult() {
    m_message.clear();
    m_refused.clear();
    m_topK->setRowCount(0);
    m_hover->clear();
}

} // namespace gwb::views
