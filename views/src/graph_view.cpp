// The Graph view (graph_view.h): buttons for each model's transcoder set, Run / Cancel / progress,
// one canvas with both models' graphs, and the panel of a pinned node's edges or a selected edge's
// split across offsets or heads.

#include "gwb/views/graph_view.h"

#include "graph_canvas.h"
#include "plot_util.h"

#include <QHBoxLayout>
#include <QLineEdit>
#include <QJsonArray>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace gwb::views {

using gwb::engine::GraphNodeKind;

using detail::kGraphModelNames;

GraphView::GraphView(QWidget* parent) : View(std::make_unique<GraphFigure>(), parent) {
    auto* top = new QHBoxLayout;
    for (int m = 0; m < 2; ++m) {
        m_open[static_cast<size_t>(m)] =
            new QPushButton(QStringLiteral("Transcoders (%1)…").arg(QLatin1String(kGraphModelNames[m])), this);
        m_open[static_cast<size_t>(m)]->setToolTip(
            QStringLiteral("A folder with the %1 model's transcoder set (gwb features train --transcoders)")
                .arg(QLatin1String(kGraphModelNames[m])));
        m_folderLabels[static_cast<size_t>(m)] = new QLabel(QStringLiteral("none"), this);
        top->addWidget(m_open[static_cast<size_t>(m)]);
        top->addWidget(m_folderLabels[static_cast<size_t>(m)]);
        connect(m_open[static_cast<size_t>(m)], &QPushButton::clicked, this,
                [this, m] { Q_EMIT transcodersRequested(m); });
    }
    // The target: the top logits, or the contrast the causal tests use.
    m_answer = new QLineEdit(this);
    m_answer->setObjectName(QStringLiteral("graphAnswer"));
    m_answer->setPlaceholderText(QStringLiteral("answer"));
    m_wrong = new QLineEdit(this);
    m_wrong->setObjectName(QStringLiteral("graphWrong"));
    m_wrong->setPlaceholderText(QStringLiteral("wrong"));
    const QString contrastTip = QStringLiteral(
        "Both pieces: the graph explains logit[answer] \u2212 logit[wrong] (one target node, the metric of the causal "
        "tests) instead of the top logits. Both empty: the top logits.");
    for (QLineEdit* e : {m_answer, m_wrong}) {
        e->setToolTip(contrastTip);
        e->setMaximumWidth(110);
        top->addWidget(e);
        connect(e, &QLineEdit::textChanged, this, [this] { Q_EMIT settingsChanged(); });
    }
    m_run = new QPushButton(QStringLiteral("Run"), this);
    m_run->setToolTip(QStringLiteral("The attribution graph of the next token after the prompt, for each model with "
                                     "transcoders"));
    m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
    m_cancel->hide();
    m_clear = new QPushButton(QStringLiteral("Clear Pins"), this);
    m_clear->setToolTip(QStringLiteral("Unpin every node, drop the groups and the selected edge"));
    m_save = new QPushButton(QStringLiteral("Save JSON\u2026"), this);
    m_save->setToolTip(QStringLiteral("The pruned graphs in circuit-tracer's JSON (its and Neuronpedia's front ends "
                                      "read it), with the pinned nodes and supernodes in qParams"));
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->hide();
    top->addStretch(1);
    top->addWidget(m_clear);
    top->addWidget(m_save);
    top->addWidget(m_run);
    top->addWidget(m_cancel);
    top->addWidget(m_progress);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_canvas = new detail::GraphCanvas(this);
    m_details = new QTextBrowser(this);
    m_details->setMinimumHeight(40);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_canvas);
    split->addWidget(m_details);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    connect(m_run, &QPushButton::clicked, this, [this] { Q_EMIT runRequested(); });
    connect(m_cancel, &QPushButton::clicked, this, [this] { Q_EMIT cancelRequested(); });
    connect(m_clear, &QPushButton::clicked, this, [this] { clearMarks(); });
    connect(m_save, &QPushButton::clicked, this, [this] { Q_EMIT saveJsonRequested(); });
    refresh();
}

void GraphView::setGraphs(GraphPairPtr graphs) {
    fig().setGraphs(std::move(graphs)); // drops the dashboards and the marks
    m_message.clear();
    requestRefresh();
}

void GraphView::setTranscoders(int model, const QString& folder) {
    fig().setTranscoders(model, folder);
    m_folderLabels[static_cast<size_t>(model)]->setText(
        folder.isEmpty() ? QStringLiteral("none") : detail::labelText(folder.section('/', -1), 24));
    m_folderLabels[static_cast<size_t>(model)]->setToolTip(folder);
    Q_EMIT settingsChanged();
}

void GraphView::setRunning(bool running) {
    m_running = running;
    m_run->setEnabled(!running);
    m_cancel->setVisible(running);
    m_progress->setVisible(running);
    if (running) {
        m_progress->setValue(0);
        showMessage(QStringLiteral("Computing the attribution graphs…"));
    }
}

void GraphView::setProgress(double fraction) {
    m_progress->setValue(static_cast<int>(std::lround(1000 * std::clamp(fraction, 0.0, 1.0))));
}

void GraphView::showMessage(const QString& message) {
    m_message = message;
    m_status->setText(message);
}

QString GraphView::message() const {
    return m_status->text();
}

void GraphView::togglePin(int model, int64_t node) {
    if (fig().togglePin(model, node)) requestDashboard(model, node);
    requestRefresh();
}

void GraphView::selectEdge(int model, int64_t target, int64_t source) {
    fig().selectEdge(model, target, source);
    requestRefresh();
}

void GraphView::group(int model, const std::vector<int64_t>& nodes, const QString& name) {
    fig().group(model, nodes, name);
    requestRefresh();
}

void GraphView::clearMarks() {
    fig().clearMarks();
    requestRefresh();
}

void GraphView::setDashboard(int model, int layer, const gwb::engine::FeatureDashboardRun& dashboard) {
    fig().setDashboard(model, layer, dashboard);
    const int hovered = m_canvas->hoverModel();
    if (const gwb::engine::GraphPair* pair = graphs(); hovered == model && pair) {
        const auto& n = pair->graphs[model].nodes[static_cast<size_t>(m_canvas->hoverNode())];
        if (n.kind == GraphNodeKind::Feature && n.layer == layer && n.index == dashboard.feature) m_canvas->showTip();
    }
    requestRefresh();
}

void GraphView::requestDashboard(int model, int64_t node) {
    if (const auto asked = fig().askDashboard(model, node))
        Q_EMIT dashboardRequested(model, asked->first, asked->second);
}

void GraphView::refresh() {
    const GraphFigure& f = fig();
    // A graph of an earlier prompt is greyed under a banner and cannot be saved as the current one
    // (the same stale rule as the Patching and Paths views).
    const QString stale = f.staleNote();
    m_canvas->setStaleNote(stale);
    m_save->setEnabled(f.hasContent() && stale.isEmpty());
    if (m_message.isEmpty()) m_status->setText(stale.isEmpty() ? f.statusText() : stale);
    m_details->setHtml(f.detailsHtml());
    m_canvas->update();
}

void GraphView::setSettings(const QJsonObject& settings) {
    QJsonObject rest = settings;
    rest.remove(QStringLiteral("transcoders")); // each folder as setTranscoders sets it: its label, settingsChanged
    View::setSettings(rest);
    const QJsonArray folders = settings.value(QStringLiteral("transcoders")).toArray();
    for (int m = 0; m < 2 && m < folders.size(); ++m)
        setTranscoders(m, folders[m].toString());
}

QString GraphView::answer() const {
    return m_answer->text().trimmed();
}

QString GraphView::wrong() const {
    return m_wrong->text().trimmed();
}

void GraphView::setContrast(const QString& answer, const QString& wrong) {
    m_answer->setText(answer);
    m_wrong->setText(wrong);
}

} // namespace gwb::views
