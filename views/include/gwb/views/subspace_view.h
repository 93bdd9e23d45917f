#pragma once
// Subspace picture: the selected token's pair planes span(z_t, z_{t-D}) of the selected
// Grassmann layer, one per valid offset, drawn as great circles on the unit sphere after
// projecting R^r onto the layer's top-3 principal directions of its z vectors over the prompt;
// dragging turns the sphere. The picture is SubspaceFigure's (subspace_figure.h).

#include "gwb/views/sphere_widget.h"
#include "gwb/views/subspace_figure.h"
#include "gwb/views/view.h"

namespace gwb::views {

class SubspaceView : public View {
    Q_OBJECT
public:
    explicit SubspaceView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kSubspace; }
    QString title() const override { return QStringLiteral("Subspace picture"); }
    void setSettings(const QJsonObject& settings) override;
    SphereWidget* sphere() const { return m_sphere; }

protected:
    void refresh() override;

private:
    SubspaceFigure& fig() const { return figureAs<SubspaceFigure>(); }
    SphereWidget* m_sphere;
};

} // namespace gwb::views
