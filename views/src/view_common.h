#pragma once
// Helpers shared by the view widgets (toolbars, message labels, table cells); the painter-only
// helpers they share with the figures are in figure_common.h (gwb_figures).

#include "figure_common.h"

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
/// Table cell for a value: the number, or "—" with `whyUndefined` as its tooltip when v is NaN.
QTableWidgetItem* valueItem(double v, const QString& whyUndefined);

} // namespace gwb::views::detail
