#pragma once
// Plücker figure: layer x token heatmap of the coherence ||B_t|| of the aggregated bivector
// B_t = mean_D p^(D) (default), or of its Plücker-relation residual rho(B_t) or planarity, and for
// the selected token and layer the per-offset pair norms ||z_t ^ z_{t-D}|| as bars. Every p^(D)
// contains z_t, so B_t is always a plane: residual and planarity are kept only as a rounding check.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"

namespace gwb::views {

class PluckerFigure final : public Figure {
public:
    /// Residual and Planarity keep their values (0, 1) for callers that stored them.
    enum class Quantity { Residual, Planarity, Coherence };
    /// Settings id: "coherence", "residual", "planarity".
    static QString quantityId(Quantity q);
    /// Parses a settings id; unknown ids give Coherence (the default).
    static Quantity quantityFromId(const QString& id);

    QString id() const override { return view_id::kPlucker; }
    QString title() const override { return QStringLiteral("Pl\u00fccker"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.1 : 0.8; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    Quantity quantity() const { return m_quantity; }
    void setQuantity(Quantity q) { m_quantity = q; }
    /// The heatmap: the quantity's layer x token matrix (the same source while data and quantity
    /// stay), its range ([0, 1] but for the residual) and the selection's marks; a placeholder
    /// without data or for a model that forms no B_t.
    HeatmapPanel panel() const;
    QString heatmapTitle() const;
    /// The selected token's pair norms per offset (no series without a valid offset).
    ChartData pairNormChart() const;
    /// What the chart panel says instead of bars when pairNormChart() has no data.
    QString chartPlaceholder() const;

private:
    DataTable matrixTable() const;
    const std::vector<float>& quantityValues(const gwb::engine::GrassmannLayerAnalysis& a) const;

    Quantity m_quantity = Quantity::Coherence;
    mutable QString m_panelKey;
    mutable HeatmapPanel m_panel;
};

} // namespace gwb::views
