// The chart's figure painter (paintChart) and the height a figure panel needs for it
// (chartHeightFor): painter-only, no widget.
#include "gwb/views/chart_data.h"

#include "chart_util.h"
#include "plot_util.h"

#include <QPainter>
#include <QSet>

#include <algorithm>
#include <cmath>
#include <functional>

namespace gwb::views {

using namespace chart_detail;

double chartHeightFor(const ChartData& data, double width, const FigureStyle& style) {
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    double h = detail::panelTitleHeight(data.title, width, style) +
               legendRows(nullptr, QRectF(0, 0, width, 1e6), data, style, false);
    // A plot with three tick intervals, the x labels (upright ones as tall as the longest), the x title.
    h += fmS.height() * 6.6 + fmS.height() * 0.5;
    double labels = fmS.height(), sum = 0;
    for (const QString& c : data.categories) {
        const double w = fmS.horizontalAdvance(detail::labelText(c, kCategoryChars));
        sum += w + fmS.height();
        if (data.edgeTicks.empty()) labels = std::max(labels, w);
    }
    if (sum <= width * 0.9 || !data.edgeTicks.empty()) labels = fmS.height();
    h += labels + fmS.height() * 0.5 + (data.xTitle.isEmpty() ? 0 : fmB.height() * 1.2);
    return h;
}

bool ChartData::hasData() const {
    for (const auto& s : series)
        for (double v : s.y)
            if (std::isfinite(v)) return true;
    return false;
}

QColor seriesColor(int index) {
    static const QColor palette[] = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73),
                                     QColor(0xCC, 0x79, 0xA7), QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                                     QColor(0x00, 0x00, 0x00), QColor(0xF0, 0xE4, 0x42)};
    return palette[static_cast<size_t>(index) % (sizeof(palette) / sizeof(palette[0]))];
}

QString decadeLabel(double value) {
    static const char* const suffix[] = {"", "k", "M", "G", "T"};
    if (!(value > 0)) return detail::formatValue(value);
    int k = 0;
    double v = value;
    while (v >= 1000 && k < 4) {
        v /= 1000;
        ++k;
    }
    return QString::number(v, 'g', 3) + QString::fromLatin1(suffix[k]);
}

void paintChart(QPainter& p, const QRectF& rect, const ChartData& data, const FigureStyle& style) {
    // A log axis draws log10(y) on a linear scale with decade ticks labelled 10^t.
    const ChartData& d = data.logY ? logTransformed(data) : data;
    p.save();
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    QRectF r = detail::paintPanelTitle(p, rect, d.title, style);
    r.setTop(r.top() + legendRows(p, r, d, style, true));
    const auto [ylo, yhi] = data.logY ? decadeRange(d) : yRange(d);
    const auto [xlo, xhi] = xRange(d);
    const int maxYTicks = std::max(2, static_cast<int>(r.height() / (fmS.height() * 2.2)));
    const auto yTicks = data.logY ? decadeTicks(ylo, yhi, maxYTicks) : detail::niceTicks(ylo, yhi, maxYTicks);
    const std::function<QString(double)> yLabel =
        data.logY ? std::function<QString(double)>([](double t) { return decadeLabel(std::pow(10.0, t)); })
                  : std::function<QString(double)>(detail::formatValue);
    double tickW = 0;
    for (double t : yTicks)
        tickW = std::max(tickW, fmS.horizontalAdvance(yLabel(t)));
    const double tick = fmS.height() * 0.25;
    QStringList xLabels;
    std::vector<double> xTickPos;
    if (d.kind == ChartData::Kind::Bar && !d.edgeTicks.empty()) {
        for (const auto& [at, label] : d.edgeTicks) { // bar i spans [i - 0.5, i + 0.5]
            xTickPos.push_back(at - 0.5);
            xLabels << label;
        }
    } else if (!d.categories.isEmpty()) {
        for (int i = 0; i < d.categories.size(); ++i) {
            xTickPos.push_back(d.kind == ChartData::Kind::Bar
                                   ? i
                                   : (d.series.empty() || static_cast<size_t>(i) >= d.series[0].x.size()
                                          ? i
                                          : d.series[0].x[static_cast<size_t>(i)]));
            xLabels << detail::labelText(d.categories[i], kCategoryChars);
        }
    } else {
        for (double t : detail::niceTicks(xlo, xhi, 7)) {
            xTickPos.push_back(t);
            xLabels << detail::formatValue(t);
        }
    }
    double xLabelW = 0;
    for (const QString& s : xLabels)
        xLabelW = std::max(xLabelW, fmS.horizontalAdvance(s));
    const QRectF plot0 = r.adjusted(tickW + tick * 2 + (d.yTitle.isEmpty() ? 0 : fmB.height() * 1.2),
                                    fmS.height() * 0.5, -fmS.height() * 0.5, 0);
    const double pitchX = xTickPos.size() > 1 ? plot0.width() / std::max(1.0, xhi - xlo) : plot0.width();
    const double slotX = pitchX * 0.9 * std::max(1.0, std::abs(xTickPos.size() > 1 ? xTickPos[1] - xTickPos[0] : 1.0));
    bool rotate = !xLabels.isEmpty() && xLabelW > slotX;
    if (rotate && xLabelW > plot0.height() * 0.3) {
        // Upright composed names ("16 ▁fortune") would leave no room for the plot: their first
        // word (the index) stands for them when those are distinct; the data export keeps all.
        QStringList brief;
        for (const QString& l : xLabels)
            brief << l.section(QLatin1Char(' '), 0, 0);
        if (QSet<QString>(brief.begin(), brief.end()).size() == brief.size() && brief != xLabels) {
            xLabels = brief;
            xLabelW = 0;
            for (const QString& l : xLabels)
                xLabelW = std::max(xLabelW, fmS.horizontalAdvance(l));
            rotate = xLabelW > slotX;
        }
    }
    const double xLabelH = rotate ? xLabelW : fmS.height();
    const QRectF plot = plot0.adjusted(0, 0, 0, -(xLabelH + tick * 2 + (d.xTitle.isEmpty() ? 0 : fmB.height() * 1.2)));
    if (plot.height() < minimumPlotHeight(style) && !d.series.empty()) {
        // No room for two tick intervals: say so (the figure checks look for this) rather than
        // draw a plot nobody can read; the view's figure layout gives each chart chartHeightFor().
        p.setFont(style.small);
        p.setPen(Qt::darkGray);
        p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap, QStringLiteral("panel too small for this chart"));
        p.restore();
        return;
    }
    auto X = [&](double x) { return plot.left() + (x - xlo) / (xhi - xlo) * plot.width(); };
    auto Y = [&](double y) { return plot.bottom() - (y - ylo) / (yhi - ylo) * plot.height(); };

    detail::paintYTicks(p, plot, yTicks, Y, yLabel, tick, style);
    // Thin x labels so that they do not overlap.
    const double labelPitch = rotate ? fmS.height() * 1.05 : xLabelW + fmS.height();
    const double cellW = xTickPos.size() > 1 ? std::abs(X(xTickPos[1]) - X(xTickPos[0])) : plot.width();
    const size_t step = std::max<size_t>(1, static_cast<size_t>(std::ceil(labelPitch / std::max(1e-9, cellW))));
    p.setPen(QPen(Qt::black, style.hairline));
    for (size_t i = 0; i < xTickPos.size(); i += step) {
        const double x = X(xTickPos[i]);
        if (x < plot.left() - 1 || x > plot.right() + 1) continue;
        p.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + tick));
        if (rotate)
            detail::drawRotatedText(p, QPointF(x, plot.bottom() + tick * 2), xLabels[static_cast<int>(i)],
                                    Qt::AlignRight);
        else {
            // At least as wide as the label: drawText clips to the rectangle (ticks every 50 of 128
            // points are far apart in x units but only pitchX wide per unit).
            const double w = std::max(2 * pitchX * static_cast<double>(step), xLabelW + fmS.height());
            p.drawText(QRectF(x - w / 2, plot.bottom() + tick * 2, w, fmS.height()), Qt::AlignHCenter | Qt::AlignTop,
                       xLabels[static_cast<int>(i)]);
        }
    }
    detail::paintAxisTitles(p, r, plot, d.yTitle, d.xTitle, tick, xLabelH, style);

    p.save();
    p.setClipRect(plot.adjusted(-2, -2, 2, 2));
    if (d.kind == ChartData::Kind::Bar) {
        const size_t n = d.stacked ? 1 : std::max<size_t>(1, d.series.size());
        const double groupW = plot.width() / std::max(1.0, xhi - xlo) * 0.8;
        const double barW = groupW / static_cast<double>(n);
        std::vector<double> base(static_cast<size_t>(std::max<qsizetype>(0, d.categories.size())), 0.0);
        for (size_t s = 0; s < d.series.size(); ++s)
            for (size_t i = 0; i < d.series[s].y.size(); ++i) {
                const double v = d.series[s].y[i];
                const double x =
                    X(static_cast<double>(i)) - groupW / 2 + (d.stacked ? 0.0 : barW * static_cast<double>(s));
                if (d.stacked && i < base.size()) { // this series' part sits on the ones before it
                    if (!std::isfinite(v) || v <= 0) continue;
                    const QRectF bar =
                        QRectF(QPointF(x, Y(base[i])), QPointF(x + barW * 0.92, Y(base[i] + v))).normalized();
                    p.fillRect(bar, colorOf(d.series[s], static_cast<int>(s)));
                    base[i] += v;
                    continue;
                }
                if (!std::isfinite(v)) {
                    p.setPen(QPen(Qt::darkGray, style.hairline));
                    p.drawText(QRectF(x, Y(ylo) - fmS.height(), barW, fmS.height()), Qt::AlignCenter,
                               QStringLiteral("\u2014"));
                    continue;
                }
                const QRectF bar =
                    QRectF(QPointF(x, Y(std::max(0.0, ylo))), QPointF(x + barW * 0.92, Y(v))).normalized();
                p.fillRect(bar, colorOf(d.series[s], static_cast<int>(s)));
            }
    } else {
        for (size_t s = 0; s < d.series.size(); ++s) {
            const QColor c = colorOf(d.series[s], static_cast<int>(s));
            p.setPen(QPen(c, style.hairline * 3, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
            QPolygonF poly;
            auto flush = [&] {
                if (poly.size() > 1) p.drawPolyline(poly);
                poly.clear();
            };
            const auto& ser = d.series[s];
            for (size_t i = 0; i < ser.y.size() && i < ser.x.size(); ++i) {
                if (!std::isfinite(ser.y[i])) {
                    flush();
                    continue;
                }
                poly << QPointF(X(ser.x[i]), Y(ser.y[i]));
            }
            flush();
            p.setBrush(c);
            p.setPen(Qt::NoPen);
            const double m = style.hairline * 3.5;
            for (size_t i = 0; i < ser.y.size() && i < ser.x.size(); ++i)
                if (std::isfinite(ser.y[i])) p.drawEllipse(QPointF(X(ser.x[i]), Y(ser.y[i])), m, m);
            p.setBrush(Qt::NoBrush);
        }
    }
    p.restore();
    detail::paintAxisLines(p, plot, style);
    p.restore();
}

} // namespace gwb::views
