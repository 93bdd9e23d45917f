#pragma once
// Box (or violin) plots of distributions per category as data, and their painter (gwb_figures):
// several series side by side in each category (e.g. per layer: the Grassmann model and the
// Transformer). Drawn with a plain QPainter, the same code on screen (DistributionWidget,
// distribution_chart.h) and in exported figures.

#include "gwb/views/corpus_summary.h"
#include "gwb/views/figure_options.h"

#include <QColor>
#include <QString>
#include <QStringList>
#include <vector>

namespace gwb::views {

struct DistributionSeries {
    QString name;
    QColor color;
    std::vector<DistributionSummary> boxes; ///< one per category (n = 0: nothing drawn there)
};

struct DistributionChartData {
    QString title;
    QString xTitle;
    QString yTitle;
    QStringList categories; ///< one label per category (x)
    std::vector<DistributionSeries> series;
    std::vector<double> edges; ///< the histogram's B+1 edges (violins; log axis for log edges)
    bool violin = false;       ///< violin (histogram density, mirrored) around a thin box instead of a box
    /// A line under the key, e.g. that part of a model's values lies beyond the histogram's last
    /// edge, where its whiskers stop ("" = none).
    QString note;
    bool hasData() const;
};

/// Draws the chart into rect: legend, key, axes, one box or violin per series and category with
/// whiskers (2.5-97.5 %), median, mean (diamond) and its 95% interval (black bar).
void paintDistributionChart(QPainter& p, const QRectF& rect, const DistributionChartData& data,
                            const FigureStyle& style);

} // namespace gwb::views
