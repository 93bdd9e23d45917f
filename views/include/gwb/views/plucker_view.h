#pragma once
// Plücker view: layer x token heatmap of the coherence ||B_t|| of the aggregated bivector
// B_t = mean_D p^(D) (default), or of its Plücker-relation residual rho(B_t) or planarity, and for
// the selected token and layer the per-offset pair norms ||z_t ^ z_{t-D}|| as bars; clicking a
// cell selects layer and token. The picture is PluckerFigure's (plucker_figure.h).

#include "gwb/views/plucker_figure.h"
#include "gwb/views/view.h"

class QComboBox;

namespace gwb::views {

class HeatmapWidget;
class ChartWidget;

class PluckerView : public View {
    Q_OBJECT
public:
    using Quantity = PluckerFigure::Quantity;
    /// Settings id: "coherence", "residual", "planarity".
    static QString quantityId(Quantity q) { return PluckerFigure::quantityId(q); }
    /// Parses a settings id; unknown ids give Coherence (the default).
    static Quantity quantityFromId(const QString& id) { return PluckerFigure::quantityFromId(id); }

    explicit PluckerView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kPlucker; }
    QString title() const override { return QStringLiteral("Pl\u00fccker"); }
    void setSettings(const QJsonObject& settings) override;

    Quantity quantity() const { return fig().quantity(); }
    void setQuantity(Quantity q);
    HeatmapWidget* heatmap() const { return m_heatmap; }
    ChartWidget* chart() const { return m_chart; }

protected:
    void refresh() override;
    void syncFigure(Figure& figure) const override;

private:
    PluckerFigure& fig() const { return figureAs<PluckerFigure>(); }
    HeatmapWidget* m_heatmap;
    ChartWidget* m_chart;
    QComboBox* m_quantityCombo;
    QComboBox* m_mapCombo;
};

} // namespace gwb::views
