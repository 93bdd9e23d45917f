#include "causal_figure_common.h"
#include "gwb/engine/sites.h"

#include "figure_common.h"
#include "plot_util.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace gwb::views::detail {

QString finiteOrDash(double v) {
    return std::isfinite(v) ? formatValue(v) : QStringLiteral("\u2014");
}

QString modelWord(int model) {
    return model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
}

QString panelName(int model) {
    return model == 0 ? QStringLiteral("grassmann") : QStringLiteral("transformer");
}

QString sentence(const std::string& message) {
    QString s = qs(message);
    if (!s.isEmpty()) s[0] = s[0].toUpper();
    if (!s.isEmpty() && !s.endsWith(QLatin1Char('.'))) s += QLatin1Char('.');
    return s;
}

QStringList patchingSiteItems() {
    return {QStringLiteral("resid"), QStringLiteral("mixer"), QStringLiteral("gate"), QStringLiteral("ffn"),
            QString::fromUtf8(gwb::engine::kUnitAlias)};
}

QString cleanCorruptedPhrase(const std::string& model, double clean, double corrupted) {
    return QStringLiteral("%1 clean %2, corrupted %3").arg(qs(model), formatValue(clean), formatValue(corrupted));
}

HeatmapPanel divergingGridPanel(int64_t rows, int64_t cols, const std::function<double(int64_t, int64_t)>& value,
                                const HeatmapAxes& axes, double scale) {
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            v[static_cast<size_t>(r * cols + c)] = static_cast<float>(value(r, c));
    HeatmapPanel panel;
    panel.source = makeDenseSource(rows, cols, std::move(v));
    panel.axes = axes;
    panel.diverging = true;
    panel.fixedLow = -(scale > 0 ? scale : 1);
    panel.fixedHigh = scale > 0 ? scale : 1;
    return panel;
}

HeatmapPanel placeholderPanel(const QString& text) {
    HeatmapPanel panel;
    panel.placeholder = text;
    return panel;
}

void paintHeatmapPair(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map,
                      const HeatmapPanel& left, const QRectF& leftWindow, const QString& leftTitle,
                      const HeatmapPanel& right, const QRectF& rightWindow, const QString& rightTitle,
                      const QString& valueName) {
    const QFontMetricsF fm = style.metrics(style.small);
    const double gap = fm.height();
    if (left.source && right.source) {
        const ColorScale a = left.colorScale(map), b = right.colorScale(map);
        if (left.axes.valueName != right.axes.valueName || a.effectiveLow() != b.effectiveLow() ||
            a.effectiveHigh() != b.effectiveHigh()) { // two quantities: a colour bar each
            const auto [l, r] = splitPanels(rect, 0.5, true, gap);
            left.paint(p, l, style, leftTitle, map, leftWindow);
            right.paint(p, r, style, rightTitle, map, rightWindow);
            return;
        }
    }
    // Both panels share one scale: one colour bar, with its tick labels and its label, beside the
    // pair (as wide as its widest tick label needs: "-0.05" takes more room than "1").
    const ColorScale scale = (right.source ? right : left).colorScale(map);
    double tickW = 0;
    for (double t : niceTicks(scale.effectiveLow(), scale.effectiveHigh(), 5))
        tickW = std::max(tickW, fm.horizontalAdvance(formatValue(t)));
    const double barBlock = style.colorbar ? std::max(fm.height() * 4.2, fm.height() * 2.2 + tickW * 1.6) : 0;
    const QRectF panels = rect.adjusted(0, 0, -barBlock, 0);
    const auto [l, r] = splitPanels(panels, 0.5, true, gap);
    FigureStyle shared = style;
    shared.colorbar = false;
    const HeatmapGeometry gl = left.paint(p, l, shared, leftTitle, map, leftWindow);
    const HeatmapGeometry gr = right.paint(p, r, shared, rightTitle, map, rightWindow);
    if (!style.colorbar) return;
    const QRectF plot = !gr.plot.isEmpty() ? gr.plot : gl.plot;
    if (plot.isEmpty()) return;
    // The bar's label runs along it; a bar shorter than its label takes the figure's full height.
    QRectF bar(rect.right() - barBlock + fm.height() * 0.5, plot.top(), barBlock - fm.height() * 0.5, plot.height());
    if (fm.horizontalAdvance(valueName) > bar.height() - fm.height()) {
        bar.setTop(rect.top());
        bar.setBottom(rect.bottom());
    }
    paintColorbar(p, bar, scale, valueName, style);
}

} // namespace gwb::views::detail
