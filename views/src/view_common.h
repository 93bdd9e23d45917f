#pragma once
// Helpers shared by the view implementations (toolbars, labels, small array utilities).

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>

class QTableWidgetItem;

namespace gwb::views::detail {

/// A label for a view's messages (errors, refusals, states, hover read-outs), on a row of its own:
/// word-wrapped within the view's width and never wider than the space it is given (its width hint
/// is ignored), so no message can squeeze, push or scroll the view's controls. Marked with the
/// property "gwbMessage" (tests feed every such label a long message).
QLabel* messageLabel(QWidget* parent, const QString& objectName);
/// A toolbar row: adds "label [combo]" and returns the combo.
QComboBox* addCombo(QHBoxLayout* bar, const QString& label, const QStringList& items, QWidget* parent);
/// Colormap chooser wired to the view's colormap (sequential maps only unless allowDiverging).
QComboBox* addColormapCombo(QHBoxLayout* bar, QWidget* parent);
/// Copy of a heatmap widget's visible full matrix as a DataTable.
DataTable tableFromMatrix(const QString& name, const QString& quantity, const QString& definitionKey,
                          const QString& units, int64_t rows, int64_t cols, std::vector<float> values,
                          const QString& rowAxis, const QString& colAxis, const QStringList& rowLabels,
                          const QStringList& colLabels);
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
/// Table cell for a value: the number, or "—" with `whyUndefined` as its tooltip when v is NaN.
QTableWidgetItem* valueItem(double v, const QString& whyUndefined);
/// Splits rect into two panels side by side (wide figures) or stacked; `firstShare` of the space first.
std::pair<QRectF, QRectF> splitPanels(const QRectF& rect, double firstShare, bool sideBySide, double gap);

} // namespace gwb::views::detail

namespace gwb::views::detail {
/// Token text for titles: short, whitespace made visible.
QString labelTextForTitle(const std::string& text);
} // namespace gwb::views::detail
