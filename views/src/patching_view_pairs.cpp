// The Patching view's pairs-file part (a causal claim over a dataset): the run, the mean-effect
// grids with their intervals, the side panel of a clicked cell, the caption and the data tables.
// The single-pair sweep is in patching_view.cpp.

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
using detail::qsAt;

namespace {
const QString kDash = QStringLiteral("\u2014");

} // namespace

QString PatchingView::pairsMethod() const {
    return m_method->currentText();
}

void PatchingView::setPairsMethod(const QString& method) {
    if (const int i = m_method->findText(method); i >= 0) m_method->setCurrentIndex(i);
}

void PatchingView::choosePairsFile() {
    if (m_running) return;
    const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Pairs file"),
                                                      QFileInfo(qs(m_pairs.inputs.file)).absolutePath(),
                                                      QStringLiteral("Pairs (*.jsonl *.json *.csv);;All files (*)"));
    if (!file.isEmpty()) runPairs(file);
}

void PatchingView::runPairs(const QString& file) {
    if (m_running) return;
    const PatchingInputs in = inputs();
    QString problem;
    if (file.isEmpty())
        problem = QStringLiteral("Choose a pairs file (JSONL or CSV with clean, corrupt, answer and wrong).");
    else if (!detail::patchingSiteItems().contains(qs(in.site)))
        problem = QStringLiteral("Unknown site '%1' (resid, mixer, gate, ffn, offset/head).").arg(qs(in.site));
    if (!problem.isEmpty()) {
        m_message = problem;
        m_status->setText(problem);
        return;
    }
    PairsInputs p;
    p.file = file.toStdString();
    p.site = in.site;
    p.mode = in.mode;
    p.method = pairsMethod().toStdString();
    m_pairsFile = file;
    Q_EMIT settingsChanged();
    Q_EMIT pairsRequested(p);
}

void PatchingView::setPairsResult(const PairsData& result) {
    setRunning(false);
    if (!result.hasGrid()) { // nothing usable: say why; what is shown stays
        QString why = qs(result.error);
        if (why.isEmpty()) {
            QStringList parts;
            for (const PairsGrid* g : {&result.grassmann, &result.transformer})
                if (!g->error.empty()) parts << QStringLiteral("%1: %2").arg(qs(g->model), qs(g->error));
            why = parts.join(QStringLiteral("; "));
        }
        m_message = QStringLiteral("Pairs file %1: %2").arg(QFileInfo(qs(result.inputs.file)).fileName(), why);
        m_status->setText(m_message);
        return;
    }
    m_pairs = result;
    m_pairsMode = true;
    m_message.clear();
    m_refused.clear();
    m_pairsPlots->setData(&m_pairs);
    for (int model : {0, 1}) // the side panel starts with the cell of largest |mean| whose pairs differ
        if (const PairsGrid& g = m_pairs.grid(model); g.hasGrid()) {
            if (const int64_t cell = defaultPairsCell(g); cell >= 0)
                m_pairsPlots->setCell(model, cell / g.cols, cell % g.cols);
            break;
        }
    showSide(true);
    showGrid(0);
    showGrid(1);
    m_hover->clear();
    requestRefresh();
    Q_EMIT settingsChanged();
}

void PatchingView::showSide(bool pairs) {
    if ((m_side->currentWidget() == m_pairsPlots) == pairs) return;
    m_side->setCurrentWidget(pairs ? static_cast<QWidget*>(m_pairsPlots) : m_topK);
    const int total = m_split->sizes().value(0) + m_split->sizes().value(1) + m_split->sizes().value(2);
    const int side = pairs ? total * 36 / 100 : total * 16 / 100;
    m_split->setSizes({(total - side) / 2, (total - side) / 2, side});
}

void PatchingView::clickCell(int model, int64_t r, int64_t c) {
    if (m_pairsMode) {
        const PairsGrid& g = m_pairs.grid(model);
        if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return;
        m_pairsPlots->setCell(model, r, c);
        return;
    }
    const PatchingGrid& g = grid(model);
    if (!g.hasGrid()) return;
    const size_t i = static_cast<size_t>(r * g.cols + c);
    if (i < g.defined.size() && !g.defined[i]) {
        m_status->setText(qs(g.undefinedReason(r, c)));
        return;
    }
    m_topK->setRowCount(0);
    m_topK->setToolTip(QString());
    m_topK->setHorizontalHeaderLabels(
        {QStringLiteral("piece (computing\u2026)"), QStringLiteral("p"), QStringLiteral("logit")});
    Q_EMIT topKRequested(model, r, c);
}

QString PatchingView::pairsCellText(int model, int64_t r, int64_t c) const {
    const PairsGrid& g = m_pairs.grid(model);
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return {};
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const QString where =
        QStringLiteral("%1 \u00b7 %2 %3 \u00b7 %4 %5")
            .arg(qs(g.model), qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    const int64_t n = i < g.n.size() ? g.n[i] : 0;
    if (n == 0) return QStringLiteral("%1 \u00b7 no pair defines this cell (n = 0)").arg(where);
    auto num = [](double v) { return std::isfinite(v) ? detail::formatValue(v) : kDash; };
    QString text = QStringLiteral("%1 \u00b7 mean %2 %3, 95% interval [%4, %5], n = %6 of %7 pairs")
                       .arg(where, qs(g.valueName()), num(g.mean[i]), num(g.low[i]), num(g.high[i]))
                       .arg(n)
                       .arg(g.pairs());
    if (g.estimated && !g.flagged.empty()) {
        int64_t flagged = 0;
        for (int64_t p = 0; p < g.pairs(); ++p)
            flagged += g.flagged[static_cast<size_t>(p * g.rows * g.cols) + i];
        if (flagged) text += QStringLiteral(" \u00b7 %1 pair(s) flagged: a saturated gate").arg(flagged);
    }
    return text;
}

QString PatchingView::pairsCaption() const {
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
    const QString value = g.estimated
                              ? QStringLiteral("attribution patching: the first-order estimate of the change of "
                                               "logit[answer] \u2212 logit[wrong]")
                              : QStringLiteral("the normalised effect (patched \u2212 corrupted) / (clean \u2212 "
                                               "corrupted) of logit[answer] \u2212 logit[wrong]");
    return QStringLiteral("%1 of %2 over the pairs of %3 (%4): %5 at each pair's metric position, mean over pairs "
                          "(heatmaps; columns of a position site count back from the metric position m) with a 95% "
                          "percentile bootstrap interval (%6 resamples, seed %7). Below: the distribution over pairs "
                          "of one cell, and the estimate against the exact change with their correlations.")
        .arg(d.inputs.mode == "patch" ? QStringLiteral("Activation patching")
                                      : QStringLiteral("%1-ablation").arg(qs(d.inputs.mode)),
             sites, QFileInfo(qs(d.inputs.file)).fileName(), counts.join(QStringLiteral(", ")), value)
        .arg(d.bootstrap)
        .arg(d.seed);
}

std::vector<DataTable> PatchingView::pairsTables() const {
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PairsGrid& g = m_pairs.grid(model);
        if (!g.hasGrid()) continue;
        const QString who = model == 0 ? QStringLiteral("grassmann") : QStringLiteral("transformer");
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
        table(QStringLiteral("mean"), QStringLiteral("mean %1 over the pairs defining the cell").arg(qs(g.valueName())),
              [&](size_t i) { return g.mean[i]; });
        table(QStringLiteral("ci_low"),
              QStringLiteral("2.5th percentile of the mean over bootstrap resamples of the pairs"),
              [&](size_t i) { return g.low[i]; });
        table(QStringLiteral("ci_high"), QStringLiteral("97.5th percentile of the same"),
              [&](size_t i) { return g.high[i]; });
        table(QStringLiteral("n"), QStringLiteral("pairs with a defined value in the cell"),
              [&](size_t i) { return static_cast<double>(g.n[i]); });
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

} // namespace gwb::views
