#pragma once
// The Patching figure over a pairs file (a causal claim over a dataset), painter-only (gwb_figures):
// a clicked cell's distribution over the pairs and the first-order estimates against the exact
// values (their scatter and correlations). The same code draws the view's side panel
// (patching_pairs.h) and the exported figure (patching_figure.h).

#include "gwb/engine/causal_results.h"
#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QRectF>

#include <cstdint>

namespace gwb::views {

// The pairs results are the engine's plain data (gwb/engine/causal_results.h).
using gwb::engine::defaultPairsCell;
using gwb::engine::PairsData;
using gwb::engine::PairsGrid;
using gwb::engine::PairsInputs;

/// The distribution over pairs of cell (r, c) of `grid`: a histogram of the pairs' values with the
/// mean (solid line), its 95% interval (shaded) and 0 (dotted).
void paintCellDistribution(QPainter& p, const QRectF& rect, const PairsGrid& grid, int64_t r, int64_t c,
                           const FigureStyle& style);
/// The first-order estimate (x) against the exact metric change (y), both models, the line y = x
/// and each model's correlations in the legend.
void paintEstimateScatter(QPainter& p, const QRectF& rect, const PairsData& data, const FigureStyle& style);
/// The Patching view's side panel over pairs: cell (r, c) of model 0/1's distribution (model -1:
/// none clicked, a hint instead) above the estimate-against-exact scatter; a hint without data.
void paintPairsSide(QPainter& p, const QRectF& rect, const PairsData* data, int model, int64_t r, int64_t c,
                    const FigureStyle& style);

} // namespace gwb::views
