// The Corpus view's figure and numbers: the header line, the distribution chart per layer (box
// or violin per model), the mean against position, the caption, the data tables and the figure.
#include "gwb/views/corpus_view.h"

#include "corpus_view_util.h"
#include "plot_util.h"
#include "view_common.h"

#include <QFileInfo>
#include <QLocale>
#include <cmath>
#include <limits>

namespace gwb::views {

using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;
using namespace corpus;

QString CorpusView::headerText() const {
    if (!m_data.corpus) return missingDataMessage();
    const CorpusStats& s = *m_data.corpus;
    const QLocale loc = QLocale::c();
    QStringList skipped;
    for (const auto& k : s.skipped)
        skipped << QStringLiteral("%1 (%2)").arg(shortFile(k.file), QString::fromStdString(k.reason));
    QStringList files;
    for (const auto& f : s.files)
        files << shortFile(f);
    // Windows are numbered over the files in order: a cap on the windows may stop before the
    // later files (the file does not record which file each window came from).
    QString cap;
    if (s.maxWindows > 0 && files.size() > 1)
        cap = QStringLiteral(" (at most %1 windows, taken from the first files on: the later files may not be "
                             "covered)")
                  .arg(s.maxWindows);
    QStringList models;
    for (const auto& [role, name] : s.models)
        models << QStringLiteral("%1: %2").arg(roleLabel(s, QString::fromStdString(role)),
                                               QString::fromStdString(name));
    const QString file =
        m_data.corpusPath.empty() ? QStringLiteral("statistics") : QFileInfo(QString::fromStdString(m_data.corpusPath)).fileName();
    QString windows = QStringLiteral("%1 of %2 windows covered")
                          .arg(loc.toString(static_cast<qlonglong>(s.windows.size())))
                          .arg(loc.toString(static_cast<qlonglong>(s.windowsPlanned)));
    if (!s.complete) windows += QStringLiteral(" (partial)");
    return QStringLiteral("%1 — %2 · %3 tokens per model · window %4, stride %5 · shard %6/%7 · input files: "
                          "%8 · skipped: %9%10")
        .arg(file, windows, loc.toString(static_cast<qlonglong>(corpusTokens(s))))
        .arg(s.window)
        .arg(s.stride)
        .arg(s.shardIndex)
        .arg(s.shardCount)
        .arg(files.isEmpty() ? QStringLiteral("none") : files.join(QStringLiteral(", ")) + cap,
             skipped.isEmpty() ? QStringLiteral("none") : skipped.join(QStringLiteral("; ")),
             models.isEmpty() ? QString() : QStringLiteral(" · ") + models.join(QStringLiteral(" · ")));
}

DistributionChartData CorpusView::distributionChart() const {
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

ChartData CorpusView::positionChart() const {
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

QString CorpusView::caption() const {
    if (!hasContent()) return missingDataMessage();
    const CorpusStats& s = *m_data.corpus;
    QStringList defs;
    for (const Part& p : parts()) {
        const QString def = QString::fromStdString(s.quantities.at(p.name).definition);
        if (!defs.contains(def)) defs << def;
    }
    QString text = QStringLiteral("%1: %2, over %3 windows of %4 tokens (%5 tokens per model%6). Boxes: quartiles "
                                  "from the fixed-edge histogram, whiskers 2.5–97.5 percentiles; diamond: mean with "
                                  "its 95% normal interval mean ± 1.96·s/√n.")
                       .arg(resolvedQuantity(), defs.join(QStringLiteral("; ")))
                       .arg(static_cast<qlonglong>(s.windows.size()))
                       .arg(s.window)
                       .arg(static_cast<qlonglong>(corpusTokens(s)))
                       .arg(s.complete ? QString() : QStringLiteral(", partial"));
    if (positionChart().hasData()) text += QStringLiteral(" Second panel: the mean against position in the window.");
    return text;
}

std::vector<DataTable> CorpusView::dataTables() const {
    if (!hasContent()) return {};
    const DistributionChartData d = distributionChart();
    const QString key = resolvedQuantity();
    const QString safe = QString(key).replace(QLatin1Char('.'), QLatin1Char('_'));
    QStringList rows;
    std::vector<const DistributionSummary*> boxes;
    for (const auto& ser : d.series)
        for (size_t i = 0; i < ser.boxes.size(); ++i) {
            rows << QStringLiteral("%1 %2").arg(ser.name, d.categories[static_cast<int>(i)]);
            boxes.push_back(&ser.boxes[i]);
        }
    const QStringList cols{QStringLiteral("n"),        QStringLiteral("mean"),      QStringLiteral("sd"),
                           QStringLiteral("ci95_low"), QStringLiteral("ci95_high"), QStringLiteral("p2.5"),
                           QStringLiteral("q1"),       QStringLiteral("median"),    QStringLiteral("q3"),
                           QStringLiteral("p97.5"),    QStringLiteral("below"),     QStringLiteral("above")};
    std::vector<float> v;
    for (const DistributionSummary* b : boxes)
        for (double x : {static_cast<double>(b->n), b->mean, b->sd, b->ciLow, b->ciHigh, b->p025, b->q1, b->median,
                         b->q3, b->p975, static_cast<double>(b->below), static_cast<double>(b->above)})
            v.push_back(static_cast<float>(x));
    std::vector<DataTable> out;
    const auto R = static_cast<int64_t>(rows.size());
    out.push_back(detail::tableFromMatrix(safe + QStringLiteral("_summary"),
                                          key + QStringLiteral(": per-group distribution summary"), QString(),
                                          QString(), R, static_cast<int64_t>(cols.size()), std::move(v),
                                          QStringLiteral("group"), QStringLiteral("statistic"), rows, cols));
    // Histogram counts behind the boxes (under, B bins, over).
    const size_t B = d.edges.size() - 1;
    QStringList bins{QStringLiteral("<%1").arg(d.edges.front())};
    for (size_t k = 0; k < B; ++k)
        bins << QStringLiteral("[%1,%2)").arg(d.edges[k]).arg(d.edges[k + 1]);
    bins << QStringLiteral(">=%1").arg(d.edges.back());
    std::vector<float> h;
    for (const DistributionSummary* b : boxes)
        for (size_t k = 0; k < B + 2; ++k)
            h.push_back(k < b->counts.size() ? static_cast<float>(b->counts[k]) : 0.f);
    out.push_back(detail::tableFromMatrix(safe + QStringLiteral("_histogram"),
                                          key + QStringLiteral(": histogram counts"), QString(),
                                          QStringLiteral("count"), R, static_cast<int64_t>(B + 2), std::move(h),
                                          QStringLiteral("group"), QStringLiteral("bin"), rows, bins));
    const ChartData c = positionChart();
    if (c.hasData()) {
        QStringList names;
        const int64_t P = static_cast<int64_t>(c.series.front().y.size());
        std::vector<float> p;
        for (const auto& ser : c.series) {
            names << ser.name;
            for (int64_t t = 0; t < P; ++t)
                p.push_back(t < static_cast<int64_t>(ser.y.size()) ? static_cast<float>(ser.y[static_cast<size_t>(t)])
                                                                   : std::numeric_limits<float>::quiet_NaN());
        }
        QStringList positions;
        for (int64_t t = 0; t < P; ++t)
            positions << QString::number(t);
        out.push_back(detail::tableFromMatrix(safe + QStringLiteral("_position_mean"), c.title, QString(), QString(),
                                              static_cast<int64_t>(names.size()), P, std::move(p),
                                              QStringLiteral("model"), QStringLiteral("position"), names, positions));
    }
    return out;
}

void CorpusView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    const ChartData curve = positionChart();
    if (!curve.hasData()) {
        paintDistributionChart(p, rect, distributionChart(), style);
        return;
    }
    const bool wide = rect.width() > rect.height() * 1.6;
    const auto [a, b] = detail::splitPanels(rect, wide ? 0.55 : 0.58, wide, style.body.pointSizeF() * 1.5);
    paintDistributionChart(p, a, distributionChart(), style);
    paintChart(p, b, curve, style);
}

} // namespace gwb::views
