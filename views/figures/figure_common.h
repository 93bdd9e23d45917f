#pragma once
// Helpers shared by the figures and the views (gwb_figures, painter-only): tables, captions'
// phrases, messages, panel layout. The widget helpers (toolbars, message labels) are in
// views/src/view_common.h.

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/heatmap_painter.h"
#include "gwb/views/view_data.h"

#include <QRectF>
#include <QString>
#include <QStringList>

#include <string>
#include <utility>
#include <vector>

namespace gwb::views::detail {

/// A 2-D DataTable of `values` (row-major rows x cols).
DataTable tableFromMatrix(const QString& name, const QString& quantity, const QString& definitionKey,
                          const QString& units, int64_t rows, int64_t cols, std::vector<float> values,
                          const QString& rowAxis, const QString& colAxis, const QStringList& rowLabels,
                          const QStringList& colLabels);
/// The engine's definition of a quantity (gwb::engine::definitions()), "" for an unknown key.
QString engineDefinition(const char* key);
/// "model 'name'" or "" for captions.
QString modelPhrase(const gwb::engine::TracePtr& trace);
/// Grassmann layer trace/analysis at index l when present.
const gwb::engine::GrassmannLayerTrace* grassmannLayer(const WorkbenchData& d, int l);
const gwb::engine::GrassmannLayerAnalysis* grassmannAnalysis(const WorkbenchData& d, int l);
/// Message for a missing model.
QString noModelMessage(const QString& which);
/// Message of views drawn from the Grassmann analysis: still analysing, or no Grassmann trace.
QString grassmannMissingMessage(const WorkbenchData& d);
/// "Computing the read-out planes…" while the Grassmann analysis lacks some of `parts` (the window
/// computes them after the visible views' parts); "" when they are all there or there is no analysis.
QString pendingAnalysisMessage(const WorkbenchData& d, unsigned parts);
/// The Grassmann model sends each offset's plane through an MLP (aggregation per_offset_mlp): it
/// forms no mean plane B_t and has no linear read-out planes.
bool planesThroughMlp(const WorkbenchData& d);
/// Heatmap axes (titles, labels) of a 2-D DataTable, with the colorbar's value name.
HeatmapAxes axesFromTable(const DataTable& t, const QString& valueName);
/// Splits rect into two panels side by side (wide figures) or stacked; `firstShare` of the space first.
std::pair<QRectF, QRectF> splitPanels(const QRectF& rect, double firstShare, bool sideBySide, double gap);
/// Token text for titles: short, whitespace made visible.
QString labelTextForTitle(const std::string& text);

} // namespace gwb::views::detail
