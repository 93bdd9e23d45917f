#pragma once
// Principal-angle figure: for the selected token and offset, the two principal angles between
// consecutive layers' lifted pair planes (line chart vs layer), and a layer x layer geodesic
// distance matrix of prompt subspaces (either model) or of the Grassmann reading subspaces.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"

namespace gwb::views {

class AnglesFigure final : public Figure {
public:
    enum class Matrix { GrassmannPrompt, GrassmannReading, BaselinePrompt };

    QString id() const override { return view_id::kAngles; }
    QString title() const override { return QStringLiteral("Principal angles"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.2 : 0.45; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    unsigned analysisParts() const override {
        return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisLayerAngles | gwb::engine::kAnalysisReadingSubspaces |
               gwb::engine::kAnalysisPromptSubspaces;
    }
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    Matrix matrix() const { return m_matrix; }
    void setMatrix(Matrix m) { m_matrix = m; }
    /// The distance matrix (the same source while data and choice stay) with the selected layer
    /// marked, or a placeholder: still computing, or no model for the chosen matrix.
    HeatmapPanel panel() const;
    QString matrixName() const;
    /// The selected token's angles at the selected offset, per layer transition (no series while
    /// the angles are computed or without a Grassmann model).
    ChartData angleChart() const;
    /// What the chart panel says instead of lines when angleChart() has no data.
    QString chartPlaceholder() const;

private:
    const gwb::engine::FloatArray* distanceArray() const;

    Matrix m_matrix = Matrix::GrassmannPrompt;
    mutable QString m_panelKey;
    mutable HeatmapPanel m_panel;
};

} // namespace gwb::views
