// The Graph view's layout and painting (graph_paint.h).

#include "graph_paint.h"

#include "plot_util.h"

#include <QPainterPath>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace gwb::views::detail {

using gwb::engine::AttributionGraph;
using gwb::engine::GraphNodeKind;
using gwb::engine::GraphPruning;

namespace {

/// Row of a node: 0 embeddings, 1 + L block L (features and errors), layers + 1 logits.
int rowOf(const gwb::engine::GraphNode& n, int layers) {
    switch (n.kind) {
    case GraphNodeKind::Token:
        return 0;
    case GraphNodeKind::Logit:
        return layers + 1;
    default:
        return n.layer + 1;
    }
}

QColor edgeColour(double weight, double strength) {
    const int alpha = static_cast<int>(std::lround(50 + 190 * std::clamp(strength, 0.0, 1.0)));
    return weight >= 0 ? QColor(33, 102, 172, alpha) : QColor(178, 24, 43, alpha);
}

} // namespace

std::vector<QRectF> panelRects(const QRectF& rect, int panels, bool stacked) {
    std::vector<QRectF> out;
    if (panels <= 1) return {rect};
    const double gap = 0.04 * (stacked ? rect.height() : rect.width());
    for (int i = 0; i < panels; ++i) {
        if (stacked) {
            const double h = (rect.height() - gap * (panels - 1)) / panels;
            out.emplace_back(rect.left(), rect.top() + i * (h + gap), rect.width(), h);
        } else {
            const double w = (rect.width() - gap * (panels - 1)) / panels;
            out.emplace_back(rect.left() + i * (w + gap), rect.top(), w, rect.height());
        }
    }
    return out;
}

GraphPruning strongestPaths(const AttributionGraph& g, const GraphPruning& p, int maxNodes, int maxEdges) {
    if (p.keptNodes <= maxNodes && p.keptEdges <= maxEdges) return p;
    const size_t n = static_cast<size_t>(g.nodeCount());
    GraphPruning out = p;
    std::fill(out.nodeKept.begin(), out.nodeKept.end(), uint8_t{0});
    std::fill(out.edgeKept.begin(), out.edgeKept.end(), uint8_t{0});
    std::vector<size_t> ranked;
    for (size_t i = 0; i < n && i < p.nodeKept.size(); ++i)
        if (p.nodeKept[i]) {
            if (g.nodes[i].kind == GraphNodeKind::Logit)
                out.nodeKept[i] = 1;
            else
                ranked.push_back(i);
        }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](size_t a, size_t b) { return std::abs(p.influence[a]) > std::abs(p.influence[b]); });
    for (size_t k = 0; k < ranked.size() && k < static_cast<size_t>(maxNodes); ++k)
        out.nodeKept[ranked[k]] = 1;
    std::vector<std::pair<double, size_t>> edges; // (|weight|, r * n + j)
    for (size_t r = 0; r < g.rowNodes.size(); ++r) {
        if (!out.nodeKept[static_cast<size_t>(g.rowNodes[r])]) continue;
        for (size_t j = 0; j < n; ++j)
            if (p.edgeKept[r * n + j] && out.nodeKept[j])
                edges.emplace_back(std::abs(g.rows.data[r * n + j]), r * n + j);
    }
    std::stable_sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (edges.size() > static_cast<size_t>(maxEdges)) edges.resize(static_cast<size_t>(maxEdges));
    std::vector<uint8_t> touched(n, 0);
    for (const auto& e : edges) {
        out.edgeKept[e.second] = 1;
        touched[e.second % n] = 1;
        touched[static_cast<size_t>(g.rowNodes[e.second / n])] = 1;
    }
    out.keptNodes = out.keptEdges = 0;
    for (size_t i = 0; i < n; ++i) {
        if (out.nodeKept[i] && !touched[i] && g.nodes[i].kind != GraphNodeKind::Logit) out.nodeKept[i] = 0;
        out.keptNodes += out.nodeKept[i];
    }
    out.keptEdges = static_cast<int64_t>(edges.size());
    return out;
}

GraphLayout layoutGraph(const AttributionGraph& g, const GraphPruning& p, const QRectF& panel,
                        const FigureStyle& style) {
    GraphLayout lay;
    lay.panel = panel;
    lay.rows = g.layers + 2;
    const QFontMetricsF small = style.metrics(style.small);
    const double title = small.height() * 2.9, left = small.horizontalAdvance(QStringLiteral("logits")) + 6;
    const double bottom = small.height() * 2.2;
    lay.plot = QRectF(panel.left() + left, panel.top() + title, std::max(10.0, panel.width() - left - 4),
                      std::max(10.0, panel.height() - title - bottom));
    const auto T = std::max<int64_t>(g.tokens, 1);
    const double rowH = lay.plot.height() / lay.rows;
    // Kept nodes of each cell (row, position).
    std::map<std::pair<int, int64_t>, std::vector<int64_t>> cells;
    for (int64_t i = 0; i < g.nodeCount(); ++i)
        if (p.nodeKept.empty() || p.nodeKept[static_cast<size_t>(i)])
            cells[{rowOf(g.nodes[static_cast<size_t>(i)], g.layers), g.nodes[static_cast<size_t>(i)].position}]
                .push_back(i);
    // A position's column is as wide as its fullest cell needs (circuit-tracer's layout): the
    // positions where the graph lives get the room, the others stay narrow.
    std::vector<double> weight(static_cast<size_t>(T), 1.0);
    for (const auto& [cell, nodes] : cells)
        weight[static_cast<size_t>(std::clamp<int64_t>(cell.second, 0, T - 1))] = std::max(
            weight[static_cast<size_t>(std::clamp<int64_t>(cell.second, 0, T - 1))], static_cast<double>(nodes.size()));
    double total = 0;
    for (double w : weight)
        total += w;
    lay.columns.assign(static_cast<size_t>(T) + 1, lay.plot.left());
    for (int64_t t = 0; t < T; ++t)
        lay.columns[static_cast<size_t>(t + 1)] =
            lay.columns[static_cast<size_t>(t)] + lay.plot.width() * weight[static_cast<size_t>(t)] / total;
    const double unit = lay.plot.width() / total;
    lay.radius = std::clamp(std::min(unit * 0.32, rowH * 0.16), 1.2, 5.0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    lay.at.assign(static_cast<size_t>(g.nodeCount()), QPointF(nan, nan));
    for (const auto& [cell, nodes] : cells) {
        const auto t = static_cast<size_t>(std::clamp<int64_t>(cell.second, 0, T - 1));
        const double left = lay.columns[t], w = lay.columns[t + 1] - lay.columns[t];
        const double cy = lay.plot.bottom() - (cell.first + 0.5) * rowH;
        const auto n = static_cast<double>(nodes.size());
        for (size_t k = 0; k < nodes.size(); ++k)
            lay.at[static_cast<size_t>(nodes[k])] = QPointF(left + w * (static_cast<double>(k) + 0.5) / n, cy);
    }
    return lay;
}

void paintGraph(QPainter& painter, const GraphLayout& lay, const AttributionGraph& g, const GraphPruning& p,
                const FigureStyle& style, const GraphMarks& marks, const QString& title) {
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, true);
    const QFontMetricsF small = style.metrics(style.small);
    painter.setFont(style.small);
    painter.setPen(Qt::black);
    painter.drawText(QRectF(lay.panel.left(), lay.panel.top(), lay.panel.width(), small.height() * 2.6),
                     Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, title);
    // Row labels and guides.
    const double rowH = lay.plot.height() / lay.rows;
    for (int r = 0; r < lay.rows; ++r) {
        const double y = lay.plot.bottom() - (r + 0.5) * rowH;
        const QString label = r == 0              ? QStringLiteral("emb")
                              : r == lay.rows - 1 ? QStringLiteral("logits")
                                                  : QStringLiteral("L%1").arg(r - 1);
        painter.setPen(QColor(90, 90, 90));
        painter.drawText(
            QRectF(lay.panel.left(), y - small.height() / 2, lay.plot.left() - lay.panel.left() - 4, small.height()),
            Qt::AlignRight | Qt::AlignVCenter, label);
        painter.setPen(QPen(QColor(225, 225, 225), style.hairline));
        painter.drawLine(QPointF(lay.plot.left(), y), QPointF(lay.plot.right(), y));
    }
    // Token labels under their columns, each where it does not run into the one before.
    double freeFrom = -1e300;
    painter.setPen(Qt::black);
    for (int64_t t = 0; t < g.tokens && t + 1 < static_cast<int64_t>(lay.columns.size()); ++t) {
        const QString piece = t < static_cast<int64_t>(g.pieces.size())
                                  ? labelText(QString::fromStdString(g.pieces[static_cast<size_t>(t)]), 8)
                                  : QString::number(t);
        const double x = (lay.columns[static_cast<size_t>(t)] + lay.columns[static_cast<size_t>(t + 1)]) / 2;
        const double w = small.horizontalAdvance(piece) + 3;
        if (x - w / 2 < freeFrom || x + w / 2 > lay.panel.right()) continue;
        painter.drawText(QRectF(x - w / 2, lay.plot.bottom() + 2, w, small.height()), Qt::AlignHCenter | Qt::AlignTop,
                         piece);
        freeFrom = x + w / 2 + 2;
    }
    // Groups under everything.
    for (size_t k = 0; k < marks.groups.size(); ++k) {
        QRectF box;
        for (int64_t i : marks.groups[k]) {
            const QPointF c = lay.at[static_cast<size_t>(i)];
            if (std::isnan(c.x())) continue;
            const QRectF r(c.x() - 2 * lay.radius, c.y() - 2 * lay.radius, 4 * lay.radius, 4 * lay.radius);
            box = box.isNull() ? r : box.united(r);
        }
        if (box.isNull()) continue;
        painter.setPen(QPen(QColor(120, 80, 160), style.hairline * 1.5));
        painter.setBrush(QColor(120, 80, 160, 40));
        painter.drawRoundedRect(box, lay.radius, lay.radius);
        painter.drawText(QRectF(box.left(), box.top() - small.height(), box.width() + 40, small.height()),
                         Qt::AlignLeft | Qt::AlignBottom, QStringLiteral("group %1").arg(k + 1));
    }
    // Edges by weight, the strongest last; those of pinned nodes stand out, the rest fade.
    const size_t n = static_cast<size_t>(g.nodeCount());
    double maxW = 0;
    struct E {
        size_t r, j;
        double w;
    };
    std::vector<E> edges;
    for (size_t r = 0; r < g.rowNodes.size(); ++r)
        for (size_t j = 0; j < n; ++j)
            if (!p.edgeKept.empty() && p.edgeKept[r * n + j]) {
                const double w = g.rows.data[r * n + j];
                edges.push_back({r, j, w});
                maxW = std::max(maxW, std::abs(w));
            }
    std::sort(edges.begin(), edges.end(), [](const E& a, const E& b) { return std::abs(a.w) < std::abs(b.w); });
    const bool focus = !marks.pinned.empty();
    painter.setBrush(Qt::NoBrush);
    for (const E& e : edges) {
        const auto target = static_cast<int64_t>(g.rowNodes[e.r]);
        const QPointF a = lay.at[e.j], b = lay.at[static_cast<size_t>(target)];
        if (std::isnan(a.x()) || std::isnan(b.x())) continue;
        const double s = maxW > 0 ? std::abs(e.w) / maxW : 0;
        const bool touches = marks.pinned.count(target) || marks.pinned.count(static_cast<int64_t>(e.j));
        const bool chosen = target == marks.edgeTarget && static_cast<int64_t>(e.j) == marks.edgeSource;
        QColor c = edgeColour(e.w, focus && !touches ? 0.0 : s);
        if (focus && !touches) c.setAlpha(25);
        painter.setPen(QPen(chosen ? QColor(255, 140, 0) : c, (chosen ? 1.5 : 0.3) + 2.4 * s * style.hairline * 2,
                            Qt::SolidLine, Qt::RoundCap));
        // A gentle curve, so edges between the same rows do not lie on top of each other.
        QPainterPath path(a);
        const QPointF mid = (a + b) / 2 + QPointF((b.y() - a.y()) * 0.08, 0);
        path.quadTo(mid, b);
        painter.drawPath(path);
    }
    // Nodes by kind: features filled circles, errors grey squares, tokens and logits outlined boxes.
    for (size_t i = 0; i < n; ++i) {
        const QPointF c = lay.at[i];
        if (std::isnan(c.x())) continue;
        const auto& node = g.nodes[i];
        const double r = lay.radius;
        painter.setPen(QPen(QColor(40, 40, 40), style.hairline));
        switch (node.kind) {
        case GraphNodeKind::Feature:
            painter.setBrush(QColor(250, 200, 80));
            painter.drawEllipse(c, r, r);
            break;
        case GraphNodeKind::Error:
            painter.setBrush(QColor(170, 170, 170));
            painter.drawRect(QRectF(c.x() - r * 0.8, c.y() - r * 0.8, r * 1.6, r * 1.6));
            break;
        case GraphNodeKind::Token:
            painter.setBrush(QColor(200, 225, 245));
            painter.drawRect(QRectF(c.x() - r, c.y() - r, 2 * r, 2 * r));
            break;
        case GraphNodeKind::Logit:
            painter.setBrush(QColor(160, 220, 160));
            painter.drawRect(QRectF(c.x() - r * 1.2, c.y() - r, 2.4 * r, 2 * r));
            break;
        }
        if (marks.pinned.count(static_cast<int64_t>(i))) {
            painter.setBrush(Qt::NoBrush);
            painter.setPen(QPen(QColor(255, 140, 0), 1.5 * style.hairline * 2));
            painter.drawEllipse(c, r * 1.9, r * 1.9);
        }
    }
    // The logits' pieces above their boxes (the top logit first).
    painter.setPen(Qt::black);
    for (size_t i = 0; i < n; ++i) {
        const QPointF c = lay.at[i];
        if (std::isnan(c.x()) || g.nodes[i].kind != GraphNodeKind::Logit) continue;
        if (i != n - static_cast<size_t>(g.logits)) continue; // only the top one: the others would overlap
        const QString label = labelText(QString::fromStdString(g.nodes[i].label), 10) +
                              QStringLiteral(" %1").arg(g.nodes[i].probability, 0, 'f', 2);
        const double w = small.horizontalAdvance(label) + 4;
        painter.drawText(QRectF(c.x() - lay.radius * 2 - w, c.y() - small.height() / 2, w, small.height()),
                         Qt::AlignRight | Qt::AlignVCenter, label);
    }
    painter.restore();
}

int64_t nodeAt(const GraphLayout& lay, const QPointF& point, double radius) {
    int64_t best = -1;
    double bestD = radius * radius;
    for (size_t i = 0; i < lay.at.size(); ++i) {
        const QPointF c = lay.at[i];
        if (std::isnan(c.x())) continue;
        const double dx = c.x() - point.x(), dy = c.y() - point.y(), d = dx * dx + dy * dy;
        if (d <= bestD) {
            bestD = d;
            best = static_cast<int64_t>(i);
        }
    }
    return best;
}

std::pair<int64_t, int64_t> edgeAt(const GraphLayout& lay, const AttributionGraph& g, const GraphPruning& p,
                                   const QPointF& point, double tolerance) {
    const size_t n = static_cast<size_t>(g.nodeCount());
    std::pair<int64_t, int64_t> best{-1, -1};
    double bestD = tolerance;
    for (size_t r = 0; r < g.rowNodes.size(); ++r) {
        const QPointF b = lay.at[static_cast<size_t>(g.rowNodes[r])];
        if (std::isnan(b.x())) continue;
        for (size_t j = 0; j < n; ++j) {
            if (p.edgeKept.empty() || !p.edgeKept[r * n + j]) continue;
            const QPointF a = lay.at[j];
            if (std::isnan(a.x())) continue;
            // Distance to the drawn curve, sampled.
            const QPointF mid = (a + b) / 2 + QPointF((b.y() - a.y()) * 0.08, 0);
            for (int k = 0; k <= 16; ++k) {
                const double t = k / 16.0;
                const QPointF q = (1 - t) * (1 - t) * a + 2 * (1 - t) * t * mid + t * t * b;
                const double d = std::hypot(q.x() - point.x(), q.y() - point.y());
                if (d < bestD) {
                    bestD = d;
                    best = {g.rowNodes[r], static_cast<int64_t>(j)};
                }
            }
        }
    }
    return best;
}

const char* const kGraphModelNames[2] = {"Grassmann", "Transformer"};

std::vector<int> drawnModels(const gwb::engine::GraphPair* pair) {
    std::vector<int> out;
    for (int m = 0; pair && m < 2; ++m)
        if (pair->ran[m] && pair->errors[m].empty() && pair->graphs[m].nodeCount() > 0) out.push_back(m);
    return out;
}

QString panelTitle(const gwb::engine::GraphPair& pair, int m) {
    const AttributionGraph& g = pair.graphs[m];
    return QStringLiteral("%1 %2: replacement %3, completeness %4")
        .arg(QLatin1String(kGraphModelNames[m]), QString::fromStdString(g.modelName))
        .arg(g.scores.replacement, 0, 'f', 3)
        .arg(g.scores.completeness, 0, 'f', 3);
}

} // namespace gwb::views::detail
