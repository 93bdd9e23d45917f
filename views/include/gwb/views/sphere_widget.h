#pragma once
// The unit sphere on screen: SphereData (sphere_paint.h) drawn by paintSphere under a rotation
// the user changes by dragging.

#include "gwb/views/sphere_paint.h"

#include <QWidget>

namespace gwb::views {

class SphereWidget : public QWidget {
    Q_OBJECT
public:
    explicit SphereWidget(QWidget* parent = nullptr);
    void setSphere(const SphereData& data);
    const SphereData& sphere() const { return m_data; }
    void setPlaceholder(const QString& text);
    SphereRotation rotation() const { return m_rotation; }
    void setRotation(const SphereRotation& r);

Q_SIGNALS:
    void rotationChanged();

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;

private:
    SphereData m_data;
    QString m_placeholder;
    SphereRotation m_rotation;
    QPointF m_last;
};

} // namespace gwb::views
