#pragma once
// Line and bar charts on screen: Qt Charts, kept inside this one class (Qt Charts is deprecated from
// Qt 6.10; swapping it touches only chart_widget.cpp). The data and the figure painter: chart_data.h.

#include "gwb/views/chart_data.h"

#include <QColor>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <limits>
#include <utility>
#include <vector>

class QAbstractAxis;
class QValueAxis;
class QChartView;

namespace gwb::views {

class ChartWidget : public QWidget {
    Q_OBJECT
public:
    explicit ChartWidget(QWidget* parent = nullptr);
    /// Smallest height at which titles, tick labels and axis titles are drawn whole.
    static constexpr int kReadableHeight = 170;
    void setChart(const ChartData& data);
    const ChartData& chart() const { return m_data; }
    void setPlaceholder(const QString& text);
    /// The message shown instead of a chart ("" while a chart is shown).
    const QString& placeholder() const { return m_placeholder; }
    /// The tooltip of the bar under the pointer (ChartData::barTips), "" when none is shown.
    const QString& shownBarTip() const { return m_barTip; }

Q_SIGNALS:
    /// A bar chart's bar was clicked: its category index.
    void barClicked(int category);

public:
protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    /// Category labels stand upright when side by side they would not fit (Qt Charts would
    /// otherwise cut them to "…").
    void updateLabelAngle();
    int yTickBudget() const;
    /// Bar charts whose bars stand too close for their indices: label every k-th bar (k > 1).
    int indexLabelStep() const;
    int m_indexStep = 1;
    /// The tooltip naming why values are undefined (ChartData::undefinedReason), or "".
    void setUndefinedTip(const QString& tip);
    QString m_undefinedTip;
    QString m_barTip;
    /// A bar was entered (on) or left: its ChartData::barTips entry as the tooltip.
    void showBarTip(bool on, int category);
    ChartData m_data;
    QAbstractAxis* m_categoryAxis = nullptr;
    /// Bar charts: the categories with no defined value; their labels carry " —" (also after a resize).
    std::vector<bool> m_undefinedCategory;
    QValueAxis* m_valueAxis = nullptr; ///< the linear y axis (ticks follow the height)
    QString m_placeholder;
    QChartView* m_view = nullptr;
};

} // namespace gwb::views
