#pragma once
// The Attention figure's head thumbnails (painter-only): every head of a layer as a small query x
// key map, the selected head outlined. The view's head grid widget paints with the same function.

#include "gwb/views/colormap.h"
#include "gwb/views/downsample.h"
#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QRectF>

#include <memory>
#include <utility>
#include <vector>

namespace gwb::views::detail {

/// Levels a paint could not draw (not computed yet): {head, {level rows, level columns}}.
using MissingHeadLevels = std::vector<std::pair<int, std::pair<int, int>>>;

/// Grid of thumbnails into rect; returns the cell rects. computeMissing: compute the levels now
/// (figures); otherwise a head whose level is not cached is drawn grey (or from a coarser preview)
/// and listed in `missing` when given.
std::vector<QRectF> paintHeadGrid(QPainter& p, const QRectF& rect,
                                  const std::vector<std::shared_ptr<MatrixPyramid>>& pyramids, int selected,
                                  const ColorScale& scale, const FigureStyle& style, bool computeMissing,
                                  MissingHeadLevels* missing);

} // namespace gwb::views::detail
