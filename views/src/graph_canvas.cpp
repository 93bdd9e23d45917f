// The Graph view's canvas (graph_canvas.h).

#include "graph_canvas.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <cmath>

namespace gwb::views::detail {

GraphCanvas::GraphCanvas(GraphView* view) : QWidget(view), m_view(view) {
    setMouseTracking(true);
    setMinimumHeight(160);
}

std::vector<std::pair<int, GraphLayout>> GraphCanvas::layouts() const {
    std::vector<std::pair<int, GraphLayout>> out;
    const gwb::engine::GraphPair* pair = m_view->graphs();
    const std::vector<int> models = drawnModels(pair);
    const FigureStyle style = FigureStyle::forScreen(font());
    const std::vector<QRectF> rects =
        panelRects(QRectF(rect()).adjusted(4, 4, -4, -4), static_cast<int>(models.size()), width() < 700);
    for (size_t k = 0; k < models.size(); ++k)
        out.emplace_back(models[k], layoutGraph(pair->graphs[models[k]], pair->pruning[models[k]], rects[k], style));
    return out;
}

void GraphCanvas::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    const gwb::engine::GraphPair* pair = m_view->graphs();
    if (drawnModels(pair).empty()) {
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_view->fig().missingDataMessage());
        return;
    }
    FigureStyle style = FigureStyle::forScreen(font());
    style.screen = true;
    for (const auto& [m, lay] : layouts())
        paintGraph(p, lay, pair->graphs[m], pair->pruning[m], style, m_view->fig().marks(m), panelTitle(*pair, m));
    if (!m_staleNote.isEmpty()) { // grey the old graphs and say why over them
        p.fillRect(rect(), QColor(255, 255, 255, 150));
        const QRectF banner(0, 0, width(), QFontMetricsF(font()).height() * 2.4);
        p.fillRect(banner, QColor(255, 236, 179));
        p.setPen(Qt::black);
        p.drawText(banner.adjusted(6, 2, -6, -2), Qt::AlignCenter | Qt::TextWordWrap, m_staleNote);
    }
    if (m_dragging) {
        p.setPen(QPen(QColor(120, 80, 160), 1, Qt::DashLine));
        p.setBrush(QColor(120, 80, 160, 30));
        p.drawRect(QRectF(m_pressAt, m_dragAt).normalized());
    }
}

void GraphCanvas::setStaleNote(const QString& note) {
    if (note == m_staleNote) return;
    m_staleNote = note;
    update();
}

void GraphCanvas::showTip() {
    if (m_hoverNode < 0 || !m_view->graphs()) return;
    QToolTip::showText(m_hoverAt, m_view->nodeTip(m_hoverModel, m_hoverNode), this);
}

void GraphCanvas::mouseMoveEvent(QMouseEvent* e) {
    const QPointF at = e->position();
    if (e->buttons() & Qt::LeftButton) {
        if ((at - m_pressAt).manhattanLength() > 6) m_dragging = true;
        m_dragAt = at;
        update();
        return;
    }
    for (const auto& [m, lay] : layouts()) {
        const int64_t node = nodeAt(lay, at, lay.radius + 4);
        if (node >= 0) {
            m_hoverModel = m;
            m_hoverNode = node;
            m_hoverAt = e->globalPosition().toPoint();
            m_view->requestDashboard(m, node);
            showTip();
            return;
        }
    }
    m_hoverModel = -1;
    m_hoverNode = -1;
    QToolTip::hideText();
}

void GraphCanvas::leaveEvent(QEvent*) {
    m_hoverModel = -1;
    m_hoverNode = -1;
}

void GraphCanvas::mousePressEvent(QMouseEvent* e) {
    m_pressAt = m_dragAt = e->position();
    m_dragging = false;
}

void GraphCanvas::mouseReleaseEvent(QMouseEvent* e) {
    const QPointF at = e->position();
    const auto lays = layouts();
    if (m_dragging) { // a box: its nodes (of one panel) become a supernode
        m_dragging = false;
        const QRectF box = QRectF(m_pressAt, at).normalized();
        for (const auto& [m, lay] : lays) {
            std::vector<int64_t> inside;
            for (size_t i = 0; i < lay.at.size(); ++i)
                if (!std::isnan(lay.at[i].x()) && box.contains(lay.at[i])) inside.push_back(static_cast<int64_t>(i));
            if (inside.size() >= 2) m_view->group(m, inside);
        }
        update();
        return;
    }
    for (const auto& [m, lay] : lays) {
        const int64_t node = nodeAt(lay, at, lay.radius + 4);
        if (node >= 0) {
            m_view->togglePin(m, node);
            return;
        }
    }
    for (const auto& [m, lay] : lays) {
        if (!lay.panel.contains(at)) continue;
        const auto [target, source] = edgeAt(lay, m_view->graphs()->graphs[m], m_view->graphs()->pruning[m], at, 4.0);
        m_view->selectEdge(target >= 0 ? m : -1, target, source);
        return;
    }
}

} // namespace gwb::views::detail
