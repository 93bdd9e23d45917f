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
    return detail::pairsGridPanel(
        g, m_pairs.grid(1 - model), who,
        QStringLiteral("%1 (%2), %3 over %4 pairs").arg(who, qs(g.site), detail::pairsShownLabel(g)).arg(g.pairs()));
}

QString PatchingFigure::shownLabel(const PairsGrid& g) {
    return detail::pairsShownLabel(g);
}

QString PatchingFigure::pairsCellText(int model, int64_t r, int64_t c) const {
    return detail::pairsCellText(m_pairs.grid(model), r, c);
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
    const QStringList verdicts = detail::pairsVerdicts(m_pairs.grassmann, m_pairs.transformer); // first
    return (verdicts.isEmpty() ? QString() : verdicts.join(QStringLiteral(". ")) + QStringLiteral(". ")) +
           QStringLiteral("%1 (%2 lines), %3: %4. Hover a cell for its estimate, interval and n; click it for its "
                          "distribution.")
               .arg(QFileInfo(qs(m_pairs.inputs.file)).fileName())
               .arg(m_pairs.lines)
               .arg(qs(m_pairs.inputs.method), parts.join(QStringLiteral("; ")));
}

QString PatchingFigure::pairsCaption() const {
    const PairsData& d = m_pairs;
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
    const QString value = detail::pairsValueText(d.grassmann, d.transformer, QStringLiteral("patched"));
    QStringList verdicts = detail::pairsVerdicts(d.grassmann, d.transformer);
    for (QString& v : verdicts)
        v += QLatin1Char('.');
    const bool oneScale =
        !d.grassmann.hasGrid() || !d.transformer.hasGrid() || d.grassmann.shownEstimate == d.transformer.shownEstimate;
    return verdicts.join(QStringLiteral(" ")) + (verdicts.isEmpty() ? QString() : QStringLiteral(" ")) +
           QStringLiteral("%1 of %2 over the pairs of %3 (%4): %5 at each pair's metric position (heatmaps; "
                          "columns of a position site count back from the metric position m) with a 95% paired "
                          "bootstrap interval (%6 resamples, seed %7); dots mark the cells whose raw effect a "
                          "t-test rejects as 0 after Holm's correction over the sweep's cells (family-wise 0.05; "
                          "none where the pairs show no effect to localise); "
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
        detail::appendPairsTables(out, g, QStringLiteral("pairs_%1_%2_%3").arg(who, qs(g.site), key));
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
