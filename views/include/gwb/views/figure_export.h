#pragma once
// Figure and data export of a view's figure (workbench-spec section 4). Painter-only (gwb_figures):
// no window class; a QGuiApplication is enough (`gwb figure` and gwb.figure make an offscreen one).
// Every file is written atomically (temporary file in the same folder, then renamed); failures come
// back as ExportResult{ok = false, message} and leave no temporary file.

#include "gwb/views/figure_options.h"
#include "gwb/views/figure.h"

#include <QImage>
#include <QSizeF>

namespace gwb::views {

/// Figure size in points (1/72 inch) for a figure and options.
QSizeF figureSizePoints(const Figure& figure, const FigureOptions& options);
/// Renders the figure into an image of width*dpi x height*dpi pixels (PNG metadata carries the DPI).
QImage renderFigureImage(const Figure& figure, const FigureOptions& options);
/// Writes PNG (options.dpi), SVG or PDF (page size = figure size) chosen by the path's suffix.
ExportResult exportFigure(const Figure& figure, const FigureOptions& options, const QString& path);

/// Writes the figure's numbers: for each DataTable `<base>_<name>.csv` and `<base>_<name>.npy`
/// (float32, C order), and `<base>.json` with model(s), prompt, selection (layer, head, token,
/// offset), array descriptions and the definitions used. basePath has no suffix ("out/fig3").
ExportResult exportData(const Figure& figure, const QString& basePath);

/// One call: creates the figure of view `viewId`, gives it the data, the selection (clamped to the
/// data) and settings (as View::settings() saves them), writes the figure to figurePath (suffix
/// picks PNG/SVG/PDF) and, when dataBasePath is not empty, its numbers (see exportData). Needs a
/// QGuiApplication (an offscreen one is enough). Unknown view ids give ok = false with the known ids.
ExportResult exportViewFigure(const QString& viewId, const WorkbenchData& data, const SelectionState& selection,
                              const QJsonObject& settings, const FigureOptions& options, const QString& figurePath,
                              const QString& dataBasePath = QString());

/// Writes bytes to path atomically; on failure returns a message naming the path and the reason.
ExportResult writeFileAtomically(const QString& path, const QByteArray& bytes);

} // namespace gwb::views
