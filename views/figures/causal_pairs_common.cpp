// What the Patching and Paths figures show of a run over a pairs file (causal_figure_common.h):
// the shown estimate's panel with Holm's marks, the hover line, the verdicts and the tables, from
// the engine's estimators (gwb/engine/effect_claims.h).

#include "causal_figure_common.h"

#include "figure_common.h"

#include <algorithm>
#include <cmath>

namespace gwb::views::detail {

using gwb::engine::PairsEstimates;
using gwb::engine::PairsGrid;

QString pairsShownLabel(const PairsGrid& g) {
    if (g.estimated) return QStringLiteral("mean estimated metric change (logits)");
    return g.shownEstimate.empty() ? QStringLiteral("mean %1").arg(qs(g.valueName())) : qs(g.shownEstimate);
}

HeatmapPanel pairsGridPanel(const PairsGrid& g, const PairsGrid& other, const QString& who, const QString& title) {
    if (!g.hasGrid())
        return placeholderPanel(QStringLiteral("%1: %2").arg(
            who, g.error.empty() ? QStringLiteral("no pair of the file ran on this model") : qs(g.error)));
    // One scale, centred at 0, for the grids showing the same estimate (a ratio of means and a raw
    // effect in logits never share one).
    double m = 0;
    for (const PairsGrid* o : {&g, &other})
        if (o->hasGrid() && o->shownEstimate == g.shownEstimate && o->estimated == g.estimated)
            for (double x : o->mean)
                if (std::isfinite(x)) m = std::max(m, std::abs(x));
    HeatmapPanel panel = divergingGridPanel(
        g.rows, g.cols, [&g](int64_t r, int64_t c) { return g.meanAt(r, c); }, gridAxes(g, title, pairsShownLabel(g)),
        m);
    panel.marks.cells = g.estimates.marked; // Holm's survivors: a dot
    return panel;
}

QString pairsCellText(const PairsGrid& g, int64_t r, int64_t c) {
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return {};
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const QString where =
        QStringLiteral("%1 \u00b7 %2 %3 \u00b7 %4 %5")
            .arg(qs(g.model), qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    const int64_t n = i < g.n.size() ? g.n[i] : 0;
    if (n == 0) return QStringLiteral("%1 \u00b7 no pair defines this cell (n = 0)").arg(where);
    const auto num = finiteOrDash;
    QString text = QStringLiteral("%1 \u00b7 %2 %3, 95% paired-bootstrap interval [%4, %5], n = %6 of %7 pairs")
                       .arg(where, pairsShownLabel(g), num(g.mean[i]), num(g.low[i]), num(g.high[i]))
                       .arg(n)
                       .arg(g.pairs());
    const PairsEstimates& e = g.estimates;
    if (i < e.raw.size()) {
        if (g.shownIsRatio()) text += QStringLiteral(" \u00b7 raw %1 logits").arg(num(e.raw[i]));
        if (!g.estimated && std::isfinite(e.meanOfRatios[i]))
            text += QStringLiteral(" \u00b7 mean of ratios %1 over %2 pairs (%3 below the threshold left out)")
                        .arg(num(e.meanOfRatios[i]))
                        .arg(e.meanOfRatiosN[i])
                        .arg(e.leftOut[i]);
        text += QStringLiteral(" \u00b7 p %1 (t-test of the raw effect)%2")
                    .arg(num(e.pValue[i]), e.marked[i] ? QStringLiteral(", marked by Holm over the sweep")
                                                       : QStringLiteral(", not marked by Holm"));
    }
    if (g.estimated && !g.flagged.empty()) {
        int64_t flagged = 0;
        for (int64_t p = 0; p < g.pairs(); ++p)
            flagged += g.flagged[static_cast<size_t>(p * g.rows * g.cols) + i];
        if (flagged) text += QStringLiteral(" \u00b7 %1 pair(s) flagged: a saturated gate").arg(flagged);
    }
    return text;
}

QString pairsValueText(const PairsGrid& a, const PairsGrid& b, const QString& changed) {
    auto phrase = [&](const PairsGrid& g) {
        if (g.estimated)
            return QStringLiteral("the first-order estimate of the change of logit[answer] \u2212 logit[wrong], "
                                  "averaged over pairs (attribution patching)");
        if (g.shownIsRatio())
            return QStringLiteral("the ratio of means \u03a3(p \u2212 k) / \u03a3(c \u2212 k) of logit[answer] "
                                  "\u2212 logit[wrong] (p %1, k corrupted, c clean)")
                .arg(changed);
        return QStringLiteral("the mean raw effect p \u2212 k of logit[answer] \u2212 logit[wrong] in logits (no "
                              "ratio: the pairs show no clean \u2212 corrupted difference to localise)");
    };
    if (!a.hasGrid() || !b.hasGrid() || (a.shownEstimate == b.shownEstimate && a.estimated == b.estimated))
        return phrase(a.hasGrid() ? a : b);
    return QStringLiteral("per model: %1 %2; %3 %4").arg(qs(a.model), phrase(a), qs(b.model), phrase(b));
}

QStringList pairsVerdicts(const PairsGrid& a, const PairsGrid& b) {
    QStringList out;
    for (const PairsGrid* g : {&a, &b})
        if (g->hasGrid() && !g->estimates.difference.verdict.empty())
            out << QStringLiteral("%1: %2").arg(qs(g->model), qs(g->estimates.difference.verdict));
    return out;
}

void appendPairsTables(std::vector<DataTable>& out, const PairsGrid& g, const QString& prefix) {
    auto table = [&](const QString& name, const QString& quantity, const QString& units, auto valueOf) {
        std::vector<float> v(static_cast<size_t>(g.rows * g.cols));
        for (int64_t i = 0; i < g.rows * g.cols; ++i)
            v[static_cast<size_t>(i)] = static_cast<float>(valueOf(static_cast<size_t>(i)));
        out.push_back(tableFromMatrix(prefix + QStringLiteral("_") + name, quantity, QString(), units, g.rows, g.cols,
                                      std::move(v), qs(g.rowTitle), qs(g.colTitle), qsList(g.rowLabels),
                                      qsList(g.colLabels)));
    };
    const PairsEstimates& e = g.estimates;
    const bool ratio = g.shownIsRatio() && !g.estimated;
    const QString units = ratio ? QString() : QStringLiteral("logit");
    table(QStringLiteral("mean"),
          QStringLiteral("%1 over the pairs defining the cell (estimator: %2)%3")
              .arg(pairsShownLabel(g),
                   ratio ? QStringLiteral("ratio of means sum(p - k) / sum(c - k)") : QStringLiteral("mean of p - k"),
                   e.difference.verdict.empty() ? QString() : QStringLiteral("; ") + qs(e.difference.verdict)),
          units, [&](size_t i) { return g.mean[i]; });
    table(QStringLiteral("ci_low"),
          QStringLiteral("2.5th percentile of the estimate over paired bootstrap resamples of the pairs"), units,
          [&](size_t i) { return g.low[i]; });
    table(QStringLiteral("ci_high"), QStringLiteral("97.5th percentile of the same"), units,
          [&](size_t i) { return g.high[i]; });
    table(QStringLiteral("n"), QStringLiteral("pairs with a defined value in the cell"), QString(),
          [&](size_t i) { return static_cast<double>(g.n[i]); });
    if (!e.raw.empty()) {
        table(QStringLiteral("raw_mean"), QStringLiteral("mean raw effect p - k over the pairs"),
              QStringLiteral("logit"), [&](size_t i) { return e.raw[i]; });
        table(QStringLiteral("p_value"),
              QStringLiteral("two-sided one-sample t-test of the cell's raw effects against 0"), QString(),
              [&](size_t i) { return e.pValue[i]; });
        table(QStringLiteral("holm_marked"),
              QStringLiteral("1 where Holm's procedure over the sweep's %1 tested cells rejects at 0.05 (none where "
                             "the pairs show no effect to localise)")
                  .arg(e.tested),
              QString(), [&](size_t i) { return static_cast<double>(e.marked[i]); });
        if (!g.estimated)
            table(QStringLiteral("mean_of_ratios"),
                  QStringLiteral("mean of per-pair effects over the pairs with |clean - corrupted| >= %1 only")
                      .arg(e.threshold),
                  QString(), [&](size_t i) { return e.meanOfRatios[i]; });
    }
    // Every pair's value: pairs x cells (rows labelled by the file's line).
    const int64_t cells = g.rows * g.cols;
    std::vector<float> v(g.values.begin(), g.values.end());
    QStringList rowLabels, colLabels;
    for (int64_t ln : g.lines)
        rowLabels << QStringLiteral("line %1").arg(ln);
    for (int64_t i = 0; i < cells; ++i)
        colLabels << QStringLiteral("%1 %2 | %3 %4")
                         .arg(qs(g.rowTitle), qsAt(g.rowLabels, i / g.cols), qs(g.colTitle),
                              qsAt(g.colLabels, i % g.cols));
    out.push_back(
        tableFromMatrix(prefix + QStringLiteral("_per_pair"),
                        QStringLiteral("%1 of each pair in each cell; NaN = undefined").arg(qs(g.valueName())),
                        QString(), g.estimated || !ratio ? QStringLiteral("logit") : QString(), g.pairs(), cells,
                        std::move(v), QStringLiteral("pair"), QStringLiteral("cell"), rowLabels, colLabels));
}

} // namespace gwb::views::detail
