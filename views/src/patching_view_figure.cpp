// The Patching view's single-pair figure and data: the caption, the tables (CSV/NPY/JSON) and the
// two-heatmap figure. The view itself is patching_view.cpp; the pairs-file part patching_view_pairs.cpp.

#include "gwb/views/patching_view.h"
#include "gwb/engine/sites.h"

#include "causal_common.h"
#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLineEdit>
#include <QMenu>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>
namespace gwb::views {

using detail::qs;

QString PatchingView::caption() const {
    if (m_pairsMode) return pairsCaption();
    const PatchingData& d = m_result;
    if (!d.hasGrid())
        return QStringLiteral("Causal tests (activation patching and ablation) of both models: no sweep has run yet.");
    const PatchingGrid& g = d.grassmann.hasGrid() ? d.grassmann : d.transformer;
    const QString sites = d.inputs.site == gwb::engine::kUnitAlias
                              ? QStringLiteral("one Grassmann offset D / one Transformer head")
                              : QStringLiteral("site %1").arg(qs(d.inputs.site));
    QString what;
    if (d.inputs.mode == "patch")
        what = QStringLiteral("Activation patching of %1: the corrupted prompt \u201c%2\u201d runs with the value "
                              "at one layer and %3 taken from the clean prompt \u201c%4\u201d")
                   .arg(sites, qs(d.inputs.corrupt), qs(g.colTitle), qs(d.inputs.clean));
    else
        what = QStringLiteral("%1-ablation of %2 at one layer and %3 on the prompt \u201c%4\u201d")
                   .arg(qs(d.inputs.mode), sites, qs(g.colTitle), qs(d.inputs.clean));
    QString value;
    switch (g.shown()) {
    case PatchingGrid::Shown::Effect:
        value = QStringLiteral("cells give the normalised effect (patched \u2212 corrupted) / (clean \u2212 "
                               "corrupted) of logit['%1'] \u2212 logit['%2'] at token %3 (1 = clean behaviour, 0 = "
                               "corrupted)")
                    .arg(qs(d.answerPiece), qs(d.wrongPiece))
                    .arg(d.metricPosition);
        break;
    case PatchingGrid::Shown::MetricChange:
        value = QStringLiteral("cells give the change of logit['%1'] \u2212 logit['%2'] at token %3 from the "
                               "unchanged run")
                    .arg(qs(d.answerPiece), qs(d.wrongPiece))
                    .arg(d.metricPosition);
        break;
    default:
        value = QStringLiteral("cells give the mean change of log p of the actual next token over the prompt "
                               "(nats)");
    }
    QStringList metrics;
    for (const PatchingGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid() && m->hasMetric)
            metrics << QStringLiteral("%1 clean %2, corrupted %3")
                           .arg(qs(m->model), detail::formatValue(m->cleanMetric),
                                detail::formatValue(m->corruptMetric));
    return QStringLiteral("%1; %2%3. Both models on one diverging scale centred at 0; grey cells are undefined.")
        .arg(what, value,
             metrics.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(metrics.join(QStringLiteral("; "))));
}

std::vector<DataTable> PatchingView::dataTables() const {
    if (m_pairsMode) return pairsTables();
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PatchingGrid& g = grid(model);
        if (!g.hasGrid()) continue;
        const QString who = model == 0 ? QStringLiteral("grassmann") : QStringLiteral("transformer");
        auto table = [&](const QString& key, const QString& quantity, const QString& units, auto valueOf) {
            std::vector<float> v(static_cast<size_t>(g.rows * g.cols));
            for (int64_t r = 0; r < g.rows; ++r)
                for (int64_t c = 0; c < g.cols; ++c)
                    v[static_cast<size_t>(r * g.cols + c)] = static_cast<float>(valueOf(r, c));
            out.push_back(detail::tableFromMatrix(QStringLiteral("patching_%1_%2_%3").arg(who, qs(g.site), key),
                                                  quantity, QString(), units, g.rows, g.cols, std::move(v),
                                                  qs(g.rowTitle), qs(g.colTitle), detail::qsList(g.rowLabels),
                                                  detail::qsList(g.colLabels)));
        };
        auto at = [&g](const std::vector<double>& a, int64_t r, int64_t c) {
            const size_t i = static_cast<size_t>(r * g.cols + c);
            return i < a.size() && (i >= g.defined.size() || g.defined[i]) ? a[i] : std::nan("");
        };
        if (g.hasMetric) {
            table(QStringLiteral("effect"),
                  QStringLiteral("normalised effect (metric - corrupt) / (clean - corrupt) of logit['%1'] - "
                                 "logit['%2'] at token %3; clean %4, corrupted %5; NaN = undefined")
                      .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                      .arg(m_result.metricPosition)
                      .arg(g.cleanMetric, 0, 'g', 9)
                      .arg(g.corruptMetric, 0, 'g', 9),
                  QString(), [&](int64_t r, int64_t c) { return at(g.effect, r, c); });
            table(QStringLiteral("metric"),
                  QStringLiteral("raw metric logit['%1'] - logit['%2'] of the changed run at token %3")
                      .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                      .arg(m_result.metricPosition),
                  QStringLiteral("logit"), [&](int64_t r, int64_t c) { return at(g.metric, r, c); });
        } else {
            table(QStringLiteral("mean_delta_logprob"),
                  QStringLiteral("mean over t < T-1 of log p(x_{t+1}) of the ablated run minus the unchanged run's"),
                  QStringLiteral("nats"), [&](int64_t r, int64_t c) { return at(g.meanDelta, r, c); });
        }
    }
    return out;
}

void PatchingView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const auto title = [this](int model) {
        const QString site = qs(m_pairsMode ? m_pairs.grid(model).site : grid(model).site);
        return QStringLiteral("%1 (%2)").arg(model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"),
                                             site.isEmpty() ? qs(m_result.inputs.site) : site);
    };
    if (!m_pairsMode) {
        detail::paintHeatmapPair(p, rect, style, map, m_grassmann, title(0), m_transformer, title(1), valueName());
        return;
    }
    // Over pairs: the two means above; the clicked cell's distribution and the scatter below (side
    // by side on a wide figure, stacked on a narrow one).
    const bool wide = rect.width() > rect.height() * 1.2;
    const QRectF top(rect.left(), rect.top(), rect.width(), rect.height() * (wide ? 0.5 : 0.34));
    const QRectF below(rect.left(), top.bottom() + style.metrics(style.body).height(), rect.width(),
                       rect.bottom() - top.bottom() - style.metrics(style.body).height());
    const PairsGrid& g = m_pairs.grassmann.hasGrid() ? m_pairs.grassmann : m_pairs.transformer;
    detail::paintHeatmapPair(p, top, style, map, m_grassmann, title(0) + QStringLiteral(", mean"), m_transformer,
                             title(1) + QStringLiteral(", mean"), QStringLiteral("mean %1").arg(qs(g.valueName())));
    const auto [left, right] = detail::splitPanels(below, 0.5, wide, style.metrics(style.body).height());
    const int cm = m_pairsPlots->cellModel();
    if (cm >= 0 && m_pairs.grid(cm).hasGrid())
        paintCellDistribution(p, left, m_pairs.grid(cm), m_pairsPlots->cellRow(), m_pairsPlots->cellCol(), style);
    else {
        const int64_t best = defaultPairsCell(g);
        if (best >= 0) paintCellDistribution(p, left, g, best / g.cols, best % g.cols, style);
    }
    paintEstimateScatter(p, right, m_pairs, style);
}

} // namespace gwb::views
