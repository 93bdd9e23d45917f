#include "gwb/views/sphere_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

namespace gwb::views {

SphereWidget::SphereWidget(QWidget* parent) : QWidget(parent) {
    setMinimumSize(200, 150);
    setCursor(Qt::OpenHandCursor);
}

void SphereWidget::setSphere(const SphereData& data) {
    m_data = data;
    m_placeholder.clear();
    update();
}

void SphereWidget::setPlaceholder(const QString& text) {
    m_data = SphereData{};
    m_placeholder = text;
    update();
}

void SphereWidget::setRotation(const SphereRotation& r) {
    m_rotation = clampedRotation(r);
    update();
    Q_EMIT rotationChanged();
}

void SphereWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (!m_placeholder.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    paintSphere(p, QRectF(rect()).adjusted(6, 6, -6, -6), m_data, m_rotation, FigureStyle::forScreen(font()));
}

void SphereWidget::mousePressEvent(QMouseEvent* e) {
    m_last = e->position();
}

void SphereWidget::mouseMoveEvent(QMouseEvent* e) {
    if (!(e->buttons() & Qt::LeftButton)) return;
    const QPointF d = e->position() - m_last;
    m_last = e->position();
    const double scale = 2.0 / std::max(60, std::min(width(), height()));
    setRotation(SphereRotation{m_rotation.yaw + d.x() * scale, m_rotation.pitch + d.y() * scale});
}

} // namespace gwb::views
