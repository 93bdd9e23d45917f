#pragma once
// Line and bar charts. On screen they are Qt Charts, kept inside this one class (Qt Charts is
// deprecated from Qt 6.10; swapping it touches only chart_widget.cpp). Figures are drawn with a
// plain QPainter by paintChart() so that exports are identical on every device.

#include "gwb/views/figure_options.h"

#include <QColor>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <limits>
#include <vector>

class QChartView;

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
    bool hasData() const;
};

/// Colour-blind-safe qualitative palette (Okabe-Ito), cycled.
QColor seriesColor(int index);

/// Draws a chart with axes, ticks, legend into rect.
void paintChart(QPainter& p, const QRectF& rect, const ChartData& data, const FigureStyle& style);

class ChartWidget : public QWidget {
    Q_OBJECT
public:
    explicit ChartWidget(QWidget* parent = nullptr);
    void setChart(const ChartData& data);
    const ChartData& chart() const { return m_data; }
    void setPlaceholder(const QString& text);

private:
    void rebuild();
    ChartData m_data;
    QString m_placeholder;
    QChartView* m_view = nullptr;
};

} // namespace gwb::views
