#include "gwb/views/figure.h"

#include "gwb/views/gate_figure.h"

namespace gwb::views {

QStringList figureIds() {
    return {QStringLiteral("gate")};
}

std::unique_ptr<Figure> createFigure(const QString& id) {
    if (id == QLatin1String("gate")) return std::make_unique<GateFigure>();
    return nullptr;
}

} // namespace gwb::views
