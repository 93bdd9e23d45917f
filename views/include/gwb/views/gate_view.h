#pragma once
// Gate view: layer x token heatmap of the mean gate (or the fraction of channels above 0.5);
// clicking a cell selects layer and token, the "Channels" button drills into the selected
// layer's token x channel gates.

#include "gwb/views/view.h"

class QComboBox;
class QPushButton;

namespace gwb::views {

class HeatmapWidget;

class GateView : public View {
    Q_OBJECT
public:
    enum class Quantity { MeanGate, AboveHalf };

    explicit GateView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("gate"); }
    QString title() const override { return QStringLiteral("Gates"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;

    Quantity quantity() const { return m_quantity; }
    void setQuantity(Quantity q);
    /// Layer shown as token x channel, or -1 for the layer x token overview.
    int drillLayer() const { return m_drillLayer; }
    void setDrillLayer(int layer);
    HeatmapWidget* heatmap() const { return m_heatmap; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    QString matrixTitle() const;
    HeatmapWidget* m_heatmap;
    QComboBox* m_quantityCombo;
    QComboBox* m_mapCombo;
    QPushButton* m_drillButton;
    Quantity m_quantity = Quantity::MeanGate;
    int m_drillLayer = -1;
    QString m_matrixKey; ///< what the heatmap currently holds (rebuild only when it changes)
};

} // namespace gwb::views
