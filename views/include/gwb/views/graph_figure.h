#pragma once
// Graph figure: the attribution graphs of both models on the prompt (gwb/engine/graph.h), side by
// side: layers up (embeddings at the bottom, logits at the top), positions across, the pruned nodes
// and edges, each edge drawn by its weight (blue adds to its target, red takes away), with the
// person's marks (pinned nodes, the selected edge, supernodes). It keeps what the Graph view shows
// besides the picture too: the transcoder folders (its settings), the feature dashboards the
// application computed, and the texts of the status line, the tooltips and the details panel.

#include "gwb/views/figure.h"

#include "gwb/engine/feature_results.h"
#include "gwb/engine/graph.h"

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace gwb::views {

using GraphPairPtr = std::shared_ptr<const gwb::engine::GraphPair>;

namespace detail {
struct GraphMarks;
} // namespace detail

class GraphFigure final : public Figure {
public:
    QString id() const override { return view_id::kGraph; }
    QString title() const override { return QStringLiteral("Graph"); }
    /// "colormap" and "transcoders" (the two folders, Grassmann's first).
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.1 : 0.55; }
    QString caption() const override;
    QString captionAt(double widthPoints) const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The graphs to draw (null: none yet). Drops the dashboards (a set may have been trained
    /// again since) and the marks (they name nodes of the graphs before).
    void setGraphs(GraphPairPtr graphs);
    const gwb::engine::GraphPair* graphs() const { return m_graphs.get(); }
    /// The transcoder folder of model 0 (Grassmann) or 1 (Transformer); another folder drops that
    /// model's dashboards.
    void setTranscoders(int model, const QString& folder);
    QString transcoders(int model) const { return m_folders[static_cast<size_t>(model)]; }

    /// Pinned nodes per model (node indices); pinning toggles. Returns whether the node is pinned now.
    bool togglePin(int model, int64_t node);
    const std::set<int64_t>& pinned(int model) const { return m_pinned[static_cast<size_t>(model)]; }
    /// Selects the edge target <- source of a model (-1: none): the panel shows its loadings.
    void selectEdge(int model, int64_t target, int64_t source);
    /// Groups nodes of a model into a supernode named `name` ("group N" when empty).
    void group(int model, const std::vector<int64_t>& nodes, const QString& name = {});
    const std::vector<std::vector<int64_t>>& groups(int model) const { return m_groups[static_cast<size_t>(model)]; }
    const QStringList& groupNames(int model) const { return m_groupNames[static_cast<size_t>(model)]; }
    void clearMarks();
    /// What stands out in model m's panel (graph_paint.h).
    detail::GraphMarks marks(int model) const;
    /// A model's marks as the graph JSON keeps them (qParams: pinnedIds, supernodes, clickedId).
    gwb::engine::GraphAnnotations annotations(int model) const;
    /// Writes each drawn model's pruned graph as circuit-tracer's JSON (atomically), its marks in the
    /// qParams: to `path` for one model, to "<stem>.grassmann.json" and "<stem>.transformer.json"
    /// beside it for two. Returns the files written; throws std::exception naming what failed.
    QStringList saveJson(const QString& path) const;

    /// A transcoder feature's dashboard; kept until the graphs or that model's folder change.
    void setDashboard(int model, int layer, const gwb::engine::FeatureDashboardRun& dashboard);
    const gwb::engine::FeatureDashboardRun* dashboard(int model, int layer, int64_t feature) const;
    /// A feature node's dashboard to ask the application for: marks it asked (its tooltip then says
    /// it is computed) and returns its (layer, feature); nothing for another kind of node, a node
    /// outside the graphs, or a feature asked for already.
    std::optional<std::pair<int, int64_t>> askDashboard(int model, int64_t node);

    /// A node's tooltip as rich text: what it is, its influence, its strongest kept inputs and, for
    /// a feature, its dashboard (or that it is being computed).
    QString nodeTip(int model, int64_t node) const;
    /// A node described in words: "feature 3/17 at 5 'cat' (activation 1.2)".
    static QString describe(const gwb::engine::AttributionGraph& g, int64_t node);
    /// The panel's text (pinned nodes' edges and dashboards, or the selected edge's split).
    QString detailsHtml() const;
    /// The status line after a run: per model its error, or the nodes and edges kept.
    QString statusText() const;
    /// Why the graphs shown are not the current prompt's ("" when they are, or there are none): a
    /// graph explains one prompt's next token, and the window's prompt changed since it ran.
    QString staleNote() const;

private:
    /// The tooltip's first part, without the dashboard.
    QString nodeSummaryHtml(int model, int64_t node) const;
    GraphPairPtr m_graphs;
    std::array<QString, 2> m_folders;
    std::array<std::set<int64_t>, 2> m_pinned;
    std::array<std::vector<std::vector<int64_t>>, 2> m_groups;
    std::array<QStringList, 2> m_groupNames;
    std::map<std::tuple<int, int, int64_t>, gwb::engine::FeatureDashboardRun> m_dashboards; ///< (model, layer, feature)
    std::set<std::tuple<int, int, int64_t>> m_asked;
    int m_edgeModel = -1;
    int64_t m_edgeTarget = -1, m_edgeSource = -1;
};

} // namespace gwb::views
