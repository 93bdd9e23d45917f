#pragma once
// The Graph view's drawing, shared by the screen and the figure: where each kept node goes in a
// panel (layers up, positions across) and how nodes, edges, pins and groups are painted.

#include "gwb/engine/graph.h"
#include "gwb/views/figure_options.h"

#include <QPainter>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <set>
#include <vector>

namespace gwb::views::detail {

/// One model's panel: the plot rectangle and every kept node's centre (NaN for a pruned node).
struct GraphLayout {
    QRectF panel, plot;
    std::vector<QPointF> at;
    std::vector<double> columns; ///< left edge of each position's column, then the right edge of the last
    double radius = 3;
    int rows = 0;
};

/// What stands out: pinned nodes, the selected edge, groups.
struct GraphMarks {
    std::set<int64_t> pinned;
    int64_t edgeTarget = -1, edgeSource = -1;
    std::vector<std::vector<int64_t>> groups;
};

GraphLayout layoutGraph(const gwb::engine::AttributionGraph& g, const gwb::engine::GraphPruning& p, const QRectF& panel,
                        const FigureStyle& style);
/// Draws the panel: title, row and token labels, edges by weight, nodes by kind, marks.
void paintGraph(QPainter& painter, const GraphLayout& layout, const gwb::engine::AttributionGraph& g,
                const gwb::engine::GraphPruning& p, const FigureStyle& style, const GraphMarks& marks,
                const QString& title);
/// The two panels of a pair side by side in `rect` (one above the other when narrow).
std::vector<QRectF> panelRects(const QRectF& rect, int panels, bool stacked);

/// The caps of a one-column figure (narrower than 5 in): a pruned graph of hundreds of edges is an
/// unreadable hairball at 3.5 in, so only its strongest paths are drawn.
constexpr int kNarrowGraphNodes = 16, kNarrowGraphEdges = 32;

/// The strongest paths of a pruned graph: its kept logits, the `maxNodes` other kept nodes of
/// highest influence, and among the kept edges between those the `maxEdges` of largest |weight|;
/// a feature, error or token node left without an edge is dropped. `p` itself when it fits.
gwb::engine::GraphPruning strongestPaths(const gwb::engine::AttributionGraph& g, const gwb::engine::GraphPruning& p,
                                         int maxNodes, int maxEdges);
/// "Grassmann", "Transformer": the models of a GraphPair by index.
extern const char* const kGraphModelNames[2];
/// The models of a pair with a graph to draw.
std::vector<int> drawnModels(const gwb::engine::GraphPair* pair);
/// A panel's title: the model, its name and its two scores.
QString panelTitle(const gwb::engine::GraphPair& pair, int model);
/// The kept node nearest to `point` within `radius` pixels, or -1.
int64_t nodeAt(const GraphLayout& layout, const QPointF& point, double radius);
/// The kept edge (row index r, source) nearest to `point` within `tolerance`, as (target, source);
/// (-1, -1) when none.
std::pair<int64_t, int64_t> edgeAt(const GraphLayout& layout, const gwb::engine::AttributionGraph& g,
                                   const gwb::engine::GraphPruning& p, const QPointF& point, double tolerance);

} // namespace gwb::views::detail
