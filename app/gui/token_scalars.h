#pragma once
// Stable ids of the token strip's colouring scalars, for settings and session files.

#include "gwb/views/token_strip.h"

#include <QString>
#include <QStringList>

namespace gwb::app {

using TokenScalar = gwb::views::TokenStrip::Scalar;

/// "surprisal", "mean_gate", "residual", "planarity", "coherence" (enum order)
QStringList tokenScalarIds();
QString tokenScalarId(TokenScalar s);
/// Parses an id; unknown ids give Surprisal.
TokenScalar tokenScalarFromId(const QString& id);

} // namespace gwb::app
