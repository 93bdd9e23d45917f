#include "gwb/views/subspace_view.h"

#include <QVBoxLayout>

namespace gwb::views {

SubspaceView::SubspaceView(QWidget* parent) : View(std::make_unique<SubspaceFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    m_sphere = new SphereWidget(this);
    layout->addWidget(m_sphere, 1);
    // The figure takes each rotation as it comes (not in syncFigure: a refresh there would put the
    // sphere's old angles over those that setSettings gave the figure).
    connect(m_sphere, &SphereWidget::rotationChanged, this, [this] {
        fig().setRotation(m_sphere->rotation());
        Q_EMIT settingsChanged();
    });
    refresh();
}

void SubspaceView::setSettings(const QJsonObject& s) {
    View::setSettings(s); // the figure's rotation (a key not given keeps its angle), the colormap
    m_sphere->setRotation(fig().rotation());
}

void SubspaceView::refresh() {
    const SubspaceFigure& f = static_cast<const SubspaceFigure&>(figure());
    if (!f.hasContent())
        m_sphere->setPlaceholder(f.missingDataMessage());
    else if (const QString error = f.error(); !error.isEmpty())
        m_sphere->setPlaceholder(error);
    else
        m_sphere->setSphere(f.picture().sphere);
}

} // namespace gwb::views
