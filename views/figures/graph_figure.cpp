// The Graph figure (graph_figure.h): the graphs and their marks, the dashboards, the texts of the
// view's status line, tooltips and panel, and the figure drawn with graph_paint.h.

#include "gwb/views/graph_figure.h"

#include "dashboard_html.h"
#include "graph_paint.h"
#include "plot_util.h"

#include <QJsonArray>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gwb::views {

using gwb::engine::AttributionGraph;
using gwb::engine::GraphNodeKind;
using gwb::engine::GraphPruning;

using detail::drawnModels;
using detail::GraphLayout;
using detail::GraphMarks;
using detail::kGraphModelNames;
using detail::layoutGraph;
using detail::paintGraph;
using detail::panelRects;
using detail::panelTitle;
using detail::strongestPaths;

QJsonObject GraphFigure::settings() const {
    QJsonObject o = Figure::settings();
    QJsonArray folders;
    for (const QString& f : m_folders)
        folders.append(f);
    o.insert(QStringLiteral("transcoders"), folders);
    return o;
}

void GraphFigure::setSettings(const QJsonObject& settings) {
    Figure::setSettings(settings);
    const QJsonArray folders = settings.value(QStringLiteral("transcoders")).toArray();
    for (int m = 0; m < 2 && m < folders.size(); ++m)
        setTranscoders(m, folders[m].toString());
}

QString GraphFigure::missingDataMessage() const {
    return QStringLiteral("Graph: open a transcoder set for a model (Transcoders…) and press Run: the attribution "
                          "graph of the next token, features and error nodes by layer and position.");
}

bool GraphFigure::hasContent() const {
    return !drawnModels(m_graphs.get()).empty();
}

void GraphFigure::setGraphs(GraphPairPtr graphs) {
    m_graphs = std::move(graphs);
    m_dashboards.clear(); // a set may have been trained again since
    m_asked.clear();
    clearMarks(); // the marks name nodes of the graphs before
}

void GraphFigure::setTranscoders(int model, const QString& folder) {
    if (m_folders[static_cast<size_t>(model)] != folder) {
        std::erase_if(m_dashboards, [model](const auto& d) { return std::get<0>(d.first) == model; });
        std::erase_if(m_asked, [model](const auto& k) { return std::get<0>(k) == model; });
    }
    m_folders[static_cast<size_t>(model)] = folder;
}

bool GraphFigure::togglePin(int model, int64_t node) {
    auto& set = m_pinned[static_cast<size_t>(model)];
    if (set.erase(node)) return false;
    set.insert(node);
    return true;
}

void GraphFigure::selectEdge(int model, int64_t target, int64_t source) {
    m_edgeModel = model;
    m_edgeTarget = target;
    m_edgeSource = source;
}

void GraphFigure::group(int model, const std::vector<int64_t>& nodes, const QString& name) {
    auto& groups = m_groups[static_cast<size_t>(model)];
    auto& names = m_groupNames[static_cast<size_t>(model)];
    groups.push_back(nodes);
    names << (name.isEmpty() ? QStringLiteral("group %1").arg(groups.size()) : name);
}

void GraphFigure::clearMarks() {
    for (auto& p : m_pinned)
        p.clear();
    for (auto& g : m_groups)
        g.clear();
    for (auto& g : m_groupNames)
        g.clear();
    m_edgeModel = -1;
    m_edgeTarget = m_edgeSource = -1;
}

GraphMarks GraphFigure::marks(int model) const {
    GraphMarks k;
    k.pinned = m_pinned[static_cast<size_t>(model)];
    k.groups = m_groups[static_cast<size_t>(model)];
    if (m_edgeModel == model) {
        k.edgeTarget = m_edgeTarget;
        k.edgeSource = m_edgeSource;
    }
    return k;
}

gwb::engine::GraphAnnotations GraphFigure::annotations(int model) const {
    gwb::engine::GraphAnnotations a;
    const auto m = static_cast<size_t>(model);
    a.pinned.assign(m_pinned[m].begin(), m_pinned[m].end());
    for (size_t k = 0; k < m_groups[m].size(); ++k)
        a.supernodes.emplace_back(m_groupNames[m][static_cast<qsizetype>(k)].toStdString(), m_groups[m][k]);
    if (m_edgeModel == model) a.clicked = m_edgeTarget;
    return a;
}

QStringList GraphFigure::saveJson(const QString& path) const {
    const std::vector<int> models = drawnModels(m_graphs.get());
    if (models.empty()) throw std::invalid_argument("no graph to save: press Run first");
    QStringList written;
    for (int m : models) {
        QString file = path;
        if (models.size() > 1) {
            const QString stem = path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive) ? path.chopped(5) : path;
            file =
                stem + QLatin1Char('.') + QString::fromLatin1(kGraphModelNames[m]).toLower() + QStringLiteral(".json");
        }
        const AttributionGraph& g = m_graphs->graphs[m];
        gwb::engine::writeGraphJson(file.toStdString(), g, m_graphs->pruning[m], g.modelName, 0.8, annotations(m));
        written << file;
    }
    return written;
}

void GraphFigure::setDashboard(int model, int layer, const gwb::engine::FeatureDashboardRun& dashboard) {
    m_dashboards[{model, layer, dashboard.feature}] = dashboard;
}

const gwb::engine::FeatureDashboardRun* GraphFigure::dashboard(int model, int layer, int64_t feature) const {
    const auto it = m_dashboards.find({model, layer, feature});
    return it == m_dashboards.end() ? nullptr : &it->second;
}

std::optional<std::pair<int, int64_t>> GraphFigure::askDashboard(int model, int64_t node) {
    if (!m_graphs || model < 0 || model > 1 || node < 0 || node >= m_graphs->graphs[model].nodeCount()) return {};
    const auto& n = m_graphs->graphs[model].nodes[static_cast<size_t>(node)];
    if (n.kind != GraphNodeKind::Feature) return {};
    if (!m_asked.insert({model, n.layer, n.index}).second) return {};
    return std::pair{n.layer, n.index};
}

QString GraphFigure::describe(const AttributionGraph& g, int64_t node) {
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

QString GraphFigure::nodeSummaryHtml(int model, int64_t node) const {
    const AttributionGraph& g = m_graphs->graphs[model];
    const GraphPruning& p = m_graphs->pruning[model];
    QString tip = QStringLiteral("<b>%1</b>: %2<br>influence on the logits: %3")
                      .arg(QLatin1String(kGraphModelNames[model]), describe(g, node).toHtmlEscaped(),
                           detail::formatValue(p.influence[static_cast<size_t>(node)]));
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
            tip += QStringLiteral("<br>&nbsp;&nbsp;%1 from %2")
                       .arg(detail::formatValue(g.rows.data[r * n + in[k]]),
                            describe(g, static_cast<int64_t>(in[k])).toHtmlEscaped());
    }
    return tip;
}

QString GraphFigure::nodeTip(int model, int64_t node) const {
    if (!m_graphs || node < 0 || node >= m_graphs->graphs[model].nodeCount()) return {};
    QString tip = QStringLiteral("<qt>") + nodeSummaryHtml(model, node);
    const auto& n = m_graphs->graphs[model].nodes[static_cast<size_t>(node)];
    if (n.kind == GraphNodeKind::Feature) {
        if (const gwb::engine::FeatureDashboardRun* d = dashboard(model, n.layer, n.index))
            tip += QStringLiteral("<hr>") + detail::dashboardHtml(*d, 5);
        else if (m_asked.count({model, n.layer, n.index}))
            tip += QStringLiteral("<br><i>Computing the feature's dashboard\u2026</i>");
    }
    return tip + QStringLiteral("</qt>");
}

QString GraphFigure::detailsHtml() const {
    if (!m_graphs) return {};
    QString html;
    if (m_edgeModel >= 0 && m_edgeTarget >= 0) {
        const AttributionGraph& g = m_graphs->graphs[m_edgeModel];
        html += QStringLiteral("<b>%1</b>: %2 \u2192 %3, weight %4<br>")
                    .arg(QLatin1String(kGraphModelNames[m_edgeModel]), describe(g, m_edgeSource).toHtmlEscaped(),
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
        for (int64_t node : m_pinned[static_cast<size_t>(m)])
            html += nodeTip(m, node)
                        .replace(QStringLiteral("<qt>"), QStringLiteral("<p>"))
                        .replace(QStringLiteral("</qt>"), QStringLiteral("</p>"));
    for (int m = 0; m < 2; ++m)
        for (size_t k = 0; k < m_groups[static_cast<size_t>(m)].size(); ++k)
            html += QStringLiteral("<p><b>%1</b> supernode \u2018%2\u2019: %3 nodes</p>")
                        .arg(QLatin1String(kGraphModelNames[m]),
                             m_groupNames[static_cast<size_t>(m)][static_cast<qsizetype>(k)].toHtmlEscaped())
                        .arg(m_groups[static_cast<size_t>(m)][k].size());
    if (html.isEmpty())
        html = QStringLiteral("Hover a node for its strongest inputs (a feature: its dashboard too); click one to pin "
                              "it; click an edge for its split across the offsets or heads of each block it crosses; "
                              "drag a box to group nodes into a supernode; Save JSON keeps pins and supernodes.");
    return html;
}

QString GraphFigure::staleNote() const {
    if (!m_graphs) return {};
    for (int m = 0; m < 2; ++m) {
        if (!m_graphs->ran[m] || !m_graphs->errors[m].empty()) continue;
        const gwb::engine::TracePtr& tr = m == 0 ? m_data.grassmann : m_data.baseline;
        const AttributionGraph& g = m_graphs->graphs[m];
        std::vector<int64_t> now, then(g.ids.begin(), g.ids.end());
        if (tr)
            for (const auto& t : tr->tokens)
                now.push_back(t.id);
        if (now != then) {
            QString prompt;
            for (const std::string& piece : g.pieces)
                prompt += QString::fromStdString(piece);
            prompt.replace(QChar(0x2581), QLatin1Char(' '));
            return QStringLiteral("Earlier graph: of the prompt \u201c%1\u201d, not the current one. Press Run.")
                .arg(detail::labelText(prompt.trimmed(), 40));
        }
    }
    return {};
}

QString GraphFigure::statusText() const {
    QStringList parts;
    for (int m = 0; m < 2 && m_graphs; ++m) {
        if (!m_graphs->errors[m].empty())
            parts << QStringLiteral("%1: %2").arg(QLatin1String(kGraphModelNames[m]),
                                                  QString::fromStdString(m_graphs->errors[m]));
        else if (m_graphs->ran[m])
            parts << QStringLiteral("%1: %2 of %3 nodes and %4 edges kept (%5 s)")
                         .arg(QLatin1String(kGraphModelNames[m]))
                         .arg(m_graphs->pruning[m].keptNodes)
                         .arg(m_graphs->graphs[m].nodeCount())
                         .arg(m_graphs->pruning[m].keptEdges)
                         .arg(m_graphs->graphs[m].seconds, 0, 'f', 1);
    }
    return parts.join(QStringLiteral("; "));
}

QString GraphFigure::caption() const {
    // The prompt and the target the graphs explain: the top logits, or a custom target (a contrast).
    QString prompt, target;
    for (int m : drawnModels(m_graphs.get())) {
        const AttributionGraph& g = m_graphs->graphs[m];
        if (prompt.isEmpty())
            for (const std::string& piece : g.pieces)
                prompt += QString::fromStdString(piece);
        if (target.isEmpty() && g.logits == 1 && !g.nodes.empty() && g.nodes.back().label.rfind("logit(", 0) == 0)
            target = QString::fromStdString(g.nodes.back().label);
    }
    prompt.replace(QChar(0x2581), QLatin1Char(' '));
    const QString stale = staleNote();
    return (stale.isEmpty() ? QString() : stale + QStringLiteral(" ")) +
           QStringLiteral("Attribution graphs of the next token after \u201c%1\u201d: transcoder features (circles), "
                          "error nodes (grey squares), token embeddings (bottom row) and %2, by block "
                          "and position; edges are direct effects in each model's replacement frozen at the "
                          "prompt, pruned by influence on the logits (node 0.8, edge 0.98), blue positive, red "
                          "negative, width by |weight|.")
               .arg(prompt.trimmed(), target.isEmpty()
                                          ? QStringLiteral("the most probable logits (top row; the first is named)")
                                          : QStringLiteral("the target %1 (top row; its node's value is that "
                                                           "difference of logits)")
                                                .arg(target));
}

namespace {

/// A figure narrower than 5 in stacks its panels and draws each graph's strongest paths only.
bool narrowGraph(double widthPoints) {
    return widthPoints < 5 * 72;
}

} // namespace

QString GraphFigure::captionAt(double widthPoints) const {
    QString text = caption();
    if (!narrowGraph(widthPoints) || !m_graphs) return text;
    const std::vector<int> models = drawnModels(m_graphs.get());
    QStringList cut;
    for (size_t k = 0; k < models.size(); ++k) {
        const int m = models[k];
        const GraphPruning& all = m_graphs->pruning[m];
        const GraphPruning drawn =
            strongestPaths(m_graphs->graphs[m], all, detail::kNarrowGraphNodes, detail::kNarrowGraphEdges);
        if (drawn.keptNodes == all.keptNodes && drawn.keptEdges == all.keptEdges) continue;
        cut << QStringLiteral("(%1) %2 of %3 kept nodes and %4 of %5 kept edges")
                   .arg(QChar('a' + static_cast<int>(k)))
                   .arg(drawn.keptNodes)
                   .arg(all.keptNodes)
                   .arg(drawn.keptEdges)
                   .arg(all.keptEdges);
    }
    if (cut.isEmpty()) return text;
    return text + QStringLiteral(" At one column only the strongest paths are drawn (the logits, the %1 most "
                                 "influential other nodes and the %2 largest |weight| edges among them): %3; "
                                 "the data export holds every kept node and edge.")
                      .arg(detail::kNarrowGraphNodes)
                      .arg(detail::kNarrowGraphEdges)
                      .arg(cut.join(QStringLiteral("; ")));
}

void GraphFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    const std::vector<int> models = drawnModels(m_graphs.get());
    const bool narrow = narrowGraph(rect.width());
    const std::vector<QRectF> rects = panelRects(rect, static_cast<int>(models.size()), narrow);
    for (size_t k = 0; k < models.size(); ++k) {
        const int m = models[k];
        const GraphPruning drawn = narrow ? strongestPaths(m_graphs->graphs[m], m_graphs->pruning[m],
                                                           detail::kNarrowGraphNodes, detail::kNarrowGraphEdges)
                                          : m_graphs->pruning[m];
        const GraphLayout lay = layoutGraph(m_graphs->graphs[m], drawn, rects[k], style);
        GraphMarks marks = this->marks(m);
        if (!style.selection) marks.edgeTarget = marks.edgeSource = -1;
        paintGraph(p, lay, m_graphs->graphs[m], drawn, style, marks,
                   QStringLiteral("(%1) ").arg(QChar('a' + static_cast<int>(k))) + panelTitle(*m_graphs, m));
    }
}

std::vector<DataTable> GraphFigure::dataTables() const {
    std::vector<DataTable> out;
    for (int m : drawnModels(m_graphs.get())) {
        const AttributionGraph& g = m_graphs->graphs[m];
        const GraphPruning& p = m_graphs->pruning[m];
        const QString model = QString::fromLatin1(kGraphModelNames[m]).toLower();
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

} // namespace gwb::views
