#include "gwb/views/heatmap_panel.h"

#include <QPainter>

#include <cmath>

namespace gwb::views {

HeatmapPanel HeatmapPanel::ofTable(const DataTable& t, const QString& valueName) {
    HeatmapPanel panel;
    const int64_t rows = t.values.rank() >= 1 ? t.values.dim(0) : 0;
    const int64_t cols = t.values.rank() >= 2 ? t.values.dim(1) : 1;
    panel.source = makeDenseSource(rows, cols, t.values.data);
    panel.axes.rowTitle = t.rowAxis;
    panel.axes.colTitle = t.colAxis;
    panel.axes.rowLabels = t.rowLabels;
    panel.axes.colLabels = t.colLabels;
    panel.axes.valueName = valueName;
    return panel;
}

ColorScale HeatmapPanel::colorScale(ColormapId map) const {
    double lo = 0, hi = 1;
    if (std::isfinite(fixedLow) && std::isfinite(fixedHigh)) {
        lo = fixedLow;
        hi = fixedHigh;
    } else if (source && source->dense()) {
        const auto [a, b] = finiteRange(*source);
        if (std::isfinite(a)) {
            lo = a;
            hi = b;
        }
    }
    return ColorScale::fromRange(diverging ? ColormapId::RdBu : map, lo, hi, diverging);
}

HeatmapGeometry HeatmapPanel::paint(QPainter& p, const QRectF& area, const FigureStyle& style, const QString& title,
                                    ColormapId map, const QRectF& window) const {
    if (!source) {
        p.save();
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap,
                   placeholder.isEmpty() ? QStringLiteral("No data") : placeholder);
        p.restore();
        return {};
    }
    HeatmapAxes a = axes;
    a.title = title;
    MatrixPyramid pyramid(source, mode); // levels for this paint only (an export draws once)
    const QRectF all(0, 0, static_cast<double>(source->cols()), static_cast<double>(source->rows()));
    return paintHeatmap(p, area, pyramid, window.isEmpty() ? all : window, colorScale(map), a, style,
                        style.selection ? marks : HeatmapMarks{-1, -1, marks.cells}, /*computeMissing=*/true);
}

} // namespace gwb::views
