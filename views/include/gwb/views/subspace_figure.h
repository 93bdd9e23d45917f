#pragma once
// Subspace figure: the selected token's pair planes span(z_t, z_{t-D}) of the selected Grassmann
// layer, one per valid offset, drawn as great circles on the unit sphere after projecting R^r onto
// the layer's top-3 principal directions of its z vectors over the prompt.

#include "gwb/views/figure.h"
#include "gwb/views/sphere_paint.h"

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

class SubspaceFigure final : public Figure {
public:
    QString id() const override { return view_id::kSubspace; }
    QString title() const override { return QStringLiteral("Subspace picture"); }
    /// The colormap and the sphere's rotation ("yaw", "pitch", radians).
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.0 : 0.6; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    SphereRotation rotation() const { return m_rotation; }
    /// The view's rotation (pitch kept within [-pi/2, pi/2]).
    void setRotation(const SphereRotation& r) { m_rotation = clampedRotation(r); }
    /// The picture of the selected token and layer, titled (computed once per data and selection;
    /// empty without the layer or when error() says why it cannot be drawn).
    const SubspacePicture& picture() const;
    /// Why the picture cannot be drawn for this prompt ("" when it can, or without the layer).
    QString error() const;

protected:
    void dataChanged() override { m_pictureKey.clear(); }

private:
    SphereRotation m_rotation;
    mutable QString m_pictureKey;
    mutable SubspacePicture m_picture;
    mutable QString m_error;
};

} // namespace gwb::views
