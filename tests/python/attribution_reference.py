"""Independent PyTorch reference for attribution patching (issue 28).

Written from the definition in engine/include/gwb/engine/patching.h (attributionSweep) and the
site hooks of patching_reference.py (itself written from docs/model-spec.md), not from the
engine's code. For a site, every layer's activation gets a zero delta added through the forward
hooks; autograd gives d metric / d activation on the changed run (every later activation still
computed from it), and a cell's estimate is

    sum over the cell's entries of (source value - changed value) * d metric / d value

with the source value the clean run's (patch), 0 (zero) or the mean over the changed run's
positions (mean; offsets: over the positions t >= D where the offset is valid).

Cells: resid (rows l = 0..N), mixer, gate, ffn: rows x positions; head: rows x heads (every
position); offset: rows x the sorted union of the layers' offsets (every valid position), NaN where
the layer lacks the offset or D >= T.

Usage: attribution_reference.py REQUESTS.json OUT.json
REQUESTS.json: a list of {"model": m.gwb, "changed": [ids], "source": [ids], "site", "mode",
                          "answer": id, "wrong": id, "position": metric position}
OUT.json: a list of {"rows": R, "cols": C, "values": [R*C floats, NaN as null]}.
"""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from patching_reference import DTYPE, Reference, read_gwb  # noqa: E402


def keys_for(model, site):
    """The hook keys of a site, one per row of the sweep (heads: one per layer and head)."""
    if site == "resid":
        return [("resid", l) for l in range(model.N + 1)]
    if site == "head":
        return [("head", l * 1000 + h) for l in range(model.N) for h in range(model.heads)]
    return [(site, l) for l in range(model.N)]


def run_values(model, ids, site):
    """The activations of `site` at every key in a plain run (detached)."""
    box = {}

    def grab(key):
        def fn(v):
            if site == "offset":
                per, dropped = v
                box[key] = {D: p.detach().clone() for D, p in per.items()}
            else:
                box[key] = v.detach().clone()
            return v
        return fn

    model.hooks.fns = {k: grab(k) for k in keys_for(model, site)}
    with torch.no_grad():
        model(ids)
    model.hooks.fns = {}
    return box


def estimate(model, req):
    site, mode = req["site"], req["mode"]
    changed, m = req["changed"], int(req["position"])
    T = len(changed)
    keys = keys_for(model, site)
    base = run_values(model, changed, site)
    if mode == "patch":
        source = run_values(model, req["source"], site)
    deltas = {}

    def add(key):
        def fn(v):
            if site == "offset":
                per, dropped = v
                out = {}
                for D, p in per.items():
                    d = torch.zeros_like(p, requires_grad=True)
                    deltas[(key, D)] = d
                    valid = (torch.arange(T) >= D).to(DTYPE).unsqueeze(1)
                    out[D] = p + d * valid
                return out, dropped
            d = torch.zeros_like(v, requires_grad=True)
            deltas[key] = d
            return v + d
        return fn

    model.hooks.fns = {k: add(k) for k in keys}
    logits = model(changed)
    model.hooks.fns = {}
    metric = logits[m, int(req["answer"])] - logits[m, int(req["wrong"])]
    names = list(deltas.keys())
    grads = dict(zip(names, torch.autograd.grad(metric, [deltas[k] for k in names], allow_unused=True)))

    def src_of(key, b, D=None):
        if mode == "patch":
            return source[key][D] if D is not None else source[key]
        if mode == "zero":
            return torch.zeros_like(b)
        if D is not None:  # mean over the valid positions t >= D
            s = b.clone()
            if D < T:
                s[D:] = b[D:].mean(dim=0, keepdim=True)
            return s
        return b.mean(dim=0, keepdim=True).expand_as(b)

    def change(key, D=None):
        b = base[key][D] if D is not None else base[key]
        g = grads[(key, D)] if D is not None else grads[key]
        if g is None:
            g = torch.zeros_like(b)
        return (src_of(key, b, D) - b) * g

    nan = float("nan")
    if site in ("resid", "mixer", "gate", "ffn"):
        rows = len(keys)
        values = []
        for key in keys:
            c = change(key)  # T x d
            values += [float(c[t].sum()) for t in range(T)]
        return rows, T, values
    if site == "head":
        values = [float(change(k).sum()) for k in keys]
        return model.N, model.heads, values
    # offset
    allD = sorted({D for offs in model.offsets for D in offs})
    values = []
    for l in range(model.N):
        for D in allD:
            if D not in model.offsets[l] or D >= T:
                values.append(nan)
            else:
                values.append(float(change(("offset", l), D).sum()))
    return model.N, len(allD), values


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        requests = json.load(f)
    models, out = {}, []
    for req in requests:
        path = req["model"]
        if path not in models:
            models[path] = Reference(*read_gwb(path))
        rows, cols, values = estimate(models[path], req)
        out.append({"rows": rows, "cols": cols,
                    "values": [None if math.isnan(v) else v for v in values]})
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
