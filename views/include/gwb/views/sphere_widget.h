#pragma once
// Unit sphere with great circles (2-planes through the origin of R^3) and points, projected
// orthographically under a rotation the user changes by dragging. Back halves are dashed.

#include "gwb/views/figure_options.h"

#include <QColor>
#include <QWidget>
#include <array>
#include <vector>

namespace gwb::views {

using Vec3 = std::array<double, 3>;

struct SphereData {
    struct Circle {
        QString label;
        QColor color;
        Vec3 e1{}; ///< orthonormal basis of the plane
        Vec3 e2{};
    };
    struct Point {
        QString label;
        QColor color;
        Vec3 v{}; ///< unit vector
    };
    QString title;
    std::array<QString, 3> axisNames{QStringLiteral("PC1"), QStringLiteral("PC2"), QStringLiteral("PC3")};
    std::vector<Circle> circles;
    std::vector<Point> points;
    QStringList notes; ///< lines under the legend (e.g. planes that collapse under projection)
};

/// View rotation: yaw about the vertical axis, then pitch about the horizontal one (radians).
struct SphereRotation {
    double yaw = 0.6;
    double pitch = 0.35;
};

/// Draws the sphere, its circles and points, axis tips and a legend into rect.
void paintSphere(QPainter& p, const QRectF& rect, const SphereData& data, const SphereRotation& rotation,
                 const FigureStyle& style);

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
