#!/usr/bin/python3
"""The analyses at the published model's scale (issue 39): a random-weight model of GrassLM-100M's
shape (resources/configs/grasslm-100m-shape.json: d 640, r 80, 12 layers, one offset per layer,
30,522 pieces, 4,096 positions; 96M parameters), on the CPU, through the Python package.

  scripts/bench --scale [--rounds 3] [--out docs/performance-scale.md]

Per T (256, 1024): the trace alone; the trace with every analysis the window runs, the first time
after loading with an empty read-out cache (a fresh cache folder: what a model never opened before
costs) and again in a fresh process with the cache filled (what a reopened model costs); and
`run` (logits) next to a plain PyTorch forward of the same weights (gwb.torch.module), alternately.
Medians over the rounds. What it does not measure yet: the GPU, the 124M Transformer, generation,
attribution at this scale (the rest of issue 39)."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import cpu_model, write_doc

CHILD = r"""
import os, sys, time, json, numpy as np, gwb
path, T = sys.argv[1], int(sys.argv[2])
m = gwb.load(path, device="cpu")
ids = [int(x) for x in np.random.default_rng(0).integers(0, m.config["vocab_size"], T)]
t0 = time.perf_counter(); m.trace(ids, analysis=True, progress=False); first = time.perf_counter() - t0
t0 = time.perf_counter(); m.trace(ids, progress=False); trace = time.perf_counter() - t0
t0 = time.perf_counter(); m.trace(ids, analysis=True, progress=False); again = time.perf_counter() - t0
print(json.dumps(dict(first=first, trace=trace, again=again)))
"""


def child(py, env, path, T):
    r = subprocess.run([py, "-c", CHILD, path, str(T)], capture_output=True, text=True, env=env, check=True)
    import json
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--T", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--out", default="docs/performance-scale.md")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    gwb_program = os.path.join(root, a.build, "bin", "gwb")
    py = "/usr/bin/python3"
    work = tempfile.mkdtemp(prefix="gwb-scale-")
    model = os.path.join(work, "grasslm-100m-shape.gwb")
    subprocess.run([gwb_program, "init", "--config", os.path.join(root, "resources/configs/grasslm-100m-shape.json"),
                    "--seed", "1", "--out", model], check=True, capture_output=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(root, a.build, "python"))
    rows = []
    sys.path.insert(0, os.path.join(root, a.build, "python"))
    import numpy as np
    import torch
    import gwb
    import gwb.torch as gt
    m = gwb.load(model, device="cpu")
    ref = gt.module(model)
    for T in a.T:
        cold, warm, trace = [], [], []
        run, fwd = [], []
        ids = [int(x) for x in np.random.default_rng(1).integers(0, 30522, T)]
        for k in range(a.rounds):
            cache = os.path.join(work, f"cache-{T}-{k}")
            first = child(py, dict(env, GWB_CACHE_DIR=cache), model, T)  # empty cache
            second = child(py, dict(env, GWB_CACHE_DIR=cache), model, T)  # filled by the first
            cold.append(first["first"])
            warm.append(second["first"])
            trace.append(second["trace"])
            t0 = time.perf_counter(); m.run(ids); run.append(time.perf_counter() - t0)
            with torch.no_grad():
                x = torch.tensor([ids])
                t0 = time.perf_counter(); ref(x); fwd.append(time.perf_counter() - t0)
        med = statistics.median
        rows.append((T, med(trace), med(cold), med(warm), med(run), med(fwd)))
        print(rows[-1], flush=True)
    lines = [
        "# The analyses at GrassLM-100M's shape (scripts/bench --scale)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} cores, CPU LibTorch "
        f"{torch.__version__}; a random-weight model of resources/configs/grasslm-100m-shape.json (96M "
        f"parameters); medians of {a.rounds} rounds; seconds.",
        "",
        "| T | trace | trace + analysis, first open (empty read-out cache) | trace + analysis, reopened (cache filled) "
        "| run (logits) | PyTorch forward, same weights | run / PyTorch |",
        "|---|---|---|---|---|---|---|",
    ]
    for T, tr, c, w, r, f in rows:
        lines.append(f"| {T} | {tr:.2f} | {c:.2f} | {w:.2f} | {r:.2f} | {f:.2f} | {r / f:.2f} |")
    lines += ["", "Not measured here: the GPU, the 124M Transformer, generation, attribution at this scale.", ""]
    write_doc(os.path.join(root, a.out), "\n".join(lines))


if __name__ == "__main__":
    main()
