// The Patching figure over a pairs file (a causal claim over a dataset): the mean-effect heatmaps
// with their intervals in the hover line, the status line, the caption, the data tables and the
// figure (the means above; a cell's distribution and the estimate-against-exact scatter below).
// The single-pair sweep is patching_figure.cpp.

#include "gwb/views/patching_figure.h"
#include "gwb/engine/sites.h"

#include "causal_figure_common.h"
#include "figure_common.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

HeatmapPanel PatchingFigure::pairsPanel(int model) const {
    const PairsGrid& g = m_pairs.grid(model);
    const QString who = detail::modelWord(model);
    if (!g.hasGrid())
        return detail::placeholderPanel(QStringLiteral("%1: %2").arg(
            who, g.error.empty() ? QStringLiteral("no pair of the file ran on this model") : qs(g.error)));
    // One scale, centred at 0, for the models showing the same estimate (a ratio of means and a raw
    // effect in logits never share one).
    double m = 0;
    for (const PairsGrid* o : {&m_pairs.grassmann, &m_pairs.transformer})
        if (o->hasGrid() && o->shownEstimate == g.shownEstimate && o->estimated == g.estimated)
            for (double x : o->mean)
                if (std::isfinite(x)) m = std::max(m, std::abs(x));
    HeatmapPanel panel = detail::divergingGridPanel(
        g.rows, g.cols, [&g](int64_t r, int64_t c) { return g.meanAt(r, c); },
        detail::gridAxes(g,
                         QStringLiteral("%1 (%2), %3 over %4 pairs").arg(who, qs(g.site), shownLabel(g)).arg(g.pairs()),
                         shownLabel(g)),
        m);
    panel.marks.cells = g.estimates.marked; // Holm's survivors: a dot
    return panel;
}

QString PatchingFigure::shownLabel(const PairsGrid& g) {
    if (g.estimated) return QStringLiteral("mean estimated metric change (logits)");
    return g.shownEstimate.empty() ? QStringLiteral("mean %1").arg(qs(g.valueName())) : qs(g.shownEstimate);
}

QString PatchingFigure::pairsCellText(int model, int64_t r, int64_t c) const {
    const PairsGrid& g = m_pairs.grid(model);
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return {};
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const QString where =
        QStringLiteral("%1 \u00b7 %2 %3 \u00b7 %4 %5")
            .arg(qs(g.model), qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    const int64_t n = i < g.n.size() ? g.n[i] : 0;
    if (n == 0) return QStringLiteral("%1 \u00b7 no pair defines this cell (n = 0)").arg(where);
    const auto num = detail::finiteOrDash;
    QString text = QStringLiteral("%1 \u00b7 %2 %3, 95% paired-bootstrap interval [%4, %5], n = %6 of %7 pairs")
                       .arg(where, shownLabel(g), num(g.mean[i]), num(g.low[i]), num(g.high[i]))
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

QString PatchingFigure::pairsStatusText() const {
    QStringList parts;
    for (const PairsGrid* g : {&m_pairs.grassmann, &m_pairs.transformer}) {
        if (!g->hasGrid()) continue;
        QString part = QStringLiteral("%1 %2 of %3 usable pairs").arg(qs(g->model)).arg(g->pairs()).arg(g->usable);
        if (!g->complete) part += QStringLiteral(" (cancelled: the means are of these)");
        if (!g->skipped.empty())
            part +=
                QStringLiteral(", %1 line(s) skipped (first: %2)").arg(g->skipped.size()).arg(qs(g->skipped.front()));
        parts << part;
    }
    QStringList verdicts; // first: whether the pairs show anything to explain
    for (const PairsGrid* g : {&m_pairs.grassmann, &m_pairs.transformer})
        if (g->hasGrid() && !g->estimates.difference.verdict.empty())
            verdicts << QStringLiteral("%1: %2").arg(qs(g->model), qs(g->estimates.difference.verdict));
    return (verdicts.isEmpty() ? QString() : verdicts.join(QStringLiteral(". ")) + QStringLiteral(". ")) +
           QStringLiteral("%1 (%2 lines), %3: %4. Hover a cell for its estimate, interval and n; click it for its "
                          "distribution.")
               .arg(QFileInfo(qs(m_pairs.inputs.file)).fileName())
               .arg(m_pairs.lines)
               .arg(qs(m_pairs.inputs.method), parts.join(QStringLiteral("; ")));
}

QString PatchingFigure::pairsCaption() const {
    const PairsData& d = m_pairs;
    const PairsGrid& g = d.grassmann.hasGrid() ? d.grassmann : d.transformer;
    const QString sites = d.inputs.site == gwb::engine::kUnitAlias
                              ? QStringLiteral("one Grassmann offset D / one Transformer head")
                              : QStringLiteral("site %1").arg(qs(d.inputs.site));
    QStringList counts;
    for (const PairsGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid())
            counts << QStringLiteral("%1 %2 pairs%3")
                          .arg(qs(m->model))
                          .arg(m->pairs())
                          .arg(m->complete ? QString() : QStringLiteral(" (cancelled before the rest)"));
    const QString value =
        g.estimated ? QStringLiteral("attribution patching: the first-order estimate of the change of logit[answer] "
                                     "\u2212 logit[wrong], averaged over pairs")
        : g.shownIsRatio()
            ? QStringLiteral("the ratio of means \u03a3(p \u2212 k) / \u03a3(c \u2212 k) of logit[answer] \u2212 "
                             "logit[wrong] (p patched, k corrupted, c clean)")
            : QStringLiteral("the mean raw effect p \u2212 k of logit[answer] \u2212 logit[wrong] in logits (no "
                             "ratio: the pairs show no clean \u2212 corrupted difference to localise)");
    QStringList verdicts;
    for (const PairsGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid() && !m->estimates.difference.verdict.empty())
            verdicts << QStringLiteral("%1: %2.").arg(qs(m->model), qs(m->estimates.difference.verdict));
    const bool oneScale =
        !d.grassmann.hasGrid() || !d.transformer.hasGrid() || d.grassmann.shownEstimate == d.transformer.shownEstimate;
    return verdicts.join(QStringLiteral(" ")) + (verdicts.isEmpty() ? QString() : QStringLiteral(" ")) +
           QStringLiteral("%1 of %2 over the pairs of %3 (%4): %5 at each pair's metric position (heatmaps; "
                          "columns of a position site count back from the metric position m) with a 95% paired "
                          "bootstrap interval (%6 resamples, seed %7); dots mark the cells whose raw effect a "
                          "t-test rejects as 0 after Holm's correction over the sweep's cells (family-wise 0.05); "
                          "%8. Below: the distribution over pairs of one cell, and the estimate against the exact "
                          "change with their correlations.")
               .arg(d.inputs.mode == "patch" ? QStringLiteral("Activation patching")
                                             : QStringLiteral("%1-ablation").arg(qs(d.inputs.mode)),
                    sites, QFileInfo(qs(d.inputs.file)).fileName(), counts.join(QStringLiteral(", ")), value)
               .arg(d.bootstrap)
               .arg(d.seed)
               .arg(oneScale ? QStringLiteral("both models on one scale")
                             : QStringLiteral("each model on its own scale (they show different estimates)"));
}

std::vector<DataTable> PatchingFigure::pairsTables() const {
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PairsGrid& g = m_pairs.grid(model);
        if (!g.hasGrid()) continue;
        const QString who = detail::modelWord(model).toLower();
        const QString key = g.estimated ? QStringLiteral("attribution") : QStringLiteral("effect");
        auto table = [&](const QString& name, const QString& quantity, auto valueOf) {
            std::vector<float> v(static_cast<size_t>(g.rows * g.cols));
            for (int64_t i = 0; i < g.rows * g.cols; ++i)
                v[static_cast<size_t>(i)] = static_cast<float>(valueOf(static_cast<size_t>(i)));
            out.push_back(detail::tableFromMatrix(
                QStringLiteral("pairs_%1_%2_%3_%4").arg(who, qs(g.site), key, name), quantity, QString(),
                g.estimated ? QStringLiteral("logit") : QString(), g.rows, g.cols, std::move(v), qs(g.rowTitle),
                qs(g.colTitle), detail::qsList(g.rowLabels), detail::qsList(g.colLabels)));
        };
        const PairsEstimates& e = g.estimates;
        table(QStringLiteral("mean"),
              QStringLiteral("%1 over the pairs defining the cell (estimator: %2; %3)")
                  .arg(shownLabel(g),
                       g.shownIsRatio() ? QStringLiteral("ratio of means sum(p - k) / sum(c - k)")
                                        : QStringLiteral("mean of p - k"),
                       qs(e.difference.verdict)),
              [&](size_t i) { return g.mean[i]; });
        table(QStringLiteral("ci_low"),
              QStringLiteral("2.5th percentile of the estimate over paired bootstrap resamples of the pairs"),
              [&](size_t i) { return g.low[i]; });
        table(QStringLiteral("ci_high"), QStringLiteral("97.5th percentile of the same"),
              [&](size_t i) { return g.high[i]; });
        table(QStringLiteral("n"), QStringLiteral("pairs with a defined value in the cell"),
              [&](size_t i) { return static_cast<double>(g.n[i]); });
        if (!e.raw.empty()) {
            table(QStringLiteral("raw_mean"), QStringLiteral("mean raw effect p - k over the pairs (logits)"),
                  [&](size_t i) { return e.raw[i]; });
            table(QStringLiteral("p_value"),
                  QStringLiteral("two-sided one-sample t-test of the cell's raw effects against 0"),
                  [&](size_t i) { return e.pValue[i]; });
            table(QStringLiteral("holm_marked"),
                  QStringLiteral("1 where Holm's procedure over the sweep's %1 tested cells rejects at 0.05")
                      .arg(e.tested),
                  [&](size_t i) { return static_cast<double>(e.marked[i]); });
            if (!g.estimated)
                table(QStringLiteral("mean_of_ratios"),
                      QStringLiteral("mean of per-pair effects over the pairs with |clean - corrupted| >= %1 only")
                          .arg(e.threshold),
                      [&](size_t i) { return e.meanOfRatios[i]; });
        }
        // Every pair's value: pairs x cells (rows labelled by the file's line).
        {
            const int64_t cells = g.rows * g.cols;
            std::vector<float> v(g.values.begin(), g.values.end());
            QStringList rowLabels, colLabels;
            for (int64_t ln : g.lines)
                rowLabels << QStringLiteral("line %1").arg(ln);
            for (int64_t i = 0; i < cells; ++i)
                colLabels << QStringLiteral("%1 %2 | %3 %4")
                                 .arg(qs(g.rowTitle), qsAt(g.rowLabels, i / g.cols), qs(g.colTitle),
                                      qsAt(g.colLabels, i % g.cols));
            out.push_back(detail::tableFromMatrix(
                QStringLiteral("pairs_%1_%2_%3_per_pair").arg(who, qs(g.site), key),
                QStringLiteral("%1 of each pair in each cell; NaN = undefined").arg(qs(g.valueName())), QString(),
                g.estimated ? QStringLiteral("logit") : QString(), g.pairs(), cells, std::move(v),
                QStringLiteral("pair"), QStringLiteral("cell"), rowLabels, colLabels));
        }
        if (!g.scatterEstimate.empty()) {
            const int64_t P = static_cast<int64_t>(std::min(g.scatterEstimate.size(), g.scatterExact.size()));
            std::vector<float> v;
            for (int64_t i = 0; i < P; ++i) {
                v.push_back(static_cast<float>(g.scatterEstimate[static_cast<size_t>(i)]));
                v.push_back(static_cast<float>(g.scatterExact[static_cast<size_t>(i)]));
            }
            out.push_back(detail::tableFromMatrix(
                QStringLiteral("pairs_%1_%2_estimate_vs_exact").arg(who, qs(g.site)),
                QStringLiteral("first-order estimate and exact change of the metric (pair x cell points); Spearman "
                               "%1, Pearson %2")
                    .arg(g.spearman, 0, 'g', 6)
                    .arg(g.pearson, 0, 'g', 6),
                QString(), QStringLiteral("logit"), P, 2, std::move(v), QStringLiteral("point"),
                QStringLiteral("value"), {}, {QStringLiteral("estimate"), QStringLiteral("exact")}));
        }
    }
    return out;
}

void PatchingFigure::drawPairs(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    // The two means above; the chosen cell's distribution and the scatter below (side by side on a
    // wide figure, stacked on a narrow one).
    const bool wide = rect.width() > rect.height() * 1.2;
    const QRectF top(rect.left(), rect.top(), rect.width(), rect.height() * (wide ? 0.5 : 0.34));
    const QRectF below(rect.left(), top.bottom() + style.metrics(style.body).height(), rect.width(),
                       rect.bottom() - top.bottom() - style.metrics(style.body).height());
    const PairsGrid& g = m_pairs.grassmann.hasGrid() ? m_pairs.grassmann : m_pairs.transformer;
    detail::paintHeatmapPair(p, top, style, map, m_panels[0], panelWindow(detail::panelName(0)),
                             panelTitle(0) + QStringLiteral(", mean"), m_panels[1], panelWindow(detail::panelName(1)),
                             panelTitle(1) + QStringLiteral(", mean"), valueName());
    const auto [left, right] = detail::splitPanels(below, 0.5, wide, style.metrics(style.body).height());
    if (m_cellModel >= 0 && m_pairs.grid(m_cellModel).hasGrid()) {
        paintCellDistribution(p, left, m_pairs.grid(m_cellModel), m_cellRow, m_cellCol, style);
    } else {
        const int64_t best = defaultPairsCell(g);
        if (best >= 0) paintCellDistribution(p, left, g, best / g.cols, best % g.cols, style);
    }
    paintEstimateScatter(p, right, m_pairs, style);
}

} // namespace gwb::views
