// The Paths figure over a pairs file (paths_figure.h): each cell's estimate over the pairs with the
// verdict on clean - corrupted first, the estimator and Holm's correction named, and the tables.
// The single-pair matrices are paths_figure.cpp.

#include "gwb/views/paths_figure.h"

#include "causal_figure_common.h"
#include "figure_common.h"

#include <QFileInfo>

namespace gwb::views {

using detail::qs;

void PathsFigure::setPairsResult(const PathsPairsData& result) {
    if (!result.hasGrid()) return; // nothing usable: what is shown stays
    m_pairs = result;
    m_pairsMode = true;
    buildPanels();
}

QString PathsFigure::pairsStatusText() const {
    QStringList parts;
    for (const gwb::engine::PairsGrid* g : {&m_pairs.grassmann, &m_pairs.transformer}) {
        if (!g->hasGrid()) {
            if (!g->error.empty()) parts << QStringLiteral("%1: %2").arg(qs(g->model), qs(g->error));
            continue;
        }
        QString part = QStringLiteral("%1 %2 pairs").arg(qs(g->model)).arg(g->pairs());
        if (!g->skipped.empty())
            part +=
                QStringLiteral(", %1 line(s) skipped (first: %2)").arg(g->skipped.size()).arg(qs(g->skipped.front()));
        parts << part;
    }
    const QStringList verdicts = detail::pairsVerdicts(m_pairs.grassmann, m_pairs.transformer);
    return (verdicts.isEmpty() ? QString() : verdicts.join(QStringLiteral(". ")) + QStringLiteral(". ")) +
           QStringLiteral("%1 (%2 lines): %3. Hover a cell for its estimate, interval, n and test.")
               .arg(QFileInfo(qs(m_pairs.inputs.file)).fileName())
               .arg(m_pairs.lines)
               .arg(parts.join(QStringLiteral("; ")));
}

QString PathsFigure::pairsCaption() const {
    const PathsPairsData& d = m_pairs;
    QStringList verdicts = detail::pairsVerdicts(d.grassmann, d.transformer);
    for (QString& v : verdicts)
        v += QLatin1Char('.');
    const bool oneScale =
        !d.grassmann.hasGrid() || !d.transformer.hasGrid() || d.grassmann.shownEstimate == d.transformer.shownEstimate;
    const QString value = detail::pairsValueText(d.grassmann, d.transformer, QStringLiteral("path-patched"));
    return verdicts.join(QStringLiteral(" ")) + (verdicts.isEmpty() ? QString() : QStringLiteral(" ")) +
           QStringLiteral("Path patching over the pairs of %1 (senders %2, receivers %3): each pair's corrupted "
                          "prompt runs with one sender at its clean value and every other component frozen; cells "
                          "give %4 with a 95% paired bootstrap interval (%5 resamples, seed %6); dots mark the cells "
                          "whose raw effect a t-test rejects as 0 after Holm's correction over the matrix's cells "
                          "(family-wise 0.05; none where the pairs show no effect to localise); %7; grey cells are "
                          "undefined.")
               .arg(QFileInfo(qs(d.inputs.file)).fileName(), qs(d.inputs.senders), qs(d.inputs.receivers), value)
               .arg(d.bootstrap)
               .arg(d.seed)
               .arg(oneScale ? QStringLiteral("both models on one scale")
                             : QStringLiteral("each model on its own scale (they show different estimates)"));
}

std::vector<DataTable> PathsFigure::pairsTables() const {
    std::vector<DataTable> out;
    for (int model : {0, 1})
        if (const gwb::engine::PairsGrid& g = m_pairs.grid(model); g.hasGrid())
            detail::appendPairsTables(out, g, QStringLiteral("paths_pairs_%1").arg(detail::modelWord(model).toLower()));
    return out;
}

} // namespace gwb::views
