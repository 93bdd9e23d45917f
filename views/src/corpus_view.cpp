// The Corpus view's widget: the header, the quantity / group / shape / curve controls, the
// settings, and refreshing the charts. What it draws and exports: corpus_view_figure.cpp.
#include "gwb/views/corpus_view.h"

#include "corpus_view_util.h"
#include "view_common.h"

#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>
#include <set>

namespace gwb::views {

using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;
using namespace corpus;

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
    m_split = split;
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

void CorpusView::resizeEvent(QResizeEvent* event) {
    View::resizeEvent(event);
    // A wide, short view (a laptop screen) puts the two charts side by side, each as tall as the
    // view allows, rather than two charts too short for their axis labels.
    const Qt::Orientation o = width() > height() * 2 ? Qt::Horizontal : Qt::Vertical;
    if (m_split->orientation() != o) m_split->setOrientation(o);
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
    // Without statistics the plot says what to do; the header would only say it again.
    m_header->setText(m_data.corpus ? headerText() : QString());
    m_header->setVisible(m_data.corpus != nullptr);
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

} // namespace gwb::views
