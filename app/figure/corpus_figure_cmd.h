#pragma once
// `gwb figure --stats S.npz --view corpus --quantity NAME`: the Corpus view's figure (and data)
// for a statistics file, without a window, exactly as the window's Export Figure makes it.

#include "runs/figure_request.h"

#include "gwb/views/figure_options.h"

#include <QJsonObject>
#include <QString>

namespace gwb::app {

struct CorpusFigureRequest {
    QString statsPath; ///< file written by `gwb stats` (or Run > Corpus)
    QString quantity;  ///< key ("surprisal") or full name ("model.surprisal"); "" = the view's default
    QString shape;     ///< "box" (default) or "violin"
    QString outPath;   ///< .png, .svg or .pdf
    QString dataBase;  ///< "" = no data; else <base>_<table>.csv/.npy and <base>.json
    FigureSettings settings;
};

/// Writes the figure (and data). Throws std::runtime_error / std::invalid_argument with a message
/// naming the file and the problem (unreadable or foreign file, unknown quantity with the list).
gwb::views::ExportResult writeCorpusFigure(const CorpusFigureRequest& request);

} // namespace gwb::app
