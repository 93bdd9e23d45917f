#include "gwb/views/corpus_view.h"

#include "plot_util.h"
#include "view_common.h"

#include <QFileInfo>
#include <QLocale>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>
#include <set>

namespace gwb::views {

namespace {

using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;

bool isRole(const std::string& r) {
    return r == "model" || r == "baseline";
}

/// "Grassmann" / "Transformer" from the quantities only one kind of model has; else the role.
QString roleLabel(const CorpusStats& s, const QString& role) {
    if (role.isEmpty()) return QStringLiteral("Grassmann vs Transformer");
    const std::string r = role.toStdString();
    if (s.quantities.count(r + ".gate_mean")) return QStringLiteral("Grassmann");
    if (s.quantities.count(r + ".attn_entropy")) return QStringLiteral("Transformer");
    return role;
}

QColor roleColor(const QString& label) {
    if (label == QLatin1String("Grassmann")) return seriesColor(0);
    if (label == QLatin1String("Transformer")) return seriesColor(1);
    return seriesColor(2);
}

int64_t trailingGroups(const StatQuantity& q) {
    int64_t r = 1;
    for (size_t i = 1; i < q.groupShape.size(); ++i)
        r *= q.groupShape[i];
    return r;
}

int64_t leadingExtent(const StatQuantity& q) {
    return q.groupShape.empty() ? 1 : q.groupShape[0];
}

/// "L0", "L1→L2" (transitions), "L3 (final)" for the lens layer past the last block.
QString categoryLabel(const StatQuantity& q, int64_t i, int64_t extent) {
    if (q.axes.empty()) return QStringLiteral("all");
    const std::string& a = q.axes[0];
    if (a == "transition") return QStringLiteral("L%1→%2").arg(i).arg(i + 1);
    if (a == "lens_layer" && i == extent - 1) return QStringLiteral("L%1 (out)").arg(i);
    if (a == "layer") return QStringLiteral("L%1").arg(i);
    return QStringLiteral("%1 %2").arg(QString::fromStdString(a)).arg(i);
}

/// "head 2", "offset 1, angle 0": the trailing axes' indices of a flat index r.
QString trailingLabel(const StatQuantity& q, int64_t r) {
    QStringList parts;
    for (size_t i = q.groupShape.size(); i-- > 1;) {
        const int64_t e = std::max<int64_t>(1, q.groupShape[i]);
        QString axis = QString::fromStdString(q.axes.size() > i ? q.axes[i] : std::string("group"));
        if (i == 1 && !q.axes.empty() && q.axes[0] == q.axes[i]) axis = QStringLiteral("vs ") + axis;
        parts.prepend(QStringLiteral("%1 %2").arg(axis).arg(r % e));
        r /= e;
    }
    return parts.join(QStringLiteral(", "));
}

std::vector<int64_t> groupsOf(const StatQuantity& q, int64_t leading, int group) {
    const int64_t R = trailingGroups(q);
    std::vector<int64_t> g;
    if (leading < 0 || leading >= leadingExtent(q)) return g;
    if (group >= 0) {
        if (group < R) g.push_back(leading * R + group);
        return g;
    }
    for (int64_t r = 0; r < R; ++r)
        g.push_back(leading * R + r);
    return g;
}

QString shortFile(const std::string& path) {
    return QFileInfo(QString::fromStdString(path)).fileName();
}

} // namespace

CorpusView::CorpusView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    m_header = new QLabel(this);
    m_header->setObjectName(QStringLiteral("corpusHeader"));
    m_header->setWordWrap(true);
    m_header->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_header);
    auto* bar = new QHBoxLayout();
    m_quantityCombo = detail::addCombo(bar, QStringLiteral("Quantity"), {}, this);
    m_quantityCombo->setObjectName(QStringLiteral("corpusQuantity"));
    m_quantityCombo->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_groupLabel = new QLabel(QStringLiteral("Group"), this);
    bar->addWidget(m_groupLabel);
    m_groupCombo = new QComboBox(this);
    bar->addWidget(m_groupCombo);
    m_shapeCombo =
        detail::addCombo(bar, QStringLiteral("Shape"), {QStringLiteral("box"), QStringLiteral("violin")}, this);
    m_curveCombo = detail::addCombo(bar, QStringLiteral("Curve"), {}, this);
    bar->addStretch();
    layout->addLayout(bar);
    m_definition = new QLabel(this);
    m_definition->setObjectName(QStringLiteral("corpusDefinition"));
    m_definition->setWordWrap(true);
    m_definition->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_definition);
    auto* split = new QSplitter(Qt::Vertical, this);
    m_dist = new DistributionWidget(split);
    m_curveChart = new ChartWidget(split);
    split->addWidget(m_dist);
    split->addWidget(m_curveChart);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);

    connect(m_quantityCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setQuantity(m_quantityCombo->itemData(i).toString());
    });
    connect(m_groupCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setGroup(m_groupCombo->itemData(i).toInt());
    });
    connect(m_shapeCombo, &QComboBox::currentIndexChanged, this, [this](int i) { setViolin(i == 1); });
    connect(m_curveCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setCurveIndex(m_curveCombo->itemData(i).toInt());
    });
    refresh();
}

QStringList CorpusView::quantityKeys(const CorpusStats& stats) {
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

QString CorpusView::keyFor(const CorpusStats& stats, const QString& name) {
    const QStringList keys = quantityKeys(stats);
    if (keys.contains(name)) return name;
    const std::string n = name.toStdString();
    const auto dot = n.find('.');
    if (stats.quantities.count(n) && dot != std::string::npos && isRole(n.substr(0, dot)))
        return QString::fromStdString(n.substr(dot + 1));
    return {};
}

QString CorpusView::resolvedQuantity() const {
    if (!m_data.corpus) return {};
    const QStringList keys = quantityKeys(*m_data.corpus);
    if (keys.contains(m_quantity)) return m_quantity;
    if (keys.contains(QStringLiteral("surprisal"))) return QStringLiteral("surprisal");
    return keys.isEmpty() ? QString() : keys.front();
}

std::vector<CorpusView::Part> CorpusView::parts() const {
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

void CorpusView::setQuantity(const QString& key) {
    if (key == m_quantity) return;
    m_quantity = key;
    m_group = -1;
    m_curve = -1;
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setGroup(int group) {
    if (group == m_group) return;
    m_group = group;
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setViolin(bool violin) {
    if (violin == m_violin) return;
    m_violin = violin;
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setCurveIndex(int index) {
    if (index == m_curve) return;
    m_curve = index;
    refresh();
    Q_EMIT settingsChanged();
}

QJsonObject CorpusView::settings() const {
    QJsonObject o = View::settings();
    const QString resolved = resolvedQuantity();
    o.insert(QStringLiteral("quantity"), resolved.isEmpty() ? m_quantity : resolved);
    o.insert(QStringLiteral("group"), m_group);
    o.insert(QStringLiteral("shape"), m_violin ? QStringLiteral("violin") : QStringLiteral("box"));
    o.insert(QStringLiteral("curve"), m_curve);
    return o;
}

void CorpusView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    if (s.contains(QStringLiteral("quantity"))) setQuantity(s.value(QStringLiteral("quantity")).toString());
    if (s.contains(QStringLiteral("group"))) setGroup(s.value(QStringLiteral("group")).toInt(-1));
    if (s.contains(QStringLiteral("shape")))
        setViolin(s.value(QStringLiteral("shape")).toString() == QLatin1String("violin"));
    if (s.contains(QStringLiteral("curve"))) setCurveIndex(s.value(QStringLiteral("curve")).toInt(-1));
}

bool CorpusView::hasContent() const {
    return m_data.corpus && !parts().empty();
}

QString CorpusView::missingDataMessage() const {
    if (m_data.corpus) return QStringLiteral("The statistics file holds no quantities.");
    return QStringLiteral("No corpus statistics: open a file made by `gwb stats` (File ▸ Open Statistics…) "
                          "or run the models over text files (Run ▸ Corpus…).");
}

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
    QStringList models;
    for (const auto& [role, name] : s.models)
        models << QStringLiteral("%1: %2").arg(roleLabel(s, QString::fromStdString(role)),
                                               QString::fromStdString(name));
    const QString file =
        m_data.corpusPath.isEmpty() ? QStringLiteral("statistics") : QFileInfo(m_data.corpusPath).fileName();
    QString windows = QStringLiteral("%1 of %2 windows covered")
                          .arg(loc.toString(static_cast<qlonglong>(s.windows.size())))
                          .arg(loc.toString(static_cast<qlonglong>(s.windowsPlanned)));
    if (!s.complete) windows += QStringLiteral(" (partial)");
    return QStringLiteral("%1 — %2 · %3 tokens per model · window %4, stride %5 · shard %6/%7 · files: %8 · "
                          "skipped: %9%10")
        .arg(file, windows, loc.toString(static_cast<qlonglong>(corpusTokens(s))))
        .arg(s.window)
        .arg(s.stride)
        .arg(s.shardIndex)
        .arg(s.shardCount)
        .arg(files.isEmpty() ? QStringLiteral("none") : files.join(QStringLiteral(", ")),
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

void CorpusView::rebuildCombos() {
    const CorpusStats* s = m_data.corpus.get();
    if (s != m_quantitiesFor) {
        const QSignalBlocker block(m_quantityCombo);
        m_quantityCombo->clear();
        if (s)
            for (const QString& k : quantityKeys(*s)) {
                QStringList roles;
                for (const char* role : {"model", "baseline"})
                    if (s->quantities.count(std::string(role) + "." + k.toStdString()))
                        roles << roleLabel(*s, QString::fromLatin1(role));
                m_quantityCombo->addItem(
                    roles.isEmpty() ? k : QStringLiteral("%1 (%2)").arg(k, roles.join(QStringLiteral(", "))), k);
            }
        m_quantitiesFor = s;
    }
    const QString key = resolvedQuantity();
    {
        const QSignalBlocker block(m_quantityCombo);
        m_quantityCombo->setCurrentIndex(m_quantityCombo->findData(key));
    }
    const QString builtFor = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(s)).arg(key);
    if (builtFor == m_combosFor) return;
    m_combosFor = builtFor;
    const auto ps = parts();
    const QSignalBlocker b1(m_groupCombo), b2(m_curveCombo);
    m_groupCombo->clear();
    m_curveCombo->clear();
    if (ps.empty()) return;
    const StatQuantity& q = s->quantities.at(ps.front().name);
    const int64_t R = trailingGroups(q);
    QStringList trailingAxes;
    for (size_t i = 1; i < q.axes.size(); ++i)
        trailingAxes << QString::fromStdString(q.axes[i]);
    m_groupLabel->setText(trailingAxes.isEmpty() ? QStringLiteral("Group") : trailingAxes.join(QStringLiteral(" × ")));
    m_groupCombo->addItem(R > 1 ? QStringLiteral("all pooled") : QStringLiteral("—"), -1);
    if (q.groupShape.size() > 1)
        for (int64_t r = 0; r < R; ++r)
            m_groupCombo->addItem(trailingLabel(q, r), static_cast<int>(r));
    m_groupCombo->setEnabled(q.groupShape.size() > 1);
    const int64_t L = leadingExtent(q);
    m_curveCombo->addItem(q.axes.empty() ? QStringLiteral("—")
                                         : QStringLiteral("all %1s pooled").arg(QString::fromStdString(q.axes[0])),
                          -1);
    if (!q.axes.empty())
        for (int64_t i = 0; i < L; ++i)
            m_curveCombo->addItem(categoryLabel(q, i, L), static_cast<int>(i));
}

void CorpusView::refresh() {
    rebuildCombos();
    {
        const QSignalBlocker b(m_shapeCombo);
        m_shapeCombo->setCurrentIndex(m_violin ? 1 : 0);
    }
    m_header->setText(headerText());
    if (!hasContent()) {
        m_definition->clear();
        m_dist->setPlaceholder(missingDataMessage());
        m_curveChart->setPlaceholder(QString());
        m_curveChart->hide();
        m_quantityCombo->setEnabled(false);
        return;
    }
    m_quantityCombo->setEnabled(true);
    {
        const QSignalBlocker b1(m_groupCombo), b2(m_curveCombo);
        const int gi = m_groupCombo->findData(m_group);
        m_groupCombo->setCurrentIndex(gi >= 0 ? gi : 0);
        const int ci = m_curveCombo->findData(m_curve);
        m_curveCombo->setCurrentIndex(ci >= 0 ? ci : 0);
    }
    QStringList defs;
    for (const Part& p : parts()) {
        const QString def = QString::fromStdString(m_data.corpus->quantities.at(p.name).definition);
        if (!defs.contains(def)) defs << def;
    }
    m_definition->setText(
        QStringLiteral("<b>%1</b>: %2. Boxes: quartiles read from the fixed-edge histogram "
                       "(linear inside a bin); whiskers: 2.5–97.5 percentiles; diamond and bar: the "
                       "mean and its 95% normal interval, mean ± 1.96·s/√n from n, sum and sum of "
                       "squares (values within a window are correlated: the interval is optimistic).")
            .arg(resolvedQuantity().toHtmlEscaped(), defs.join(QStringLiteral("; ")).toHtmlEscaped()));
    m_dist->setChart(distributionChart());
    const ChartData curve = positionChart();
    m_curveChart->setVisible(curve.hasData());
    if (curve.hasData()) m_curveChart->setChart(curve);
    m_curveCombo->setEnabled(curve.hasData() && m_curveCombo->count() > 1);
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
