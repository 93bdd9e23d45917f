#pragma once
// Draws a heatmap (image of the visible window, token labels, colorbar) with a plain QPainter:
// the widget paints with it on screen, figures paint with it on PNG/SVG/PDF devices.

#include "gwb/views/colormap.h"
#include "gwb/views/downsample.h"
#include "gwb/views/figure_options.h"

#include <QImage>
#include <QRectF>
#include <QStringList>

#include <cstdint>
#include <utility>
#include <vector>

namespace gwb::views {

/// Texts around a heatmap.
struct HeatmapAxes {
    QString title;         ///< above the plot ("" = none)
    QString rowTitle;      ///< e.g. "layer"
    QString colTitle;      ///< e.g. "token"
    QString valueName;     ///< colorbar label, e.g. "mean gate"
    QStringList rowLabels; ///< one per source row (may be empty: indices are shown)
    QStringList colLabels; ///< one per source column
};

/// Rows/columns to outline (the current selection); -1 = none.
struct HeatmapMarks {
    int64_t row = -1;
    int64_t col = -1;
    /// rows x cols, or empty: 1 = the cell passed a stated test (a pairs sweep's Holm-corrected
    /// cells); drawn as a dot at the cell's centre, always (not a selection).
    std::vector<uint8_t> cells;
    HeatmapMarks() = default;
    HeatmapMarks(int64_t markRow, int64_t markCol, std::vector<uint8_t> markCells = {})
        : row(markRow), col(markCol), cells(std::move(markCells)) {}
};

/// Result of colorizing a window: the image and the level it came from.
struct HeatmapImage {
    QImage image;          ///< one pixel per output pixel, ARGB32; null when no level is ready
    int64_t blockRows = 1; ///< source rows summarized per level cell
    int64_t blockCols = 1;
    bool preview = false; ///< a coarser cached level stands in while the right one is computed
    int levelRows = 0;    ///< level exponents wanted (for the widget's async computation)
    int levelCols = 0;
};

/// Colors the source window (x = column, y = row, in cells) into `pixels`. With computeMissing the
/// needed level is computed synchronously; otherwise a cached coarser level (preview) or nothing.
HeatmapImage colorizeWindow(MatrixPyramid& pyramid, const QRectF& window, QSize pixels, const ColorScale& scale,
                            bool computeMissing);

/// Where paintHeatmap put things (for mouse mapping on screen).
struct HeatmapGeometry {
    QRectF plot;     ///< the matrix image
    QRectF colorbar; ///< the colour bar (empty when off)
};

/// Paints title, matrix window, labels (thinned when crowded), colorbar and the downsampling note.
HeatmapGeometry paintHeatmap(QPainter& p, const QRectF& area, MatrixPyramid& pyramid, const QRectF& window,
                             const ColorScale& scale, const HeatmapAxes& axes, const FigureStyle& style,
                             const HeatmapMarks& marks, bool computeMissing, HeatmapImage* used = nullptr);

/// Paints a vertical colorbar with ticks and the value name into rect.
void paintColorbar(QPainter& p, const QRectF& rect, const ColorScale& scale, const QString& valueName,
                   const FigureStyle& style);

} // namespace gwb::views
