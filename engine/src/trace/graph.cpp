// The attribution graph's Torch-free half (gwb/engine/graph.h): circuit-tracer's pruning and scores
// over the adjacency kept by rows, and the two files.

#include "gwb/engine/graph.h"

#include "gwb/engine/npy.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <stdexcept>

namespace gwb::engine {

using nlohmann::ordered_json;

namespace {

/// The adjacency's rows with |a| / sum |a| over the kept columns (circuit-tracer's normalize_matrix)
/// into `a` (R x n, its storage reused: one such buffer is the pruning's largest allocation); a row of
/// zeros stays 0, and with `keepNodes` a dropped row or column is 0.
void normaliseRows(const AttributionGraph& g, const std::vector<uint8_t>* keepNodes, std::vector<double>& a) {
    const size_t n = static_cast<size_t>(g.nodeCount()), R = g.rowNodes.size();
    a.assign(R * n, 0.0);
    for (size_t r = 0; r < R; ++r) {
        if (keepNodes && !(*keepNodes)[static_cast<size_t>(g.rowNodes[r])]) continue;
        double s = 0;
        for (size_t j = 0; j < n; ++j) {
            if (keepNodes && !(*keepNodes)[j]) continue;
            const double v = std::abs(static_cast<double>(g.rows.data[r * n + j]));
            a[r * n + j] = v;
            s += v;
        }
        for (size_t j = 0; j < n; ++j)
            a[r * n + j] /= std::max(s, 1e-10);
    }
}

/// sum over k >= 1 of w A^k for A kept by rows.
std::vector<double> influenceOf(const AttributionGraph& g, const std::vector<double>& a, const std::vector<double>& w) {
    const size_t n = static_cast<size_t>(g.nodeCount()), R = g.rowNodes.size();
    std::vector<double> total(n, 0.0), cur = w;
    for (int iter = 0; iter < 1000; ++iter) {
        std::vector<double> next(n, 0.0);
        bool any = false;
        for (size_t r = 0; r < R; ++r) {
            const double x = cur[static_cast<size_t>(g.rowNodes[r])];
            if (x == 0) continue;
            for (size_t j = 0; j < n; ++j)
                next[j] += x * a[r * n + j];
        }
        for (size_t j = 0; j < n; ++j) {
            total[j] += next[j];
            any = any || next[j] != 0;
        }
        if (!any) return total;
        cur.swap(next);
    }
    throw std::runtime_error("influence did not converge: the graph has a cycle");
}

std::vector<double> logitWeights(const AttributionGraph& g) {
    std::vector<double> w(static_cast<size_t>(g.nodeCount()), 0.0);
    for (int64_t i = 0; i < g.nodeCount(); ++i)
        if (g.nodes[static_cast<size_t>(i)].kind == GraphNodeKind::Logit)
            w[static_cast<size_t>(i)] = g.nodes[static_cast<size_t>(i)].probability;
    return w;
}

/// circuit-tracer's find_threshold: the score at which the sorted cumulative share reaches `share`.
double findThreshold(std::vector<double> scores, double share) {
    // Zeros add nothing to the cumulative share: sort the rest (most of a sparse adjacency is 0).
    scores.erase(std::remove(scores.begin(), scores.end(), 0.0), scores.end());
    if (scores.empty()) return 0;
    std::sort(scores.begin(), scores.end(), std::greater<double>());
    const double total = std::accumulate(scores.begin(), scores.end(), 0.0);
    double cum = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
        cum += scores[i];
        if (total > 0 && cum / total >= share) return scores[i];
    }
    return scores.back();
}

/// The replacement and completeness scores from the normalised rows `a`, the logit weights and the
/// influence they give (graphScores; pruneGraph shares its own).
GraphScores scoresOf(const AttributionGraph& g, const std::vector<double>& a, const std::vector<double>& w,
                     const std::vector<double>& influence) {
    const size_t n = static_cast<size_t>(g.nodeCount()), R = g.rowNodes.size();
    double tokens = 0, errors = 0;
    for (size_t i = 0; i < n; ++i) {
        if (g.nodes[i].kind == GraphNodeKind::Token) tokens += influence[i];
        if (g.nodes[i].kind == GraphNodeKind::Error) errors += influence[i];
    }
    GraphScores s;
    s.replacement = tokens + errors > 0 ? tokens / (tokens + errors) : 0.0;
    // Rows without incoming edges have no error share: their non-error fraction is 1.
    std::vector<double> nonError(n, 1.0);
    for (size_t r = 0; r < R; ++r) {
        double e = 0;
        for (size_t j = 0; j < n; ++j)
            if (g.nodes[j].kind == GraphNodeKind::Error) e += a[r * n + j];
        nonError[static_cast<size_t>(g.rowNodes[r])] = 1.0 - e;
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        const double out = influence[i] + w[i];
        num += nonError[i] * out;
        den += out;
    }
    s.completeness = den > 0 ? num / den : 0.0;
    return s;
}

} // namespace

double AttributionGraph::edge(int64_t target, int64_t source) const {
    const auto it = std::find(rowNodes.begin(), rowNodes.end(), target);
    if (it == rowNodes.end()) return 0.0;
    const auto r = static_cast<size_t>(it - rowNodes.begin());
    return rows.data[r * static_cast<size_t>(nodeCount()) + static_cast<size_t>(source)];
}

std::string AttributionGraph::nodeId(int64_t node) const {
    const GraphNode& n = nodes.at(static_cast<size_t>(node));
    switch (n.kind) {
    case GraphNodeKind::Feature:
        return std::to_string(n.layer) + "_" + std::to_string(n.index) + "_" + std::to_string(n.position);
    case GraphNodeKind::Error:
        return std::to_string(n.layer) + "_-1_" + std::to_string(n.position);
    case GraphNodeKind::Token:
        return "E_" + std::to_string(n.index) + "_" + std::to_string(n.position);
    case GraphNodeKind::Logit:
        return std::to_string(layers + 1) + "_" + std::to_string(n.index) + "_" + std::to_string(n.position);
    }
    return "";
}

GraphPruning pruneGraph(const AttributionGraph& g, double nodeThreshold, double edgeThreshold, GraphScores* scores) {
    if (!(nodeThreshold >= 0 && nodeThreshold <= 1) || !(edgeThreshold >= 0 && edgeThreshold <= 1))
        throw std::invalid_argument("the node and edge thresholds must lie in [0, 1]");
    const size_t n = static_cast<size_t>(g.nodeCount()), R = g.rowNodes.size();
    const std::vector<double> w = logitWeights(g);
    GraphPruning p;
    std::vector<double> a;
    normaliseRows(g, nullptr, a);
    p.influence = influenceOf(g, a, w);
    if (scores) *scores = scoresOf(g, a, w, p.influence); // the same normalised rows and influence
    const double nodeCut = findThreshold(p.influence, nodeThreshold);
    p.nodeKept.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const GraphNodeKind k = g.nodes[i].kind;
        p.nodeKept[i] = p.influence[i] >= nodeCut || k == GraphNodeKind::Token || k == GraphNodeKind::Logit;
    }
    // Edge scores on the graph of the kept nodes: normalised weight x (influence of its target + logit
    // weight). They are computed where needed, never stored whole: the threshold needs only the
    // non-zero ones (a long prompt's adjacency is mostly zeros), the mask recomputes the same product.
    normaliseRows(g, &p.nodeKept, a);
    std::vector<double> targetInfluence = influenceOf(g, a, w);
    for (size_t i = 0; i < n; ++i)
        targetInfluence[i] += w[i];
    auto score = [&](size_t r, size_t j) { return a[r * n + j] * targetInfluence[static_cast<size_t>(g.rowNodes[r])]; };
    size_t count = 0;
    for (size_t e = 0; e < R * n; ++e)
        count += a[e] != 0;
    std::vector<double> nonZero;
    nonZero.reserve(count);
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < n; ++j)
            if (const double s = score(r, j); s != 0) nonZero.push_back(s);
    const double edgeCut = findThreshold(std::move(nonZero), edgeThreshold);
    p.edgeKept.assign(R * n, 0);
    for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < n; ++j) {
            const double s = score(r, j);
            p.edgeKept[r * n + j] = s > 0 && s >= edgeCut;
        }
    a = std::vector<double>(); // released before the mask's fixed point
    // Features and errors need an outgoing edge, features an incoming one; repeat until stable.
    std::vector<uint8_t> hasRow(n, 0);
    for (const int64_t node : g.rowNodes)
        hasRow[static_cast<size_t>(node)] = 1;
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < R; ++r)
            for (size_t j = 0; j < n; ++j)
                if (!p.nodeKept[j] || !p.nodeKept[static_cast<size_t>(g.rowNodes[r])]) p.edgeKept[r * n + j] = 0;
        std::vector<uint8_t> outgoing(n, 0), incoming(n, 0);
        for (size_t r = 0; r < R; ++r)
            for (size_t j = 0; j < n; ++j)
                if (p.edgeKept[r * n + j]) {
                    outgoing[j] = 1;
                    incoming[static_cast<size_t>(g.rowNodes[r])] = 1;
                }
        for (size_t i = 0; i < n; ++i) {
            if (!p.nodeKept[i]) continue;
            const GraphNodeKind k = g.nodes[i].kind;
            const bool drop = ((k == GraphNodeKind::Feature || k == GraphNodeKind::Error) && !outgoing[i]) ||
                              (k == GraphNodeKind::Feature && hasRow[i] && !incoming[i]);
            if (drop) {
                p.nodeKept[i] = 0;
                changed = true;
            }
        }
    }
    // Cumulative influence share at each node's rank.
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p.influence[x] > p.influence[y]; });
    const double total = std::accumulate(p.influence.begin(), p.influence.end(), 0.0);
    p.cumulative.assign(n, 0.0);
    double cum = 0;
    for (size_t i : order) {
        cum += p.influence[i];
        p.cumulative[i] = total > 0 ? cum / total : 0.0;
    }
    p.keptNodes = std::count(p.nodeKept.begin(), p.nodeKept.end(), 1);
    p.keptEdges = std::count(p.edgeKept.begin(), p.edgeKept.end(), 1);
    return p;
}

GraphScores graphScores(const AttributionGraph& g) {
    const std::vector<double> w = logitWeights(g);
    std::vector<double> a;
    normaliseRows(g, nullptr, a);
    return scoresOf(g, a, w, influenceOf(g, a, w));
}

std::string graphJson(const AttributionGraph& g, const GraphPruning& p, const std::string& slug, double nodeThreshold,
                      const GraphAnnotations& a) {
    const size_t n = static_cast<size_t>(g.nodeCount());
    const GraphScores& scores = g.scores;
    ordered_json meta = {{"slug", slug},
                         {"scan", "gwb-" + g.modelName},
                         {"transcoder_list", ordered_json::array()},
                         {"prompt_tokens", g.pieces},
                         {"prompt", g.prompt},
                         {"node_threshold", nodeThreshold},
                         {"schema_version", 1}};
    meta["gwb"] = {{"model", g.modelName},
                   {"architecture", g.architecture},
                   {"layers", g.layers},
                   {"units", g.units},
                   {"active_features", g.activeFeatures},
                   {"features_with_rows", g.features},
                   {"replacement_score", scores.replacement},
                   {"completeness_score", scores.completeness},
                   {"max_completeness_error",
                    g.completeness.empty() ? 0.0 : *std::max_element(g.completeness.begin(), g.completeness.end())},
                   {"max_logit_error", g.maxLogitError},
                   {"seconds", g.seconds}};
    ordered_json nodes = ordered_json::array();
    for (size_t i = 0; i < n; ++i) {
        if (!p.nodeKept[i]) continue;
        const GraphNode& node = g.nodes[i];
        ordered_json j;
        const std::string id = g.nodeId(static_cast<int64_t>(i));
        j["node_id"] = id;
        switch (node.kind) {
        case GraphNodeKind::Feature: // circuit-tracer's cantor pairing of (layer, feature)
            j["feature"] = (node.layer + node.index) * (node.layer + node.index + 1) / 2 + node.index;
            j["layer"] = std::to_string(node.layer);
            j["feature_type"] = "cross layer transcoder";
            j["jsNodeId"] = std::to_string(node.layer) + "_" + std::to_string(node.index) + "-0";
            break;
        case GraphNodeKind::Error:
            j["feature"] = -1;
            j["layer"] = std::to_string(node.layer);
            j["feature_type"] = "mlp reconstruction error";
            j["jsNodeId"] = std::to_string(node.layer) + "_-1-" + std::to_string(node.position);
            break;
        case GraphNodeKind::Token:
            j["feature"] = node.position;
            j["layer"] = "E";
            j["feature_type"] = "embedding";
            j["jsNodeId"] = "E_" + std::to_string(node.index) + "-" + std::to_string(node.position);
            break;
        case GraphNodeKind::Logit:
            j["feature"] = node.index;
            j["layer"] = std::to_string(g.layers + 1);
            j["feature_type"] = "logit";
            j["jsNodeId"] = "L_" + std::to_string(node.index) + "-" + std::to_string(node.position);
            break;
        }
        j["ctx_idx"] = node.position;
        j["token_prob"] = node.probability;
        j["is_target_logit"] = node.kind == GraphNodeKind::Logit && i == n - static_cast<size_t>(g.logits);
        j["run_idx"] = 0;
        j["reverse_ctx_idx"] = 0;
        std::string clerp;
        if (node.kind == GraphNodeKind::Logit) {
            char buf[64];
            std::snprintf(buf, sizeof buf, " (p=%.3f)", node.probability);
            clerp = "Output \"" + node.label + "\"" + buf;
        }
        j["clerp"] = clerp;
        j["influence"] = p.cumulative[i];
        if (node.kind == GraphNodeKind::Feature)
            j["activation"] = node.value;
        else
            j["activation"] = nullptr;
        nodes.push_back(std::move(j));
    }
    ordered_json links = ordered_json::array();
    std::map<std::pair<int64_t, int64_t>, std::vector<const EdgeLoading*>> loads;
    for (const EdgeLoading& e : g.loadings)
        loads[{e.target, e.source}].push_back(&e);
    for (size_t r = 0; r < g.rowNodes.size(); ++r)
        for (size_t j = 0; j < n; ++j) {
            if (!p.edgeKept[r * n + j]) continue;
            const int64_t target = g.rowNodes[r];
            ordered_json link = {{"source", g.nodeId(static_cast<int64_t>(j))},
                                 {"target", g.nodeId(target)},
                                 {"weight", g.rows.data[r * n + j]}};
            const auto it = loads.find({target, static_cast<int64_t>(j)});
            if (it != loads.end()) {
                ordered_json per = ordered_json::array();
                for (const EdgeLoading* e : it->second) {
                    ordered_json units = ordered_json::object();
                    for (size_t u = 0; u < e->units.size(); ++u)
                        units[g.units[static_cast<size_t>(e->layer)][u]] = e->units[u];
                    per.push_back({{"layer", e->layer}, {"skip", e->skip}, {"units", units}});
                }
                link["loadings"] = per;
            }
            links.push_back(std::move(link));
        }
    auto nodeIdOf = [&](int64_t node) {
        if (node < 0 || node >= g.nodeCount())
            throw std::invalid_argument("graph annotations: node " + std::to_string(node) + " is not in the graph");
        return g.nodeId(node);
    };
    ordered_json pinned = ordered_json::array(), supernodes = ordered_json::array();
    for (int64_t node : a.pinned)
        pinned.push_back(nodeIdOf(node));
    for (const auto& [name, members] : a.supernodes) {
        ordered_json s = ordered_json::array({name});
        for (int64_t node : members)
            s.push_back(nodeIdOf(node));
        supernodes.push_back(std::move(s));
    }
    const ordered_json qParams = {{"pinnedIds", pinned},
                                  {"supernodes", supernodes},
                                  {"linkType", "both"},
                                  {"clickedId", a.clicked >= 0 ? nodeIdOf(a.clicked) : std::string()},
                                  {"sg_pos", ""}};
    const ordered_json doc = {{"metadata", meta}, {"qParams", qParams}, {"nodes", nodes}, {"links", links}};
    return doc.dump(2) + "\n";
}

void writeGraphJson(const std::string& path, const AttributionGraph& g, const GraphPruning& p, const std::string& slug,
                    double nodeThreshold, const GraphAnnotations& a) {
    const std::string text = graphJson(g, p, slug, nodeThreshold, a);
    writeBytesAtomic(path, text.data(), text.size());
}

void writeGraphNpz(const std::string& path, const AttributionGraph& g, const GraphPruning& p) {
    const auto n = g.nodeCount();
    const auto R = static_cast<int64_t>(g.rowNodes.size());
    NpzWriter w;
    w.add("row_nodes", Array<int64_t>({R}, g.rowNodes));
    w.add("adjacency_rows", g.rows);
    w.add("bias", Array<double>({R}, g.bias));
    w.add("completeness", Array<double>({R}, g.completeness));
    std::vector<int32_t> kind, layer;
    std::vector<int64_t> position, index;
    std::vector<double> value, probability;
    for (const GraphNode& node : g.nodes) {
        kind.push_back(static_cast<int32_t>(node.kind));
        layer.push_back(node.layer);
        position.push_back(node.position);
        index.push_back(node.index);
        value.push_back(node.value);
        probability.push_back(node.probability);
    }
    w.add("node_kind", Array<int32_t>({n}, kind));
    w.add("node_layer", Array<int32_t>({n}, layer));
    w.add("node_position", Array<int64_t>({n}, position));
    w.add("node_index", Array<int64_t>({n}, index));
    w.add("node_value", Array<double>({n}, value));
    w.add("node_probability", Array<double>({n}, probability));
    w.add("node_kept", Array<uint8_t>({n}, p.nodeKept));
    w.add("edge_kept", Array<uint8_t>({R, n}, p.edgeKept));
    w.add("influence", Array<double>({n}, p.influence));
    w.add("ids", Array<int32_t>({static_cast<int64_t>(g.ids.size())}, g.ids));
    // Loadings: one row per (edge, block): target, source, layer, then skip and every unit (NaN-padded).
    size_t width = 0;
    for (const auto& units : g.units)
        width = std::max(width, units.size());
    std::vector<int64_t> keys;
    std::vector<double> parts;
    for (const EdgeLoading& e : g.loadings) {
        keys.insert(keys.end(), {e.target, e.source, e.layer});
        parts.push_back(e.skip);
        for (size_t u = 0; u < width; ++u)
            parts.push_back(u < e.units.size() ? e.units[u] : std::nan(""));
    }
    const auto nl = static_cast<int64_t>(g.loadings.size());
    w.add("loading_edges", Array<int64_t>({nl, 3}, keys));
    w.add("loadings", Array<double>({nl, static_cast<int64_t>(width + 1)}, parts));
    const GraphScores& s = g.scores;
    ordered_json meta = {
        {"format", "gwb-graph"},
        {"version", 1},
        {"model", g.modelName},
        {"architecture", g.architecture},
        {"prompt", g.prompt},
        {"pieces", g.pieces},
        {"layers", g.layers},
        {"units", g.units},
        {"node_kinds", {"feature", "error", "token", "logit"}},
        {"counts", {{"features", g.features}, {"errors", g.errors}, {"tokens", g.tokens}, {"logits", g.logits}}},
        {"active_features", g.activeFeatures},
        {"replacement_score", s.replacement},
        {"completeness_score", s.completeness},
        {"max_logit_error", g.maxLogitError}};
    w.addFile("meta.json", meta.dump(2));
    w.write(path);
}

} // namespace gwb::engine
