#pragma once
// One model's logit-lens grid as data and its painter (gwb_figures): lens layers x tokens, each
// cell the top-1 next-token piece coloured by its probability. The Lens figure paints it; the
// Lens view's grids paint the same and map clicks to cells with lensGridCellAt.

#include "gwb/views/colormap.h"
#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QPoint>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

namespace gwb::views {

/// One model's lens numbers for drawing (from its LogitLens, WorkbenchData::lensOf).
struct LensGridData {
    QString title;
    QStringList rowLabels;      ///< N+1 lens layers
    QStringList colLabels;      ///< tokens shown (a window around the selection)
    int64_t firstToken = 0;     ///< token index of the first column
    std::vector<QString> text;  ///< rows x cols top-1 piece
    std::vector<float> prob;    ///< rows x cols the cell's colour value: top-1 probability, or KL (NaN = none)
    float scaleMax = 1;         ///< the colour scale runs 0..scaleMax (1 for probabilities)
    std::vector<bool> hitsNext; ///< rows x cols top-1 equals the actual next token
    int markRow = -1, markCol = -1;
    int rows() const { return static_cast<int>(rowLabels.size()); }
    int cols() const { return static_cast<int>(colLabels.size()); }
};

/// Draws a lens grid (cells with text, colourbar-free: the value in [0, scaleMax] on `map`).
void paintLensGrid(QPainter& p, const QRectF& rect, const LensGridData& data, const FigureStyle& style, ColormapId map);
/// The cell (x = column, y = row) at pos of a grid paintLensGrid drew into rect, positions on
/// the cells' border clamped into the grid; (-1, -1) outside the cells.
QPoint lensGridCellAt(const QRectF& rect, const LensGridData& data, const FigureStyle& style, const QPointF& pos);

} // namespace gwb::views
