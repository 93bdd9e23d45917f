#pragma once
// The Graph view's canvas (graph_view.h): both models' graphs side by side, with hover (a node's
// tooltip and a feature's dashboard), click to pin a node or pick an edge, and a dragged box that
// groups nodes into a supernode.

#include "graph_paint.h"

#include "gwb/views/graph_view.h"

#include <QPoint>
#include <QWidget>

#include <utility>
#include <vector>

namespace gwb::views::detail {

class GraphCanvas : public QWidget {
public:
    explicit GraphCanvas(GraphView* view);
    /// Layouts of the panels as the screen draws them (model index, layout).
    std::vector<std::pair<int, GraphLayout>> layouts() const;
    /// The hovered node's tooltip again (its dashboard arrived).
    void showTip();
    int hoverModel() const { return m_hoverModel; }
    /// A banner over the graphs saying they are of an earlier prompt ("" = none); they stay
    /// visible underneath, greyed, as a stale heatmap does.
    void setStaleNote(const QString& note);
    QString staleNote() const { return m_staleNote; }
    int64_t hoverNode() const { return m_hoverNode; }

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;

private:
    GraphView* m_view;
    QPointF m_pressAt, m_dragAt;
    bool m_dragging = false;
    int m_hoverModel = -1;
    int64_t m_hoverNode = -1;
    QPoint m_hoverAt;
    QString m_staleNote;
};

} // namespace gwb::views::detail
