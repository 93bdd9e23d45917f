#pragma once
// Subspace picture: the selected token's pair planes span(z_t, z_{t-D}) of the selected
// Grassmann layer, one per valid offset, drawn as great circles on the unit sphere after
// projecting R^r onto the layer's top-3 principal directions of its z vectors over the prompt.

#include "gwb/views/sphere_widget.h"
#include "gwb/views/view.h"

namespace gwb::views {

/// The sphere picture's numbers (also exported).
struct SubspacePicture {
    SphereData sphere;
    std::vector<int> offsets; ///< offsets D drawn (valid ones)
    std::vector<double>
        keptFraction; ///< per drawn plane: mean cos^2 of the angles between the plane and the 3-D projection space
    double explainedVariance = 0;       ///< share of the centred z variance in the 3 directions
    gwb::engine::FloatArray directions; ///< 3 x r principal directions (rows)
    gwb::engine::FloatArray planeBases; ///< P x 2 x 3 orthonormal bases of the projected planes
};

/// Computes the picture for token t of a Grassmann layer (throws std::invalid_argument on bad shapes).
SubspacePicture computeSubspacePicture(const gwb::engine::GrassmannLayerTrace& layer, int64_t t,
                                       const QStringList& tokens);

class SubspaceView : public View {
    Q_OBJECT
public:
    explicit SubspaceView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("subspace"); }
    QString title() const override { return QStringLiteral("Subspace picture"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.0 : 0.6; }
    SphereWidget* sphere() const { return m_sphere; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    SphereWidget* m_sphere;
    SubspacePicture m_picture;
    QString m_error;
};

} // namespace gwb::views
