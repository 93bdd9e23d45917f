#include "gwb/views/view.h"

#include "gwb/views/gate_view.h"

namespace gwb::views {

QStringList viewIds() {
    return {QStringLiteral("gate")};
}

std::unique_ptr<View> createView(const QString& id, QWidget* parent) {
    if (id == QLatin1String("gate")) return std::make_unique<GateView>(parent);
    return nullptr;
}

} // namespace gwb::views
