"""gwb.graph checked against the model itself: the logit nodes are the model's own logits (a plain
run), the feature nodes the transcoders' activations on ffn_in.L read by hooks, every row complete,
the same graph as `gwb graph` writes, and interventions: ablating or steering a top feature in the
real model (gwb.features' edits) moves the top logit as the graph's linear effects predict."""

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


def test_pins_and_supernodes_are_saved_in_the_qparams(setup, tmp_path):
    _, _, _, _, g = setup
    kept = [i for i in range(len(g.node_ids)) if g.node_kept[i]]
    g.save(tmp_path / "g.json", pinned=[kept[0], g.node_ids[kept[-1]]], supernodes={"pair": kept[:2]},
           clicked=kept[-1])
    q = json.loads((tmp_path / "g.json").read_text())["qParams"]
    assert q["pinnedIds"] == [g.node_ids[kept[0]], g.node_ids[kept[-1]]]
    assert q["supernodes"] == [["pair", g.node_ids[kept[0]], g.node_ids[kept[1]]]]
    assert q["clickedId"] == g.node_ids[kept[-1]]
    assert json.loads((tmp_path / "g.json").read_text())["nodes"] == g.json["nodes"]
    with pytest.raises(ValueError, match="no node"):
        g.save(tmp_path / "bad.json", pinned=["99_99_99"])
    assert not (tmp_path / "bad.json").exists()


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


def test_ablating_or_steering_top_features_moves_the_logit_as_the_graph_predicts(setup):
    """The feature edits of gwb.features (hooks on a transcoder's input and output sites, in the real
    model, not the replacement): ablate each of the top features feeding the top logit, or steer it
    by half its own activation; the logit's change is compared with the graph's linear prediction,
    the feature's total effect through every path of the graph. Measured here (small transcoders:
    d_sae 256, k 8, 16k tokens): ablate r = 0.68, steer r = 0.54 (Grassmann); 0.71 and 0.71
    (Transformer)."""
    model, tc, _, ids, g = setup
    top = int(np.nonzero(g.node_kind == 3)[0][0])
    token = int(g.node_index[top])
    # Effect of a unit change of each feature's value on every node, along every path:
    # total = (I - A D)^-1, with D dividing a feature's column by its value (edges are value x slope).
    a = g.adjacency().astype(np.float64)
    n = a.shape[0]
    features = np.nonzero(g.node_kind == 0)[0]
    total = np.linalg.solve(np.eye(n) - a / np.where(g.node_value != 0, g.node_value, 1)[None, :] *
                            (g.node_kind == 0)[None, :], np.eye(n))
    ranked = features[np.argsort(-np.abs(a[top][features]))][:12]
    base = model.run(ids)[-1].astype(np.float64)
    base_metric = base[token] - base.mean()
    predicted, measured = {"ablate": [], "steer": []}, {"ablate": [], "steer": []}
    for i in ranked:
        layer, pos, f = int(g.node_layer[i]), int(g.node_position[i]), int(g.node_index[i])
        for mode, change in (("ablate", -1.0), ("steer", 0.5)):
            value = change * float(g.node_value[i]) if mode == "steer" else 0.0
            out = model.run(ids, hooks=gwb.features.hooks(tc[layer], f, mode=mode, value=value,
                                                          position=pos))[-1].astype(np.float64)
            measured[mode].append(out[token] - out.mean() - base_metric)
            predicted[mode].append(change * total[top, i] * g.node_value[i])
    r = {mode: np.corrcoef(predicted[mode], measured[mode])[0, 1] for mode in predicted}
    print(f"{model.config['kind']}: intervention correlation over {len(ranked)} features: ablate r = "
          f"{r['ablate']:.3f}, steer r = {r['steer']:.3f}")
    assert r["ablate"] > 0.5, (predicted["ablate"], measured["ablate"])
    assert r["steer"] > 0.4, (predicted["steer"], measured["steer"])


def test_options_are_the_engines_and_a_bad_value_gets_the_command_lines_sentence(tmp_path):
    table = {o["key"]: o for o in gwb.graph_options()}
    keys = ["max_logits", "logit_probability", "max_features", "node_threshold", "edge_threshold", "batch"]
    assert list(table) == keys
    # graph()'s docstring states the defaults the engine declares, in the same order.
    stated = "(" + ", ".join(f"{table[k]['default']:g}" for k in keys) + ")"
    assert stated in " ".join(gwb.graph.__doc__.split()), stated
    model = gwb.bundled("grassmann")
    sentence = "max_logits (--max-logits) must be an integer, at least 1; got 0"
    with pytest.raises(ValueError, match=sentence.replace("(", r"\(").replace(")", r"\)")):
        gwb.graph(model, "it is", [], max_logits=0, progress=False)
    with pytest.raises(ValueError, match=r"logit_probability \(--logit-probability\) must be a number in \(0, 1\]"):
        gwb.graph(model, "it is", [], logit_probability=1.5, progress=False)
    with pytest.raises(ValueError, match="must be an integer"):
        gwb.graph(model, "it is", [], batch=2.5, progress=False)
    with pytest.raises(TypeError, match="max_features must be a number"):
        gwb.graph(model, "it is", [], max_features="many", progress=False)
    # The command line refuses the same value with the same sentence, before it loads anything.
    r = run_gwb("graph", "--model", "grassmann", "--transcoders", tmp_path, "--prompt", "it is", "--out",
                tmp_path / "g.json", "--max-logits", "0", check=False)
    assert r.returncode == 1 and sentence in r.stderr, r.stderr
    help_text = run_gwb("graph", "--help").stdout
    for o in table.values():
        assert f"--{o['flag']}" in help_text and o["range"] in " ".join(help_text.split()), o
