#include "gwb/views/patching_view.h"

#include "causal_common.h"
#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>

namespace gwb::views {

using detail::qs;
using detail::qsAt;

PatchingView::PatchingView(QWidget* parent) : CausalView(std::make_unique<PatchingFigure>(), parent) {
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
    m_minDifference = detail::addMinDifference(bar, QStringLiteral("patching"), this);
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
    // The pairs plots scroll in a short window (1280 x 720 with a long prompt) rather than shrink
    // to their titles.
    m_pairsScroll = new QScrollArea(m_side);
    m_pairsScroll->setObjectName(QStringLiteral("patchingPairsScroll"));
    m_pairsScroll->setWidgetResizable(true);
    m_pairsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_pairsScroll->setFrameShape(QFrame::NoFrame);
    m_pairsPlots = new PairsPlotsWidget(m_pairsScroll);
    m_pairsScroll->setWidget(m_pairsPlots);
    m_side->addWidget(m_topK);
    m_side->addWidget(m_pairsScroll);
    for (HeatmapWidget* h : {m_grassmann, m_transformer}) {
        h->setColormap(ColormapId::RdBu);
        h->setDiverging(true);
        h->setMinimumWidth(200);
        split->addWidget(h);
        const int model = h == m_grassmann ? 0 : 1;
        h->setUndefinedReason([this, model](int64_t r, int64_t c) { return fig().undefinedReason(model, r, c); });
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
    connect(m_method, &QComboBox::currentTextChanged, this, [this](const QString& method) {
        fig().setPairsMethod(method);
        Q_EMIT settingsChanged();
    });
    for (QComboBox* c : {m_site, m_mode})
        connect(c, &QComboBox::currentTextChanged, this, [this] {
            fieldsEdited();
            Q_EMIT settingsChanged();
        });
    for (QLineEdit* e : {m_corrupt, m_answer, m_wrong})
        connect(e, &QLineEdit::textChanged, this, [this] { fieldsEdited(); });
    connect(m_minDifference, qOverload<double>(&QDoubleSpinBox::valueChanged), this, [this] {
        fieldsEdited();
        Q_EMIT settingsChanged();
    });
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
            const PatchingData& d = fig().result();
            const PatchingGrid& g = model == 0 ? d.grassmann : d.transformer;
            if (pairsMode() || !g.hasGrid() || cell.x() < 0 || !g.hasMetric || d.inputs.corrupt.empty()) return;
            QMenu menu(h);
            QAction* paths = menu.addAction(QStringLiteral("Trace paths from here"));
            paths->setToolTip(QStringLiteral("Path patching of this component in the Paths view: does it write the "
                                             "answer itself or feed a later layer?"));
            if (menu.exec(h->mapToGlobal(pos)) == paths) Q_EMIT tracePathsRequested(model, cell.y(), cell.x());
        });
    }
    refresh();
}

PatchingInputs PatchingView::inputs() const {
    return fig().inputs();
}

void PatchingView::fieldsEdited() {
    PatchingInputs in;
    in.corrupt = m_corrupt->text().toStdString();
    in.answer = m_answer->text().toStdString();
    in.wrong = m_wrong->text().toStdString();
    in.site = m_site->currentText().toStdString();
    in.mode = m_mode->currentText().toStdString();
    in.minDifference = m_minDifference->value();
    fig().setInputs(in);
    updateStale();
}

void PatchingView::setInputs(const PatchingInputs& inputs) {
    const PatchingInputs in = inputs; // the fields' signals update the figure one field at a time
    m_corrupt->setText(qs(in.corrupt));
    m_answer->setText(qs(in.answer));
    m_wrong->setText(qs(in.wrong));
    if (const int i = m_site->findText(qs(in.site)); i >= 0) m_site->setCurrentIndex(i);
    if (const int i = m_mode->findText(qs(in.mode)); i >= 0) m_mode->setCurrentIndex(i);
    m_minDifference->setValue(in.minDifference);
    Q_EMIT settingsChanged();
}

QString PatchingView::checkInputs(const PatchingInputs& in) const {
    return PatchingFigure::checkInputs(in);
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
    fig().setResult(result);
    acceptResult();
    showSide(false);
    showPanels();
    requestRefresh();
    Q_EMIT settingsChanged();
}

void PatchingView::showPanels() {
    for (int model : {0, 1})
        heatmap(model)->setPanel(fig().panel(model));
}

QString PatchingView::cellText(int model, int64_t r, int64_t c, QString* why) const {
    return fig().cellText(model, r, c, why);
}

void PatchingView::hovered(int model, qint64 r, qint64 c) {
    QString why;
    m_hover->setText(cellText(model, r, c, &why));
    m_hover->setToolTip(why);
    heatmap(model)->setToolTip(why);
}

void PatchingView::setTopK(const PatchingTopK& k) {
    const PatchingData& d = fig().result();
    const PatchingGrid& g = k.model == 0 ? d.grassmann : d.transformer;
    const QString cell =
        g.hasGrid() ? QStringLiteral("%1 %2, %3").arg(qs(g.model), qsAt(g.rowLabels, k.row), qsAt(g.colLabels, k.col))
                    : QString();
    detail::showTopK(m_topK, k,
                     QStringLiteral("The changed run of %1: its most probable next pieces at token %2.")
                         .arg(cell)
                         .arg(d.metricPosition));
    if (!k.error.empty()) m_status->setText(QStringLiteral("Top pieces of %1: %2").arg(cell, qs(k.error)));
}

void PatchingView::setSettings(const QJsonObject& s) {
    View::setSettings(s); // the figure's fields, pairs method and file; the colormap
    setPairsMethod(fig().pairsMethod());
    setInputs(fig().inputs());
}

void PatchingView::updateStale() {
    QString note;
    const PairsInputs& pairs = pairsResult().inputs;
    if (pairsMode()) {
        const PatchingInputs now = inputs();
        if (pairs.site != now.site || pairs.mode != now.mode || qs(pairs.method) != pairsMethod() ||
            pairs.minDifference != now.minDifference)
            note = QStringLiteral("Means of %1 with site %2, mode %3, method %4: the fields changed since. Press "
                                  "Pairs file\u2026 again.")
                       .arg(QFileInfo(qs(pairs.file)).fileName(), qs(pairs.site), qs(pairs.mode), qs(pairs.method));
    } else if (result().hasGrid()) {
        const PatchingInputs now = inputs();
        const PatchingInputs& was = result().inputs;
        if (!m_refused.isEmpty())
            note = QStringLiteral("Earlier sweep: the last run was refused (see above), so this is not a result for "
                                  "the current inputs.");
        else if (m_data.primary() && was.clean != now.clean)
            note = QStringLiteral("Earlier sweep: of the prompt \u201c%1\u201d, not the current one. Press Run.")
                       .arg(detail::labelText(qs(was.clean), 40));
        else if (was.corrupt != now.corrupt || was.answer != now.answer || was.wrong != now.wrong ||
                 was.site != now.site || was.mode != now.mode || was.minDifference != now.minDifference)
            note = QStringLiteral("Earlier sweep: the corrupted prompt, answer, wrong piece, site, mode or minimum "
                                  "difference changed since. Press Run.");
    }
    for (int model : {0, 1})
        heatmap(model)->setStaleNote(note);
}

void PatchingView::refresh() {
    showPanels();
    updateStale();
    if (m_running || !m_message.isEmpty()) return;
    m_status->setText(fig().statusText());
}

} // namespace gwb::views
