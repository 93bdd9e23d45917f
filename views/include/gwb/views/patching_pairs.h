#pragma once
// The Patching view over a pairs file (a causal claim over a dataset): per model the sweep of one
// site for every usable pair, the mean of each cell over pairs with its 95% bootstrap interval and
// count, each pair's value (a clicked cell's distribution) and the first-order estimates against
// the exact values (their scatter and correlation). Plain data, filled by the application; drawn
// with a QPainter, the same code on screen and in exported figures.

#include "gwb/engine/causal_results.h"
#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <limits>
#include <vector>

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

/// The side panel of the Patching view over pairs: a clicked cell's distribution above the
/// estimate-against-exact scatter.
class PairsPlotsWidget : public QWidget {
    Q_OBJECT
public:
    explicit PairsPlotsWidget(QWidget* parent = nullptr);
    void setData(const PairsData* data); ///< not owned; null = nothing
    /// The cell whose distribution is shown (model 0/1, -1 = none).
    void setCell(int model, int64_t r, int64_t c);
    int cellModel() const { return m_model; }
    int64_t cellRow() const { return m_row; }
    int64_t cellCol() const { return m_col; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    const PairsData* m_data = nullptr;
    int m_model = -1;
    int64_t m_row = -1, m_col = -1;
};

} // namespace gwb::views
