#include "head_grid_paint.h"

#include "gwb/views/heatmap_painter.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>

namespace gwb::views::detail {

std::vector<QRectF> paintHeadGrid(QPainter& p, const QRectF& rect,
                                  const std::vector<std::shared_ptr<MatrixPyramid>>& pyramids, int selected,
                                  const ColorScale& scale, const FigureStyle& style, bool computeMissing,
                                  MissingHeadLevels* missing) {
    std::vector<QRectF> cells;
    const int H = static_cast<int>(pyramids.size());
    if (H == 0) return cells;
    const QFontMetricsF fm = style.metrics(style.small);
    int cols = 1;
    double best = 0;
    for (int c = 1; c <= H; ++c) { // choose the column count giving the largest square thumbnails
        const int rows = (H + c - 1) / c;
        const double side = std::min(rect.width() / c, rect.height() / rows - fm.height());
        if (side > best) {
            best = side;
            cols = c;
        }
    }
    const double gap = fm.height() * 0.3;
    const double side = std::max(4.0, best - gap);
    p.save();
    p.setFont(style.small);
    for (int h = 0; h < H; ++h) {
        const int r = h / cols, c = h % cols;
        const QRectF cell(rect.left() + c * (side + gap), rect.top() + r * (side + gap + fm.height()) + fm.height(),
                          side, side);
        cells.push_back(cell);
        MatrixPyramid& pyr = *pyramids[static_cast<size_t>(h)];
        const QTransform dt = p.deviceTransform();
        const QSize px(std::max(1, static_cast<int>(side * std::hypot(dt.m11(), dt.m12()))),
                       std::max(1, static_cast<int>(side * std::hypot(dt.m21(), dt.m22()))));
        const QRectF window(0, 0, static_cast<double>(pyr.source().cols()), static_cast<double>(pyr.source().rows()));
        HeatmapImage img = colorizeWindow(pyr, window, px, scale, computeMissing);
        if (!img.image.isNull())
            p.drawImage(cell, img.image);
        else
            p.fillRect(cell, QColor(230, 230, 230));
        if ((img.image.isNull() || img.preview) && missing) missing->push_back({h, {img.levelRows, img.levelCols}});
        p.setPen(QPen(h == selected ? QColor(213, 94, 0) : QColor(80, 80, 80),
                      h == selected ? style.hairline * 4 : style.hairline));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cell);
        p.setPen(Qt::black);
        p.drawText(QRectF(cell.left(), cell.top() - fm.height(), cell.width(), fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("head %1").arg(h));
    }
    p.restore();
    return cells;
}

} // namespace gwb::views::detail
