"""Attribution graphs: which transcoder features, at which positions, make the next token, and
through which offsets (Grassmann) or heads (Transformer), as `gwb graph` computes them:

    tc = gwb.features.train_transcoders(model, ["austen.txt"], "transcoders", d_sae=1024, k=16)
    g = gwb.graph(model, "It is a truth universally acknowledged, that a", tc)
    g.scores                      # {"replacement": ..., "completeness": ...} as circuit-tracer defines them
    g.adjacency()                 # the full unpruned n x n adjacency (rows: targets, columns: sources)
    g.json                        # circuit-tracer's graph format (dict), pruned; g.save("graph.json")
    g.save("graph.json", pinned=["5_812_9"], supernodes={"say Emma": [12, 40]})  # qParams as the front end keeps them
    g.loadings                    # kept edges split across each mixer's units: [{"target", "source", "layer", ...}]

docs/attribution-graphs.md says what is frozen, how the Plücker product is split, and why every node
is complete (value = incoming edges + bias).
"""

import json
import numbers
import os

import numpy as np

from . import _gwb

NODE_KINDS = ("feature", "error", "token", "logit")


class Graph:
    """An attribution graph. Nodes are in circuit-tracer's order [features, errors, tokens, logits];
    node_ids are circuit-tracer's ("L_F_P", "L_-1_P", "E_V_P", "N+1_V_P"). The unpruned adjacency is
    kept by rows (`adjacency_rows`, the rows of `row_nodes`; every other row is 0); `node_kept` and
    `edge_kept` (per row) say what survives pruning."""

    def __init__(self, d):
        self._d = d
        self.json = json.loads(d["json"])
        for key, value in d.items():
            if key != "json":
                setattr(self, key, value)
        self.scores = {"replacement": d["replacement_score"], "completeness": d["completeness_score"]}

    def adjacency(self):
        """The whole unpruned adjacency as a dense (nodes x nodes) float32 array."""
        n = len(self.node_ids)
        a = np.zeros((n, n), dtype=np.float32)
        a[self.row_nodes] = self.adjacency_rows
        return a

    def kind(self, node):
        """"feature", "error", "token" or "logit"."""
        return NODE_KINDS[int(self.node_kind[node])]

    def _node_id(self, node):
        """A node's id from its index or its id; a ValueError names an unknown one."""
        if isinstance(node, str):
            if node not in self.node_ids:
                raise ValueError(f"no node {node!r} in the graph (ids look like {self.node_ids[0]!r})")
            return node
        i = int(node)
        if not 0 <= i < len(self.node_ids):
            raise ValueError(f"no node {i}: the graph has {len(self.node_ids)} nodes")
        return self.node_ids[i]

    def save(self, path, pinned=(), supernodes=None, clicked=None):
        """Writes the pruned graph in circuit-tracer's JSON format (atomically). `pinned` (node
        indices or ids), `supernodes` ({name: [nodes]}) and `clicked` (a node) go into its qParams
        as circuit-tracer's front end keeps them (pinnedIds, supernodes, clickedId), as the
        window's Graph view saves them."""
        doc = json.loads(self._d["json"])
        q = doc["qParams"]
        q["pinnedIds"] = [self._node_id(n) for n in pinned]
        q["supernodes"] = [[str(name)] + [self._node_id(n) for n in nodes] for name, nodes in (supernodes or {}).items()]
        q["clickedId"] = "" if clicked is None else self._node_id(clicked)
        from .results import _write_atomic
        _write_atomic(path, lambda f: f.write((json.dumps(doc, indent=2) + "\n").encode("utf-8")))

    def __repr__(self):
        c = self.counts
        return (f"<gwb.Graph {self.model} ({self.architecture}): {c['features']} features, {c['errors']} errors, "
                f"{c['tokens']} tokens, {c['logits']} logits; replacement {self.scores['replacement']:.3f}, "
                f"completeness {self.scores['completeness']:.3f}>")


def graph_options():
    """The graph's numeric options as the engine declares them, one dict each (key, flag, help,
    default, range, min, max, integer): the table `gwb graph --help` prints and graph() checks
    against."""
    return _gwb.graph_options()


def graph(model, prompt, transcoders, max_logits=None, logit_probability=None, max_features=None, batch=None,
          double_precision=True, loadings=True, node_threshold=None, edge_threshold=None, out=None, npz=None,
          slug=None, progress=True, answer=None, wrong=None, target=None, direction=None, direction_label=None):
    """The attribution graph of `prompt` (text or token ids) on `model` with `transcoders` (a folder,
    or the list gwb.features.load_transcoders / train_transcoders returns), as `gwb graph` computes
    it. `out` writes circuit-tracer's JSON, `npz` the unpruned graph. Returns a Graph.

    max_logits, logit_probability, max_features, node_threshold, edge_threshold and batch are the
    engine's options: None takes its default (10, 0.95, 4096, 0.8, 0.98, 32), and graph_options()
    lists each with its help and range. A value out of range raises ValueError with the sentence
    `gwb graph` prints.

    The logit nodes are the top logits unless one target is asked for (circuit-tracer's custom
    target; its node's index is past the vocabulary): answer= and wrong= (pieces) explain
    logit[answer] - logit[wrong], the metric of patch(); target= one piece's demeaned logit;
    direction= any direction in the unembedding space (d values; direction_label names it)."""
    from . import _ids, _progress
    from .features import _native, load_transcoders
    if isinstance(transcoders, (str, os.PathLike)):
        transcoders = load_transcoders(transcoders, model)
    if (answer is None) != (wrong is None):
        raise ValueError("answer and wrong go together: the target is logit[answer] - logit[wrong]")
    if sum(x is not None for x in (answer, target, direction)) > 1:
        raise ValueError("give one of answer/wrong, target or direction, not several")
    vec = [] if direction is None else [float(x) for x in np.asarray(direction, np.float64).reshape(-1)]
    given = dict(max_logits=max_logits, logit_probability=logit_probability, max_features=max_features, batch=batch,
                 node_threshold=node_threshold, edge_threshold=edge_threshold)
    options = {}
    for key, value in given.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{key} must be a number, got {value!r}")
        options[key] = float(value)
    from .results import _check_output
    if out is not None:
        _check_output(out, "out")  # before the work: a folder that cannot take the file fails now
    if npz is not None:
        _check_output(npz, "npz")
    text = prompt if isinstance(prompt, str) else ""
    ids = _ids(model, prompt)
    if slug is None:
        slug = os.path.splitext(os.path.basename(os.fspath(out)))[0] if out is not None else "graph"
    callback, close = _progress(progress, "graph")
    try:
        d = _gwb.graph_attribute(_native(model), list(transcoders), ids, text, options, bool(double_precision),
                                 bool(loadings), slug, "" if out is None else os.fspath(out),
                                 "" if npz is None else os.fspath(npz), callback, answer=answer or "",
                                 wrong=wrong or "", target=target or "", direction=vec,
                                 direction_label=direction_label or "")
    finally:
        close()
    return Graph(d)
