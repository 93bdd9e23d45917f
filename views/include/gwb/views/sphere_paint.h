#pragma once
// The unit sphere as data and its painter (gwb_figures): great circles (2-planes through the
// origin of R^3) and points, projected orthographically under a rotation; back halves dashed.
// Figures paint it with paintSphere; the window shows the same SphereData in SphereWidget
// (sphere_widget.h), which the user rotates by dragging.

#include "gwb/views/figure_options.h"

#include <QColor>
#include <QString>
#include <QStringList>

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

/// The rotation with its pitch kept within [-pi/2, pi/2] (the sphere is never turned over).
SphereRotation clampedRotation(const SphereRotation& rotation);

/// Draws the sphere, its circles and points, axis tips and a legend into rect.
void paintSphere(QPainter& p, const QRectF& rect, const SphereData& data, const SphereRotation& rotation,
                 const FigureStyle& style);

} // namespace gwb::views
