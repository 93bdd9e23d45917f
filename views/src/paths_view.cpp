#include "gwb/views/paths_view.h"

#include "causal_common.h"
#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QProgressBar>
#include <QFileInfo>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

PathsView::PathsView(QWidget* parent) : CausalView(std::make_unique<PathsFigure>(), parent) {
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
    m_senders = detail::addCombo(bar, QStringLiteral("Senders"), PathsFigure::senderItems(), this);
    m_senders->setObjectName(QStringLiteral("pathsSenders"));
    m_senders->setToolTip(QStringLiteral("Components that take their clean value: Grassmann offset.l.D, mixer.l, "
                                         "gate.l, ffn.l; Transformer head.l.H, mixer.l, ffn.l"));
    m_receivers = detail::addCombo(bar, QStringLiteral("Receivers"), PathsFigure::receiverItems(), this);
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
    m_minDifference = detail::addMinDifference(bar, QStringLiteral("paths"), this);
    m_pairsButton = new QPushButton(QStringLiteral("Pairs file\u2026"), this);
    m_pairsButton->setObjectName(QStringLiteral("pathsPairsFile"));
    m_pairsButton->setToolTip(QStringLiteral("Run a pairs file (JSONL or CSV: clean, corrupt, answer, wrong, optional "
                                             "position) with these senders and receivers: whether the pairs have "
                                             "anything to explain, then each cell's ratio of means over the pairs "
                                             "with its 95% paired bootstrap interval and Holm's marks"));
    bar->addWidget(m_pairsButton);
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
        h->setUndefinedReason([this, model](int64_t r, int64_t c) { return fig().undefinedReason(model, r, c); });
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
        connect(e, &QLineEdit::textChanged, this, [this] { fieldsEdited(); });
    }
    connect(m_cancel, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(); });
    connect(m_pairsButton, &QPushButton::clicked, this, &PathsView::choosePairsFile);
    for (QComboBox* c : {m_senders, m_receivers})
        connect(c, &QComboBox::currentTextChanged, this, [this] {
            fieldsEdited();
            Q_EMIT settingsChanged();
        });
    connect(m_position, qOverload<int>(&QSpinBox::valueChanged), this, [this] { fieldsEdited(); });
    connect(m_minDifference, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
        fieldsEdited();
        Q_EMIT settingsChanged();
    });
    for (int model : {0, 1}) {
        HeatmapWidget* h = heatmap(model);
        connect(h, &HeatmapWidget::cellHovered, this,
                [this, model](qint64 r, qint64 c, const QString&) { hovered(model, r, c); });
        connect(h, &HeatmapWidget::cellClicked, this, [this, model](qint64 r, qint64 c) {
            if (pairsMode()) { // a cell over pairs has no one run to list pieces of: its numbers
                m_status->setText(fig().cellText(model, r, c));
                return;
            }
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
    refresh();
}

PathsInputs PathsView::inputs() const {
    return fig().inputs();
}

void PathsView::fieldsEdited() {
    PathsInputs in;
    in.corrupt = m_corrupt->text().toStdString();
    in.answer = m_answer->text().toStdString();
    in.wrong = m_wrong->text().toStdString();
    in.senders = m_senders->currentText().toStdString();
    in.receivers = m_receivers->currentText().toStdString();
    in.position = m_position->value();
    in.minDifference = m_minDifference->value();
    fig().setInputs(in);
    updateStale();
}

void PathsView::setInputs(const PathsInputs& inputs) {
    const PathsInputs in = inputs; // the fields' signals update the figure one field at a time
    m_corrupt->setText(qs(in.corrupt));
    m_answer->setText(qs(in.answer));
    m_wrong->setText(qs(in.wrong));
    if (const int i = m_senders->findText(qs(in.senders)); i >= 0) m_senders->setCurrentIndex(i);
    if (const int i = m_receivers->findText(qs(in.receivers)); i >= 0) m_receivers->setCurrentIndex(i);
    m_position->setValue(in.position);
    m_minDifference->setValue(in.minDifference);
    Q_EMIT settingsChanged();
}

QString PathsView::checkInputs(const PathsInputs& in) const {
    return PathsFigure::checkInputs(in);
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
    fig().setResult(result);
    acceptResult();
    showPanels();
    requestRefresh();
    Q_EMIT settingsChanged();
}

void PathsView::markSender(const QString& label) {
    fig().setMarkedSender(label);
    showPanels();
}

void PathsView::showPanels() {
    for (int model : {0, 1})
        heatmap(model)->setPanel(fig().panel(model));
    fitRowsToLabels();
}

void PathsView::fitRowsToLabels() {
    // Each sender row as tall as a label needs, plus the title, the receivers' labels and the
    // colour bar's margin; the scroll area shows what does not fit the view.
    const double pitch = QFontMetricsF(font()).height() * 1.1;
    const int64_t rows = fig().rows();
    const int need = rows > 0 ? static_cast<int>(std::ceil(static_cast<double>(rows) * pitch + pitch * 9)) : 0;
    for (HeatmapWidget* h : {m_grassmann, m_transformer})
        h->setMinimumHeight(std::max(120, need));
}

int PathsView::rowPitchOnScreen(int model) const {
    const PathsGrid& g = grid(model);
    return g.hasGrid() && g.rows() > 0 ? static_cast<int>(heatmap(model)->minimumHeight() / (g.rows() + 9)) : 0;
}

QString PathsView::cellText(int model, int64_t r, int64_t c, QString* why) const {
    return fig().cellText(model, r, c, why);
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
                         .arg(result().metricPosition));
    if (!k.error.empty()) m_status->setText(QStringLiteral("Top pieces of %1: %2").arg(cell, qs(k.error)));
}

void PathsView::setSettings(const QJsonObject& s) {
    View::setSettings(s); // the figure's fields; the colormap
    setInputs(fig().inputs());
}

void PathsView::updateStale() {
    QString note;
    if (pairsMode()) {
        const PathsPairsInputs& was = pairsResult().inputs;
        const PathsInputs now = inputs();
        if (was.senders != now.senders || was.receivers != now.receivers || was.minDifference != now.minDifference)
            note = QStringLiteral("Estimates of %1 with senders %2, receivers %3: the fields changed since. Press "
                                  "Pairs file\u2026 again.")
                       .arg(QFileInfo(qs(was.file)).fileName(), qs(was.senders), qs(was.receivers));
    } else if (result().hasGrid()) {
        const PathsInputs now = inputs();
        const PathsInputs& was = result().inputs;
        if (!m_refused.isEmpty())
            note = QStringLiteral("Earlier result: the last run was refused (see above).");
        else if (m_data.primary() && was.clean != now.clean)
            note = QStringLiteral("Earlier result: of the prompt \u201c%1\u201d, not the current one. Press Run.")
                       .arg(detail::labelText(qs(was.clean), 40));
        else if (was.corrupt != now.corrupt || was.answer != now.answer || was.wrong != now.wrong ||
                 was.senders != now.senders || was.receivers != now.receivers || was.position != now.position ||
                 was.minDifference != now.minDifference)
            note = QStringLiteral("Earlier result: the inputs changed since. Press Run.");
    }
    for (int model : {0, 1})
        heatmap(model)->setStaleNote(note);
}

void PathsView::refresh() {
    showPanels();
    updateStale();
    if (m_running || !m_message.isEmpty()) return;
    m_status->setText(fig().statusText());
}

} // namespace gwb::views
