// The Corpus figure's two charts: the distributions per layer (box or violin per model) and the
// mean against position in the window, made once for each data and settings.
#include "gwb/views/corpus_figure.h"

#include "corpus_view_util.h"
#include "plot_util.h"

namespace gwb::views {

using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;
using namespace corpus;

void CorpusFigure::updateCharts() const {
    const QString key = QStringLiteral("%1/%2/%3/%4/%5")
                            .arg(reinterpret_cast<quintptr>(m_data.corpus.get()))
                            .arg(resolvedQuantity())
                            .arg(m_group)
                            .arg(m_violin ? 1 : 0)
                            .arg(m_curve);
    if (key == m_chartsKey) return;
    m_distribution = makeDistributionChart();
    m_position = makePositionChart();
    m_chartsKey = key;
}

DistributionChartData CorpusFigure::distributionChart() const {
    updateCharts();
    return m_distribution;
}

ChartData CorpusFigure::positionChart() const {
    updateCharts();
    return m_position;
}

DistributionChartData CorpusFigure::makeDistributionChart() const {
    DistributionChartData d;
    const auto ps = parts();
    if (ps.empty()) return d;
    const CorpusStats& s = *m_data.corpus;
    const StatQuantity& first = s.quantities.at(ps.front().name);
    int64_t C = 0;
    for (const Part& p : ps)
        C = std::max(C, leadingExtent(s.quantities.at(p.name)));
    for (int64_t i = 0; i < C; ++i)
        d.categories << categoryLabel(first, i, C);
    d.edges = first.edges;
    d.violin = m_violin;
    const QString key = resolvedQuantity();
    d.title = key + (first.axes.empty() ? QString() : QStringLiteral(" per ") + QString::fromStdString(first.axes[0]));
    if (m_group >= 0) d.title += QStringLiteral(" (%1)").arg(trailingLabel(first, m_group));
    d.yTitle = key;
    d.xTitle = first.axes.empty() ? QString() : QString::fromStdString(first.axes[0]);
    for (const Part& p : ps) {
        const StatQuantity& q = s.quantities.at(p.name);
        DistributionSeries ser;
        ser.name = roleLabel(s, p.role);
        ser.color = roleColor(ser.name);
        for (int64_t i = 0; i < C; ++i)
            ser.boxes.push_back(summarize(q, groupsOf(q, i, m_group)));
        d.series.push_back(std::move(ser));
    }
    // Values beyond the histogram's edges are counted but have no place in it: when 2.5% or more
    // of a group lies there, its whisker stops at the edge, and the chart says so.
    QStringList beyond;
    for (const auto& ser : d.series) {
        double above = 0, below = 0;
        for (const auto& b : ser.boxes)
            if (b.n > 0) {
                above = std::max(above, static_cast<double>(b.above) / static_cast<double>(b.n));
                below = std::max(below, static_cast<double>(b.below) / static_cast<double>(b.n));
            }
        if (above >= 0.025 && !d.edges.empty())
            beyond << QStringLiteral("%1: up to %2% of a group's values lie above %3, the histogram's last edge "
                                     "(its whisker and upper quantiles stop there)")
                          .arg(ser.name)
                          .arg(above * 100, 0, 'f', 1)
                          .arg(detail::formatValue(d.edges.back()));
        if (below >= 0.025 && !d.edges.empty())
            beyond << QStringLiteral("%1: up to %2% of a group's values lie below %3, the histogram's first edge")
                          .arg(ser.name)
                          .arg(below * 100, 0, 'f', 1)
                          .arg(detail::formatValue(d.edges.front()));
    }
    d.note = beyond.join(QStringLiteral("; "));
    return d;
}

ChartData CorpusFigure::makePositionChart() const {
    ChartData c;
    const auto ps = parts();
    if (ps.empty()) return c;
    const CorpusStats& s = *m_data.corpus;
    const QString key = resolvedQuantity();
    c.kind = ChartData::Kind::Line;
    c.xTitle = QStringLiteral("position t in the window");
    c.yTitle = QStringLiteral("mean ") + key;
    // Ranks and pair norms span decades: a log axis, as the Logit lens view's rank chart.
    c.logY = key == QLatin1String("lens_rank") || key == QLatin1String("pair_norm");
    for (const Part& p : ps) {
        const StatQuantity& q = s.quantities.at(p.name);
        if (q.positions <= 0) continue;
        std::vector<int64_t> groups;
        if (m_curve >= 0)
            groups = groupsOf(q, m_curve, m_group);
        else
            for (int64_t i = 0; i < leadingExtent(q); ++i)
                for (int64_t g : groupsOf(q, i, m_group))
                    groups.push_back(g);
        ChartSeries ser;
        ser.name = roleLabel(s, p.role);
        ser.color = roleColor(ser.name);
        ser.y = positionMean(q, groups);
        for (size_t t = 0; t < ser.y.size(); ++t)
            ser.x.push_back(static_cast<double>(t));
        c.series.push_back(std::move(ser));
    }
    if (c.series.empty()) return c;
    const StatQuantity& first = s.quantities.at(ps.front().name);
    QString scope;
    if (first.axes.empty())
        scope = QString();
    else if (m_curve >= 0)
        scope = QStringLiteral(", ") + categoryLabel(first, m_curve, leadingExtent(first));
    else
        scope = QStringLiteral(", all %1s pooled").arg(QString::fromStdString(first.axes[0]));
    if (m_group >= 0) scope += QStringLiteral(", ") + trailingLabel(first, m_group);
    c.title = QStringLiteral("Mean %1 against position%2").arg(key, scope);
    return c;
}

} // namespace gwb::views
