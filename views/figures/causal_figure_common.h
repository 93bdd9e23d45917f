#pragma once
// What the Patching and Paths figures share (gwb_figures, painter-only; no near-copies between
// them): the engine's text as the figures show it, the metric fields' settings keys, a model's grid
// as a panel on the shared diverging scale, the "clean, corrupted" phrase and the figure of two
// heatmaps on one scale with one labelled colour bar. The widgets both views share (fields, Run row,
// top-pieces table) are in views/src/causal_common.h.

#include "gwb/engine/causal_results.h"
#include "gwb/views/figure_options.h"
#include "gwb/views/heatmap_panel.h"

#include <QJsonObject>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

class QPainter;

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

/// A number of a hover line: formatValue where finite, "—" where undefined.
QString finiteOrDash(double v);
/// "Grassmann" for model 0, "Transformer" for model 1.
QString modelWord(int model);
/// The name of model 0/1's heatmap among a figure's panel windows ("grassmann", "transformer").
QString panelName(int model);

/// An engine message ("the metric needs ...") as a sentence for the window: capital, full stop.
QString sentence(const std::string& message);
/// The sites the Patching view offers: resid, mixer, gate, ffn, offset/head.
QStringList patchingSiteItems();

/// The metric's fields of a causal view's inputs in its settings ("corrupt", "answer", "wrong").
template <class Inputs> void insertMetricFields(QJsonObject& o, const Inputs& in) {
    o.insert(QStringLiteral("corrupt"), qs(in.corrupt));
    o.insert(QStringLiteral("answer"), qs(in.answer));
    o.insert(QStringLiteral("wrong"), qs(in.wrong));
    o.insert(QStringLiteral("min_difference"), in.minDifference);
}
/// Reads them back; a missing key keeps the field as it is.
template <class Inputs> void readMetricFields(const QJsonObject& s, Inputs& in) {
    in.corrupt = s.value(QStringLiteral("corrupt")).toString(qs(in.corrupt)).toStdString();
    in.answer = s.value(QStringLiteral("answer")).toString(qs(in.answer)).toStdString();
    in.wrong = s.value(QStringLiteral("wrong")).toString(qs(in.wrong)).toStdString();
    const double d = s.value(QStringLiteral("min_difference")).toDouble(in.minDifference);
    if (std::isfinite(d) && d >= 0) in.minDifference = d; // a damaged value keeps the field
}

/// "Grassmann clean 1.2, corrupted -0.3": a model's metric on the clean and the corrupted prompt.
QString cleanCorruptedPhrase(const std::string& model, double clean, double corrupted);

/// The axes of a grid with row and column titles and labels (a sweep's or a pairs file's).
template <class Grid> HeatmapAxes gridAxes(const Grid& g, const QString& title, const QString& valueName) {
    HeatmapAxes axes;
    axes.title = title;
    axes.rowTitle = qs(g.rowTitle);
    axes.colTitle = qs(g.colTitle);
    axes.rowLabels = qsList(g.rowLabels);
    axes.colLabels = qsList(g.colLabels);
    axes.valueName = valueName;
    return axes;
}
/// A grid of rows x cols cells, value(r, c), under `axes` as a panel on the causal views' diverging
/// scale [-scale, scale] centred at 0 (both models share it; a unit range when scale is 0).
HeatmapPanel divergingGridPanel(int64_t rows, int64_t cols, const std::function<double(int64_t, int64_t)>& value,
                                const HeatmapAxes& axes, double scale);
/// A panel that shows `text` instead of a matrix.
HeatmapPanel placeholderPanel(const QString& text);

/// What a pairs grid's cells show: "ratio of means", "mean raw effect (logits)", or the mean
/// estimated metric change of an attribution run.
QString pairsShownLabel(const gwb::engine::PairsGrid& grid);
/// A pairs grid as a panel: its shown estimate on a diverging scale shared with `other` only when
/// both show the same estimate, Holm's survivors dotted; a placeholder with the reason without one.
HeatmapPanel pairsGridPanel(const gwb::engine::PairsGrid& grid, const gwb::engine::PairsGrid& other, const QString& who,
                            const QString& title);
/// Hover text of cell (r, c) of a pairs grid: the estimate and its interval, n, the raw effect,
/// the mean of ratios, the t-test's p and Holm's mark.
QString pairsCellText(const gwb::engine::PairsGrid& grid, int64_t r, int64_t c);
/// What the cells of two pairs grids give, in words: one phrase when both show the same estimate,
/// else each model's ("p" is `changed`: "patched", "path-patched").
QString pairsValueText(const gwb::engine::PairsGrid& a, const gwb::engine::PairsGrid& b, const QString& changed);
/// "Grassmann: clean - corrupted over 12 pairs: ..." for each grid with a verdict.
QStringList pairsVerdicts(const gwb::engine::PairsGrid& a, const gwb::engine::PairsGrid& b);
/// The tables of a pairs grid: the shown estimate, its interval, n, the raw mean, the p-values,
/// Holm's marks and the mean of ratios (named prefix_mean, ...), and every pair's value.
void appendPairsTables(std::vector<DataTable>& out, const gwb::engine::PairsGrid& grid, const QString& prefix);

/// Two heatmaps side by side on one scale, each drawing its window of cells (empty: all), one
/// labelled colour bar beside the pair; two panels of different quantities or scales get a colour
/// bar each (a raw effect is never read off a normalised effect's bar).
void paintHeatmapPair(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map,
                      const HeatmapPanel& left, const QRectF& leftWindow, const QString& leftTitle,
                      const HeatmapPanel& right, const QRectF& rightWindow, const QString& rightTitle,
                      const QString& valueName);

} // namespace gwb::views::detail
