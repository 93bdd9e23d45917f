#pragma once
// What the chart widget (chart_widget.cpp) and the chart painter (chart_paint.cpp) share: ranges,
// log-axis transforms, ticks, colours and legend rows of a ChartData. Views-internal.

#include "gwb/views/chart_data.h"

#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gwb::views::chart_detail {

// Categories may be composed ("16 ▁acknowledg…": index and a piece already cut past 12
// characters), so they get more room than a bare piece.
constexpr int kCategoryChars = 24;

inline std::pair<double, double> yRange(const ChartData& d) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : d.series)
        for (double v : s.y)
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    if (d.kind == ChartData::Kind::Bar && d.stacked) // the tallest stack (non-negative parts)
        for (size_t i = 0; i < static_cast<size_t>(d.categories.size()); ++i) {
            double sum = 0;
            for (const auto& s : d.series)
                if (i < s.y.size() && std::isfinite(s.y[i])) sum += std::max(0.0, s.y[i]);
            hi = std::max(hi, sum);
        }
    if (d.kind == ChartData::Kind::Bar) lo = std::min(lo, 0.0);
    if (std::isfinite(d.yMin)) lo = d.yMin;
    if (std::isfinite(d.yMax)) hi = d.yMax;
    if (!(lo <= hi)) return {0, 1};
    if (hi - lo < 1e-12) {
        const double pad = std::max(1e-6, std::abs(hi) * 0.1);
        return {lo - pad, hi + pad};
    }
    return {lo, hi + (std::isfinite(d.yMax) ? 0 : (hi - lo) * 0.05)};
}

inline std::pair<double, double> xRange(const ChartData& d) {
    if (d.kind == ChartData::Kind::Bar) return {-0.5, std::max<double>(0, d.categories.size()) - 0.5};
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : d.series)
        for (double v : s.x) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    if (!(lo <= hi)) return {0, 1};
    if (hi == lo) return {lo - 0.5, hi + 0.5};
    const double pad = (hi - lo) * 0.03;
    return {lo - pad, hi + pad};
}

// The chart with y replaced by log10(y) (values <= 0 become gaps), for a log axis.
inline ChartData logTransformed(const ChartData& d) {
    ChartData t = d;
    auto lg = [](double v) { return v > 0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN(); };
    for (auto& s : t.series)
        for (double& v : s.y)
            v = lg(v);
    if (std::isfinite(d.yMin)) t.yMin = lg(d.yMin);
    if (std::isfinite(d.yMax)) t.yMax = lg(d.yMax);
    return t;
}

// Whole decades around the log10 data range (at least one decade).
inline std::pair<double, double> decadeRange(const ChartData& logData) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : logData.series)
        for (double v : s.y)
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    if (std::isfinite(logData.yMin)) lo = logData.yMin;
    if (std::isfinite(logData.yMax)) hi = logData.yMax;
    if (!(lo <= hi)) return {0, 1};
    lo = std::floor(lo + 1e-9);
    hi = std::max(lo + 1, std::ceil(hi - 1e-9));
    return {lo, hi};
}

// Decade ticks (log10 values), every decade or every n-th when there are more than maxCount.
inline std::vector<double> decadeTicks(double lo, double hi, int maxCount) {
    std::vector<double> out;
    const int n = static_cast<int>(std::lround(hi - lo));
    const int step = std::max(1, (n + std::max(1, maxCount - 1) - 1) / std::max(1, maxCount - 1));
    for (int k = 0; k <= n; k += step)
        out.push_back(lo + k);
    return out;
}

inline QColor colorOf(const ChartSeries& s, int i) {
    return s.color.isValid() ? s.color : seriesColor(i);
}

/// The legend rows at the top of a chart with more than one series (or one named series): drawn
/// when `draw`; returns the height they take.
inline double legendRows(QPainter* p, const QRectF& r, const ChartData& d, const FigureStyle& style, bool draw) {
    const bool legend = d.series.size() > 1 || (d.series.size() == 1 && !d.series[0].name.isEmpty());
    if (!legend) return 0;
    const QFontMetricsF fmS = style.metrics(style.small);
    if (draw) p->setFont(style.small);
    double x = r.left();
    double y = r.top();
    const double sw = fmS.height() * 1.2;
    for (size_t i = 0; i < d.series.size(); ++i) {
        const QString name = d.series[i].name;
        const double w = sw + fmS.horizontalAdvance(name) + fmS.height() * 0.8;
        if (x + w > r.right() && x > r.left()) {
            x = r.left();
            y += fmS.height() * 1.1;
        }
        if (draw) {
            p->setPen(QPen(colorOf(d.series[i], static_cast<int>(i)), style.hairline * 3));
            p->drawLine(QPointF(x, y + fmS.height() / 2), QPointF(x + sw * 0.8, y + fmS.height() / 2));
            p->setPen(Qt::black);
            p->drawText(QPointF(x + sw, y + fmS.ascent()), name);
        }
        x += w;
    }
    return y + fmS.height() * 1.4 - r.top();
}
inline double legendRows(QPainter& p, const QRectF& r, const ChartData& d, const FigureStyle& style, bool draw) {
    return legendRows(&p, r, d, style, draw);
}

/// The plot's least height: two tick intervals of the y axis.
inline double minimumPlotHeight(const FigureStyle& style) {
    return style.metrics(style.small).height() * 4.4;
}

} // namespace gwb::views::chart_detail
