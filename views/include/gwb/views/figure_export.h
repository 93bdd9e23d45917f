#pragma once
// Figure and data export of a view (workbench-spec section 4). Works without a shown window
// (the headless `gwb figure` command calls these with an offscreen QApplication). Every file is
// written atomically (temporary file in the same folder, then renamed); failures come back as
// ExportResult{ok = false, message} and leave no temporary file.

#include "gwb/views/figure_options.h"
#include "gwb/views/view.h"

#include <QImage>
#include <QSizeF>

namespace gwb::views {

/// Figure size in points (1/72 inch) for a view and options.
QSizeF figureSizePoints(const View& view, const FigureOptions& options);
/// Renders the figure into an image of width*dpi x height*dpi pixels (PNG metadata carries the DPI).
QImage renderFigureImage(const View& view, const FigureOptions& options);
/// Writes PNG (options.dpi), SVG or PDF (page size = figure size) chosen by the path's suffix.
ExportResult exportFigure(const View& view, const FigureOptions& options, const QString& path);

/// Writes the view's numbers: for each DataTable `<base>_<name>.csv` and `<base>_<name>.npy`
/// (float32, C order), and `<base>.json` with model(s), prompt, selection (layer, head, token,
/// offset), array descriptions and the definitions used. basePath has no suffix ("out/fig3").
ExportResult exportData(const View& view, const QString& basePath);

/// Selection values for a headless figure (clamped to the data like Selection does).
struct SelectionState {
    int token = 0;
    int layer = 0;
    int head = 0;
    int offsetIndex = 0;
};

/// One call for `gwb figure`: creates the view `viewId`, gives it the data, selection and settings
/// (as saved by View::settings()), writes the figure to figurePath (suffix picks PNG/SVG/PDF) and,
/// when dataBasePath is not empty, its numbers (see exportData). Needs a QApplication (an offscreen
/// one is enough). Unknown view ids give ok = false with the list of known ids.
ExportResult exportViewFigure(const QString& viewId, const WorkbenchData& data, const SelectionState& selection,
                              const QJsonObject& settings, const FigureOptions& options, const QString& figurePath,
                              const QString& dataBasePath = QString());

/// Writes bytes to path atomically; on failure returns a message naming the path and the reason.
ExportResult writeFileAtomically(const QString& path, const QByteArray& bytes);

} // namespace gwb::views
