#include "gwb/views/sphere_paint.h"

#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <numbers>

namespace gwb::views {
namespace {

Vec3 rotate(const Vec3& v, const SphereRotation& r) {
    // Yaw about y (vertical), then pitch about x.
    const double cy = std::cos(r.yaw), sy = std::sin(r.yaw), cp = std::cos(r.pitch), sp = std::sin(r.pitch);
    const double x1 = cy * v[0] + sy * v[2];
    const double z1 = -sy * v[0] + cy * v[2];
    const double y2 = cp * v[1] - sp * z1;
    const double z2 = sp * v[1] + cp * z1;
    return {x1, y2, z2};
}

} // namespace

SphereRotation clampedRotation(const SphereRotation& rotation) {
    SphereRotation r = rotation;
    r.pitch = std::clamp(r.pitch, -std::numbers::pi / 2, std::numbers::pi / 2);
    return r;
}

void paintSphere(QPainter& p, const QRectF& rect, const SphereData& data, const SphereRotation& rot,
                 const FigureStyle& style) {
    p.save();
    p.setRenderHint(QPainter::Antialiasing, true);
    const QFontMetricsF fmS = style.metrics(style.small);
    QRectF r = detail::paintPanelTitle(p, rect, data.title, style);
    // Legend on the right (or below when narrow).
    double legendW = 0;
    for (const auto& c : data.circles)
        legendW = std::max(legendW, fmS.horizontalAdvance(c.label));
    for (const auto& n : data.notes)
        legendW = std::max(legendW, std::min(fmS.horizontalAdvance(n), r.width() * 0.4));
    legendW += fmS.height() * 2.2;
    const bool legendRight = r.width() - legendW > r.height() * 0.8;
    QRectF sphereArea = legendRight
                            ? QRectF(r.left(), r.top(), r.width() - legendW, r.height())
                            : QRectF(r.left(), r.top(), r.width(),
                                     r.height() - fmS.height() * 1.2 * (data.circles.size() + data.notes.size()));
    const double radius = std::max(4.0, std::min(sphereArea.width(), sphereArea.height()) / 2 - fmS.height() * 1.3);
    const QPointF c = sphereArea.center();
    auto proj = [&](const Vec3& v) {
        const Vec3 w = rotate(v, rot);
        return std::make_pair(QPointF(c.x() + radius * w[0], c.y() - radius * w[1]), w[2]);
    };
    // Sphere outline and faint coordinate great circles.
    p.setPen(QPen(QColor(120, 120, 120), style.hairline));
    p.setBrush(QColor(248, 248, 248));
    p.drawEllipse(c, radius, radius);
    p.setBrush(Qt::NoBrush);
    auto drawCircle = [&](const Vec3& e1, const Vec3& e2, const QColor& color, double width) {
        constexpr int kSteps = 180;
        QPainterPath front, back;
        bool frontOpen = false, backOpen = false;
        for (int i = 0; i <= kSteps; ++i) {
            const double s = 2 * std::numbers::pi * i / kSteps;
            const Vec3 v{std::cos(s) * e1[0] + std::sin(s) * e2[0], std::cos(s) * e1[1] + std::sin(s) * e2[1],
                         std::cos(s) * e1[2] + std::sin(s) * e2[2]};
            const auto [pt, depth] = proj(v);
            QPainterPath& path = depth >= 0 ? front : back;
            bool& open = depth >= 0 ? frontOpen : backOpen;
            bool& otherOpen = depth >= 0 ? backOpen : frontOpen;
            if (!open)
                path.moveTo(pt);
            else
                path.lineTo(pt);
            open = true;
            otherOpen = false;
        }
        QPen pf(color, width);
        p.setPen(pf);
        p.drawPath(front);
        QPen pb(color, width * 0.6, Qt::DashLine);
        pb.setDashPattern({3, 3});
        p.setPen(pb);
        p.drawPath(back);
    };
    const Vec3 X{1, 0, 0}, Y{0, 1, 0}, Z{0, 0, 1};
    const QColor grid(205, 205, 205);
    drawCircle(X, Y, grid, style.hairline);
    drawCircle(Y, Z, grid, style.hairline);
    drawCircle(X, Z, grid, style.hairline);
    // Axis tips.
    p.setFont(style.small);
    const Vec3 axes[3] = {X, Y, Z};
    for (int i = 0; i < 3; ++i) {
        const auto [pt, depth] = proj(axes[i]);
        const auto [pt2, d2] = proj(Vec3{axes[i][0] * 1.12, axes[i][1] * 1.12, axes[i][2] * 1.12});
        p.setPen(QPen(depth >= 0 ? QColor(90, 90, 90) : QColor(170, 170, 170), style.hairline));
        p.drawLine(c + (pt - c) * 0.0, pt);
        const QString name = data.axisNames[static_cast<size_t>(i)];
        p.drawText(QRectF(pt2.x() - 40, pt2.y() - fmS.height() / 2, 80, fmS.height()), Qt::AlignCenter, name);
        (void)d2;
    }
    for (const auto& circle : data.circles)
        drawCircle(circle.e1, circle.e2, circle.color, style.hairline * 3);
    for (const auto& pnt : data.points) {
        const auto [pt, depth] = proj(pnt.v);
        p.setPen(QPen(Qt::black, style.hairline));
        p.setBrush(depth >= 0 ? pnt.color : QColor(pnt.color.red(), pnt.color.green(), pnt.color.blue(), 90));
        const double m = fmS.height() * 0.22;
        p.drawEllipse(pt, m, m);
        if (!pnt.label.isEmpty()) {
            p.setPen(Qt::black);
            p.drawText(pt + QPointF(m * 1.5, -m), pnt.label);
        }
    }
    p.setBrush(Qt::NoBrush);
    // Legend.
    double lx = legendRight ? sphereArea.right() + fmS.height() * 0.5 : r.left();
    double ly = legendRight ? r.top() + fmS.height() * 0.5 : sphereArea.bottom() + fmS.height() * 0.2;
    for (const auto& circle : data.circles) {
        p.setPen(QPen(circle.color, style.hairline * 4));
        p.drawLine(QPointF(lx, ly + fmS.height() / 2), QPointF(lx + fmS.height() * 1.2, ly + fmS.height() / 2));
        p.setPen(Qt::black);
        p.drawText(QPointF(lx + fmS.height() * 1.6, ly + fmS.ascent()), circle.label);
        ly += fmS.height() * 1.2;
    }
    p.setPen(Qt::darkGray);
    const double noteW = legendRight ? rect.right() - lx : r.width();
    for (const auto& n : data.notes) {
        const QRectF need = fmS.boundingRect(QRectF(0, 0, noteW, 1e6), Qt::TextWordWrap, n);
        p.drawText(QRectF(lx, ly, noteW, need.height()), Qt::TextWordWrap, n);
        ly += need.height() + fmS.height() * 0.2;
    }
    p.restore();
}

} // namespace gwb::views
