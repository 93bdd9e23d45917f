#!/usr/bin/python3
"""Causal claims over datasets (issue 28), run by `scripts/bench --pairs`; writes
docs/performance-pairs.md. Interleaved rounds, medians of wall time, on the bundled pair:

1. exact resid sweeps over 1,000 templated pairs of about 15 tokens (`gwb patch --pairs`, whole
   command), each model; goal <= 30 s;
2. over a 120-pair file, `--method attribution` against the exact run (whole commands; and the
   same minus a 1-pair run of each, the fixed cost of starting and loading); goal <= 0.35;
3. attribution of one pair at every site against one plain forward pass (gwb.Model.patch with
   method="attribution" against gwb.Model.run, in one process, interleaved call by call: each
   attribution over the median of the 5 forward passes just before it); goal <= 5 forward passes;
4. a naive PyTorch loop (tests/python/patching_reference.py: the whole model re-run with a hook per
   cell, float64 as written for the parity tests) on 10 of the pairs, scaled to 1,000.

  bench_pairs.py [--rounds 3] [--out docs/performance-pairs.md]   (PYTHONPATH = <build>/python)"""

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import gwb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_model, write_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from patching_reference import Reference, read_gwb, run_request  # noqa: E402

WOMEN = ["Elizabeth", "Jane", "Emma", "Anne", "Marianne", "Catherine", "Fanny", "Harriet", "Lydia", "Kitty"]
MEN = ["Darcy", "Bingley", "Knightley", "Wentworth", "Edward", "Henry", "Frank", "Robert", "Charles", "William"]
PLACES = ["house", "park", "church", "village", "garden"]


def pairs_file(path, n, seed):
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            w, m, p = rng.choice(WOMEN), rng.choice(MEN), rng.choice(PLACES)
            f.write(json.dumps({"clean": f"{w} said that she would walk to the {p} in the morning and then go with",
                                "corrupt": f"{m} said that he would walk to the {p} in the morning and then go with",
                                "answer": "her", "wrong": "him"}) + "\n")


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance-pairs.md"))
    a = ap.parse_args()
    program = os.environ.get("GWB_PROGRAM") or gwb._paths.GWB_PROGRAM
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    tmp = tempfile.mkdtemp(prefix="gwb-bench-pairs-")
    p1000, p120, p1 = (os.path.join(tmp, f"p{n}.jsonl") for n in (1000, 120, 1))
    pairs_file(p1000, 1000, 1)
    pairs_file(p120, 120, 2)
    pairs_file(p1, 1, 3)
    out = os.path.join(tmp, "o.npz")
    t = {}

    def add(key, value):
        t.setdefault(key, []).append(value)

    models = {k: gwb.bundled(k) for k in ("grassmann", "transformer")}
    tokens = len(models["grassmann"].encode(json.loads(open(p1000).readline())["clean"]))
    for r in range(a.rounds):
        for kind in ("grassmann", "transformer"):
            base = [program, "patch", "--model", kind, "--site", "resid", "--out", out]
            add(f"exact1000/{kind}", timed(base + ["--pairs", p1000], env))
            add(f"exact120/{kind}", timed(base + ["--pairs", p120], env))
            add(f"attr120/{kind}", timed(base + ["--pairs", p120, "--method", "attribution"], env))
            add(f"exact1/{kind}", timed(base + ["--pairs", p1], env))
            add(f"attr1/{kind}", timed(base + ["--pairs", p1, "--method", "attribution"], env))
            # One pair's attribution at every site against one plain forward pass, in this process,
            # interleaved call by call: each attribution against the median of the 5 forward passes
            # just before it (a shared machine's load then moves both alike).
            m = models[kind]
            clean = json.loads(open(p1).readline())
            ids = m.encode(clean["clean"])
            for _ in range(3):
                m.run(ids)
            sites = ["resid", "mixer", "gate", "ffn", "offset"] if kind == "grassmann" else ["resid", "mixer", "ffn",
                                                                                              "head"]
            fws, ratios = [], {site: [] for site in sites}
            for _ in range(10):
                for site in sites:
                    fw = []
                    for _ in range(5):
                        t0 = time.perf_counter()
                        m.run(ids)
                        fw.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    m.patch(clean=clean["clean"], corrupt=clean["corrupt"], answer="her", wrong="him", site=site,
                            method="attribution", progress=False)
                    ratios[site].append((time.perf_counter() - t0) / statistics.median(fw))
                    fws.append(statistics.median(fw))
            add(f"forward/{kind}", statistics.median(fws))
            for site in sites:
                add(f"attrsite/{kind}/{site}", statistics.median(ratios[site]))
            # The naive PyTorch loop on 10 pairs (every cell a whole run with a hook), scaled to 1,000.
            ref = Reference(*read_gwb(m.path))
            lines = open(p1000).read().splitlines()[:10]
            t0 = time.perf_counter()
            with torch.no_grad():
                for line in lines:
                    p = json.loads(line)
                    cl, co = m.encode(p["clean"]), m.encode(p["corrupt"])
                    for layer in range(m.config["n_layers"] + 1):
                        for pos in range(len(cl)):
                            run_request(ref, {"changed": co, "source": cl, "site": "resid", "mode": "patch",
                                              "layer": layer, "position": pos})
            add(f"naive1000/{kind}", (time.perf_counter() - t0) * 100)
        print(f"round {r + 1}/{a.rounds} done", flush=True)
    med = {k: statistics.median(v) for k, v in t.items()}
    lines = ["# Performance of causal claims over datasets", "",
             "Written by `scripts/bench --pairs` (scripts/bench_pairs.py; do not edit by hand). The bundled pair;",
             f"templated name-swap pairs of {tokens} tokens (\"Elizabeth said that she would walk to the house in the",
             "morning and then go with\" / \"Darcy said that he ...\", metric logit[her] - logit[him]; every pair usable);",
             "resid sweeps unless said otherwise. Whole",
             "`gwb patch --pairs` commands (starting, loading the model, the pairs, the bootstrap, writing); the",
             "\"compute\" columns subtract a 1-pair run of the same command. Interleaved, "
             f"{a.rounds} rounds; medians of wall time.", "",
             f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
             f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; load average at the end {os.getloadavg()[0]:.1f}.",
             "", "| model | exact, 1,000 pairs | goal <= 30 s | naive PyTorch loop, 1,000 pairs (from 10) | ratio |",
             "|---|---|---|---|---|"]
    for kind in ("grassmann", "transformer"):
        e, n = med[f"exact1000/{kind}"], med[f"naive1000/{kind}"]
        lines.append(f"| {kind} | {e:.1f} s | {'met' if e <= 30 else '**not met**'} | {n:.0f} s | {n / e:.0f}x |")
    lines += ["", "| model | exact, 120 pairs | attribution, 120 pairs | ratio (whole commands) | "
              "ratio (compute: minus a 1-pair run) | goal <= 0.35 |", "|---|---|---|---|---|---|"]
    for kind in ("grassmann", "transformer"):
        e, at = med[f"exact120/{kind}"], med[f"attr120/{kind}"]
        ce, ca = e - med[f"exact1/{kind}"], at - med[f"attr1/{kind}"]
        lines.append(f"| {kind} | {e:.2f} s | {at:.2f} s | {at / e:.2f} | {ca / ce:.2f} | "
                     f"{'met' if ca / ce <= 0.35 else '**not met**'} (compute) |")
    lines += ["", "| model | one forward pass | attribution of one pair, per site (in forward passes) | goal <= 5 |",
              "|---|---|---|---|"]
    for kind in ("grassmann", "transformer"):
        fw = med[f"forward/{kind}"]
        sites = {k.split("/")[2]: v for k, v in med.items() if k.startswith(f"attrsite/{kind}/")}
        lines.append(f"| {kind} | {fw * 1e3:.1f} ms | " + ", ".join(f"{s} {x:.1f}" for s, x in sites.items()) +
                     f" | {'met' if max(sites.values()) <= 5 else '**not met**'} |")
    lines.append("")
    text = "\n".join(lines)
    write_doc(a.out, text)


if __name__ == "__main__":
    main()
