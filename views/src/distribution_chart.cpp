#include "gwb/views/distribution_chart.h"

#include <QPainter>
#include <QPalette>

namespace gwb::views {

DistributionWidget::DistributionWidget(QWidget* parent) : QWidget(parent) {
    setMinimumSize(240, 160);
}

void DistributionWidget::setChart(const DistributionChartData& data) {
    m_data = data;
    m_placeholder.clear();
    update();
}

void DistributionWidget::setPlaceholder(const QString& text) {
    m_data = DistributionChartData{};
    m_placeholder = text;
    update();
}

void DistributionWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setRenderHint(QPainter::Antialiasing, true);
    if (!m_data.hasData()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                   m_placeholder.isEmpty() ? QStringLiteral("No data") : m_placeholder);
        return;
    }
    paintDistributionChart(p, QRectF(rect()).adjusted(6, 6, -6, -6), m_data, FigureStyle::forScreen(font()));
}

} // namespace gwb::views
