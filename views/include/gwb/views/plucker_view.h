#pragma once
// Plücker view: layer x token heatmap of the coherence ||B_t|| of the aggregated bivector
// B_t = mean_D p^(D) (default), or of its Plücker-relation residual rho(B_t) or planarity, and for
// the selected token and layer the per-offset pair norms ||z_t ^ z_{t-D}|| as bars. Every p^(D)
// contains z_t, so B_t is always a plane: residual and planarity are kept only as a rounding check.

#include "gwb/views/view.h"

class QComboBox;

namespace gwb::views {

class HeatmapWidget;
class ChartWidget;
struct ChartData;

class PluckerView : public View {
    Q_OBJECT
public:
    /// Residual and Planarity keep their values (0, 1) for callers that stored them.
    enum class Quantity { Residual, Planarity, Coherence };
    /// Settings id: "coherence", "residual", "planarity".
    static QString quantityId(Quantity q);
    /// Parses a settings id; unknown ids give Coherence (the default).
    static Quantity quantityFromId(const QString& id);

    explicit PluckerView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("plucker"); }
    QString title() const override { return QStringLiteral("Pl\u00fccker"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.1 : 0.8; }

    Quantity quantity() const { return m_quantity; }
    void setQuantity(Quantity q);
    HeatmapWidget* heatmap() const { return m_heatmap; }
    ChartWidget* chart() const { return m_chart; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    ChartData pairNormChart() const;
    const std::vector<float>& quantityValues(const gwb::engine::GrassmannLayerAnalysis& a) const;
    QString heatmapTitle() const;
    HeatmapWidget* m_heatmap;
    ChartWidget* m_chart;
    QComboBox* m_quantityCombo;
    QComboBox* m_mapCombo;
    Quantity m_quantity = Quantity::Coherence;
    QString m_matrixKey;
};

} // namespace gwb::views
