#pragma once
// One heatmap of a figure as data (gwb_figures): the matrix, its axes, its colour range and the
// marked cells. The figure paints it with paintHeatmap; the view's HeatmapWidget shows the same
// matrix (setPanel) with zoom, pan and hover.

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/downsample.h"
#include "gwb/views/heatmap_painter.h"

#include <QString>

#include <limits>
#include <memory>

namespace gwb::views {

struct HeatmapPanel {
    MatrixSourcePtr source; ///< null: the placeholder is drawn instead
    HeatmapAxes axes;
    QString placeholder;
    DownsampleMode mode = DownsampleMode::Max;
    bool diverging = false;                                     ///< symmetric range around 0 (RdBu)
    double fixedLow = std::numeric_limits<double>::quiet_NaN(); ///< NaN, NaN: the range follows the data
    double fixedHigh = std::numeric_limits<double>::quiet_NaN();
    HeatmapMarks marks;

    /// A panel of a 2-D table (the figure's numbers), colorbar named valueName.
    static HeatmapPanel ofTable(const DataTable& table, const QString& valueName);
    /// The colour scale: the fixed range, else the finite range of a dense source (else [0, 1]).
    ColorScale colorScale(ColormapId map) const;
    /// Paints the panel (window: cells; empty = the whole matrix); the marks only when
    /// style.selection. Returns where the matrix went (empty for a placeholder).
    HeatmapGeometry paint(QPainter& p, const QRectF& area, const FigureStyle& style, const QString& title,
                          ColormapId map, const QRectF& window = QRectF()) const;
};

} // namespace gwb::views
