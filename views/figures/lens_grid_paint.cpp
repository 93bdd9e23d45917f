#include "gwb/views/lens_grid_paint.h"

#include "plot_util.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>

namespace gwb::views {

namespace {

/// Cell geometry shared by the painter and the click mapping.
struct GridGeometry {
    QRectF cells;
    double labelW = 0, headerH = 0, cw = 0, ch = 0;
};

GridGeometry gridGeometry(const QRectF& rect, const LensGridData& d, const QFontMetricsF& fm) {
    GridGeometry g;
    for (const QString& r : d.rowLabels)
        g.labelW = std::max(g.labelW, fm.horizontalAdvance(r));
    g.labelW += fm.height() * 0.6;
    g.headerH = fm.height() * 1.3;
    g.cells = QRectF(rect.left() + g.labelW, rect.top() + g.headerH, std::max(1.0, rect.width() - g.labelW),
                     std::max(1.0, rect.height() - g.headerH));
    g.cw = d.cols() > 0 ? g.cells.width() / d.cols() : 0;
    g.ch = d.rows() > 0 ? g.cells.height() / d.rows() : 0;
    return g;
}

} // namespace

void paintLensGrid(QPainter& p, const QRectF& rectIn, const LensGridData& d, const FigureStyle& style, ColormapId map) {
    QRectF rect = detail::paintPanelTitle(p, rectIn, d.title, style);
    if (d.rows() == 0 || d.cols() == 0) return;
    p.save();
    p.setFont(style.small);
    const QFontMetricsF fm = style.metrics(style.small);
    const GridGeometry g = gridGeometry(rect, d, fm);
    const ColorScale scale = ColorScale::fromRange(map, 0, d.scaleMax > 0 ? d.scaleMax : 1, false);
    p.setPen(Qt::black);
    // Pieces are never cut below 12 characters (labelText); a piece wider than its cell is drawn
    // in a smaller font, down to 70% (the figure picks a window whose pieces fit; see LensFigure::draw).
    auto fitted = [&](const QString& text, double width, const QFont& base) {
        const double w = style.metrics(base).horizontalAdvance(text);
        return w > width && w > 0 ? detail::scaledFont(base, std::max(0.7, width / w)) : base;
    };
    for (int c = 0; c < d.cols(); ++c) {
        const QString label = detail::labelText(d.colLabels[c]);
        p.setFont(fitted(label, g.cw, style.small));
        p.drawText(QRectF(g.cells.left() + c * g.cw, rect.top(), g.cw, g.headerH), Qt::AlignCenter | Qt::TextDontClip,
                   label);
    }
    p.setFont(style.small);
    for (int r = 0; r < d.rows(); ++r) {
        p.setPen(Qt::black);
        p.drawText(QRectF(rect.left(), g.cells.top() + r * g.ch, g.labelW - 2, g.ch), Qt::AlignRight | Qt::AlignVCenter,
                   d.rowLabels[r]);
        for (int c = 0; c < d.cols(); ++c) {
            const size_t i = static_cast<size_t>(r * d.cols() + c);
            const QRectF cell(g.cells.left() + c * g.cw, g.cells.top() + r * g.ch, g.cw, g.ch);
            const float v = d.prob[i];
            const QColor bg = std::isnan(v) ? QColor::fromRgb(kNanColor) : QColor::fromRgb(scale.color(v));
            p.fillRect(cell, bg);
            const double lum = 0.2126 * bg.redF() + 0.7152 * bg.greenF() + 0.0722 * bg.blueF();
            p.setPen(lum > 0.5 ? Qt::black : Qt::white);
            QFont f = style.small;
            f.setBold(d.hitsNext[i]);
            const QString piece = detail::labelText(d.text[i]);
            p.setFont(fitted(piece, cell.width() - 2, f));
            p.drawText(cell.adjusted(1, 0, -1, 0), Qt::AlignCenter | Qt::TextDontClip, piece);
            p.setFont(style.small);
            if (d.hitsNext[i]) {
                p.setPen(QPen(Qt::white, 1.2));
                p.drawLine(cell.bottomLeft() + QPointF(2, -2), cell.bottomRight() + QPointF(-2, -2));
            }
        }
    }
    if (style.selection && d.markCol >= 0 && d.markCol < d.cols()) {
        p.setPen(QPen(QColor(220, 30, 30), 1.5));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(g.cells.left() + d.markCol * g.cw, g.cells.top(), g.cw, g.cells.height()));
        if (d.markRow >= 0 && d.markRow < d.rows())
            p.drawRect(QRectF(g.cells.left() + d.markCol * g.cw, g.cells.top() + d.markRow * g.ch, g.cw, g.ch)
                           .adjusted(1.5, 1.5, -1.5, -1.5));
    }
    p.restore();
}

QPoint lensGridCellAt(const QRectF& rect, const LensGridData& d, const FigureStyle& style, const QPointF& pos) {
    if (d.rows() == 0 || d.cols() == 0) return {-1, -1};
    // Same layout as the painter: the (wrapped) title, then the grid.
    const QRectF area = rect.adjusted(0, detail::panelTitleHeight(d.title, rect.width(), style), 0, 0);
    const GridGeometry g = gridGeometry(area, d, style.metrics(style.small));
    if (!g.cells.contains(pos) || g.cw <= 0 || g.ch <= 0) return {-1, -1};
    const int c = static_cast<int>((pos.x() - g.cells.left()) / g.cw);
    const int r = static_cast<int>((pos.y() - g.cells.top()) / g.ch);
    return {std::clamp(c, 0, d.cols() - 1), std::clamp(r, 0, d.rows() - 1)};
}

} // namespace gwb::views
