#include "gwb/views/patching_view.h"

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

QString shownName(PatchingGrid::Shown s) {
    switch (s) {
    case PatchingGrid::Shown::Effect:
        return QStringLiteral("normalised effect");
    case PatchingGrid::Shown::MetricChange:
        return QStringLiteral("metric \u2212 clean metric");
    default:
        return QStringLiteral("mean \u0394 log p (nats)");
    }
}
} // namespace

PatchingView::PatchingView(QWidget* parent) : CausalView(parent) {
    auto* layout = new QVBoxLayout(this);
    const detail::MetricFields fields = detail::addMetricFields(
        layout, QStringLiteral("patching"),
        QStringLiteral("corrupted prompt, same token length (empty: ablate the prompt)"),
        QStringLiteral("The clean prompt is the window's current prompt. Patching runs this prompt with one site's "
                       "value taken from the clean run."),
        this);
    m_corrupt = fields.corrupt;
    m_answer = fields.answer;
    m_wrong = fields.wrong;

    auto* bar = new QHBoxLayout();
    m_site = detail::addCombo(bar, QStringLiteral("Site"), detail::patchingSiteItems(), this);
    m_site->setObjectName(QStringLiteral("patchingSite"));
    m_site->setToolTip(QStringLiteral("resid: block input h^l; mixer: mixing sublayer output; gate: Grassmann gate "
                                      "a_t; ffn: FFN output; offset/head: one Grassmann offset D, one Transformer "
                                      "head"));
    m_mode = detail::addCombo(bar, QStringLiteral("Mode"),
                              {QStringLiteral("patch"), QStringLiteral("zero"), QStringLiteral("mean")}, this);
    m_mode->setObjectName(QStringLiteral("patchingMode"));
    m_method =
        detail::addCombo(bar, QStringLiteral("Pairs"), {QStringLiteral("exact"), QStringLiteral("attribution")}, this);
    m_method->setObjectName(QStringLiteral("patchingPairsMethod"));
    m_method->setToolTip(QStringLiteral("How a pairs file runs: exact sweeps of every pair (with the first-order "
                                        "estimate beside them), or attribution patching alone (one forward and one "
                                        "backward pass a pair; the 5 cells of largest |estimate| and 5 random ones "
                                        "of each pair are also run exactly)"));
    m_pairsButton = new QPushButton(QStringLiteral("Pairs file\u2026"), this);
    m_pairsButton->setObjectName(QStringLiteral("patchingPairsFile"));
    m_pairsButton->setToolTip(QStringLiteral("Run a pairs file (JSONL or CSV: clean, corrupt, answer, wrong, optional "
                                             "position) with this site and mode: each cell's mean effect over the "
                                             "pairs with its 95% bootstrap interval"));
    bar->addWidget(m_pairsButton);
    m_controls = detail::addRunControls(bar, QStringLiteral("patching"), this);
    m_run = m_controls.run;
    m_cancel = m_controls.cancel;
    m_progress = m_controls.progress;
    m_status = m_controls.status;
    layout->addLayout(bar);
    layout->addWidget(m_status);

    auto* split = new QSplitter(Qt::Horizontal, this);
    m_split = split;
    m_grassmann = new HeatmapWidget(split);
    m_transformer = new HeatmapWidget(split);
    m_side = new QStackedWidget(split);
    m_topK = detail::makeTopKTable(m_side, QStringLiteral("patchingTopK"),
                                   QStringLiteral("Click a cell: the most probable next pieces of that changed run"));
    m_pairsPlots = new PairsPlotsWidget(m_side);
    m_side->addWidget(m_topK);
    m_side->addWidget(m_pairsPlots);
    for (HeatmapWidget* h : {m_grassmann, m_transformer}) {
        h->setColormap(ColormapId::RdBu);
        h->setDiverging(true);
        h->setMinimumWidth(200);
        split->addWidget(h);
        const int model = h == m_grassmann ? 0 : 1;
        h->setUndefinedReason([this, model](int64_t r, int64_t c) {
            if (m_pairsMode)
                return QStringLiteral("Undefined: no pair defines this cell (it does not exist in the model, or "
                                      "every pair is too short for it or has equal clean and corrupted metrics).");
            const QString why = qs(grid(model).undefinedReason(r, c));
            return why.isEmpty() ? QStringLiteral("undefined here") : why;
        });
    }
    split->addWidget(m_side);
    split->setSizes({440, 440, 170});
    layout->addWidget(split, 1);
    m_hover = detail::messageLabel(this, QStringLiteral("patchingHover"));
    layout->addWidget(m_hover);

    connect(m_run, &QPushButton::clicked, this, &PatchingView::run);
    for (QLineEdit* e : {m_corrupt, m_answer, m_wrong})
        connect(e, &QLineEdit::returnPressed, this, &PatchingView::run);
    connect(m_cancel, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(); });
    connect(m_pairsButton, &QPushButton::clicked, this, &PatchingView::choosePairsFile);
    connect(m_method, &QComboBox::currentTextChanged, this, [this] { Q_EMIT settingsChanged(); });
    connect(m_mode, &QComboBox::currentTextChanged, this, [this] {
        updateStale();
        Q_EMIT settingsChanged();
    });
    connect(m_site, &QComboBox::currentTextChanged, this, [this] {
        updateStale();
        Q_EMIT settingsChanged();
    });
    for (QLineEdit* e : {m_corrupt, m_answer, m_wrong})
        connect(e, &QLineEdit::textChanged, this, [this] { updateStale(); });
    for (int model : {0, 1}) {
        HeatmapWidget* h = heatmap(model);
        connect(h, &HeatmapWidget::cellHovered, this,
                [this, model](qint64 r, qint64 c, const QString&) { hovered(model, r, c); });
        connect(h, &HeatmapWidget::cellClicked, this, [this, model](qint64 r, qint64 c) { clickCell(model, r, c); });
    }
    for (int model : {0, 1}) {
        HeatmapWidget* h = heatmap(model);
        h->setContextMenuPolicy(Qt::CustomContextMenu);
        connect(h, &QWidget::customContextMenuRequested, this, [this, model, h](const QPoint& pos) {
            const QPoint cell = h->cellAt(pos);
            const PatchingGrid& g = grid(model);
            if (m_pairsMode || !g.hasGrid() || cell.x() < 0 || !g.hasMetric || m_result.inputs.corrupt.empty()) return;
            QMenu menu(h);
            QAction* paths = menu.addAction(QStringLiteral("Trace paths from here"));
            paths->setToolTip(QStringLiteral("Path patching of this component in the Paths view: does it write the "
                                             "answer itself or feed a later layer?"));
            if (menu.exec(h->mapToGlobal(pos)) == paths) Q_EMIT tracePathsRequested(model, cell.y(), cell.x());
        });
    }
    showGrid(0);
    showGrid(1);
    refresh();
}

PatchingInputs PatchingView::inputs() const {
    PatchingInputs in;
    in.clean = m_data.prompt();
    in.corrupt = m_corrupt->text().toStdString();
    in.answer = m_answer->text().trimmed().toStdString();
    in.wrong = m_wrong->text().trimmed().toStdString();
    in.site = m_site->currentText().toStdString();
    in.mode = m_mode->currentText().toStdString();
    return in;
}

void PatchingView::setInputs(const PatchingInputs& in) {
    m_corrupt->setText(qs(in.corrupt));
    m_answer->setText(qs(in.answer));
    m_wrong->setText(qs(in.wrong));
    if (const int i = m_site->findText(qs(in.site)); i >= 0) m_site->setCurrentIndex(i);
    if (const int i = m_mode->findText(qs(in.mode)); i >= 0) m_mode->setCurrentIndex(i);
    Q_EMIT settingsChanged();
}

QString PatchingView::checkInputs(const PatchingInputs& in) const {
    if (in.clean.empty()) return QStringLiteral("Run a prompt first: the clean prompt is the window's current prompt.");
    if (!detail::patchingSiteItems().contains(qs(in.site)))
        return QStringLiteral("Unknown site '%1' (resid, mixer, gate, ffn, offset/head).").arg(qs(in.site));
    if (in.mode != "patch" && in.mode != "zero" && in.mode != "mean")
        return QStringLiteral("Unknown mode '%1' (patch, zero, mean).").arg(qs(in.mode));
    if (in.mode == "patch" && in.corrupt.empty())
        return QStringLiteral("Patching needs a corrupted prompt of the same token length as the clean prompt (or "
                              "choose mode zero or mean to ablate the clean prompt).");
    if (in.answer.empty() != in.wrong.empty())
        return QStringLiteral("Give both an answer piece and a wrong piece (the metric is logit[answer] - "
                              "logit[wrong]), or neither for an ablation of the prompt.");
    if (!in.corrupt.empty() && in.answer.empty())
        return QStringLiteral("With a corrupted prompt, type the answer piece and the wrong piece of the metric "
                              "logit[answer] - logit[wrong].");
    return {};
}

void PatchingView::run() {
    if (m_running) return;
    const PatchingInputs in = inputs();
    if (showProblem(checkInputs(in))) return;
    Q_EMIT settingsChanged();
    Q_EMIT runRequested(in);
}

void PatchingView::setRunning(bool running) {
    showRunningState(running, QStringLiteral("Running the sweep\u2026"));
    m_pairsButton->setEnabled(!running);
}

void PatchingView::setResult(const PatchingData& result) {
    setRunning(false);
    if (!result.error.empty()) { // bad input: say so; an earlier sweep stays, marked as such
        refuse(qs(result.error));
        return;
    }
    m_result = result;
    acceptResult();
    m_pairsMode = false;
    showSide(false);
    showGrid(0);
    showGrid(1);
    requestRefresh();
    Q_EMIT settingsChanged();
}

QString PatchingView::valueName() const {
    const PatchingGrid& g = m_result.grassmann.hasGrid() ? m_result.grassmann : m_result.transformer;
    return shownName(g.shown());
}

namespace {
/// The heatmap of a grid (PatchingGrid or PairsGrid): value(r, c) under the grid's axes.
template <class Grid>
void showMatrix(HeatmapWidget* h, const Grid& g, const QString& title, const QString& valueName,
                const std::function<double(int64_t, int64_t)>& value) {
    std::vector<float> v(static_cast<size_t>(g.rows * g.cols));
    for (int64_t r = 0; r < g.rows; ++r)
        for (int64_t c = 0; c < g.cols; ++c)
            v[static_cast<size_t>(r * g.cols + c)] = static_cast<float>(value(r, c));
    HeatmapAxes axes;
    axes.title = title;
    axes.rowTitle = qs(g.rowTitle);
    axes.colTitle = qs(g.colTitle);
    axes.rowLabels = detail::qsList(g.rowLabels);
    axes.colLabels = detail::qsList(g.colLabels);
    axes.valueName = valueName;
    h->setMatrix(makeDenseSource(g.rows, g.cols, std::move(v)), axes);
}
} // namespace

void PatchingView::showGrid(int model) {
    HeatmapWidget* h = heatmap(model);
    if (m_pairsMode) {
        const PairsGrid& g = m_pairs.grid(model);
        const QString who = model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
        if (!g.hasGrid()) {
            h->setPlaceholder(QStringLiteral("%1: %2").arg(
                who, g.error.empty() ? QStringLiteral("no pair of the file ran on this model") : qs(g.error)));
            return;
        }
        showMatrix(h, g, QStringLiteral("%1 (%2), mean over %3 pairs").arg(who, qs(g.site)).arg(g.pairs()),
                   QStringLiteral("mean %1").arg(qs(g.valueName())),
                   [&g](int64_t r, int64_t c) { return g.meanAt(r, c); });
        double m = 0;
        for (const PairsGrid* o : {&m_pairs.grassmann, &m_pairs.transformer})
            for (double x : o->hasGrid() ? o->mean : std::vector<double>())
                if (std::isfinite(x)) m = std::max(m, std::abs(x));
        h->setFixedRange(-(m > 0 ? m : 1), m > 0 ? m : 1);
        return;
    }
    const PatchingGrid& g = grid(model);
    const QString who = model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
    if (!g.hasGrid()) {
        h->setPlaceholder(!g.error.empty() ? QStringLiteral("%1: %2").arg(who, qs(g.error))
                                           : QStringLiteral("%1: type a corrupted prompt, an answer and a wrong "
                                                            "piece, choose a site and press Run.")
                                                 .arg(who));
        return;
    }
    showMatrix(h, g, QStringLiteral("%1 (%2)").arg(who, qs(g.site)), shownName(g.shown()),
               [&g](int64_t r, int64_t c) { return g.value(r, c); });
    const double m = patchingScale(m_result);
    h->setFixedRange(-(m > 0 ? m : 1), m > 0 ? m : 1); // one scale for both models, centred at 0
}

QString PatchingView::cellText(int model, int64_t r, int64_t c, QString* why) const {
    if (why) why->clear();
    if (m_pairsMode) return pairsCellText(model, r, c);
    const PatchingGrid& g = grid(model);
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows || c >= g.cols) return {};
    const size_t i = static_cast<size_t>(r * g.cols + c);
    const QString where =
        QStringLiteral("%1 \u00b7 %2 %3 \u00b7 %4 %5")
            .arg(qs(g.model), qs(g.rowTitle), qsAt(g.rowLabels, r), qs(g.colTitle), qsAt(g.colLabels, c));
    auto num = [](double v) { return std::isfinite(v) ? detail::formatValue(v) : kDash; };
    const QString reason = qs(g.undefinedReason(r, c));
    QString text;
    if (g.hasMetric) {
        const double raw = i < g.metric.size() && (i >= g.defined.size() || g.defined[i]) ? g.metric[i] : std::nan("");
        const double eff = i < g.effect.size() && (i >= g.defined.size() || g.defined[i]) ? g.effect[i] : std::nan("");
        text = QStringLiteral("%1 \u00b7 metric %2 (raw; clean %3, corrupted %4) \u00b7 effect %5 (normalised)")
                   .arg(where, num(raw), num(g.cleanMetric), num(g.corruptMetric), num(eff));
        if (why && std::isnan(eff))
            *why = !reason.isEmpty()
                       ? reason
                       : QStringLiteral("The normalised effect (patched \u2212 corrupted) / (clean \u2212 "
                                        "corrupted) is undefined: the clean and corrupted metrics are "
                                        "equal (%1).")
                             .arg(num(g.cleanMetric));
    } else {
        text = QStringLiteral("%1 \u00b7 mean \u0394 log p %2 nats (raw) \u00b7 normalised %3")
                   .arg(where, num(g.value(r, c)), kDash);
        if (why)
            *why = !reason.isEmpty() ? reason
                                     : QStringLiteral("No normalised value: without a corrupted prompt and a metric "
                                                      "there is nothing to normalise by.");
    }
    return text;
}

void PatchingView::hovered(int model, qint64 r, qint64 c) {
    QString why;
    m_hover->setText(cellText(model, r, c, &why));
    m_hover->setToolTip(why);
    heatmap(model)->setToolTip(why);
}

void PatchingView::setTopK(const PatchingTopK& k) {
    const PatchingGrid& g = grid(k.model);
    const QString cell =
        g.hasGrid() ? QStringLiteral("%1 %2, %3").arg(qs(g.model), qsAt(g.rowLabels, k.row), qsAt(g.colLabels, k.col))
                    : QString();
    detail::showTopK(m_topK, k,
                     QStringLiteral("The changed run of %1: its most probable next pieces at token %2.")
                         .arg(cell)
                         .arg(m_result.metricPosition));
    if (!k.error.empty()) m_status->setText(QStringLiteral("Top pieces of %1: %2").arg(cell, qs(k.error)));
}

QJsonObject PatchingView::settings() const {
    QJsonObject o = View::settings();
    const PatchingInputs in = inputs();
    o.insert(QStringLiteral("corrupt"), qs(in.corrupt));
    o.insert(QStringLiteral("answer"), qs(in.answer));
    o.insert(QStringLiteral("wrong"), qs(in.wrong));
    o.insert(QStringLiteral("site"), qs(in.site));
    o.insert(QStringLiteral("mode"), qs(in.mode));
    o.insert(QStringLiteral("pairs_method"), pairsMethod());
    if (!m_pairsFile.isEmpty()) o.insert(QStringLiteral("pairs_file"), m_pairsFile);
    return o;
}

void PatchingView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    PatchingInputs in = inputs();
    in.corrupt = s.value(QStringLiteral("corrupt")).toString(qs(in.corrupt)).toStdString();
    in.answer = s.value(QStringLiteral("answer")).toString(qs(in.answer)).toStdString();
    in.wrong = s.value(QStringLiteral("wrong")).toString(qs(in.wrong)).toStdString();
    in.site = s.value(QStringLiteral("site")).toString(qs(in.site)).toStdString();
    in.mode = s.value(QStringLiteral("mode")).toString(qs(in.mode)).toStdString();
    setPairsMethod(s.value(QStringLiteral("pairs_method")).toString(pairsMethod()));
    m_pairsFile = s.value(QStringLiteral("pairs_file")).toString(m_pairsFile);
    setInputs(in);
}

QString PatchingView::missingDataMessage() const {
    return QStringLiteral("Patching: type a corrupted prompt of the same token length, an answer and a wrong "
                          "piece, choose a site and press Run.");
}

bool PatchingView::hasContent() const {
    return m_pairsMode ? m_pairs.hasGrid() : m_result.hasGrid();
}

double PatchingView::figureAspect(double widthInches) const {
    if (m_pairsMode) return widthInches < 5 ? 2.3 : 0.85; // the means above, distribution and scatter below
    return widthInches < 5 ? 0.95 : 0.5;
}

void PatchingView::updateStale() {
    QString note;
    if (m_pairsMode) {
        const PatchingInputs now = inputs();
        if (m_pairs.inputs.site != now.site || m_pairs.inputs.mode != now.mode ||
            qs(m_pairs.inputs.method) != pairsMethod())
            note = QStringLiteral("Means of %1 with site %2, mode %3, method %4: the fields changed since. Press "
                                  "Pairs file\u2026 again.")
                       .arg(QFileInfo(qs(m_pairs.inputs.file)).fileName(), qs(m_pairs.inputs.site),
                            qs(m_pairs.inputs.mode), qs(m_pairs.inputs.method));
    } else if (m_result.hasGrid()) {
        const PatchingInputs now = inputs();
        const PatchingInputs& was = m_result.inputs;
        if (!m_refused.isEmpty())
            note = QStringLiteral("Earlier sweep: the last run was refused (see above), so this is not a result for "
                                  "the current inputs.");
        else if (m_data.primary() && was.clean != now.clean)
            note = QStringLiteral("Earlier sweep: of the prompt \u201c%1\u201d, not the current one. Press Run.")
                       .arg(detail::labelText(qs(was.clean), 40));
        else if (was.corrupt != now.corrupt || was.answer != now.answer || was.wrong != now.wrong ||
                 was.site != now.site || was.mode != now.mode)
            note = QStringLiteral("Earlier sweep: the corrupted prompt, answer, wrong piece, site or mode changed "
                                  "since. Press Run.");
    }
    for (int model : {0, 1})
        heatmap(model)->setStaleNote(note);
}

void PatchingView::refresh() {
    updateStale();
    if (m_running || !m_message.isEmpty()) return;
    if (m_pairsMode) {
        QStringList parts;
        for (const PairsGrid* g : {&m_pairs.grassmann, &m_pairs.transformer}) {
            if (!g->hasGrid()) continue;
            QString part = QStringLiteral("%1 %2 of %3 usable pairs").arg(qs(g->model)).arg(g->pairs()).arg(g->usable);
            if (!g->complete) part += QStringLiteral(" (cancelled: the means are of these)");
            if (!g->skipped.empty())
                part += QStringLiteral(", %1 line(s) skipped (first: %2)")
                            .arg(g->skipped.size())
                            .arg(qs(g->skipped.front()));
            parts << part;
        }
        m_status->setText(QStringLiteral("%1 (%2 lines), %3: %4. Hover a cell for its mean, interval and n; click it "
                                         "for its distribution.")
                              .arg(QFileInfo(qs(m_pairs.inputs.file)).fileName())
                              .arg(m_pairs.lines)
                              .arg(qs(m_pairs.inputs.method), parts.join(QStringLiteral("; "))));
        return;
    }
    if (!m_result.hasGrid()) {
        m_status->setText(m_data.primary() ? QString() : QStringLiteral("Run a prompt first."));
        return;
    }
    QString text;
    const PatchingData& d = m_result;
    if (d.grassmann.hasMetric || d.transformer.hasMetric) {
        QStringList parts;
        const bool corrupted = !d.corruptTokens.empty();
        for (const PatchingGrid* g : {&d.grassmann, &d.transformer}) {
            if (!g->hasGrid() || !g->hasMetric) continue;
            if (corrupted)
                parts << QStringLiteral("%1 clean %2, corrupted %3%4")
                             .arg(qs(g->model), detail::formatValue(g->cleanMetric),
                                  detail::formatValue(g->corruptMetric),
                                  g->effectDefined ? QString() : QStringLiteral(" (equal: effect \u2014)"));
            else // an ablation of the clean prompt: nothing was corrupted, so there is no normalised effect
                parts << QStringLiteral("%1 clean %2").arg(qs(g->model), detail::formatValue(g->cleanMetric));
        }
        text = QStringLiteral("logit['%1'] \u2212 logit['%2'] at token %3: %4")
                   .arg(qs(d.answerPiece), qs(d.wrongPiece))
                   .arg(d.metricPosition)
                   .arg(parts.join(QStringLiteral("; ")));
        if (!corrupted)
            text += QStringLiteral(" \u2014 %1 ablation of the clean prompt (no corrupted prompt): cells show the "
                                   "metric's change, ablated \u2212 clean")
                        .arg(qs(d.inputs.mode));
    } else {
        text =
            QStringLiteral("%1 ablation: mean \u0394 log p of the next token over the prompt").arg(qs(d.inputs.mode));
    }
    if (d.inputs.clean != m_data.prompt() && m_data.primary())
        text += QStringLiteral(" \u2014 for an earlier prompt: press Run again");
    m_status->setText(text);
}

} // namespace gwb::views
