#pragma once
// Principal-angle view: for the selected token and offset, the two principal angles between
// consecutive layers' lifted pair planes (line chart vs layer), and a layer x layer geodesic
// distance matrix of prompt subspaces (either model) or of the Grassmann reading subspaces;
// clicking a row selects the layer. The picture is AnglesFigure's (angles_figure.h).

#include "gwb/views/angles_figure.h"
#include "gwb/views/view.h"

class QComboBox;

namespace gwb::views {

class HeatmapWidget;
class ChartWidget;

class AnglesView : public View {
    Q_OBJECT
public:
    using Matrix = AnglesFigure::Matrix;

    explicit AnglesView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kAngles; }
    QString title() const override { return QStringLiteral("Principal angles"); }
    void setSettings(const QJsonObject& settings) override;

    Matrix matrix() const { return fig().matrix(); }
    void setMatrix(Matrix m);
    HeatmapWidget* heatmap() const { return m_heatmap; }
    ChartWidget* chart() const { return m_chart; }

protected:
    void refresh() override;
    void syncFigure(Figure& figure) const override;

private:
    AnglesFigure& fig() const { return figureAs<AnglesFigure>(); }
    HeatmapWidget* m_heatmap;
    ChartWidget* m_chart;
    QComboBox* m_matrixCombo;
    QComboBox* m_mapCombo;
};

} // namespace gwb::views
