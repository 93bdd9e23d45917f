// gwb._gwb.graph_*: attribution graphs (gwb/engine/graph_run.h) as numpy arrays and circuit-tracer's
// JSON, for gwb.graph (python/gwb/graph.py).

#include "bindings_common.h"
#include "option_table.h"

#include "gwb/engine/patch_input.h"
#include "gwb/engine/graph_run.h"
#include "gwb/engine/npy.h"

#include <pybind11/stl.h>

#include <map>

namespace gwb::python {

using namespace gwb::engine;

namespace {

py::dict graphDict(AttributionGraph&& g, const GraphPruning& p, const std::string& slug, double nodeThreshold) {
    py::dict d;
    d["json"] = graphJson(g, p, slug, nodeThreshold);
    const GraphScores& s = g.scores;
    d["replacement_score"] = s.replacement;
    d["completeness_score"] = s.completeness;
    d["max_logit_error"] = g.maxLogitError;
    d["seconds"] = g.seconds;
    d["model"] = g.modelName;
    d["architecture"] = g.architecture;
    d["pieces"] = g.pieces;
    d["units"] = g.units;
    d["counts"] = py::dict(py::arg("features") = g.features, py::arg("errors") = g.errors, py::arg("tokens") = g.tokens,
                           py::arg("logits") = g.logits, py::arg("active_features") = g.activeFeatures);
    const auto n = g.nodeCount();
    const auto R = static_cast<int64_t>(g.rowNodes.size());
    Array<int32_t> kind({n}, std::vector<int32_t>(static_cast<size_t>(n))), layer = kind;
    Array<int64_t> position({n}, std::vector<int64_t>(static_cast<size_t>(n))), index = position;
    Array<double> value({n}, std::vector<double>(static_cast<size_t>(n))), probability = value;
    std::vector<std::string> labels;
    for (int64_t i = 0; i < n; ++i) {
        const GraphNode& node = g.nodes[static_cast<size_t>(i)];
        kind.data[static_cast<size_t>(i)] = static_cast<int32_t>(node.kind);
        layer.data[static_cast<size_t>(i)] = node.layer;
        position.data[static_cast<size_t>(i)] = node.position;
        index.data[static_cast<size_t>(i)] = node.index;
        value.data[static_cast<size_t>(i)] = node.value;
        probability.data[static_cast<size_t>(i)] = node.probability;
        labels.push_back(g.nodeId(i));
    }
    d["node_ids"] = labels;
    d["node_kind"] = toNumpy(std::move(kind));
    d["node_layer"] = toNumpy(std::move(layer));
    d["node_position"] = toNumpy(std::move(position));
    d["node_index"] = toNumpy(std::move(index));
    d["node_value"] = toNumpy(std::move(value));
    d["node_probability"] = toNumpy(std::move(probability));
    d["row_nodes"] = toNumpy(Array<int64_t>({R}, g.rowNodes));
    d["adjacency_rows"] = toNumpy(std::move(g.rows));
    d["bias"] = toNumpy(Array<double>({R}, g.bias));
    d["completeness"] = toNumpy(Array<double>({R}, g.completeness));
    d["node_kept"] = toNumpy(Array<uint8_t>({n}, p.nodeKept));
    d["edge_kept"] = toNumpy(Array<uint8_t>({R, n}, p.edgeKept));
    d["influence"] = toNumpy(Array<double>({n}, p.influence));
    py::list loadings;
    for (const EdgeLoading& e : g.loadings) {
        py::dict units;
        for (size_t u = 0; u < e.units.size(); ++u)
            units[py::str(g.units[static_cast<size_t>(e.layer)][u])] = e.units[u];
        loadings.append(py::dict(py::arg("target") = e.target, py::arg("source") = e.source, py::arg("layer") = e.layer,
                                 py::arg("skip") = e.skip, py::arg("units") = units));
    }
    d["loadings"] = loadings;
    return d;
}

} // namespace

void registerGraph(py::module_& m) {
    m.def(
        "graph_options", [] { return optionList(graphOptions()); },
        "The graph's numeric options from the engine's table: key, flag, help, default and range.");
    m.def(
        "graph_attribute",
        [](PyModel& s, const std::vector<Dictionary>& layers, const std::vector<int32_t>& ids,
           const std::string& prompt, const py::dict& options, bool doublePrecision, bool loadings,
           const std::string& slug, const std::string& out, const std::string& npz, const py::object& progress,
           const std::string& answer, const std::string& wrong, const std::string& target,
           const std::vector<double>& direction, const std::string& directionLabel) {
            TranscoderSet set;
            set.layers = layers;
            GraphRequest r;
            r.ids = ids;
            r.prompt = prompt;
            // The numeric options by their keys, checked by the engine (the sentences of gwb graph).
            applyOptions(graphOptions(), options, r, "the graph");
            r.doublePrecision = doublePrecision;
            r.loadings = loadings;
            // The logit node asked for: a contrast, one piece, or a direction (else the top logits).
            if (!answer.empty() || !wrong.empty()) {
                if (answer.empty() || wrong.empty())
                    throw std::invalid_argument("answer and wrong go together: the target is logit[answer] - "
                                                "logit[wrong]");
                r.targets = {contrastTarget(s.model, pieceId(s.model, answer, "the answer piece"),
                                            pieceId(s.model, wrong, "the wrong piece"))};
            }
            if (!target.empty())
                r.targets.push_back(tokenTarget(s.model, pieceId(s.model, target, "the target piece")));
            if (!direction.empty()) {
                GraphTarget t;
                t.label = directionLabel.empty() ? std::string("direction") : directionLabel;
                t.direction = direction;
                r.targets.push_back(t);
            }
            if (r.targets.size() > 1)
                throw std::invalid_argument("give one of answer/wrong, target or direction, not several");
            Pending pending;
            r.progress = [&](double f, const std::string&) { return reportProgress(pending, progress, f); };
            PrunedGraph pruned = withoutGil(pending, [&] {
                PrunedGraph result = attributeAndPrune(s.model, set, r);
                if (!out.empty()) writeGraphJson(out, result.graph, result.pruning, slug, r.nodeThreshold);
                if (!npz.empty()) writeGraphNpz(npz, result.graph, result.pruning);
                return result;
            });
            pending.rethrowIfAny();
            return graphDict(std::move(pruned.graph), pruned.pruning, slug, r.nodeThreshold);
        },
        py::arg("model"), py::arg("transcoders"), py::arg("ids"), py::arg("prompt"), py::arg("options"),
        py::arg("double_precision"), py::arg("loadings"), py::arg("slug"), py::arg("out"), py::arg("npz"),
        py::arg("progress"), py::arg("answer") = "", py::arg("wrong") = "", py::arg("target") = "",
        py::arg("direction") = std::vector<double>{}, py::arg("direction_label") = "");
}

} // namespace gwb::python
