"""gwb.graph checked against the model itself: the logit nodes are the model's own logits (a plain
run), the feature nodes the transcoders' activations on ffn_in.L read by hooks, every row complete,
the same graph as `gwb graph` writes, and interventions: ablating a top feature in the real model
(a hook on ffn.L) moves the top logit as the graph's linear effects predict."""

import json

import numpy as np
import pytest

import gwb
from conftest import PROMPT, austen_split, run_gwb


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return austen_split(tmp_path_factory, "graph", 80_000, 70_000)


@pytest.fixture(scope="module", params=["grassmann", "transformer"])
def setup(request, corpus, tmp_path_factory):
    model = gwb.bundled(request.param)
    out = tmp_path_factory.mktemp("tc") / request.param
    tc = gwb.features.train_transcoders(model, [corpus[0]], out, d_sae=256, k=8, tokens=16384, batch=512,
                                        context=64, progress=False)
    ids = model.encode(PROMPT)[:16]
    return model, tc, out, ids, gwb.graph(model, ids, tc, progress=False)


def test_nodes_are_the_models_own_values_and_every_row_is_complete(setup):
    model, tc, _, ids, g = setup
    assert g.completeness.max() < 1e-9
    assert g.max_logit_error < 1e-4
    logits = model.run(ids)[-1].astype(np.float64)
    logit_nodes = np.nonzero(g.node_kind == 3)[0]
    assert len(logit_nodes) >= 1 and g.node_index[logit_nodes[0]] == int(np.argmax(logits))
    for i in logit_nodes:
        assert abs(g.node_value[i] - (logits[g.node_index[i]] - logits.mean())) < 1e-3
    # Features: the transcoder's activations on the FFN's input, read here by a hook.
    seen = {}
    model.run(ids, hooks={f"ffn_in.{l}": (lambda v, name: seen.__setitem__(name, v.copy()))
                          for l in range(model.config["n_layers"])})
    for i in np.nonzero(g.node_kind == 0)[0]:
        layer, pos, f = int(g.node_layer[i]), int(g.node_position[i]), int(g.node_index[i])
        act = tc[layer].encode(seen[f"ffn_in.{layer}"][pos:pos + 1])[0, f]
        assert abs(act - g.node_value[i]) < 1e-3 * max(1.0, abs(act)), (layer, pos, f)
    # The dense adjacency is the rows put in place; the scores lie in (0, 1].
    a = g.adjacency()
    assert np.array_equal(a[g.row_nodes], g.adjacency_rows)
    assert 0 < g.scores["replacement"] <= 1 and 0 < g.scores["completeness"] <= 1
    assert g.json["metadata"]["gwb"]["architecture"] == model.config["kind"]


def test_the_command_line_writes_the_same_graph(setup, tmp_path):
    model, _, out, ids, g = setup
    kind = model.config["kind"]
    run_gwb("graph", "--model", kind, "--transcoders", out, "--prompt", model.decode(ids), "--out", tmp_path / "g.json")
    theirs = json.loads((tmp_path / "g.json").read_text())
    if [n["node_id"] for n in theirs["nodes"]] and model.encode(model.decode(ids)) == list(ids):
        assert [n["node_id"] for n in theirs["nodes"]] == [n["node_id"] for n in g.json["nodes"]]
        ours = {(l["source"], l["target"]): l["weight"] for l in g.json["links"]}
        for link in theirs["links"]:
            assert abs(ours[(link["source"], link["target"])] - link["weight"]) < 1e-6


def test_ablating_top_features_moves_the_logit_as_the_graph_predicts(setup):
    model, tc, _, ids, g = setup
    top = int(np.nonzero(g.node_kind == 3)[0][0])
    token = int(g.node_index[top])
    # Linear prediction of removing a feature: its total effect on the top logit through the graph,
    # sum over paths (I + A + A^2 + ...) with downstream features following their pre-activations.
    a = g.adjacency().astype(np.float64)
    n = a.shape[0]
    features = np.nonzero(g.node_kind == 0)[0]
    # Effect of a unit change of each node's value on every node: solve (I - A_ff) along features.
    total = np.linalg.solve(np.eye(n) - a / np.where(g.node_value != 0, g.node_value, 1)[None, :] *
                            (g.node_kind == 0)[None, :], np.eye(n))
    row = a[top]
    ranked = features[np.argsort(-np.abs(row[features]))][:12]
    base = model.run(ids)[-1].astype(np.float64)
    base_metric = base[token] - base.mean()
    predicted, measured = [], []
    for i in ranked:
        layer, pos, f = int(g.node_layer[i]), int(g.node_position[i]), int(g.node_index[i])
        direction = tc[layer].W_dec[f] * g.node_value[i]

        def ablate(v, name, pos=pos, direction=direction):
            v = v.copy()
            v[pos] -= direction
            return v

        out = model.run(ids, hooks={f"ffn.{layer}": ablate})[-1].astype(np.float64)
        measured.append(out[token] - out.mean() - base_metric)
        # d(top) / d(value_i) x (-value_i), along every path of the linear graph
        predicted.append(-(total[top, i]) * g.node_value[i] * 1.0)
    r = np.corrcoef(predicted, measured)[0, 1]
    print(f"{model.config['kind']}: intervention correlation r = {r:.3f} over {len(ranked)} features")
    assert r > 0.5, (predicted, measured)
