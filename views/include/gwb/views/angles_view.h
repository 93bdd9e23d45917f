#pragma once
// Principal-angle view: for the selected token and offset, the two principal angles between
// consecutive layers' lifted pair planes (line chart vs layer), and a layer x layer geodesic
// distance matrix of prompt subspaces (either model) or of the Grassmann reading subspaces.

#include "gwb/views/view.h"

class QComboBox;

namespace gwb::views {

class HeatmapWidget;
class ChartWidget;
struct ChartData;

class AnglesView : public View {
    Q_OBJECT
public:
    enum class Matrix { GrassmannPrompt, GrassmannReading, BaselinePrompt };

    explicit AnglesView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("angles"); }
    QString title() const override { return QStringLiteral("Principal angles"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    unsigned analysisParts() const override {
        return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisLayerAngles | gwb::engine::kAnalysisReadingSubspaces |
               gwb::engine::kAnalysisPromptSubspaces;
    }
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.2 : 0.45; }

    Matrix matrix() const { return m_matrix; }
    void setMatrix(Matrix m);
    HeatmapWidget* heatmap() const { return m_heatmap; }
    ChartWidget* chart() const { return m_chart; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override {
        return (m_data.grassmann || m_data.baseline) ? QStringLiteral("Analysing the traces\u2026")
                                                     : QStringLiteral("No trace yet: load a model and run a prompt.");
    }

private:
    ChartData angleChart() const;
    const gwb::engine::FloatArray* distanceArray() const;
    QString matrixName() const;
    QString noModelMessageFor(const QString& which) const;
    HeatmapWidget* m_heatmap;
    ChartWidget* m_chart;
    QComboBox* m_matrixCombo;
    QComboBox* m_mapCombo;
    Matrix m_matrix = Matrix::GrassmannPrompt;
    QString m_matrixKey;
};

} // namespace gwb::views
