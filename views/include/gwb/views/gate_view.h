#pragma once
// Gate view: layer x token heatmap of the mean gate (or the fraction of channels above 0.5);
// clicking a cell selects layer and token, the "Channels" button drills into the selected
// layer's token x channel gates. The picture is GateFigure's (gate_figure.h).

#include "gwb/views/gate_figure.h"
#include "gwb/views/view.h"

class QComboBox;
class QPushButton;

namespace gwb::views {

class HeatmapWidget;

class GateView : public View {
    Q_OBJECT
public:
    using Quantity = GateFigure::Quantity;
    using Scale = GateFigure::Scale;

    explicit GateView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kGate; }
    QString title() const override { return QStringLiteral("Gates"); }
    void setSettings(const QJsonObject& settings) override;

    Quantity quantity() const { return fig().quantity(); }
    void setQuantity(Quantity q);
    Scale scale() const { return fig().scale(); }
    void setScale(Scale s);
    /// Layer shown as token x channel, or -1 for the layer x token overview.
    int drillLayer() const { return fig().drillLayer(); }
    void setDrillLayer(int layer);
    HeatmapWidget* heatmap() const { return m_heatmap; }

protected:
    void refresh() override;
    void syncFigure(Figure& figure) const override;

private:
    GateFigure& fig() const { return figureAs<GateFigure>(); }
    HeatmapWidget* m_heatmap;
    QComboBox* m_quantityCombo;
    QComboBox* m_scaleCombo;
    QComboBox* m_mapCombo;
    QPushButton* m_drillButton;
};

} // namespace gwb::views
