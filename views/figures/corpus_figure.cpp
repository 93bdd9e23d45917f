// The Corpus figure's state and numbers: the settings, the quantities of a statistics file, the
// header line, the controls' choices, the caption, the data tables and the figure. The charts
// themselves: corpus_figure_charts.cpp.
#include "gwb/views/corpus_figure.h"

#include "corpus_view_util.h"
#include "figure_common.h"

#include <QFileInfo>
#include <QLocale>
#include <limits>
#include <set>

namespace gwb::views {

using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;
using namespace corpus;

QStringList CorpusFigure::quantityKeys(const CorpusStats& stats) {
    std::set<QString> keys;
    for (const auto& [name, q] : stats.quantities) {
        const auto dot = name.find('.');
        if (dot != std::string::npos && isRole(name.substr(0, dot)))
            keys.insert(QString::fromStdString(name.substr(dot + 1)));
        else
            keys.insert(QString::fromStdString(name));
    }
    return QStringList(keys.begin(), keys.end());
}

QString CorpusFigure::keyFor(const CorpusStats& stats, const QString& name) {
    const QStringList keys = quantityKeys(stats);
    if (keys.contains(name)) return name;
    const std::string n = name.toStdString();
    const auto dot = n.find('.');
    if (stats.quantities.count(n) && dot != std::string::npos && isRole(n.substr(0, dot)))
        return QString::fromStdString(n.substr(dot + 1));
    return {};
}

QString CorpusFigure::resolvedQuantity() const {
    if (!m_data.corpus) return {};
    const QStringList keys = quantityKeys(*m_data.corpus);
    if (keys.contains(m_quantity)) return m_quantity;
    if (keys.contains(QStringLiteral("surprisal"))) return QStringLiteral("surprisal");
    return keys.isEmpty() ? QString() : keys.front();
}

std::vector<CorpusFigure::Part> CorpusFigure::parts() const {
    std::vector<Part> out;
    if (!m_data.corpus) return out;
    const QString key = resolvedQuantity();
    if (key.isEmpty()) return out;
    for (const char* role : {"model", "baseline"}) {
        const std::string n = std::string(role) + "." + key.toStdString();
        if (m_data.corpus->quantities.count(n)) out.push_back({QString::fromLatin1(role), n});
    }
    if (out.empty() && m_data.corpus->quantities.count(key.toStdString()))
        out.push_back({QString(), key.toStdString()});
    return out;
}

QStringList CorpusFigure::definitions() const {
    QStringList defs;
    for (const Part& p : parts()) {
        const QString def = QString::fromStdString(m_data.corpus->quantities.at(p.name).definition);
        if (!defs.contains(def)) defs << def;
    }
    return defs;
}

void CorpusFigure::setQuantity(const QString& key) {
    if (key == m_quantity) return;
    m_quantity = key;
    m_group = -1;
    m_curve = -1;
}

QJsonObject CorpusFigure::settings() const {
    QJsonObject o = Figure::settings();
    const QString resolved = resolvedQuantity();
    o.insert(QStringLiteral("quantity"), resolved.isEmpty() ? m_quantity : resolved);
    o.insert(QStringLiteral("group"), m_group);
    o.insert(QStringLiteral("shape"), m_violin ? QStringLiteral("violin") : QStringLiteral("box"));
    o.insert(QStringLiteral("curve"), m_curve);
    return o;
}

void CorpusFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    // The quantity first: a new one pools the groups and layers, which the keys below may then set.
    if (s.contains(QStringLiteral("quantity"))) setQuantity(s.value(QStringLiteral("quantity")).toString());
    if (s.contains(QStringLiteral("group"))) m_group = s.value(QStringLiteral("group")).toInt(-1);
    if (s.contains(QStringLiteral("shape")))
        m_violin = s.value(QStringLiteral("shape")).toString() == QLatin1String("violin");
    if (s.contains(QStringLiteral("curve"))) m_curve = s.value(QStringLiteral("curve")).toInt(-1);
}

bool CorpusFigure::hasContent() const {
    return m_data.corpus && !parts().empty();
}

QString CorpusFigure::missingDataMessage() const {
    if (m_data.corpus) return QStringLiteral("The statistics file holds no quantities.");
    return QStringLiteral("No corpus statistics: open a file made by `gwb stats` (File ▸ Open Statistics…) "
                          "or run the models over text files (Run ▸ Corpus…).");
}

QString CorpusFigure::headerText() const {
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
    const QString file = m_data.corpusPath.empty() ? QStringLiteral("statistics")
                                                   : QFileInfo(QString::fromStdString(m_data.corpusPath)).fileName();
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

QString CorpusFigure::definitionText() const {
    if (!hasContent()) return {};
    return QStringLiteral("<b>%1</b>: %2. Boxes: quartiles read from the fixed-edge histogram "
                          "(linear inside a bin); whiskers: 2.5–97.5 percentiles; diamond and bar: the "
                          "mean and its 95% normal interval, mean ± 1.96·s/√n from n, sum and sum of "
                          "squares (values within a window are correlated: the interval is optimistic).")
        .arg(resolvedQuantity().toHtmlEscaped(), definitions().join(QStringLiteral("; ")).toHtmlEscaped());
}

std::vector<CorpusFigure::Choice<QString>> CorpusFigure::quantityChoices() const {
    std::vector<Choice<QString>> out;
    const CorpusStats* s = m_data.corpus.get();
    if (!s) return out;
    for (const QString& k : quantityKeys(*s)) {
        QStringList roles;
        for (const char* role : {"model", "baseline"})
            if (s->quantities.count(std::string(role) + "." + k.toStdString()))
                roles << roleLabel(*s, QString::fromLatin1(role));
        out.emplace_back(roles.isEmpty() ? k : QStringLiteral("%1 (%2)").arg(k, roles.join(QStringLiteral(", "))), k);
    }
    return out;
}

CorpusFigure::Controls CorpusFigure::controls() const {
    Controls c;
    const auto ps = parts();
    if (ps.empty()) return c;
    const StatQuantity& q = m_data.corpus->quantities.at(ps.front().name);
    const int64_t R = trailingGroups(q);
    QStringList trailingAxes;
    for (size_t i = 1; i < q.axes.size(); ++i)
        trailingAxes << QString::fromStdString(q.axes[i]);
    c.groupLabel = trailingAxes.isEmpty() ? QStringLiteral("Group") : trailingAxes.join(QStringLiteral(" × "));
    c.groups.emplace_back(R > 1 ? QStringLiteral("all pooled") : QStringLiteral("—"), -1);
    if (q.groupShape.size() > 1)
        for (int64_t r = 0; r < R; ++r)
            c.groups.emplace_back(trailingLabel(q, r), static_cast<int>(r));
    c.groupsSelectable = q.groupShape.size() > 1;
    const int64_t L = leadingExtent(q);
    c.curves.emplace_back(q.axes.empty() ? QStringLiteral("—")
                                         : QStringLiteral("all %1s pooled").arg(QString::fromStdString(q.axes[0])),
                          -1);
    if (!q.axes.empty())
        for (int64_t i = 0; i < L; ++i)
            c.curves.emplace_back(categoryLabel(q, i, L), static_cast<int>(i));
    return c;
}

QString CorpusFigure::caption() const {
    if (!hasContent()) return missingDataMessage();
    const CorpusStats& s = *m_data.corpus;
    QString text = QStringLiteral("%1: %2, over %3 windows of %4 tokens (%5 tokens per model%6). Boxes: quartiles "
                                  "from the fixed-edge histogram, whiskers 2.5–97.5 percentiles; diamond: mean with "
                                  "its 95% normal interval mean ± 1.96·s/√n.")
                       .arg(resolvedQuantity(), definitions().join(QStringLiteral("; ")))
                       .arg(static_cast<qlonglong>(s.windows.size()))
                       .arg(s.window)
                       .arg(static_cast<qlonglong>(corpusTokens(s)))
                       .arg(s.complete ? QString() : QStringLiteral(", partial"));
    if (positionChart().hasData()) text += QStringLiteral(" Second panel: the mean against position in the window.");
    return text;
}

std::vector<DataTable> CorpusFigure::dataTables() const {
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

void CorpusFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
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
