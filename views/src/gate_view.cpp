#include "gwb/views/gate_view.h"

#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QPushButton>
#include <QVBoxLayout>

namespace gwb::views {

GateView::GateView(QWidget* parent) : View(std::make_unique<GateFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_quantityCombo = detail::addCombo(
        bar, QStringLiteral("Show"), {QStringLiteral("mean gate"), QStringLiteral("fraction of channels > 0.5")}, this);
    m_scaleCombo = detail::addCombo(bar, QStringLiteral("Scale"),
                                    {QStringLiteral("data's range"), QStringLiteral("fixed 0 to 1")}, this);
    m_drillButton = new QPushButton(QStringLiteral("Channels of selected layer"), this);
    m_drillButton->setCheckable(true);
    bar->addWidget(m_drillButton);
    bar->addStretch();
    m_mapCombo = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    m_heatmap = new HeatmapWidget(this);
    layout->addWidget(m_heatmap, 1);

    connect(m_quantityCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setQuantity(i == 1 ? Quantity::AboveHalf : Quantity::MeanGate); });
    connect(m_scaleCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setScale(i == 1 ? Scale::Unit : Scale::Data); });
    connect(m_drillButton, &QPushButton::toggled, this, [this](bool on) {
        if (on != (drillLayer() >= 0)) setDrillLayer(on ? selLayer() : -1); // ignore echoes of setDrillLayer
    });
    connect(m_mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& name) { setColormapId(colormapFromName(name)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64 col) {
        if (!selection()) return;
        if (drillLayer() >= 0) {
            selection()->setToken(static_cast<int>(row));
        } else {
            selection()->setLayer(static_cast<int>(row));
            selection()->setToken(static_cast<int>(col));
        }
    });
    refresh();
}

void GateView::setQuantity(Quantity q) {
    if (q == quantity()) return;
    fig().setQuantity(q);
    m_quantityCombo->setCurrentIndex(q == Quantity::AboveHalf ? 1 : 0);
    refresh();
    Q_EMIT settingsChanged();
}

void GateView::setScale(Scale sc) {
    if (sc == scale()) return;
    fig().setScale(sc);
    m_scaleCombo->setCurrentIndex(sc == Scale::Unit ? 1 : 0);
    refresh();
    Q_EMIT settingsChanged();
}

void GateView::setDrillLayer(int layer) {
    if (layer == drillLayer()) return;
    fig().setDrillLayer(layer);
    m_drillButton->setChecked(drillLayer() >= 0);
    refresh();
    Q_EMIT settingsChanged();
}

void GateView::setSettings(const QJsonObject& s) {
    View::setSettings(s); // the figure's quantity and drill-down, the colormap
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    m_quantityCombo->setCurrentIndex(quantity() == Quantity::AboveHalf ? 1 : 0);
    m_scaleCombo->setCurrentIndex(scale() == Scale::Unit ? 1 : 0);
    m_drillButton->setChecked(drillLayer() >= 0);
    refresh();
}

void GateView::syncFigure(Figure& figure) const {
    figure.setPanelWindow(QStringLiteral("matrix"), m_heatmap->hasMatrix() ? m_heatmap->window() : QRectF());
}

void GateView::refresh() {
    const GateFigure& f = static_cast<const GateFigure&>(figure());
    m_heatmap->setColormap(colormapId());
    m_quantityCombo->setEnabled(f.drillLayer() < 0);
    m_drillButton->setChecked(f.drillLayer() >= 0); // a drill-down past a new trace's layers ends
    m_heatmap->setPanel(f.panel());
}

} // namespace gwb::views
