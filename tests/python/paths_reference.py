"""Independent PyTorch reference for path patching and direct effects (issue 29).

Written from the definitions in engine/include/gwb/engine/patching.h (pathPatching), not from the
engine's code: every component is a named value of patching_reference.py's forward hooks, and
freezing is done by replacing values.

Direct effect of sender S (receiver "logits"): run the corrupted prompt with S at its clean value;
what in S's own sublayer depends on S is recomputed (offset -> B_t -> g -> gate and mix; mixer ->
gate and mix; gate -> mix; head -> out_proj); every other component (every other layer's offsets,
mixer, gate and heads, and every FFN, S's own layer's included) keeps its value from the plain
corrupted run. The metric of that run. Receiver "resid.M" (M > S's layer): record h^M in that run,
then run the corrupted prompt normally with only h^M replaced.

Usage: paths_reference.py REQUESTS.json OUT.json
REQUESTS.json: a list of {"model", "clean", "corrupt", "answer", "wrong", "position",
  "sender": {"kind": offset|mixer|gate|ffn|head, "layer": l, "index": D or head},
  "sender_position": t or -1, "receivers": ["logits", "resid.M", ...]}
OUT.json: a list of lists of metrics (null where undefined).
"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from patching_reference import Reference, read_gwb  # noqa: E402


def capture_all(model, ids):
    """Every component's value in a plain run: {(site, key): value}."""
    box = {}

    def grab(key):
        def fn(v):
            if key[0] == "offset":
                per, dropped = v
                box[key] = {D: p.clone() for D, p in per.items()}
            else:
                box[key] = v.clone()
            return v
        return fn

    keys = []
    for l in range(model.N):
        keys += [("mixer", l), ("ffn", l)]
        if model.kind == "grassmann":
            keys += [("gate", l), ("offset", l)]
        else:
            keys += [("head", l * 1000 + h) for h in range(model.heads)]
    model.hooks.fns = {k: grab(k) for k in keys}
    model(ids)
    model.hooks.fns = {}
    return box


def rows_of(value, pos):
    """Where the sender takes its clean value: every row, or row pos."""
    mask = torch.zeros(value.shape[0], dtype=torch.bool)
    if pos < 0:
        mask[:] = True
    else:
        mask[pos] = True
    return mask


def metric_of(logits, m, answer, wrong):
    return float(logits[m, answer] - logits[m, wrong])


def run(model, req):
    clean, corrupt = req["clean"], req["corrupt"]
    m, answer, wrong = int(req["position"]), int(req["answer"]), int(req["wrong"])
    pos = int(req.get("sender_position", -1))
    s = req["sender"]
    kind, layer, index = s["kind"], int(s["layer"]), int(s.get("index", 0))
    cl = capture_all(model, clean)
    co = capture_all(model, corrupt)
    fns = {}
    frozen = lambda key: (lambda v: co[key])  # noqa: E731
    for l in range(model.N):
        own = l == layer
        fns[("ffn", l)] = frozen(("ffn", l))  # every FFN, the sender's layer's included
        if model.kind == "grassmann":
            if not own or kind in ("gate", "ffn"):
                fns[("mixer", l)] = frozen(("mixer", l))
            if not own or kind == "ffn":
                fns[("gate", l)] = frozen(("gate", l))
        elif not own or kind == "ffn":
            fns[("mixer", l)] = frozen(("mixer", l))

    def clean_rows(key):
        def fn(v):
            out = v.clone()
            mask = rows_of(v, pos)
            out[mask] = cl[key][mask]
            return out
        return fn

    if kind == "offset":
        def off(arg):
            per, dropped = arg
            per = dict(per)
            new = per[index].clone()
            mask = rows_of(new, pos)
            new[mask] = cl[("offset", layer)][index][mask]
            per[index] = new
            return per, dropped
        fns[("offset", layer)] = off
    elif kind == "head":
        fns[("head", layer * 1000 + index)] = clean_rows(("head", layer * 1000 + index))
    else:
        fns[(kind, layer)] = clean_rows((kind, layer))
    # The frozen run, recording every block input.
    resid = {}

    def rec(M):
        def fn(v):
            resid[M] = v.clone()
            return v
        return fn

    for M in range(model.N + 1):
        fns[("resid", M)] = rec(M)
    model.hooks.fns = fns
    direct = metric_of(model(corrupt), m, answer, wrong)
    out = []
    for r in req["receivers"]:
        if r == "logits":
            out.append(direct)
            continue
        M = int(r.split(".")[1])
        if M <= layer:
            out.append(None)
            continue
        model.hooks.fns = {("resid", M): (lambda v, M=M: resid[M])}
        out.append(metric_of(model(corrupt), m, answer, wrong))
    model.hooks.fns = {}
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        requests = json.load(f)
    models, out = {}, []
    with torch.no_grad():
        for req in requests:
            path = req["model"]
            if path not in models:
                models[path] = Reference(*read_gwb(path))
            out.append(run(models[path], req))
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
