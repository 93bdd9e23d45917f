#pragma once
// What the Patching and Paths views share: the metric's fields (corrupted prompt, answer, wrong),
// the Run / Cancel / progress / status row, the top-pieces table of a clicked cell, and the
// figure of two heatmaps on one diverging scale with one labelled colour bar.

#include "gwb/views/figure_options.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/patching_view.h"

#include <QStringList>

#include <string>
#include <vector>

class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QVBoxLayout;
class QWidget;

namespace gwb::views::detail {

/// The engine's text (UTF-8) as the views show it.
inline QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
/// A list of the engine's labels; qsAt(list, i) is "" past the end (as QStringList::value).
inline QStringList qsList(const std::vector<std::string>& v) {
    QStringList out;
    out.reserve(static_cast<qsizetype>(v.size()));
    for (const std::string& s : v)
        out << QString::fromStdString(s);
    return out;
}
inline QString qsAt(const std::vector<std::string>& v, int64_t i) {
    return i >= 0 && i < static_cast<int64_t>(v.size()) ? QString::fromStdString(v[static_cast<size_t>(i)]) : QString();
}

/// The sites the Patching view offers: resid, mixer, gate, ffn, offset/head.
QStringList patchingSiteItems();

struct MetricFields {
    QLineEdit* corrupt = nullptr;
    QLineEdit* answer = nullptr;
    QLineEdit* wrong = nullptr;
};
/// A row "Corrupted [...] Answer [...] Wrong [...]" with object names prefix + Corrupt/Answer/Wrong.
MetricFields addMetricFields(QVBoxLayout* layout, const QString& prefix, const QString& corruptPlaceholder,
                             const QString& corruptTip, QWidget* parent);

/// RunControls (causal_view.h): Run, Cancel (hidden), a progress bar (hidden, 0..1000) added to `bar`, and a
/// status label (messageLabel) that the caller puts on its own row below the bar.
RunControls addRunControls(QHBoxLayout* bar, const QString& prefix, QWidget* parent);
/// Running: Run disabled, Cancel and progress shown, the status says `what`.
void showRunning(const RunControls& c, bool running, const QString& what);

/// The "next piece / p / logit" table of a clicked cell.
QTableWidget* makeTopKTable(QWidget* parent, const QString& objectName, const QString& tip);
/// Fills it from a reply (empty on an error); `tip` describes the run.
void showTopK(QTableWidget* table, const PatchingTopK& k, const QString& tip);

/// Two heatmaps side by side on one scale, one labelled colour bar beside the pair.
void paintHeatmapPair(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map,
                      const HeatmapWidget* left, const QString& leftTitle, const HeatmapWidget* right,
                      const QString& rightTitle, const QString& valueName);

} // namespace gwb::views::detail
