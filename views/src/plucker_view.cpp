#include "gwb/views/plucker_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/heatmap_widget.h"

#include <QSplitter>
#include <QVBoxLayout>
#include <algorithm>
#include <array>

namespace gwb::views {
namespace {
// Order of the "Show" combo: coherence first, it is the quantity that varies.
constexpr std::array<PluckerView::Quantity, 3> kComboOrder{
    PluckerView::Quantity::Coherence, PluckerView::Quantity::Residual, PluckerView::Quantity::Planarity};

int comboIndex(PluckerView::Quantity q) {
    for (size_t i = 0; i < kComboOrder.size(); ++i)
        if (kComboOrder[i] == q) return static_cast<int>(i);
    return 0;
}
} // namespace

PluckerView::PluckerView(QWidget* parent) : View(std::make_unique<PluckerFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_quantityCombo = detail::addCombo(bar, QStringLiteral("Show"),
                                       {QStringLiteral("coherence \u2016B_t\u2016"),
                                        QStringLiteral("Pl\u00fccker residual \u03c1(B_t) (rounding check)"),
                                        QStringLiteral("planarity of B_t (rounding check)")},
                                       this);
    bar->addStretch();
    m_mapCombo = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    // Side by side: the chart of one token's offsets needs its readable height, not the width,
    // and the heatmap then has the view's whole height for its token labels (under it, a chart
    // left a 6-row heatmap 120 px, where rotated pieces were cut to four letters).
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_heatmap = new HeatmapWidget(split);
    m_heatmap->setUndefinedReason([](int64_t row, int64_t col) {
        return QStringLiteral("token %1 has no valid offset in layer %2: t \u2212 D < 0 for every D, so there is no "
                              "pair plane")
            .arg(col)
            .arg(row);
    });
    m_chart = new ChartWidget(split);
    split->addWidget(m_heatmap);
    split->addWidget(m_chart);
    split->setStretchFactor(0, 7);
    split->setStretchFactor(1, 3);
    split->setSizes({700, 300});
    layout->addWidget(split, 1);
    connect(m_quantityCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setQuantity(kComboOrder[static_cast<size_t>(std::clamp(i, 0, 2))]); });
    connect(m_mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64 col) {
        if (!selection()) return;
        selection()->setLayer(static_cast<int>(row));
        selection()->setToken(static_cast<int>(col));
    });
    refresh();
}

void PluckerView::setQuantity(Quantity q) {
    if (q == quantity()) return;
    fig().setQuantity(q);
    m_quantityCombo->setCurrentIndex(comboIndex(q));
    refresh();
    Q_EMIT settingsChanged();
}

void PluckerView::setSettings(const QJsonObject& s) {
    const Quantity before = quantity();
    View::setSettings(s); // the figure's quantity, the colormap
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    m_quantityCombo->setCurrentIndex(comboIndex(quantity()));
    refresh();
    if (quantity() != before) Q_EMIT settingsChanged();
}

void PluckerView::syncFigure(Figure& figure) const {
    figure.setPanelWindow(QStringLiteral("matrix"), m_heatmap->hasMatrix() ? m_heatmap->window() : QRectF());
}

void PluckerView::refresh() {
    const PluckerFigure& f = static_cast<const PluckerFigure&>(figure());
    m_heatmap->setColormap(colormapId());
    m_heatmap->setPanel(f.panel());
    const ChartData c = f.pairNormChart();
    if (f.hasContent() && c.hasData())
        m_chart->setChart(c);
    else
        m_chart->setPlaceholder(f.chartPlaceholder());
}

} // namespace gwb::views
