#pragma once
// Graph view: the attribution graphs of both models on the prompt (gwb/engine/graph.h), side by
// side: layers up (embeddings at the bottom, logits at the top), positions across, the pruned
// nodes and edges, each edge drawn by its weight (blue adds to its target, red takes away). Hover
// names a node and its strongest inputs, and a transcoder feature's dashboard (its top-activating
// contexts, asked of the application with dashboardRequested); a click pins a node (its edges stand
// out and the panel below lists them) or selects an edge (the panel gives its split across each
// mixer's offsets or heads); dragging a box around nodes groups them into a supernode. Save JSON
// writes circuit-tracer's graph file with the pins and supernodes in its qParams. The view never
// runs a model: the application computes the graphs and dashboards off the GUI thread (setGraphs,
// setDashboard) from the transcoder sets the person opens. The graphs, marks, dashboards, texts and
// the figure are GraphFigure's (graph_figure.h).

#include "gwb/views/graph_figure.h"
#include "gwb/views/view.h"

#include <array>
#include <set>
#include <vector>

class QLineEdit;
class QLabel;
class QProgressBar;
class QPushButton;
class QTextBrowser;

namespace gwb::views {

namespace detail {
class GraphCanvas;
} // namespace detail

class GraphView : public View {
    Q_OBJECT
public:
    explicit GraphView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kGraph; }
    QString title() const override { return QStringLiteral("Graph"); }
    void setSettings(const QJsonObject& settings) override;

    /// The graphs to draw (null: none yet).
    void setGraphs(GraphPairPtr graphs);
    const gwb::engine::GraphPair* graphs() const { return fig().graphs(); }
    /// The transcoder folder of model 0 (Grassmann) or 1 (Transformer), shown beside its button.
    void setTranscoders(int model, const QString& folder);
    QString transcoders(int model) const { return fig().transcoders(model); }
    /// Running state, progress and the status line.
    void setRunning(bool running);
    bool running() const { return m_running; }
    void setProgress(double fraction);
    void showMessage(const QString& message);
    QString message() const;

    /// Pinned nodes per model (node indices); pinning toggles.
    void togglePin(int model, int64_t node);
    const std::set<int64_t>& pinned(int model) const { return fig().pinned(model); }
    /// Selects the edge target <- source of a model (-1: none): the panel shows its loadings.
    void selectEdge(int model, int64_t target, int64_t source);
    /// Groups nodes of a model into a supernode named `name` ("group N" when empty).
    void group(int model, const std::vector<int64_t>& nodes, const QString& name = {});
    const std::vector<std::vector<int64_t>>& groups(int model) const { return fig().groups(model); }
    const QStringList& groupNames(int model) const { return fig().groupNames(model); }
    void clearMarks();
    /// A model's marks as the graph JSON keeps them (qParams: pinnedIds, supernodes, clickedId).
    gwb::engine::GraphAnnotations annotations(int model) const { return fig().annotations(model); }
    /// Writes each drawn model's pruned graph as circuit-tracer's JSON (atomically), its marks in the
    /// qParams: to `path` for one model, to "<stem>.grassmann.json" and "<stem>.transformer.json"
    /// beside it for two. Returns the files written; throws std::exception naming what failed.
    QStringList saveJson(const QString& path) const { return fig().saveJson(path); }
    /// The panel's text (pinned nodes' edges and dashboards, or the selected edge's split).
    QString detailsHtml() const { return fig().detailsHtml(); }

    /// A transcoder feature's dashboard, as the application computed it for dashboardRequested; kept
    /// until the graphs or the transcoder sets change.
    void setDashboard(int model, int layer, const gwb::engine::FeatureDashboardRun& dashboard);
    const gwb::engine::FeatureDashboardRun* dashboard(int model, int layer, int64_t feature) const {
        return fig().dashboard(model, layer, feature);
    }
    /// Asks for a feature node's dashboard (dashboardRequested) unless it is known or asked for.
    void requestDashboard(int model, int64_t node);
    /// A node's tooltip as rich text: what it is, its influence, its strongest kept inputs and, for
    /// a feature, its dashboard (or that it is being computed).
    QString nodeTip(int model, int64_t node) const { return fig().nodeTip(model, node); }
    /// A node described in words: "feature 3/17 at 5 'cat' (activation 1.2)".
    static QString describe(const gwb::engine::AttributionGraph& g, int64_t node) {
        return GraphFigure::describe(g, node);
    }

    detail::GraphCanvas* canvas() const { return m_canvas; }
    /// The contrast typed for the next Run ("" and "": the top logits): its logit node is
    /// logit[answer] - logit[wrong].
    QString answer() const;
    QString wrong() const;
    void setContrast(const QString& answer, const QString& wrong);

Q_SIGNALS:
    void transcodersRequested(int model);
    void runRequested();
    void cancelRequested();
    void saveJsonRequested();
    /// The dashboard of feature `feature` of the transcoder at block `layer` of model `model`.
    void dashboardRequested(int model, int layer, qint64 feature);

protected:
    void refresh() override;

private:
    friend class detail::GraphCanvas;
    GraphFigure& fig() const { return figureAs<GraphFigure>(); }
    std::array<QPushButton*, 2> m_open{};
    std::array<QLabel*, 2> m_folderLabels{};
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_clear = nullptr;
    QPushButton* m_save = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QLineEdit* m_answer = nullptr;
    QLineEdit* m_wrong = nullptr;
    detail::GraphCanvas* m_canvas = nullptr;
    QTextBrowser* m_details = nullptr;
    QString m_message;
    bool m_running = false;
};

} // namespace gwb::views
