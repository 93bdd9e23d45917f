#pragma once
// Box (or violin) plots of distributions per category on screen: the chart's data and painter are
// distribution_paint.h (gwb_figures), the same code as in exported figures.

#include "gwb/views/distribution_paint.h"

#include <QString>
#include <QWidget>

namespace gwb::views {

class DistributionWidget : public QWidget {
    Q_OBJECT
public:
    explicit DistributionWidget(QWidget* parent = nullptr);
    void setChart(const DistributionChartData& data);
    const DistributionChartData& chart() const { return m_data; }
    void setPlaceholder(const QString& text);

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    DistributionChartData m_data;
    QString m_placeholder;
};

} // namespace gwb::views
