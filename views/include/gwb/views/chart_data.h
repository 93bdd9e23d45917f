#pragma once
// Line and bar charts as data, and their painter (gwb_figures): figures are drawn with a plain
// QPainter by paintChart() so that exports are identical on every device; the window shows the
// same ChartData in ChartWidget (Qt Charts, chart_widget.h).

#include "gwb/views/figure_options.h"

#include <QColor>
#include <QString>
#include <QStringList>

#include <limits>
#include <utility>
#include <vector>

namespace gwb::views {

struct ChartSeries {
    QString name;
    std::vector<double> x; ///< x values (line charts); ignored for bars (category index)
    std::vector<double> y; ///< y values; NaN = gap
    QColor color;          ///< invalid = palette colour by series index
};

struct ChartData {
    enum class Kind { Line, Bar };
    Kind kind = Kind::Line;
    QString title;
    QString xTitle;
    QString yTitle;
    QStringList categories; ///< bar charts: one label per bar group; line charts: optional x tick labels
    std::vector<ChartSeries> series;
    double yMin = std::numeric_limits<double>::quiet_NaN(); ///< NaN = from data
    double yMax = std::numeric_limits<double>::quiet_NaN();
    /// Logarithmic y axis with ticks at 1, 10, 100, 1k, ... (values <= 0 are not drawn); for
    /// ranks and other quantities spanning decades.
    bool logY = false;
    /// Bar charts: the series stack in one bar per category instead of standing side by side
    /// (e.g. one series per kind, each bar in exactly one of them: bars coloured by kind).
    bool stacked = false;
    /// Bar charts over a value range (a histogram): ticks at bar edges instead of a label under
    /// each bar. {position in bars: 0 = the first bar's left edge, n = the last one's right edge; label}.
    std::vector<std::pair<double, QString>> edgeTicks;
    /// Bar charts: what hovering each category's bar shows ("" = nothing), e.g. its range and count.
    QStringList barTips;
    /// Why a NaN value is undefined (bar charts: the bar reads "—" and, on screen, this is the
    /// chart's tooltip); "" = no reason given.
    QString undefinedReason;
    bool hasData() const;
};

/// Colour-blind-safe qualitative palette (Okabe-Ito), cycled.
QColor seriesColor(int index);

/// Tick label of a log axis: 1, 10, 100, 1k, 10k, 100k, 1M, ...
QString decadeLabel(double value);

/// Draws a chart with axes, ticks, legend into rect. A rect too short for two tick intervals
/// gets "panel too small for this chart" instead of an unreadable plot.
void paintChart(QPainter& p, const QRectF& rect, const ChartData& data, const FigureStyle& style);
/// The height at which paintChart draws `data` readably at `width`: its title and legend as they
/// wrap, three tick intervals, the x labels and the x title. Figure layouts give charts at least this.
double chartHeightFor(const ChartData& data, double width, const FigureStyle& style);

} // namespace gwb::views
