#include "gwb/views/paths_view.h"
#include "gwb/engine/sites.h"

#include "causal_common.h"
#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLineEdit>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

namespace {
const QString kDash = QStringLiteral("\u2014");

QStringList senderItems() {
    return {QStringLiteral("all"), QString::fromUtf8(gwb::engine::kUnitAlias), QStringLiteral("mixer"),
            QStringLiteral("gate"), QStringLiteral("ffn")};
}
QStringList receiverItems() {
    return {QStringLiteral("all"), QStringLiteral("logits"), QStringLiteral("resid")};
}
} // namespace

PathsView::PathsView(QWidget* parent) : CausalView(parent) {
    auto* layout = new QVBoxLayout(this);
    const detail::MetricFields fields = detail::addMetricFields(
        layout, QStringLiteral("paths"), QStringLiteral("corrupted prompt, same token length"),
        QStringLiteral("The clean prompt is the window's current prompt. Each sender takes its clean value in a run "
                       "of this prompt."),
        this);
    m_corrupt = fields.corrupt;
    m_answer = fields.answer;
    m_wrong = fields.wrong;

    auto* bar = new QHBoxLayout();
    m_senders = detail::addCombo(bar, QStringLiteral("Senders"), senderItems(), this);
    m_senders->setObjectName(QStringLiteral("pathsSenders"));
    m_senders->setToolTip(QStringLiteral("Components that take their clean value: Grassmann offset.l.D, mixer.l, "
                                         "gate.l, ffn.l; Transformer head.l.H, mixer.l, ffn.l"));
    m_receivers = detail::addCombo(bar, QStringLiteral("Receivers"), receiverItems(), this);
    m_receivers->setObjectName(QStringLiteral("pathsReceivers"));
    m_receivers->setToolTip(QStringLiteral("logits: the direct effect (every other component frozen at its "
                                           "corrupted value); resid.M: the effect through block input h^M"));
    bar->addWidget(new QLabel(QStringLiteral("Token"), this));
    m_position = new QSpinBox(this);
    m_position->setObjectName(QStringLiteral("pathsPosition"));
    m_position->setRange(-1, 1 << 20);
    m_position->setSpecialValueText(QStringLiteral("all"));
    m_position->setValue(-1);
    m_position->setToolTip(QStringLiteral("A sender takes its clean value at this token only (all: at every token)"));
    bar->addWidget(m_position);
    m_controls = detail::addRunControls(bar, QStringLiteral("paths"), this);
    m_run = m_controls.run;
    m_cancel = m_controls.cancel;
    m_progress = m_controls.progress;
    m_status = m_controls.status;
    layout->addLayout(bar);
    layout->addWidget(m_status);

    auto* split = new QSplitter(Qt::Horizontal, this);
    // The two matrices scroll together: every sender row keeps a label's height (54 rows for a
    // 6-layer Grassmann model), instead of thinning the labels to every 7th row.
    m_scroll = new QScrollArea(split);
    m_scroll->setObjectName(QStringLiteral("pathsScroll"));
    m_scroll->setWidgetResizable(true);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_scroll->setFrameShape(QFrame::NoFrame);
    auto* pair = new QWidget(m_scroll);
    auto* pairLayout = new QHBoxLayout(pair);
    pairLayout->setContentsMargins(0, 0, 0, 0);
    m_grassmann = new HeatmapWidget(pair);
    m_transformer = new HeatmapWidget(pair);
    m_topK = detail::makeTopKTable(split, QStringLiteral("pathsTopK"),
                                   QStringLiteral("Click a cell: the most probable next pieces of that run"));
    for (HeatmapWidget* h : {m_grassmann, m_transformer}) {
        h->setColormap(ColormapId::RdBu);
        h->setDiverging(true);
        h->setMinimumWidth(200);
        pairLayout->addWidget(h);
        const int model = h == m_grassmann ? 0 : 1;
        h->setUndefinedReason([this, model](int64_t r, int64_t c) {
            const QString why = qs(grid(model).undefinedReason(r, c));
            return why.isEmpty() ? QStringLiteral("undefined here") : why;
        });
    }
    m_scroll->setWidget(pair);
    // The matrices draw their row titles and colour bars in the part in view: repaint on scrolling.
    connect(m_scroll->verticalScrollBar(), &QScrollBar::valueChanged, this, [this] {
        m_grassmann->update();
        m_transformer->update();
    });
    split->addWidget(m_scroll);
    split->addWidget(m_topK);
    split->setSizes({880, 170});
    layout->addWidget(split, 1);
    m_hover = detail::messageLabel(this, QStringLiteral("pathsHover"));
    layout->addWidget(m_hover);

    connect(m_run, &QPushButton::clicked, this, &PathsView::run);
    for (QLineEdit* e : {m_corrupt, m_answer, m_wrong}) {
        connect(e, &QLineEdit::returnPressed, this, &PathsView::run);
        connect(e, &QLineEdit::textChanged, this, [this] { updateStale(); });
    }
    connect(m_cancel, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(); });
    for (QComboBox* c : {m_senders, m_receivers})
        connect(c, &QComboBox::currentTextChanged, this, [this] {
            updateStale();
            Q_EMIT settingsChanged();
        });
    connect(m_position, qOverload<int>(&QSpinBox::valueChanged), this, [this] { updateStale(); });
    for (int model : {0, 1}) {
        HeatmapWidget* h = heatmap(model);
        connect(h, &HeatmapWidget::cellHovered, this,
                [this, model](qint64 r, qint64 c, const QString&) { hovered(model, r, c); });
        connect(h, &HeatmapWidget::cellClicked, this, [this, model](qint64 r, qint64 c) {
            const PathsGrid& g = grid(model);
            if (!g.hasGrid()) return;
            if (const QString why = qs(g.undefinedReason(r, c)); !why.isEmpty()) {
                m_status->setText(why);
                return;
            }
            m_topK->setRowCount(0);
            m_topK->setHorizontalHeaderLabels(
                {QStringLiteral("piece (computing\u2026)"), QStringLiteral("p"), QStringLiteral("logit")});
            m_topKCell[0] = model;
            m_topKCell[1] = r;
            m_topKCell[2] = c;
            Q_EMIT topKRequested(model, qsAt(g.senders, r), qsAt(g.receivers, c));
        });
    }
    showGrid(0);
    showGrid(1);
    refresh();
}

PathsInputs PathsView::inputs() const {
    PathsInputs in;
    in.clean = m_data.prompt();
    in.corrupt = m_corrupt->text().toStdString();
    in.answer = m_answer->text().trimmed().toStdString();
    in.wrong = m_wrong->text().trimmed().toStdString();
    in.senders = m_senders->currentText().toStdString();
    in.receivers = m_receivers->currentText().toStdString();
    in.position = m_position->value();
    return in;
}

void PathsView::setInputs(const PathsInputs& in) {
    m_corrupt->setText(qs(in.corrupt));
    m_answer->setText(qs(in.answer));
    m_wrong->setText(qs(in.wrong));
    if (const int i = m_senders->findText(qs(in.senders)); i >= 0) m_senders->setCurrentIndex(i);
    if (const int i = m_receivers->findText(qs(in.receivers)); i >= 0) m_receivers->setCurrentIndex(i);
    m_position->setValue(in.position);
    Q_EMIT settingsChanged();
}

QString PathsView::checkInputs(const PathsInputs& in) const {
    if (in.clean.empty()) return QStringLiteral("Run a prompt first: the clean prompt is the window's current prompt.");
    if (in.corrupt.empty())
        return QStringLiteral("Path patching needs a corrupted prompt of the same token length as the clean prompt.");
    if (in.answer.empty() || in.wrong.empty())
        return QStringLiteral("Type the answer piece and the wrong piece of the metric logit[answer] - logit[wrong].");
    if (!senderItems().contains(qs(in.senders)))
        return QStringLiteral("Unknown senders '%1' (all, offset/head, mixer, gate, ffn).").arg(qs(in.senders));
    if (!receiverItems().contains(qs(in.receivers)))
        return QStringLiteral("Unknown receivers '%1' (all, logits, resid).").arg(qs(in.receivers));
    return {};
}

void PathsView::run() {
    if (m_running) return;
    const PathsInputs in = inputs();
    if (showProblem(checkInputs(in))) return;
    Q_EMIT settingsChanged();
    Q_EMIT runRequested(in);
}

void PathsView::setRunning(bool running) {
    showRunningState(running, QStringLiteral("Running the senders\u2026"));
}

void PathsView::setResult(const PathsData& result) {
    setRunning(false);
    if (!result.error.empty()) { // bad input: say so; an earlier result stays, marked as such
        refuse(qs(result.error));
        return;
    }
    m_result = result;
    acceptResult();
    showGrid(0);
    showGrid(1);
    markSender(m_marked);
    requestRefresh();
    Q_EMIT settingsChanged();
}

void PathsView::markSender(const QString& label) {
    m_marked = label;
    for (int model : {0, 1}) {
        HeatmapMarks marks;
        marks.row = label.isEmpty() ? -1 : detail::qsList(grid(model).senders).indexOf(label);
        heatmap(model)->setMarks(marks);
    }
}

QString PathsView::valueName() const {
    const PathsGrid& g = m_result.grassmann.hasGrid() ? m_result.grassmann : m_result.transformer;
    return g.effectDefined || !g.hasGrid() ? QStringLiteral("normalised effect")
                                           : QStringLiteral("metric \u2212 corrupted metric");
}

void PathsView::showGrid(int model) {
    HeatmapWidget* h = heatmap(model);
    const PathsGrid& g = grid(model);
    const QString who = model == 0 ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
    if (!g.hasGrid()) {
        h->setPlaceholder(!g.error.empty()
                              ? QStringLiteral("%1: %2").arg(who, qs(g.error))
                              : QStringLiteral("%1: type a corrupted prompt, an answer and a wrong piece and press "
                                               "Run.")
                                    .arg(who));
        return;
    }
    std::vector<float> v(static_cast<size_t>(g.rows() * g.cols()));
    for (int64_t r = 0; r < g.rows(); ++r)
        for (int64_t c = 0; c < g.cols(); ++c)
            v[static_cast<size_t>(r * g.cols() + c)] = static_cast<float>(g.value(r, c));
    HeatmapAxes axes;
    axes.title = who;
    axes.rowTitle = QStringLiteral("sender (by layer)");
    axes.colTitle = QStringLiteral("receiver");
    axes.rowLabels = detail::qsList(g.senders);
    axes.colLabels = detail::qsList(g.receivers);
    axes.valueName = valueName();
    h->setMatrix(makeDenseSource(g.rows(), g.cols(), std::move(v)), axes);
    const double m = pathsScale(m_result);
    h->setFixedRange(-(m > 0 ? m : 1), m > 0 ? m : 1);
    fitRowsToLabels();
}

void PathsView::fitRowsToLabels() {
    // Each sender row as tall as a label needs, plus the title, the receivers' labels and the
    // colour bar's margin; the scroll area shows what does not fit the view.
    const double pitch = QFontMetricsF(font()).height() * 1.1;
    int64_t rows = 0;
    for (int model : {0, 1})
        if (grid(model).hasGrid()) rows = std::max(rows, grid(model).rows());
    const int need = rows > 0 ? static_cast<int>(std::ceil(static_cast<double>(rows) * pitch + pitch * 9)) : 0;
    for (HeatmapWidget* h : {m_grassmann, m_transformer})
        h->setMinimumHeight(std::max(120, need));
}

int PathsView::rowPitchOnScreen(int model) const {
    const PathsGrid& g = grid(model);
    return g.hasGrid() && g.rows() > 0 ? static_cast<int>(heatmap(model)->minimumHeight() / (g.rows() + 9)) : 0;
}

double PathsView::figureAspect(double widthInches) const {
    // Every sender row gets a label in print too: the figure grows with the rows (the small font
    // is fontPoints - 1: 7 pt at one column, 8 pt at two; a label pitch of 1.25 times that), plus
    // the title and the receivers' labels.
    int64_t rows = 0;
    for (int model : {0, 1})
        if (grid(model).hasGrid()) rows = std::max(rows, grid(model).rows());
    const double small = widthInches < 5 ? 7.0 : 8.0;
    // Overhead: the panel titles, the receivers' rotated labels and the caption below (longer in
    // lines at one column).
    const double needPoints = static_cast<double>(rows) * small * 1.25 + (widthInches < 5 ? 250 : 170);
    return std::max(widthInches < 5 ? 1.25 : 0.62, needPoints / (widthInches * 72));
}

QString PathsView::cellText(int model, int64_t r, int64_t c, QString* why) const {
    const PathsGrid& g = grid(model);
    if (why) why->clear();
    if (!g.hasGrid() || r < 0 || c < 0 || r >= g.rows() || c >= g.cols()) return {};
    const size_t i = static_cast<size_t>(r * g.cols() + c);
    auto num = [](double v) { return std::isfinite(v) ? detail::formatValue(v) : kDash; };
    const double raw = i < g.metric.size() ? g.metric[i] : std::nan("");
    const double eff = i < g.effect.size() ? g.effect[i] : std::nan("");
    const QString text = QStringLiteral("%1 \u00b7 %2 \u2192 %3 \u00b7 metric %4 (raw; clean %5, corrupted %6) "
                                        "\u00b7 effect %7 (normalised)")
                             .arg(qs(g.model), qsAt(g.senders, r), qsAt(g.receivers, c), num(raw), num(g.cleanMetric),
                                  num(g.corruptMetric), num(eff));
    if (why && std::isnan(eff)) {
        const QString reason = qs(g.undefinedReason(r, c));
        *why = !reason.isEmpty() ? reason
                                 : QStringLiteral("The normalised effect is undefined: the clean and corrupted "
                                                  "metrics are equal (%1).")
                                       .arg(num(g.cleanMetric));
    }
    return text;
}

void PathsView::hovered(int model, qint64 r, qint64 c) {
    QString why;
    const QString text = cellText(model, r, c, &why);
    // The reason a cell is grey is part of what hovering it says (the line wraps), not only a tooltip.
    m_hover->setText(why.isEmpty() ? text : text + QStringLiteral(" \u2014 ") + why);
    m_hover->setToolTip(why);
    heatmap(model)->setToolTip(why);
}

void PathsView::setTopK(const PatchingTopK& reply) {
    PatchingTopK k = reply;
    if (k.row < 0 && k.model == m_topKCell[0]) { // the runner answers by labels: the cell last clicked
        k.row = m_topKCell[1];
        k.col = m_topKCell[2];
    }
    const PathsGrid& g = grid(k.model);
    const QString cell =
        g.hasGrid()
            ? QStringLiteral("%1 %2 \u2192 %3").arg(qs(g.model), qsAt(g.senders, k.row), qsAt(g.receivers, k.col))
            : QString();
    detail::showTopK(m_topK, k,
                     QStringLiteral("The run of %1: its most probable next pieces at token %2.")
                         .arg(cell)
                         .arg(m_result.metricPosition));
    if (!k.error.empty()) m_status->setText(QStringLiteral("Top pieces of %1: %2").arg(cell, qs(k.error)));
}

QJsonObject PathsView::settings() const {
    QJsonObject o = View::settings();
    const PathsInputs in = inputs();
    o.insert(QStringLiteral("corrupt"), qs(in.corrupt));
    o.insert(QStringLiteral("answer"), qs(in.answer));
    o.insert(QStringLiteral("wrong"), qs(in.wrong));
    o.insert(QStringLiteral("senders"), qs(in.senders));
    o.insert(QStringLiteral("receivers"), qs(in.receivers));
    o.insert(QStringLiteral("position"), in.position);
    return o;
}

void PathsView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    PathsInputs in = inputs();
    in.corrupt = s.value(QStringLiteral("corrupt")).toString(qs(in.corrupt)).toStdString();
    in.answer = s.value(QStringLiteral("answer")).toString(qs(in.answer)).toStdString();
    in.wrong = s.value(QStringLiteral("wrong")).toString(qs(in.wrong)).toStdString();
    in.senders = s.value(QStringLiteral("senders")).toString(qs(in.senders)).toStdString();
    in.receivers = s.value(QStringLiteral("receivers")).toString(qs(in.receivers)).toStdString();
    in.position = s.value(QStringLiteral("position")).toInt(in.position);
    setInputs(in);
}

QString PathsView::missingDataMessage() const {
    return QStringLiteral("Paths: type a corrupted prompt of the same token length, an answer and a wrong piece and "
                          "press Run.");
}

bool PathsView::hasContent() const {
    return m_result.hasGrid();
}

void PathsView::updateStale() {
    QString note;
    if (m_result.hasGrid()) {
        const PathsInputs now = inputs();
        const PathsInputs& was = m_result.inputs;
        if (!m_refused.isEmpty())
            note = QStringLiteral("Earlier result: the last run was refused (see above).");
        else if (m_data.primary() && was.clean != now.clean)
            note = QStringLiteral("Earlier result: of the prompt \u201c%1\u201d, not the current one. Press Run.")
                       .arg(detail::labelText(qs(was.clean), 40));
        else if (was.corrupt != now.corrupt || was.answer != now.answer || was.wrong != now.wrong ||
                 was.senders != now.senders || was.receivers != now.receivers || was.position != now.position)
            note = QStringLiteral("Earlier result: the inputs changed since. Press Run.");
    }
    for (int model : {0, 1})
        heatmap(model)->setStaleNote(note);
}

void PathsView::refresh() {
    updateStale();
    if (m_running || !m_message.isEmpty()) return;
    if (!m_result.hasGrid()) {
        m_status->setText(m_data.primary() ? QString() : QStringLiteral("Run a prompt first."));
        return;
    }
    QStringList parts;
    for (const PathsGrid* g : {&m_result.grassmann, &m_result.transformer})
        if (g->hasGrid())
            parts << QStringLiteral("%1 clean %2, corrupted %3%4")
                         .arg(qs(g->model), detail::formatValue(g->cleanMetric), detail::formatValue(g->corruptMetric),
                              g->effectDefined ? QString()
                                               : QStringLiteral(" (equal: cells show the metric's change)"));
    m_status->setText(QStringLiteral("logit['%1'] \u2212 logit['%2'] at token %3: %4")
                          .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                          .arg(m_result.metricPosition)
                          .arg(parts.join(QStringLiteral("; "))));
}

QString PathsView::caption() const {
    const PathsData& d = m_result;
    if (!d.hasGrid()) return QStringLiteral("Path patching of both models: no run yet.");
    QStringList metrics;
    for (const PathsGrid* m : {&d.grassmann, &d.transformer})
        if (m->hasGrid())
            metrics << QStringLiteral("%1 clean %2, corrupted %3")
                           .arg(qs(m->model), detail::formatValue(m->cleanMetric),
                                detail::formatValue(m->corruptMetric));
    return QStringLiteral("Path patching: the corrupted prompt \u201c%1\u201d runs with one sender at its value from "
                          "the clean prompt \u201c%2\u201d%3 and every other component frozen at its corrupted value; "
                          "column logits gives the sender's direct effect, resid.M its effect through block input "
                          "h^M. Cells give the normalised effect of logit['%4'] \u2212 logit['%5'] at token %6 (%7). "
                          "Both models on one diverging scale centred at 0; grey cells are undefined.")
        .arg(qs(d.inputs.corrupt), qs(d.inputs.clean),
             d.inputs.position >= 0 ? QStringLiteral(" at token %1 only").arg(d.inputs.position) : QString(),
             qs(d.answerPiece), qs(d.wrongPiece))
        .arg(d.metricPosition)
        .arg(metrics.join(QStringLiteral("; ")));
}

std::vector<DataTable> PathsView::dataTables() const {
    std::vector<DataTable> out;
    for (int model : {0, 1}) {
        const PathsGrid& g = grid(model);
        if (!g.hasGrid()) continue;
        const QString who = model == 0 ? QStringLiteral("grassmann") : QStringLiteral("transformer");
        for (const bool effect : {true, false}) {
            const std::vector<double>& src = effect ? g.effect : g.metric;
            std::vector<float> v(src.begin(), src.end());
            out.push_back(detail::tableFromMatrix(
                QStringLiteral("paths_%1_%2").arg(who, effect ? QStringLiteral("effect") : QStringLiteral("metric")),
                effect ? QStringLiteral("normalised effect (metric - corrupt) / (clean - corrupt) of logit['%1'] - "
                                        "logit['%2'] at token %3; clean %4, corrupted %5; NaN = undefined")
                             .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                             .arg(m_result.metricPosition)
                             .arg(g.cleanMetric, 0, 'g', 9)
                             .arg(g.corruptMetric, 0, 'g', 9)
                       : QStringLiteral("raw metric logit['%1'] - logit['%2'] of the sender's run at token %3")
                             .arg(qs(m_result.answerPiece), qs(m_result.wrongPiece))
                             .arg(m_result.metricPosition),
                QString(), effect ? QString() : QStringLiteral("logit"), g.rows(), g.cols(), std::move(v),
                QStringLiteral("sender"), QStringLiteral("receiver"), detail::qsList(g.senders),
                detail::qsList(g.receivers)));
        }
    }
    return out;
}

void PathsView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    detail::paintHeatmapPair(p, rect, style, map, m_grassmann, QStringLiteral("Grassmann"), m_transformer,
                             QStringLiteral("Transformer"), valueName());
}

} // namespace gwb::views
