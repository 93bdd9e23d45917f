// The Graph view (graph_view.h): buttons for each model's transcoder set, Run / Cancel / progress,
// one canvas with both models' graphs, and the panel of a pinned node's edges or a selected edge's
// split across offsets or heads.

#include "gwb/views/graph_view.h"

#include "graph_paint.h"
#include "plot_util.h"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace gwb::views {

using gwb::engine::AttributionGraph;
using gwb::engine::GraphNodeKind;
using gwb::engine::GraphPruning;

namespace {

const char* const kModelNames[2] = {"Grassmann", "Transformer"};

QString panelTitle(const gwb::engine::GraphPair& pair, int m) {
    const AttributionGraph& g = pair.graphs[m];
    return QStringLiteral("%1 %2: replacement %3, completeness %4")
        .arg(QLatin1String(kModelNames[m]), QString::fromStdString(g.modelName))
        .arg(g.scores.replacement, 0, 'f', 3)
        .arg(g.scores.completeness, 0, 'f', 3);
}

/// The models with a graph to draw.
std::vector<int> drawn(const gwb::engine::GraphPair* pair) {
    std::vector<int> out;
    for (int m = 0; pair && m < 2; ++m)
        if (pair->ran[m] && pair->errors[m].empty() && pair->graphs[m].nodeCount() > 0) out.push_back(m);
    return out;
}

} // namespace

namespace detail {

/// Both graphs, with hover, pin, edge selection and box grouping.
class GraphCanvas : public QWidget {
public:
    explicit GraphCanvas(GraphView* view) : QWidget(view), m_view(view) {
        setMouseTracking(true);
        setMinimumHeight(160);
    }

    /// Layouts of the panels as the screen draws them (model index, layout).
    std::vector<std::pair<int, GraphLayout>> layouts() const {
        std::vector<std::pair<int, GraphLayout>> out;
        const gwb::engine::GraphPair* pair = m_view->m_graphs.get();
        const std::vector<int> models = drawn(pair);
        const FigureStyle style = FigureStyle::forScreen(font());
        const std::vector<QRectF> rects =
            panelRects(QRectF(rect()).adjusted(4, 4, -4, -4), static_cast<int>(models.size()), width() < 700);
        for (size_t k = 0; k < models.size(); ++k)
            out.emplace_back(models[k],
                             layoutGraph(pair->graphs[models[k]], pair->pruning[models[k]], rects[k], style));
        return out;
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        const gwb::engine::GraphPair* pair = m_view->m_graphs.get();
        if (drawn(pair).empty()) {
            p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_view->missingDataMessage());
            return;
        }
        FigureStyle style = FigureStyle::forScreen(font());
        style.screen = true;
        for (const auto& [m, lay] : layouts())
            paintGraph(p, lay, pair->graphs[m], pair->pruning[m], style, m_view->marks(m), panelTitle(*pair, m));
        if (m_dragging) {
            p.setPen(QPen(QColor(120, 80, 160), 1, Qt::DashLine));
            p.setBrush(QColor(120, 80, 160, 30));
            p.drawRect(QRectF(m_pressAt, m_dragAt).normalized());
        }
    }

    void mouseMoveEvent(QMouseEvent* e) override {
        const QPointF at = e->position();
        if (e->buttons() & Qt::LeftButton) {
            if ((at - m_pressAt).manhattanLength() > 6) m_dragging = true;
            m_dragAt = at;
            update();
            return;
        }
        for (const auto& [m, lay] : layouts()) {
            const int64_t node = nodeAt(lay, at, lay.radius + 4);
            if (node >= 0) {
                QToolTip::showText(e->globalPosition().toPoint(), m_view->nodeTip(m, node), this);
                return;
            }
        }
        QToolTip::hideText();
    }

    void mousePressEvent(QMouseEvent* e) override {
        m_pressAt = m_dragAt = e->position();
        m_dragging = false;
    }

    void mouseReleaseEvent(QMouseEvent* e) override {
        const QPointF at = e->position();
        const auto lays = layouts();
        if (m_dragging) { // a box: its nodes (of one panel) become a supernode
            m_dragging = false;
            const QRectF box = QRectF(m_pressAt, at).normalized();
            for (const auto& [m, lay] : lays) {
                std::vector<int64_t> inside;
                for (size_t i = 0; i < lay.at.size(); ++i)
                    if (!std::isnan(lay.at[i].x()) && box.contains(lay.at[i]))
                        inside.push_back(static_cast<int64_t>(i));
                if (inside.size() >= 2) m_view->group(m, inside);
            }
            update();
            return;
        }
        for (const auto& [m, lay] : lays) {
            const int64_t node = nodeAt(lay, at, lay.radius + 4);
            if (node >= 0) {
                m_view->togglePin(m, node);
                return;
            }
        }
        for (const auto& [m, lay] : lays) {
            if (!lay.panel.contains(at)) continue;
            const auto [target, source] =
                edgeAt(lay, m_view->m_graphs->graphs[m], m_view->m_graphs->pruning[m], at, 4.0);
            m_view->selectEdge(target >= 0 ? m : -1, target, source);
            return;
        }
    }

private:
    GraphView* m_view;
    QPointF m_pressAt, m_dragAt;
    bool m_dragging = false;
};

} // namespace detail

GraphView::GraphView(QWidget* parent) : View(parent) {
    auto* top = new QHBoxLayout;
    for (int m = 0; m < 2; ++m) {
        m_open[static_cast<size_t>(m)] =
            new QPushButton(QStringLiteral("Transcoders (%1)…").arg(QLatin1String(kModelNames[m])), this);
        m_open[static_cast<size_t>(m)]->setToolTip(
            QStringLiteral("A folder with the %1 model's transcoder set (gwb features train --transcoders)")
                .arg(QLatin1String(kModelNames[m])));
        m_folderLabels[static_cast<size_t>(m)] = new QLabel(QStringLiteral("none"), this);
        top->addWidget(m_open[static_cast<size_t>(m)]);
        top->addWidget(m_folderLabels[static_cast<size_t>(m)]);
        connect(m_open[static_cast<size_t>(m)], &QPushButton::clicked, this,
                [this, m] { Q_EMIT transcodersRequested(m); });
    }
    m_run = new QPushButton(QStringLiteral("Run"), this);
    m_run->setToolTip(QStringLiteral("The attribution graph of the next token after the prompt, for each model with "
                                     "transcoders"));
    m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
    m_cancel->hide();
    m_clear = new QPushButton(QStringLiteral("Clear Pins"), this);
    m_clear->setToolTip(QStringLiteral("Unpin every node, drop the groups and the selected edge"));
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_progress->hide();
    top->addStretch(1);
    top->addWidget(m_clear);
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
    refresh();
}

QString GraphView::missingDataMessage() const {
    return QStringLiteral("Graph: open a transcoder set for a model (Transcoders…) and press Run: the attribution "
                          "graph of the next token, features and error nodes by layer and position.");
}

bool GraphView::hasContent() const {
    return !drawn(m_graphs.get()).empty();
}

void GraphView::setGraphs(GraphPairPtr graphs) {
    m_graphs = std::move(graphs);
    m_message.clear();
    clearMarks(); // the marks name nodes of the graphs before
}

void GraphView::setTranscoders(int model, const QString& folder) {
    m_folders[static_cast<size_t>(model)] = folder;
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
    auto& set = m_pinned[static_cast<size_t>(model)];
    if (!set.erase(node)) set.insert(node);
    requestRefresh();
}

void GraphView::selectEdge(int model, int64_t target, int64_t source) {
    m_edgeModel = model;
    m_edgeTarget = target;
    m_edgeSource = source;
    requestRefresh();
}

void GraphView::group(int model, const std::vector<int64_t>& nodes) {
    m_groups[static_cast<size_t>(model)].push_back(nodes);
    requestRefresh();
}

void GraphView::clearMarks() {
    for (auto& p : m_pinned)
        p.clear();
    for (auto& g : m_groups)
        g.clear();
    m_edgeModel = -1;
    m_edgeTarget = m_edgeSource = -1;
    requestRefresh();
}

detail::GraphMarks GraphView::marks(int model) const {
    detail::GraphMarks k;
    k.pinned = m_pinned[static_cast<size_t>(model)];
    k.groups = m_groups[static_cast<size_t>(model)];
    if (m_edgeModel == model) {
        k.edgeTarget = m_edgeTarget;
        k.edgeSource = m_edgeSource;
    }
    return k;
}

QString GraphView::describe(const AttributionGraph& g, int64_t node) {
    const auto& n = g.nodes[static_cast<size_t>(node)];
    const QString piece = n.position < static_cast<int64_t>(g.pieces.size())
                              ? QString::fromStdString(g.pieces[static_cast<size_t>(n.position)])
                              : QString();
    const QString at = QStringLiteral(" at %1 \u2018%2\u2019").arg(n.position).arg(piece);
    switch (n.kind) {
    case GraphNodeKind::Feature:
        return QStringLiteral("feature %1/%2%3 (activation %4)")
            .arg(n.layer)
            .arg(n.index)
            .arg(at, detail::formatValue(n.value));
    case GraphNodeKind::Error:
        return QStringLiteral("error of block %1%2 (norm %3)").arg(n.layer).arg(at, detail::formatValue(n.value));
    case GraphNodeKind::Token:
        return QStringLiteral("token%1").arg(at);
    case GraphNodeKind::Logit:
        return QStringLiteral("logit \u2018%1\u2019 (p = %2)")
            .arg(QString::fromStdString(n.label))
            .arg(n.probability, 0, 'f', 3);
    }
    return {};
}

QString GraphView::nodeTip(int model, int64_t node) const {
    const AttributionGraph& g = m_graphs->graphs[model];
    const GraphPruning& p = m_graphs->pruning[model];
    QString tip = QStringLiteral("%1: %2").arg(QLatin1String(kModelNames[model]), describe(g, node));
    tip += QStringLiteral("\ninfluence on the logits: %1")
               .arg(detail::formatValue(p.influence[static_cast<size_t>(node)]));
    // Its strongest kept inputs.
    const auto row = std::find(g.rowNodes.begin(), g.rowNodes.end(), node);
    if (row != g.rowNodes.end()) {
        const size_t r = static_cast<size_t>(row - g.rowNodes.begin()), n = static_cast<size_t>(g.nodeCount());
        std::vector<size_t> in;
        for (size_t j = 0; j < n; ++j)
            if (p.edgeKept[r * n + j]) in.push_back(j);
        std::sort(in.begin(), in.end(), [&](size_t a, size_t b) {
            return std::abs(g.rows.data[r * n + a]) > std::abs(g.rows.data[r * n + b]);
        });
        for (size_t k = 0; k < std::min<size_t>(in.size(), 4); ++k)
            tip += QStringLiteral("\n  %1 from %2")
                       .arg(detail::formatValue(g.rows.data[r * n + in[k]]), describe(g, static_cast<int64_t>(in[k])));
    }
    return tip;
}

QString GraphView::detailsHtml() const {
    if (!m_graphs) return {};
    QString html;
    if (m_edgeModel >= 0 && m_edgeTarget >= 0) {
        const AttributionGraph& g = m_graphs->graphs[m_edgeModel];
        html += QStringLiteral("<b>%1</b>: %2 \u2192 %3, weight %4<br>")
                    .arg(QLatin1String(kModelNames[m_edgeModel]), describe(g, m_edgeSource).toHtmlEscaped(),
                         describe(g, m_edgeTarget).toHtmlEscaped(),
                         detail::formatValue(g.edge(m_edgeTarget, m_edgeSource)));
        bool any = false;
        for (const gwb::engine::EdgeLoading& e : g.loadings) {
            if (e.target != m_edgeTarget || e.source != m_edgeSource) continue;
            if (!any) html += QStringLiteral("<table cellspacing=4><tr><th>block</th><th>skip</th>");
            if (!any)
                for (const std::string& u : g.units[static_cast<size_t>(e.layer)])
                    html += QStringLiteral("<th>%1</th>")
                                .arg(QString::fromStdString(u).section('.', 0, 0) + QStringLiteral(" ") +
                                     QString::fromStdString(u).section('.', 2, 2));
            if (!any) html += QStringLiteral("</tr>");
            any = true;
            html += QStringLiteral("<tr><td>%1</td><td>%2</td>").arg(e.layer).arg(detail::formatValue(e.skip));
            for (double u : e.units)
                html += QStringLiteral("<td>%1</td>").arg(detail::formatValue(u));
            html += QStringLiteral("</tr>");
        }
        html += any ? QStringLiteral("</table>")
                    : QStringLiteral("Within one position: it crosses no mixer, so it has no split.");
        return html;
    }
    for (int m = 0; m < 2; ++m)
        for (int64_t node : m_pinned[static_cast<size_t>(m)]) {
            html += QStringLiteral("<p>") + nodeTip(m, node).toHtmlEscaped().replace('\n', QStringLiteral("<br>")) +
                    QStringLiteral("</p>");
        }
    if (html.isEmpty())
        html = QStringLiteral("Hover a node for its strongest inputs; click one to pin it; click an edge for its "
                              "split across the offsets or heads of each block it crosses; drag a box to group "
                              "nodes.");
    return html;
}

void GraphView::refresh() {
    const std::vector<int> models = drawn(m_graphs.get());
    if (m_message.isEmpty()) {
        QStringList parts;
        for (int m = 0; m < 2 && m_graphs; ++m) {
            if (!m_graphs->errors[m].empty())
                parts << QStringLiteral("%1: %2").arg(QLatin1String(kModelNames[m]),
                                                      QString::fromStdString(m_graphs->errors[m]));
            else if (m_graphs->ran[m])
                parts << QStringLiteral("%1: %2 of %3 nodes and %4 edges kept (%5 s)")
                             .arg(QLatin1String(kModelNames[m]))
                             .arg(m_graphs->pruning[m].keptNodes)
                             .arg(m_graphs->graphs[m].nodeCount())
                             .arg(m_graphs->pruning[m].keptEdges)
                             .arg(m_graphs->graphs[m].seconds, 0, 'f', 1);
        }
        m_status->setText(parts.join(QStringLiteral("; ")));
    }
    m_details->setHtml(detailsHtml());
    m_canvas->update();
}

QString GraphView::caption() const {
    return QStringLiteral("Attribution graphs of the next token: transcoder features (circles), error nodes "
                          "(grey squares), token embeddings (bottom row) and the most probable logits (top row; the "
                          "first is named), by block "
                          "and position; edges are direct effects in each model's replacement frozen at the "
                          "prompt, pruned by influence on the logits (node 0.8, edge 0.98), blue positive, red "
                          "negative, width by |weight|.");
}

void GraphView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    const std::vector<int> models = drawn(m_graphs.get());
    const std::vector<QRectF> rects = detail::panelRects(rect, static_cast<int>(models.size()), rect.width() < 5 * 72);
    for (size_t k = 0; k < models.size(); ++k) {
        const int m = models[k];
        const detail::GraphLayout lay = detail::layoutGraph(m_graphs->graphs[m], m_graphs->pruning[m], rects[k], style);
        detail::GraphMarks marks = this->marks(m);
        if (!style.selection) marks.edgeTarget = marks.edgeSource = -1;
        detail::paintGraph(p, lay, m_graphs->graphs[m], m_graphs->pruning[m], style, marks,
                           QStringLiteral("(%1) ").arg(QChar('a' + static_cast<int>(k))) + panelTitle(*m_graphs, m));
    }
}

std::vector<DataTable> GraphView::dataTables() const {
    std::vector<DataTable> out;
    for (int m : drawn(m_graphs.get())) {
        const AttributionGraph& g = m_graphs->graphs[m];
        const GraphPruning& p = m_graphs->pruning[m];
        const QString model = QString::fromLatin1(kModelNames[m]).toLower();
        DataTable nodes;
        nodes.name = model + QStringLiteral("_nodes");
        nodes.quantity = QStringLiteral("kept nodes of the attribution graph");
        nodes.rowAxis = QStringLiteral("node");
        nodes.colAxis = QStringLiteral("field");
        nodes.colLabels = {QStringLiteral("kind"),     QStringLiteral("layer"), QStringLiteral("position"),
                           QStringLiteral("index"),    QStringLiteral("value"), QStringLiteral("probability"),
                           QStringLiteral("influence")};
        std::vector<float> values;
        for (int64_t i = 0; i < g.nodeCount(); ++i) {
            if (!p.nodeKept[static_cast<size_t>(i)]) continue;
            const auto& n = g.nodes[static_cast<size_t>(i)];
            nodes.rowLabels << QString::fromStdString(g.nodeId(i));
            for (double v : {static_cast<double>(n.kind), static_cast<double>(n.layer), static_cast<double>(n.position),
                             static_cast<double>(n.index), n.value, n.probability, p.influence[static_cast<size_t>(i)]})
                values.push_back(static_cast<float>(v));
        }
        nodes.values = gwb::engine::FloatArray({static_cast<int64_t>(nodes.rowLabels.size()), 7}, values);
        out.push_back(nodes);
        DataTable edges;
        edges.name = model + QStringLiteral("_edges");
        edges.quantity = QStringLiteral("kept edges: direct effect of the source on the target");
        edges.rowAxis = QStringLiteral("edge");
        edges.colAxis = QStringLiteral("field");
        edges.colLabels = {QStringLiteral("weight")};
        std::vector<float> weights;
        const size_t n = static_cast<size_t>(g.nodeCount());
        for (size_t r = 0; r < g.rowNodes.size(); ++r)
            for (size_t j = 0; j < n; ++j)
                if (p.edgeKept[r * n + j]) {
                    edges.rowLabels << QString::fromStdString(g.nodeId(static_cast<int64_t>(j)) + " -> " +
                                                              g.nodeId(g.rowNodes[r]));
                    weights.push_back(g.rows.data[r * n + j]);
                }
        edges.values = gwb::engine::FloatArray({static_cast<int64_t>(weights.size()), 1}, weights);
        out.push_back(edges);
    }
    return out;
}

QJsonObject GraphView::settings() const {
    QJsonObject o = View::settings();
    QJsonArray folders;
    for (const QString& f : m_folders)
        folders.append(f);
    o.insert(QStringLiteral("transcoders"), folders);
    return o;
}

void GraphView::setSettings(const QJsonObject& settings) {
    View::setSettings(settings);
    const QJsonArray folders = settings.value(QStringLiteral("transcoders")).toArray();
    for (int m = 0; m < 2 && m < folders.size(); ++m)
        setTranscoders(m, folders[m].toString());
}

} // namespace gwb::views
