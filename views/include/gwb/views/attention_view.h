#pragma once
// Attention view (baseline trace): thumbnails of every head of the selected layer, the selected
// head large (query x key), and the selected query row's metrics for every head. The picture is
// AttentionFigure's (attention_figure.h); clicking a thumbnail or a table row selects the head,
// clicking the large map selects the query token.

#include "gwb/views/attention_figure.h"
#include "gwb/views/view.h"

class QLabel;

class QTableWidget;

namespace gwb::views {

class HeatmapWidget;
class HeadGrid;

class AttentionView : public View {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);
    ~AttentionView() override;
    QString viewId() const override { return view_id::kAttention; }
    QString title() const override { return QStringLiteral("Attention"); }
    HeatmapWidget* heatmap() const { return m_heatmap; }

protected:
    void refresh() override;
    void syncFigure(Figure& figure) const override;

private:
    HeadGrid* m_grid;
    HeatmapWidget* m_heatmap;
    QTableWidget* m_table;
    QLabel* m_scaleNote; ///< where the colour scale ends and why (its 95th-percentile top)
};

} // namespace gwb::views
