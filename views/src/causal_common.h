#pragma once
// The widgets the Patching and Paths views share: the metric's fields (corrupted prompt, answer,
// wrong), the Run / Cancel / progress / status row and the top-pieces table of a clicked cell. What
// their figures share (the panels, the pair of heatmaps with one colour bar) is
// views/figures/causal_figure_common.h.

#include "causal_figure_common.h"

#include "gwb/engine/causal_results.h"
#include "gwb/views/causal_view.h"

#include <QString>

class QDoubleSpinBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QVBoxLayout;
class QWidget;

namespace gwb::views::detail {

struct MetricFields {
    QLineEdit* corrupt = nullptr;
    QLineEdit* answer = nullptr;
    QLineEdit* wrong = nullptr;
};
/// A row "Corrupted [...] Answer [...] Wrong [...]" with object names prefix + Corrupt/Answer/Wrong.
MetricFields addMetricFields(QVBoxLayout* layout, const QString& prefix, const QString& corruptPlaceholder,
                             const QString& corruptTip, QWidget* parent);

/// "min |c−k|": the least |clean − corrupted| metric difference (logits) for a normalised effect
/// (gwb/engine/effect_claims.h), object name prefix + MinDifference, default 0.05.
QDoubleSpinBox* addMinDifference(QHBoxLayout* bar, const QString& prefix, QWidget* parent);

/// The Patching and Paths views' "Pairs file…" dialog, opening where `lastFile` lies; "" = cancelled.
QString choosePairsFile(QWidget* parent, const std::string& lastFile);

/// RunControls (causal_view.h): Run, Cancel (hidden), a progress bar (hidden, 0..1000) added to `bar`, and a
/// status label (messageLabel) that the caller puts on its own row below the bar.
RunControls addRunControls(QHBoxLayout* bar, const QString& prefix, QWidget* parent);
/// Running: Run disabled, Cancel and progress shown, the status says `what`.
void showRunning(const RunControls& c, bool running, const QString& what);

/// The "next piece / p / logit" table of a clicked cell.
QTableWidget* makeTopKTable(QWidget* parent, const QString& objectName, const QString& tip);
/// Fills it from a reply (empty on an error); `tip` describes the run.
void showTopK(QTableWidget* table, const gwb::engine::PatchingTopK& k, const QString& tip);

} // namespace gwb::views::detail
