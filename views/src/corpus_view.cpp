// The Corpus view's widget: the header, the quantity / group / shape / curve controls and
// refreshing the charts. What it draws and exports: CorpusFigure (corpus_figure.h).
#include "gwb/views/corpus_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/distribution_chart.h"

#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

namespace gwb::views {

CorpusView::CorpusView(QWidget* parent) : View(std::make_unique<CorpusFigure>(), parent) {
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

void CorpusView::setQuantity(const QString& key) {
    if (key == quantity()) return;
    fig().setQuantity(key);
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setGroup(int group) {
    if (group == this->group()) return;
    fig().setGroup(group);
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setViolin(bool violin) {
    if (violin == this->violin()) return;
    fig().setViolin(violin);
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setCurveIndex(int index) {
    if (index == curveIndex()) return;
    fig().setCurveIndex(index);
    refresh();
    Q_EMIT settingsChanged();
}

void CorpusView::setSettings(const QJsonObject& s) {
    const QJsonObject before = settings();
    View::setSettings(s); // the figure's quantity, group, shape and curve; the colormap
    refresh();
    if (settings() != before) Q_EMIT settingsChanged();
}

void CorpusView::rebuildCombos() {
    const CorpusFigure& f = fig();
    const gwb::engine::CorpusStats* s = m_data.corpus.get();
    if (s != m_quantitiesFor) {
        const QSignalBlocker block(m_quantityCombo);
        m_quantityCombo->clear();
        for (const auto& [text, key] : f.quantityChoices())
            m_quantityCombo->addItem(text, key);
        m_quantitiesFor = s;
    }
    const QString key = f.resolvedQuantity();
    {
        const QSignalBlocker block(m_quantityCombo);
        m_quantityCombo->setCurrentIndex(m_quantityCombo->findData(key));
    }
    const QString builtFor = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(s)).arg(key);
    if (builtFor == m_combosFor) return;
    m_combosFor = builtFor;
    const CorpusFigure::Controls c = f.controls();
    const QSignalBlocker b1(m_groupCombo), b2(m_curveCombo);
    m_groupCombo->clear();
    m_curveCombo->clear();
    if (c.groups.empty()) return; // no quantity
    m_groupLabel->setText(c.groupLabel);
    for (const auto& [text, group] : c.groups)
        m_groupCombo->addItem(text, group);
    m_groupCombo->setEnabled(c.groupsSelectable);
    for (const auto& [text, index] : c.curves)
        m_curveCombo->addItem(text, index);
}

void CorpusView::refresh() {
    const CorpusFigure& f = fig();
    rebuildCombos();
    {
        const QSignalBlocker b(m_shapeCombo);
        m_shapeCombo->setCurrentIndex(f.violin() ? 1 : 0);
    }
    // Without statistics the plot says what to do; the header would only say it again.
    m_header->setText(m_data.corpus ? f.headerText() : QString());
    m_header->setVisible(m_data.corpus != nullptr);
    if (!f.hasContent()) {
        m_definition->clear();
        m_dist->setPlaceholder(f.missingDataMessage());
        m_curveChart->setPlaceholder(QString());
        m_curveChart->hide();
        m_quantityCombo->setEnabled(false);
        return;
    }
    m_quantityCombo->setEnabled(true);
    {
        const QSignalBlocker b1(m_groupCombo), b2(m_curveCombo);
        const int gi = m_groupCombo->findData(f.group());
        m_groupCombo->setCurrentIndex(gi >= 0 ? gi : 0);
        const int ci = m_curveCombo->findData(f.curveIndex());
        m_curveCombo->setCurrentIndex(ci >= 0 ? ci : 0);
    }
    m_definition->setText(f.definitionText());
    m_dist->setChart(f.distributionChart());
    const ChartData curve = f.positionChart();
    m_curveChart->setVisible(curve.hasData());
    if (curve.hasData()) m_curveChart->setChart(curve);
    m_curveCombo->setEnabled(curve.hasData() && m_curveCombo->count() > 1);
}

} // namespace gwb::views
