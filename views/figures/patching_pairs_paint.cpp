#include "gwb/views/patching_pairs_paint.h"

#include "causal_figure_common.h"
#include "plot_util.h"

#include "gwb/views/chart_data.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

namespace {

/// Points (estimate, exact) where both are finite.
std::vector<QPointF> finitePoints(const std::vector<double>& x, const std::vector<double>& y) {
    std::vector<QPointF> out;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
        if (std::isfinite(x[i]) && std::isfinite(y[i])) out.emplace_back(x[i], y[i]);
    return out;
}

/// The plot inside `area` with room on the left for the y tick labels and title and below for the
/// x tick labels and title; empty when too small to draw in.
QRectF plotIn(const QRectF& area, const std::vector<double>& yTicks, double tick, const FigureStyle& style) {
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    double tickW = 0;
    for (double t : yTicks)
        tickW = std::max(tickW, fmS.horizontalAdvance(detail::formatValue(t)));
    const QRectF plot = area.adjusted(tickW + tick * 2 + fmB.height() * 1.2, fmS.height() * 0.3, -fmS.height() * 0.6,
                                      -(fmS.height() + tick * 2 + fmB.height() * 1.2));
    return plot.width() < 20 || plot.height() < 20 ? QRectF() : plot;
}

QColor modelColor(int model) {
    return seriesColor(model);
}

/// x range [lo, hi] padded by 5%, a unit range around a single value.
std::pair<double, double> padded(double lo, double hi) {
    if (!(hi > lo)) return {lo - 1, hi + 1};
    const double pad = (hi - lo) * 0.05;
    return {lo - pad, hi + pad};
}

/// Tick marks and number labels under the plot at x(t) (ticks outside the plot are skipped).
void paintXTicks(QPainter& p, const QRectF& plot, const std::vector<double>& ticks,
                 const std::function<double(double)>& x, double tick, const FigureStyle& style) {
    const QFontMetricsF fmS = style.metrics(style.small);
    p.setFont(style.small);
    p.setPen(Qt::black);
    for (double t : ticks) {
        const double at = x(t);
        if (at < plot.left() - 0.5 || at > plot.right() + 0.5) continue;
        p.drawLine(QPointF(at, plot.bottom()), QPointF(at, plot.bottom() + tick));
        p.drawText(QRectF(at - fmS.height() * 3, plot.bottom() + tick * 2, fmS.height() * 6, fmS.height()),
                   Qt::AlignHCenter | Qt::AlignTop, detail::formatValue(t));
    }
}

void paintMessage(QPainter& p, const QRectF& rect, const QString& text, const FigureStyle& style) {
    p.setFont(style.body);
    p.setPen(QColor(110, 110, 110));
    p.drawText(rect, Qt::AlignCenter | Qt::TextWordWrap, text);
}

} // namespace

void paintCellDistribution(QPainter& p, const QRectF& rect, const PairsGrid& g, int64_t r, int64_t c,
                           const FigureStyle& style) {
    p.save();
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    const QString where =
        QStringLiteral("%1 %2, %3 %4").arg(qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    const std::vector<double> v = g.cellValues(r, c);
    const QString title =
        QStringLiteral("%1 \u00b7 %2: %3 over %4 pairs").arg(qs(g.model), where, qs(g.valueName())).arg(v.size());
    QRectF area = detail::paintPanelTitle(p, rect, title, style);
    if (v.empty()) {
        paintMessage(p, area, QStringLiteral("No pair defines this cell."), style);
        p.restore();
        return;
    }
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const double mean = g.meanAt(r, c), low = i < g.low.size() ? g.low[i] : PairsGrid::kNaN,
                 high = i < g.high.size() ? g.high[i] : PairsGrid::kNaN;
    // Key line.
    p.setFont(style.small);
    const QString key = QStringLiteral("mean %1, 95% interval [%2, %3] (shaded), n = %4; dotted: 0")
                            .arg(detail::formatValue(mean), detail::formatValue(low), detail::formatValue(high))
                            .arg(v.size());
    const double keyH = detail::drawWrappedText(p, area, key, false);
    p.setPen(QColor(70, 70, 70));
    detail::drawWrappedText(p, area, key, true);
    area.setTop(area.top() + keyH + fmS.height() * 0.3);

    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
    if (std::isfinite(low)) lo = std::min(lo, low);
    if (std::isfinite(high)) hi = std::max(hi, high);
    std::tie(lo, hi) = padded(lo, hi);
    const int bins = std::clamp(static_cast<int>(std::ceil(std::sqrt(static_cast<double>(v.size())) * 1.5)), 5, 40);
    std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
    for (double x : v)
        ++counts[static_cast<size_t>(std::clamp(static_cast<int>((x - lo) / (hi - lo) * bins), 0, bins - 1))];
    const double top = static_cast<double>(*std::max_element(counts.begin(), counts.end()));
    const std::vector<double> yTicks = detail::niceTicks(0, top, 4);
    const double tick = fmS.height() * 0.25;
    const QRectF plot = plotIn(area, yTicks, tick, style);
    if (plot.isEmpty()) {
        p.restore();
        return;
    }
    auto X = [&](double x) { return plot.left() + (x - lo) / (hi - lo) * plot.width(); };
    auto Y = [&](double y) { return plot.bottom() - y / std::max(1.0, top) * plot.height(); };
    detail::paintYTicks(
        p, plot, yTicks, Y, [](double t) { return detail::formatValue(t); }, tick, style);
    paintXTicks(p, plot, detail::niceTicks(lo, hi, std::max(2, static_cast<int>(plot.width() / (fmS.height() * 4)))), X,
                tick, style);
    detail::paintAxisTitles(p, area, plot, QStringLiteral("pairs"), qs(g.valueName()), tick, fmS.height(), style);
    QColor fill = modelColor(g.model == "Transformer" ? 1 : 0);
    p.setPen(QPen(fill.darker(130), style.hairline));
    fill.setAlphaF(0.6);
    p.setBrush(fill);
    for (int b = 0; b < bins; ++b) {
        if (!counts[static_cast<size_t>(b)]) continue;
        const double x0 = lo + (hi - lo) * b / bins, x1 = lo + (hi - lo) * (b + 1) / bins;
        p.drawRect(QRectF(QPointF(X(x0), Y(static_cast<double>(counts[static_cast<size_t>(b)]))),
                          QPointF(X(x1), plot.bottom())));
    }
    p.setBrush(Qt::NoBrush);
    if (std::isfinite(low) && std::isfinite(high)) // the interval over the bars, see-through
        p.fillRect(QRectF(QPointF(X(low), plot.top()), QPointF(X(high), plot.bottom())), QColor(255, 170, 60, 90));
    p.setPen(QPen(Qt::black, style.hairline * 2.5));
    if (std::isfinite(mean)) p.drawLine(QPointF(X(mean), plot.top()), QPointF(X(mean), plot.bottom()));
    p.setPen(QPen(QColor(90, 90, 90), style.hairline * 1.5, Qt::DotLine));
    p.drawLine(QPointF(X(0), plot.top()), QPointF(X(0), plot.bottom()));
    detail::paintAxisLines(p, plot, style);
    p.restore();
}

void paintEstimateScatter(QPainter& p, const QRectF& rect, const PairsData& d, const FigureStyle& style) {
    p.save();
    const QFontMetricsF fmS = style.metrics(style.small), fmB = style.metrics(style.body);
    bool any = false;
    double lo = 0, hi = 0;
    for (int m : {0, 1}) {
        const PairsGrid& g = d.grid(m);
        for (size_t i = 0; i < g.scatterEstimate.size() && i < g.scatterExact.size(); ++i) {
            const double x = g.scatterEstimate[i], y = g.scatterExact[i];
            if (!std::isfinite(x) || !std::isfinite(y)) continue;
            lo = any ? std::min({lo, x, y}) : std::min(x, y);
            hi = any ? std::max({hi, x, y}) : std::max(x, y);
            any = true;
        }
    }
    const bool checked = d.inputs.method == "attribution";
    QRectF area = detail::paintPanelTitle(
        p, rect,
        checked ? QStringLiteral("Attribution estimate against the exact change, checked cells")
                : QStringLiteral("Attribution estimate against the exact change, every pair \u00d7 cell"),
        style);
    if (!any) {
        paintMessage(p, area,
                     checked ? QStringLiteral("No checked cells: run attribution with check K > 0.")
                             : QStringLiteral("No cell has both an estimate and an exact value."),
                     style);
        p.restore();
        return;
    }
    // Legend: one line a model with its correlations.
    p.setFont(style.small);
    double y = area.top();
    const double sw = fmS.height() * 0.8;
    for (int m : {0, 1}) {
        const PairsGrid& g = d.grid(m);
        if (g.scatterEstimate.empty()) continue;
        const QString text = QStringLiteral("%1: Spearman %2, Pearson %3 (%4 points)")
                                 .arg(qs(g.model), detail::formatValue(g.spearman), detail::formatValue(g.pearson))
                                 .arg(finitePoints(g.scatterEstimate, g.scatterExact).size());
        p.setPen(Qt::NoPen);
        p.setBrush(modelColor(m));
        p.drawEllipse(QRectF(area.left(), y + fmS.height() * 0.5 - sw / 2, sw, sw));
        p.setBrush(Qt::NoBrush);
        p.setPen(Qt::black);
        const QRectF textRect(area.left() + sw * 1.6, y, area.width() - sw * 1.6, fmS.height() * 3);
        const double h = detail::drawWrappedText(p, textRect, text, false);
        detail::drawWrappedText(p, textRect, text, true);
        y += std::max(h, fmS.height()) + fmS.height() * 0.1;
    }
    const QString key = QStringLiteral("x: first-order estimate, y: exact change of the metric (patched \u2212 "
                                       "unchanged run, logits); dashed: y = x");
    p.setPen(QColor(70, 70, 70));
    const QRectF keyRect(area.left(), y, area.width(), fmS.height() * 4);
    y += detail::drawWrappedText(p, keyRect, key, false);
    detail::drawWrappedText(p, keyRect, key, true);
    area.setTop(y + fmS.height() * 0.4);

    std::tie(lo, hi) = padded(lo, hi);
    const int nTicks = std::max(2, static_cast<int>(std::min(area.width(), area.height()) / (fmS.height() * 4)));
    const std::vector<double> ticks = detail::niceTicks(lo, hi, nTicks);
    const double tick = fmS.height() * 0.25;
    const QRectF plot = plotIn(area, ticks, tick, style);
    if (plot.isEmpty()) {
        p.restore();
        return;
    }
    auto X = [&](double x) { return plot.left() + (x - lo) / (hi - lo) * plot.width(); };
    auto Y = [&](double v) { return plot.bottom() - (v - lo) / (hi - lo) * plot.height(); };
    detail::paintYTicks(
        p, plot, ticks, Y, [](double t) { return detail::formatValue(t); }, tick, style);
    paintXTicks(p, plot, ticks, X, tick, style);
    detail::paintAxisTitles(p, area, plot, QStringLiteral("exact"), QStringLiteral("estimate"), tick, fmS.height(),
                            style);
    p.save();
    p.setClipRect(plot);
    p.setPen(QPen(QColor(120, 120, 120), style.hairline * 1.5, Qt::DashLine));
    p.drawLine(QPointF(X(lo), Y(lo)), QPointF(X(hi), Y(hi)));
    // At most 4000 points a model are drawn (an even stride); the correlations use every point.
    const double radius = std::max(1.0, fmS.height() * 0.13);
    for (int m : {0, 1}) {
        const PairsGrid& g = d.grid(m);
        const std::vector<QPointF> pts = finitePoints(g.scatterEstimate, g.scatterExact);
        if (pts.empty()) continue;
        QColor c = modelColor(m);
        c.setAlphaF(pts.size() > 500 ? 0.35 : 0.75);
        p.setPen(Qt::NoPen);
        p.setBrush(c);
        const size_t stride = std::max<size_t>(1, (pts.size() + 3999) / 4000);
        for (size_t i = 0; i < pts.size(); i += stride)
            p.drawEllipse(QPointF(X(pts[i].x()), Y(pts[i].y())), radius, radius);
    }
    p.restore();
    detail::paintAxisLines(p, plot, style);
    p.restore();
}

void paintPairsSide(QPainter& p, const QRectF& rect, const PairsData* data, int model, int64_t r, int64_t c,
                    const FigureStyle& style) {
    const QRectF top(rect.left(), rect.top(), rect.width(), rect.height() * 0.45);
    const QRectF bottom(rect.left(), top.bottom() + 8, rect.width(), rect.bottom() - top.bottom() - 8);
    if (!data || !data->hasGrid()) {
        paintMessage(p, rect,
                     QStringLiteral("Run a pairs file: each cell's distribution over pairs and the estimate "
                                    "against the exact value appear here."),
                     style);
        return;
    }
    if (model < 0 || !data->grid(model).hasGrid())
        paintMessage(p, top, QStringLiteral("Click a cell: its distribution over the pairs."), style);
    else
        paintCellDistribution(p, top, data->grid(model), r, c, style);
    paintEstimateScatter(p, bottom, *data, style);
}

} // namespace gwb::views
