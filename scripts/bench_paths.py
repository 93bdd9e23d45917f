#!/usr/bin/python3
"""Path patching speed (issue 29), run by `scripts/bench --paths`: a whole senders x receivers
matrix of each bundled model for a 20-token prompt pair, in the engine (gwb.Model.paths, through the
Python package) and in the independent PyTorch reference tests/python/paths_reference.py (every
component a hook value, one frozen run per sender plus one run per later receiver; float64, as
written for the parity test), interleaved round by round in one process. Checks that both give
the same matrix (max |difference|), then writes docs/performance-paths.md.

  bench_paths.py [--rounds 3] [--out docs/performance-paths.md]   (PYTHONPATH = <build>/python)"""

import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch

import gwb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import cpu_model, write_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import paths_reference  # noqa: E402
from patching_reference import Reference, read_gwb  # noqa: E402

CLEAN = "They could not help laughing, and Elizabeth said that she would walk to the house with them to town"
CORRUPT = "She could not help laughing, and Elizabeth said that she would walk to the house with them to town"


def reference_matrix(ref, m, result, clean, corrupt, answer, wrong):
    rows = []
    for label in result.meta["sender_labels"]:
        parts = label.split(".")
        kind, layer = parts[0], int(parts[1])
        index = int(parts[2]) if len(parts) > 2 else 0
        req = {"clean": clean, "corrupt": corrupt, "answer": answer, "wrong": wrong,
               "position": len(clean) - 1, "sender": {"kind": kind, "layer": layer, "index": index},
               "sender_position": -1, "receivers": result.meta["receiver_labels"]}
        rows.append([np.nan if v is None else v for v in paths_reference.run(ref, req)])
    return np.array(rows, dtype=float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance-paths.md"))
    a = ap.parse_args()
    rows = []
    for kind in ("grassmann", "transformer"):
        m = gwb.bundled(kind)
        clean, corrupt = m.encode(CLEAN), m.encode(CORRUPT)
        assert len(clean) == len(corrupt) == 20, (len(clean), len(corrupt))
        answer, wrong = m.encode("they")[0], m.encode("she")[0]
        ref = Reference(*read_gwb(m.path))
        engine_s, ref_s, worst = [], [], 0.0
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            result = m.paths(CLEAN, CORRUPT, "they", "she", progress=False)
            engine_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with torch.no_grad():
                theirs = reference_matrix(ref, m, result, clean, corrupt, answer, wrong)
            ref_s.append(time.perf_counter() - t0)
            both = ~np.isnan(theirs)
            worst = max(worst, float(np.abs(result["metric"][both] - theirs[both]).max()))
        shape = result["metric"].shape
        e, r = statistics.median(engine_s), statistics.median(ref_s)
        rows.append(f"| {kind} | {shape[0]} x {shape[1]} | {e:.2f} s | {r:.2f} s | {r / e:.1f}x | {worst:.1e} | "
                    f"{'yes' if e <= 2.0 else '**no**'} |")
        print(rows[-1], flush=True)
    text = "\n".join([
        "# Performance of path patching", "",
        "Written by `scripts/bench --paths` (scripts/bench_paths.py; do not edit by hand). A whole senders x",
        "receivers matrix (every sender at every position; receivers logits and resid.1..N) of each bundled",
        "model for a 20-token prompt pair (\"They could not help laughing, and ...\" / \"She ...\", metric",
        "logit[they] - logit[she]): the engine through the Python package (`gwb.Model.paths`, which is",
        "`pathPatching`) against the independent PyTorch reference tests/python/paths_reference.py (hooks at",
        "every component, one frozen run per sender and one more per later receiver, float64 as written for",
        f"the parity test), alternately in one process, {a.rounds} rounds; medians of wall time. The last",
        "column but one is the largest difference between the two matrices.", "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; load average at the end {os.getloadavg()[0]:.1f}.", "",
        "| model | matrix | gwb | PyTorch reference | ratio | max abs diff | goal <= 2 s met |",
        "|---|---|---|---|---|---|---|", *rows, ""])
    write_doc(a.out, text)


if __name__ == "__main__":
    main()
