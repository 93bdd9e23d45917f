#include "gwb/views/chart_widget.h"

#include "plot_util.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QCursor>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QFontMetricsF>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPainter>
#include <QScatterSeries>
#include <QSet>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>
#include <cmath>

namespace gwb::views {

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

namespace {

// Categories may be composed ("16 ▁acknowledg…": index and a piece already cut past 12
// characters), so they get more room than a bare piece.
constexpr int kCategoryChars = 24;

std::pair<double, double> yRange(const ChartData& d) {
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

std::pair<double, double> xRange(const ChartData& d) {
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
ChartData logTransformed(const ChartData& d) {
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
std::pair<double, double> decadeRange(const ChartData& logData) {
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
std::vector<double> decadeTicks(double lo, double hi, int maxCount) {
    std::vector<double> out;
    const int n = static_cast<int>(std::lround(hi - lo));
    const int step = std::max(1, (n + std::max(1, maxCount - 1) - 1) / std::max(1, maxCount - 1));
    for (int k = 0; k <= n; k += step)
        out.push_back(lo + k);
    return out;
}

QColor colorOf(const ChartSeries& s, int i) {
    return s.color.isValid() ? s.color : seriesColor(i);
}

// Ticks at 1-2-5 multiples instead of Qt Charts' equal divisions of the range.
void setNiceTicks(QValueAxis* axis, double lo, double hi, int maxTicks = 6) {
    const auto ticks = detail::niceTicks(lo, hi, maxTicks);
    if (ticks.size() < 2) return;
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(ticks.front());
    axis->setTickInterval(ticks[1] - ticks[0]);
}

/// The legend rows at the top of a chart with more than one series (or one named series): drawn
/// when `draw`; returns the height they take.
double legendRows(QPainter* p, const QRectF& r, const ChartData& d, const FigureStyle& style, bool draw) {
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
double legendRows(QPainter& p, const QRectF& r, const ChartData& d, const FigureStyle& style, bool draw) {
    return legendRows(&p, r, d, style, draw);
}

/// The plot's least height: two tick intervals of the y axis.
double minimumPlotHeight(const FigureStyle& style) {
    return style.metrics(style.small).height() * 4.4;
}

} // namespace

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

ChartWidget::ChartWidget(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_view = new QChartView(this);
    m_view->setRenderHint(QPainter::Antialiasing);
    layout->addWidget(m_view);
    setMinimumSize(200, kReadableHeight);
    rebuild();
}

void ChartWidget::setChart(const ChartData& data) {
    m_data = data;
    m_placeholder.clear();
    rebuild();
}

void ChartWidget::setPlaceholder(const QString& text) {
    m_data = ChartData{};
    m_placeholder = text;
    rebuild();
}

void ChartWidget::setUndefinedTip(const QString& tip) {
    // Only the tooltip this widget set is replaced; one its owner set (e.g. a hint about a
    // context menu) stays.
    if (toolTip() == m_undefinedTip) setToolTip(tip);
    m_undefinedTip = tip;
}

int ChartWidget::indexLabelStep() const {
    // Bars too close for even their indices side by side (Qt Charts would cut every label to
    // "..."): every k-th bar gets its index, on a value axis. 1 = the category axis copes.
    const auto n = static_cast<double>(m_data.categories.size());
    if (m_data.kind != ChartData::Kind::Bar || !m_data.edgeTicks.empty() || n < 2) return 1;
    const QFontMetricsF fm(font());
    const double pitch = std::max(1.0, width() - fm.height() * 5) / n;
    const double label = fm.horizontalAdvance(QString::number(static_cast<int>(n) - 1)) + fm.height() * 0.9;
    return pitch >= label ? 1 : static_cast<int>(std::ceil(label / pitch));
}

void ChartWidget::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (indexLabelStep() != m_indexStep) { // thinned indices, or back to the category axis
        rebuild();
        return;
    }
    updateLabelAngle();
    if (m_valueAxis) setNiceTicks(m_valueAxis, m_valueAxis->min(), m_valueAxis->max(), yTickBudget());
}

void ChartWidget::updateLabelAngle() {
    // A wide, short chart (a laptop screen) puts its legend on the right, so that the plot keeps
    // the height its axis labels need (Qt Charts cuts them to "…" otherwise).
    if (QChart* chart = m_view->chart()) {
        const Qt::Alignment where = width() > height() * 2.2 ? Qt::AlignRight : Qt::AlignTop;
        if (chart->legend()->alignment() != where) chart->legend()->setAlignment(where);
    }
    if (!m_categoryAxis) return;
    const QFontMetricsF fm(m_categoryAxis->labelsFont());
    double need = 0, longest = 0;
    QStringList full, brief;
    for (int i = 0; i < m_data.categories.size(); ++i) {
        // An undefined bar keeps its " —" whichever form the label takes (a resize re-sets them).
        const QString dash =
            static_cast<size_t>(i) < m_undefinedCategory.size() && m_undefinedCategory[static_cast<size_t>(i)]
                ? QStringLiteral(" \u2014")
                : QString();
        full << detail::labelText(m_data.categories[i], kCategoryChars) + dash;
        brief << full.back().section(QLatin1Char(' '), 0, 0) + dash;
        need += fm.horizontalAdvance(full.back()) + fm.height();
        longest = std::max(longest, fm.horizontalAdvance(full.back()));
    }
    const bool briefUnique = QSet<QString>(brief.begin(), brief.end()).size() == brief.size();
    // Qt Charts gives a flat label its bar's width, less a margin.
    const double pitch = std::max(1.0, width() - fm.height() * 5) / std::max<qsizetype>(1, brief.size());
    double briefWidest = 0;
    for (const QString& b : brief)
        briefWidest = std::max(briefWidest, fm.horizontalAdvance(b) + fm.height() * 0.9);
    auto* bars = qobject_cast<QBarCategoryAxis*>(m_categoryAxis);
    // Whole names side by side when they fit; else their first word (the index, when those are
    // distinct) side by side; else upright. Qt Charts cuts upright labels to "..." when the bars
    // stand closer than a line and a half (21 bars in 500 px cut even "7"), and upright names
    // longer than about a third of the chart's height: the index stands for those too. The
    // figure export and the bars' tooltips keep the whole names.
    const bool fullFlat = need <= width() * 0.8;
    const bool briefFlat = !fullFlat && bars && briefUnique && briefWidest <= pitch;
    const int angle = fullFlat || briefFlat ? 0 : -90;
    if (m_categoryAxis->labelsAngle() != angle) m_categoryAxis->setLabelsAngle(angle);
    if (bars) {
        const bool upright = angle != 0 && longest > height() * 0.3;
        const QStringList& want = (briefFlat || upright) && briefUnique ? brief : full;
        if (bars->categories() != want) bars->setCategories(want);
    }
}

void ChartWidget::showBarTip(bool on, int category) {
    m_barTip = on && category >= 0 && category < m_data.barTips.size() ? m_data.barTips[category] : QString();
    if (m_barTip.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(QCursor::pos(), m_barTip, this);
}

int ChartWidget::yTickBudget() const {
    // Qt Charts elides every value label to "..." once they crowd: a short chart gets fewer ticks.
    const double line = QFontMetricsF(font()).height();
    return std::clamp(static_cast<int>(height() / (line * 3.2)), 2, 6);
}

void ChartWidget::rebuild() {
    m_categoryAxis = nullptr;
    m_barTip.clear();
    m_valueAxis = nullptr;
    setUndefinedTip(QString());
    m_undefinedCategory.clear();
    auto* chart = new QChart();
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setVisible(m_data.series.size() > 1);
    chart->legend()->setAlignment(Qt::AlignTop); // see updateLabelAngle
    // Qt Charts reads titles as rich text: a "<" (t − D < 0) would start a tag and hide the rest.
    chart->setTitle((m_placeholder.isEmpty() ? m_data.title : m_placeholder).toHtmlEscaped());
    QAbstractAxis* axisY = nullptr;
    if (m_data.logY) {
        const auto [llo, lhi] = decadeRange(logTransformed(m_data));
        auto* logAxis = new QLogValueAxis();
        logAxis->setBase(10);
        logAxis->setRange(std::pow(10.0, llo), std::pow(10.0, lhi));
        logAxis->setLabelFormat(QStringLiteral("%g"));
        logAxis->setMinorTickCount(0);
        axisY = logAxis;
    } else {
        const auto [ylo, yhi] = yRange(m_data);
        auto* valueAxis = new QValueAxis();
        valueAxis->setRange(ylo, yhi);
        valueAxis->setLabelFormat(QStringLiteral("%.3g"));
        setNiceTicks(valueAxis, ylo, yhi, yTickBudget());
        m_valueAxis = valueAxis;
        axisY = valueAxis;
    }
    axisY->setTitleText(m_data.yTitle.toHtmlEscaped());
    chart->addAxis(axisY, Qt::AlignLeft);
    if (m_data.kind == ChartData::Kind::Bar) {
        QAbstractBarSeries* bars = m_data.stacked ? static_cast<QAbstractBarSeries*>(new QStackedBarSeries())
                                                  : static_cast<QAbstractBarSeries*>(new QBarSeries());
        for (size_t s = 0; s < m_data.series.size(); ++s) {
            auto* set = new QBarSet(m_data.series[s].name);
            set->setColor(colorOf(m_data.series[s], static_cast<int>(s)));
            for (double v : m_data.series[s].y)
                *set << (std::isfinite(v) ? v : 0.0);
            connect(set, &QBarSet::clicked, this, &ChartWidget::barClicked);
            connect(set, &QBarSet::hovered, this, &ChartWidget::showBarTip);
            bars->append(set);
        }
        chart->addSeries(bars);
        m_indexStep = indexLabelStep();
        if (!m_data.edgeTicks.empty() || m_indexStep > 1) {
            // A histogram over a value range: ticks on the bar edges (0, 0.5, 1), not under the
            // bars. Or bars too close for their labels: every k-th bar's index, under it.
            auto* edges = new QCategoryAxis();
            edges->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
            edges->setRange(-0.5, std::max<double>(0, m_data.categories.size()) - 0.5);
            edges->setStartValue(-0.5 - 1e-6); // each label ends a category: the first ends at -0.5
            for (const auto& [at, label] : m_data.edgeTicks)
                edges->append(label, at - 0.5);
            if (m_data.edgeTicks.empty())
                for (int i = 0; i < m_data.categories.size(); i += m_indexStep)
                    edges->append(m_data.categories[i].section(QLatin1Char(' '), 0, 0), i);
            edges->setTitleText(m_data.xTitle.toHtmlEscaped());
            chart->addAxis(edges, Qt::AlignBottom);
            bars->attachAxis(edges);
            bars->attachAxis(axisY);
        }
        auto* axisX = m_data.edgeTicks.empty() && m_indexStep == 1 ? new QBarCategoryAxis() : nullptr;
        if (axisX) {
            // An undefined value has no bar: its category reads "—" so that it is not taken for 0.
            QStringList cats;
            bool undefined = false;
            m_undefinedCategory.assign(static_cast<size_t>(m_data.categories.size()), false);
            for (int i = 0; i < m_data.categories.size(); ++i) {
                bool nan = false;
                for (const auto& ser : m_data.series)
                    nan =
                        nan || (static_cast<size_t>(i) < ser.y.size() && !std::isfinite(ser.y[static_cast<size_t>(i)]));
                undefined = undefined || nan;
                m_undefinedCategory[static_cast<size_t>(i)] = nan;
                cats << detail::labelText(m_data.categories[i], kCategoryChars) +
                            (nan ? QStringLiteral(" \u2014") : QString());
            }
            setUndefinedTip(undefined ? m_data.undefinedReason : QString());
            axisX->append(cats);
            m_categoryAxis = axisX;
            axisX->setTitleText(m_data.xTitle.toHtmlEscaped());
            chart->addAxis(axisX, Qt::AlignBottom);
            bars->attachAxis(axisX);
            bars->attachAxis(axisY);
        }
    } else {
        const auto [xlo, xhi] = xRange(m_data);
        QAbstractAxis* axisX = nullptr;
        if (!m_data.categories.isEmpty() && !m_data.series.empty()) {
            const auto& xs = m_data.series[0].x;
            bool indices = xs.size() == static_cast<size_t>(m_data.categories.size());
            for (size_t i = 0; indices && i < xs.size(); ++i)
                indices = xs[i] == static_cast<double>(i);
            if (indices) {
                // Points at 0, 1, ...: each name gets its whole slot (Qt Charts cuts a category
                // axis's names to the width between its boundaries, "…" for the first one).
                auto* bars = new QBarCategoryAxis();
                QStringList names;
                for (const QString& c : m_data.categories)
                    names << detail::labelText(c, kCategoryChars);
                bars->append(names);
                axisX = bars;
                m_categoryAxis = bars;
            }
        }
        if (!axisX && !m_data.categories.isEmpty() && !m_data.series.empty()) {
            // Named x positions (e.g. layer transitions): labels sit on the points.
            auto* cat = new QCategoryAxis();
            cat->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
            const auto& xs = m_data.series[0].x;
            for (int i = 0; i < m_data.categories.size() && static_cast<size_t>(i) < xs.size(); ++i)
                cat->append(detail::labelText(m_data.categories[i], kCategoryChars), xs[static_cast<size_t>(i)]);
            cat->setRange(xlo, xhi);
            axisX = cat;
            m_categoryAxis = cat;
        } else if (!axisX) {
            auto* val = new QValueAxis();
            val->setRange(xlo, xhi);
            val->setLabelFormat(QStringLiteral("%.3g"));
            setNiceTicks(val, xlo, xhi);
            axisX = val;
        }
        axisX->setTitleText(m_data.xTitle.toHtmlEscaped());
        chart->addAxis(axisX, Qt::AlignBottom);
        for (size_t s = 0; s < m_data.series.size(); ++s) {
            const auto& ser = m_data.series[s];
            const QColor c = colorOf(ser, static_cast<int>(s));
            // NaN breaks the line: one QLineSeries per finite run, markers for every point.
            auto* markers = new QScatterSeries();
            markers->setName(ser.name);
            markers->setColor(c);
            markers->setMarkerSize(7);
            markers->setBorderColor(c);
            QLineSeries* line = nullptr;
            for (size_t i = 0; i < ser.y.size() && i < ser.x.size(); ++i) {
                if (!std::isfinite(ser.y[i]) || (m_data.logY && ser.y[i] <= 0)) {
                    line = nullptr;
                    continue;
                }
                if (!line) {
                    line = new QLineSeries();
                    line->setColor(c);
                    QPen pen(c, 2);
                    line->setPen(pen);
                    chart->addSeries(line);
                    line->attachAxis(axisX);
                    line->attachAxis(axisY);
                    for (auto* m : chart->legend()->markers(line))
                        m->setVisible(false);
                }
                line->append(ser.x[i], ser.y[i]);
                markers->append(ser.x[i], ser.y[i]);
            }
            chart->addSeries(markers);
            markers->attachAxis(axisX);
            markers->attachAxis(axisY);
        }
    }
    if (!m_placeholder.isEmpty()) {
        // A message, not an empty plot: no axes or grid whose 0..1 ticks read as data.
        for (QAbstractAxis* axis : chart->axes())
            axis->setVisible(false);
        chart->setPlotAreaBackgroundVisible(false);
        chart->setTitleBrush(QBrush(Qt::darkGray));
    }
    QChart* old = m_view->chart();
    m_view->setChart(chart);
    delete old;
    updateLabelAngle();
}

} // namespace gwb::views
