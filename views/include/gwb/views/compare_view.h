#pragma once
// Compare view: for the selected token and layer, the Grassmann influence row over past tokens
// next to the baseline's attention rows (every head and the head mean), with Jensen-Shannon
// divergence and top-1 agreement per head; below, both models' layer x layer prompt-subspace
// distance matrices side by side on one colour scale, and their difference (diverging RdBu). The
// picture is CompareFigure's (compare_figure.h).

#include "gwb/views/compare_figure.h"
#include "gwb/views/view.h"

class QTableWidget;

namespace gwb::views {

class HeatmapWidget;

class CompareView : public View {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kCompare; }
    QString title() const override { return QStringLiteral("Compare"); }
    HeatmapWidget* rowsHeatmap() const { return m_rows; }
    HeatmapWidget* differenceHeatmap() const { return m_diff; }

    /// Rows shown: influence, head 0..H-1, head mean (each over keys 0..t); empty when unavailable.
    using Rows = CompareFigure::Rows;
    Rows rows() const;

protected:
    void refresh() override;
    void syncFigure(Figure& figure) const override;

private:
    const CompareFigure& synced() const { return static_cast<const CompareFigure&>(figure()); }
    HeatmapWidget* m_rows;
    HeatmapWidget* m_gDist;
    HeatmapWidget* m_bDist;
    HeatmapWidget* m_diff; ///< Grassmann minus baseline distances (signed, RdBu centred at 0)
    QTableWidget* m_table;
};

} // namespace gwb::views
