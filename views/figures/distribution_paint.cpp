#include "gwb/views/distribution_paint.h"

#include "plot_util.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace gwb::views {

bool DistributionChartData::hasData() const {
    for (const auto& s : series)
        for (const auto& b : s.boxes)
            if (b.n > 0) return true;
    return false;
}

namespace {

/// Axis value of v: log10 on a log axis.
double axisValue(double v, bool logAxis) {
    if (!logAxis) return v;
    return v > 0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN();
}

std::pair<double, double> valueRange(const DistributionChartData& d, bool logAxis) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    auto take = [&](double v) {
        const double a = axisValue(v, logAxis);
        if (!std::isfinite(a)) return;
        lo = std::min(lo, a);
        hi = std::max(hi, a);
    };
    const size_t B = d.edges.size() < 2 ? 0 : d.edges.size() - 1;
    for (const auto& s : d.series)
        for (const auto& b : s.boxes) {
            if (b.n <= 0) continue;
            for (double v : {b.p025, b.p975, b.mean, b.ciLow, b.ciHigh})
                take(v);
            // A violin shows every non-empty bin: the axis covers them all, so none is clipped.
            if (d.violin && B > 0 && b.counts.size() == B + 2)
                for (size_t k = 0; k < B; ++k)
                    if (b.counts[k + 1] > 0) {
                        take(d.edges[k]);
                        take(d.edges[k + 1]);
                    }
        }
    if (!(lo <= hi)) return {0, 1};
    if (hi - lo < 1e-12) {
        const double pad = std::max(1e-6, std::abs(hi) * 0.1);
        return {lo - pad, hi + pad};
    }
    const double pad = (hi - lo) * 0.05;
    return {lo - pad, hi + pad};
}

void drawDiamond(QPainter& p, const QPointF& c, double r) {
    QPolygonF d;
    d << QPointF(c.x(), c.y() - r) << QPointF(c.x() + r, c.y()) << QPointF(c.x(), c.y() + r)
      << QPointF(c.x() - r, c.y());
    p.drawPolygon(d);
}

} // namespace

void paintDistributionChart(QPainter& p, const QRectF& rect, const DistributionChartData& d, const FigureStyle& style) {
    p.save();
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    QRectF r = detail::paintPanelTitle(p, rect, d.title, style);
    const bool logAxis = isLogEdges(d.edges);

    // Legend (series) and key (glyphs), wrapped into rows at the top.
    p.setFont(style.small);
    {
        double x = r.left(), y = r.top();
        const double sw = fmS.height() * 1.1;
        auto place = [&](double w) {
            if (x + w > r.right() && x > r.left()) {
                x = r.left();
                y += fmS.height() * 1.15;
            }
        };
        for (const auto& s : d.series) {
            const double w = sw + fmS.horizontalAdvance(s.name) + fmS.height() * 0.8;
            place(w);
            QColor fill = s.color;
            fill.setAlphaF(0.35);
            p.setPen(QPen(s.color, style.hairline * 2));
            p.setBrush(fill);
            p.drawRect(QRectF(x, y + fmS.height() * 0.2, sw * 0.8, fmS.height() * 0.6));
            p.setBrush(Qt::NoBrush);
            p.setPen(Qt::black);
            p.drawText(QPointF(x + sw, y + fmS.ascent()), s.name);
            x += w;
        }
        const QString key = d.violin ? QStringLiteral("violin: histogram density; box: quartiles; whiskers: 2.5–97.5%; "
                                                      "◆ mean, bar: 95% normal interval")
                                     : QStringLiteral("box: quartiles; whiskers: 2.5–97.5%; ◆ mean, bar: 95% normal "
                                                      "interval of the mean");
        // The key wraps onto as many lines as it needs (never cut): on the legend's row when it
        // fits there, else on its own lines below.
        const double kw = fmS.horizontalAdvance(key);
        place(kw);
        if (x + kw > r.right()) {
            x = r.left();
            if (!d.series.empty()) y += fmS.height() * 1.15;
        }
        const QRectF keyRect =
            fmS.boundingRect(QRectF(x, y, r.right() - x, 1e6), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, key);
        p.setPen(QColor(70, 70, 70));
        p.drawText(QRectF(x, y, r.right() - x, keyRect.height()), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, key);
        y += keyRect.height();
        if (!d.note.isEmpty()) {
            const QRectF noteRect = fmS.boundingRect(QRectF(r.left(), y, r.width(), 1e6),
                                                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, d.note);
            p.setPen(QColor(150, 60, 0));
            p.drawText(QRectF(r.left(), y, r.width(), noteRect.height()),
                       Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, d.note);
            y += noteRect.height();
        }
        r.setTop(y + fmS.height() * 0.4);
    }

    const auto [ylo, yhi] = valueRange(d, logAxis);
    std::vector<double> yTicks;
    if (logAxis) {
        for (double e = std::ceil(ylo); e <= yhi + 1e-9; e += 1)
            yTicks.push_back(e);
        if (yTicks.size() < 2) yTicks = detail::niceTicks(ylo, yhi, 5);
    } else {
        yTicks = detail::niceTicks(ylo, yhi, std::max(2, static_cast<int>(r.height() / (fmS.height() * 2.2))));
    }
    auto tickText = [&](double t) { return detail::formatValue(logAxis ? std::pow(10.0, t) : t); };
    double tickW = 0;
    for (double t : yTicks)
        tickW = std::max(tickW, fmS.horizontalAdvance(tickText(t)));
    const double tick = fmS.height() * 0.25;
    const int C = static_cast<int>(d.categories.size());
    double catW = 0;
    for (const QString& c : d.categories)
        catW = std::max(catW, fmS.horizontalAdvance(c));
    QRectF plot = r.adjusted(tickW + tick * 2 + (d.yTitle.isEmpty() ? 0 : fmB.height() * 1.2), fmS.height() * 0.3,
                             -fmS.height() * 0.3, 0);
    const double slot = plot.width() / std::max(1, C);
    const bool rotate = catW > slot * 0.95;
    const double xLabelH = rotate ? catW : fmS.height();
    plot.setBottom(plot.bottom() - (xLabelH + tick * 2 + (d.xTitle.isEmpty() ? 0 : fmB.height() * 1.2)));
    auto X = [&](double i) { return plot.left() + (i + 0.5) * slot; };
    auto Ya = [&](double a) { return plot.bottom() - (a - ylo) / (yhi - ylo) * plot.height(); }; // axis units
    auto Y = [&](double v) { return Ya(axisValue(v, logAxis)); };                                // data values

    detail::paintYTicks(p, plot, yTicks, Ya, tickText, tick, style);
    const int step = std::max(
        1, static_cast<int>(std::ceil((rotate ? fmS.height() * 1.05 : catW + fmS.height()) / std::max(1e-9, slot))));
    for (int i = 0; i < C; i += step) {
        const double x = X(i);
        p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + tick));
        if (rotate)
            detail::drawRotatedText(p, QPointF(x, plot.bottom() + tick * 2), d.categories[i], Qt::AlignRight);
        else
            p.drawText(QRectF(x - slot * step / 2, plot.bottom() + tick * 2, slot * step, fmS.height()),
                       Qt::AlignHCenter | Qt::AlignTop, d.categories[i]);
    }
    detail::paintAxisTitles(p, r, plot, d.yTitle, d.xTitle, tick, xLabelH, style);

    p.save();
    p.setClipRect(plot.adjusted(-2, -2, 2, 2));
    const size_t S = std::max<size_t>(1, d.series.size());
    const double groupW = slot * 0.84, sub = groupW / static_cast<double>(S);
    const size_t B = d.edges.size() < 2 ? 0 : d.edges.size() - 1;
    for (size_t s = 0; s < d.series.size(); ++s) {
        const DistributionSeries& ser = d.series[s];
        QColor fill = ser.color;
        fill.setAlphaF(d.violin ? 0.3 : 0.35);
        for (size_t i = 0; i < ser.boxes.size() && static_cast<int>(i) < C; ++i) {
            const DistributionSummary& b = ser.boxes[i];
            const double cx = X(static_cast<double>(i)) - groupW / 2 + sub * (static_cast<double>(s) + 0.5);
            if (b.n <= 0) {
                p.setPen(QPen(Qt::darkGray, style.hairline));
                p.setFont(style.small);
                p.drawText(QRectF(cx - sub / 2, plot.bottom() - fmS.height() * 1.2, sub, fmS.height()), Qt::AlignCenter,
                           QStringLiteral("–"));
                continue;
            }
            double half = sub * 0.34;
            if (d.violin && B > 0 && b.counts.size() == B + 2) {
                // Density per unit of the axis (log10 units on a log axis), scaled to the slot.
                std::vector<double> dens(B, 0.0);
                double maxD = 0;
                for (size_t k = 0; k < B; ++k) {
                    const double w = axisValue(d.edges[k + 1], logAxis) - axisValue(d.edges[k], logAxis);
                    dens[k] = w > 0 ? static_cast<double>(b.counts[k + 1]) / w : 0;
                    maxD = std::max(maxD, dens[k]);
                }
                size_t kFirst = B, kLast = 0;
                for (size_t k = 0; k < B; ++k)
                    if (dens[k] > 0) {
                        kFirst = std::min(kFirst, k);
                        kLast = k;
                    }
                if (maxD > 0 && kFirst <= kLast) {
                    // A smooth outline through the bins' centres (not steps: a quantity that fills a
                    // few of the fixed bins would look blocky), closed at the outer non-empty bins' edges.
                    QPolygonF right, left;
                    auto add = [&](double y, double w) {
                        right << QPointF(cx + w, y);
                        left << QPointF(cx - w, y);
                    };
                    add(Y(d.edges[kFirst]), 0);
                    for (size_t k = kFirst; k <= kLast; ++k) {
                        const double centre = (axisValue(d.edges[k], logAxis) + axisValue(d.edges[k + 1], logAxis)) / 2;
                        add(Ya(centre), dens[k] / maxD * sub * 0.46);
                    }
                    add(Y(d.edges[kLast + 1]), 0);
                    std::reverse(left.begin(), left.end());
                    QPolygonF shape = right + left;
                    p.setPen(QPen(ser.color, style.hairline * 1.5));
                    p.setBrush(fill);
                    p.drawPolygon(shape);
                }
                half = sub * 0.08;
            }
            const QPen pen(ser.color.darker(130), style.hairline * 2);
            p.setPen(pen);
            p.setBrush(Qt::NoBrush);
            // Whiskers with caps.
            p.drawLine(QPointF(cx, Y(b.p025)), QPointF(cx, Y(b.q1)));
            p.drawLine(QPointF(cx, Y(b.q3)), QPointF(cx, Y(b.p975)));
            p.drawLine(QPointF(cx - half * 0.5, Y(b.p025)), QPointF(cx + half * 0.5, Y(b.p025)));
            p.drawLine(QPointF(cx - half * 0.5, Y(b.p975)), QPointF(cx + half * 0.5, Y(b.p975)));
            // Box Q1..Q3 and the median.
            p.setBrush(d.violin ? QBrush(ser.color.darker(130)) : QBrush(fill));
            p.drawRect(QRectF(QPointF(cx - half, Y(b.q3)), QPointF(cx + half, Y(b.q1))).normalized());
            p.setBrush(Qt::NoBrush);
            p.setPen(QPen(d.violin ? Qt::white : Qt::black, style.hairline * 2.5));
            p.drawLine(QPointF(cx - half, Y(b.median)), QPointF(cx + half, Y(b.median)));
            // Mean with its 95% interval.
            if (std::isfinite(b.ciLow) && std::isfinite(b.ciHigh)) {
                const double mx = cx + half + std::min(sub * 0.1, fmS.height() * 0.6);
                p.setPen(QPen(Qt::black, style.hairline * 3, Qt::SolidLine, Qt::FlatCap));
                p.drawLine(QPointF(mx, Y(b.ciLow)), QPointF(mx, Y(b.ciHigh)));
                p.setPen(QPen(Qt::black, style.hairline * 1.5));
                p.setBrush(Qt::white);
                drawDiamond(p, QPointF(mx, Y(b.mean)), std::max(1.5, fmS.height() * 0.3));
            } else if (std::isfinite(b.mean)) {
                p.setPen(QPen(Qt::black, style.hairline * 1.5));
                p.setBrush(Qt::white);
                drawDiamond(p, QPointF(cx + half + std::min(sub * 0.1, fmS.height() * 0.6), Y(b.mean)),
                            std::max(1.5, fmS.height() * 0.3));
            }
            p.setBrush(Qt::NoBrush);
        }
    }
    p.restore();
    detail::paintAxisLines(p, plot, style);
    p.restore();
}

} // namespace gwb::views
