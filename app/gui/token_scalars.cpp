#include "gui/token_scalars.h"

namespace gwb::app {

QStringList tokenScalarIds() {
    return {QStringLiteral("surprisal"), QStringLiteral("mean_gate"), QStringLiteral("residual"),
            QStringLiteral("planarity"), QStringLiteral("coherence")};
}

QString tokenScalarId(TokenScalar s) {
    return tokenScalarIds().at(static_cast<int>(s));
}

TokenScalar tokenScalarFromId(const QString& id) {
    const int i = tokenScalarIds().indexOf(id);
    return i < 0 ? TokenScalar::Surprisal : static_cast<TokenScalar>(i);
}

} // namespace gwb::app
