#pragma once
// The Patching view over a pairs file (a causal claim over a dataset): per model the sweep of one
// site for every usable pair, the mean of each cell over pairs with its 95% bootstrap interval and
// count, each pair's value (a clicked cell's distribution) and the first-order estimates against
// the exact values (their scatter and correlation). Plain data, filled by the application; drawn
// with a QPainter, the same code on screen and in exported figures.

#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <limits>
#include <vector>

namespace gwb::views {

/// What the person asked for: the file and how to run it (site and mode come from the view's fields).
struct PairsInputs {
    QString file;
    QString site = QStringLiteral("resid");
    QString mode = QStringLiteral("patch");
    QString method = QStringLiteral("exact"); ///< "exact" or "attribution"
    int check = 5;                            ///< attribution: K cells of largest |estimate| + K random run exactly
};

/// One model's run over the pairs.
struct PairsGrid {
    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    QString model;     ///< "Grassmann" or "Transformer"
    QString modelName; ///< the model's display name
    QString site;      ///< the site run on this model
    QString error;     ///< why there is no grid ("" = there is one)
    int64_t rows = 0, cols = 0;
    QStringList rowLabels, colLabels; ///< columns of a position site count back from the metric position m
    QString rowTitle, colTitle;
    bool estimated = false;       ///< attribution: values are estimated metric changes, not normalised effects
    std::vector<int64_t> lines;   ///< P: the pairs file's line of each pair
    std::vector<double> values;   ///< P x rows x cols: effect (exact) or attribution; NaN = undefined for that pair
    std::vector<uint8_t> flagged; ///< P x rows x cols (attribution): a saturated gate on the path
    std::vector<double> mean, low, high; ///< rows x cols: mean over pairs and its 95% percentile-bootstrap interval
    std::vector<int64_t> n;              ///< rows x cols: pairs with a defined value
    /// Estimate against exact metric change (pair x cell), the scatter's points: every cell of every
    /// pair for an exact run, the checked cells for an attribution run.
    std::vector<double> scatterEstimate, scatterExact;
    double spearman = kNaN, pearson = kNaN; ///< of those points (gwb::engine::spearmanCorrelation, ...)
    QStringList skipped;                    ///< "line N: reason" of every line this model could not use
    int64_t usable = 0;                     ///< pairs this model could run
    bool complete = true;                   ///< false: cancelled after `pairs()` of `usable` pairs

    bool hasGrid() const { return error.isEmpty() && rows > 0 && cols > 0 && !lines.empty(); }
    int64_t pairs() const { return static_cast<int64_t>(lines.size()); }
    /// The value of pair p in cell (r, c); NaN where undefined.
    double value(int64_t p, int64_t r, int64_t c) const;
    /// The mean of cell (r, c); NaN where no pair defines it.
    double meanAt(int64_t r, int64_t c) const;
    /// Every defined value of cell (r, c), in pair order.
    std::vector<double> cellValues(int64_t r, int64_t c) const;
    /// "effect" or "estimated metric change".
    QString valueName() const;
};

struct PairsData {
    PairsInputs inputs;
    QString error;     ///< the file could not be used at all: the message shown, nothing else changes
    QString format;    ///< "jsonl" or "csv"
    int64_t lines = 0; ///< data lines of the file
    int bootstrap = 1000;
    uint64_t seed = 0;
    PairsGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
    const PairsGrid& grid(int model) const { return model == 0 ? grassmann : transformer; }
};

/// The cell (flat index r * cols + c) a figure shows when none was clicked: the largest |mean| among
/// cells whose pairs differ (not the final block input at m, 1 for every pair by definition), else
/// the largest |mean|; -1 when no cell is defined.
int64_t defaultPairsCell(const PairsGrid& grid);

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
