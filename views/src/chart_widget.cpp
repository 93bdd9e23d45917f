#include "gwb/views/chart_widget.h"

#include "chart_util.h"
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

using namespace chart_detail;

namespace {

// Ticks at 1-2-5 multiples instead of Qt Charts' equal divisions of the range.
void setNiceTicks(QValueAxis* axis, double lo, double hi, int maxTicks = 6) {
    const auto ticks = detail::niceTicks(lo, hi, maxTicks);
    if (ticks.size() < 2) return;
    axis->setTickType(QValueAxis::TicksDynamic);
    axis->setTickAnchor(ticks.front());
    axis->setTickInterval(ticks[1] - ticks[0]);
}

} // namespace

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
