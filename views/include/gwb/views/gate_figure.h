#pragma once
// Gates figure: layer x token heatmap of the mean gate (or the fraction of channels above 0.5), or
// one layer's token x channel gates (drill-down).

#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"

namespace gwb::views {

class GateFigure final : public Figure {
public:
    enum class Quantity { MeanGate, AboveHalf };
    /// The colour scale: the data's own range (the default: one prompt's mean gates span a narrow
    /// part of (0, 1)), or the fixed [0, 1] every gate lives in, to compare prompts by colour.
    enum class Scale { Data, Unit };

    QString id() const override { return view_id::kGate; }
    QString title() const override { return QStringLiteral("Gates"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    Quantity quantity() const { return m_quantity; }
    void setQuantity(Quantity q) { m_quantity = q; }
    Scale scale() const { return m_scale; }
    void setScale(Scale s) { m_scale = s; }
    /// "data" or "unit", as the settings and `gwb figure --scale` spell it; fromName refuses
    /// anything else with std::invalid_argument.
    static QString scaleName(Scale s);
    static Scale scaleFromName(const QString& name);
    /// Layer shown as token x channel, or -1 for the layer x token overview (an index past the
    /// layers reads as -1).
    int drillLayer() const;
    void setDrillLayer(int layer) { m_drillLayer = layer; }
    /// The heatmap: the table's matrix (the same source while data and settings stay), its
    /// range (the data's, or [0, 1]) and the selection's marks.
    HeatmapPanel panel() const;
    QString matrixTitle() const;

private:
    Quantity m_quantity = Quantity::MeanGate;
    Scale m_scale = Scale::Data;
    int m_drillLayer = -1;
    mutable QString m_panelKey;
    mutable HeatmapPanel m_panel;
};

} // namespace gwb::views
