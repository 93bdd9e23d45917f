#pragma once
// A labelled array a view exports (CSV + NPY) with its metadata (JSON side file).

#include "gwb/engine/array.h"

#include <QString>
#include <QStringList>

namespace gwb::views {

struct DataTable {
    QString name;                   ///< file-name-safe key, e.g. "mean_gate"
    QString quantity;               ///< human name, e.g. "mean gate over channels"
    QString definitionKey;          ///< key into gwb::engine::definitions() ("" = none)
    QString units;                  ///< e.g. "rad", "nats", "" for dimensionless
    gwb::engine::FloatArray values; ///< 1-D or 2-D; NaN = not defined there
    QString rowAxis;                ///< e.g. "layer"
    QString colAxis;                ///< e.g. "token" (2-D only)
    QStringList rowLabels;          ///< one per row (may be empty)
    QStringList colLabels;          ///< one per column (may be empty)
};

} // namespace gwb::views
