#!/usr/bin/python3
"""Sparse-dictionary training and dashboards (issue 40), next to a plain PyTorch loop.

  scripts/bench --features [--rounds 3] [--out docs/performance-features.md]

1. The trainer alone: the same activation rows (resid.3 of the bundled Grassmann model over the
   Austen training split), the same initial weights and the same steps in gwb
   (gwb.features.train_on_rows) and in tests/python/sae_reference.py (torch.optim.Adam), rounds
   interleaved; TopK, 1024 features, k = 32, batch 4096. Rows per second, medians, and the ratio.
2. What a user runs: `gwb features train` with its defaults (2M rows streamed from the text, the
   forward passes included) once; `gwb features eval` and `gwb features export` (the dashboards of
   all 1024 features) over the Austen validation split.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import cpu_model, write_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "data", "austen")


def split(out_dir, valid):
    """The Austen novels by lines as scripts/train-defaults splits them: the first 90% of each for
    training, the last 10% for validation."""
    os.makedirs(out_dir, exist_ok=True)
    out = []
    for name in sorted(f for f in os.listdir(DATA) if f.endswith(".txt")):
        with open(os.path.join(DATA, name), "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        n = len(lines)
        part = lines[n * 9 // 10:] if valid else lines[:n * 9 // 10]
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(b"".join(l + b"\n" for l in part))
        out.append(path)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--out", default="docs/performance-features.md")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, a.build, "python"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import numpy as np
    import torch
    import gwb
    from sae_reference import reference_training

    work = tempfile.mkdtemp(prefix="gwb-features-bench-")
    train_files = split(os.path.join(work, "train"), False)
    valid_files = split(os.path.join(work, "valid"), True)
    m = gwb.bundled("grassmann", device="cpu")
    rows = gwb.features.activations(m, "resid.3", train_files[:1], max_rows=65536)["rows"]
    batch, steps, d_sae, k = 4096, a.steps, 1024, 32
    # Features dead after 2 steps on both sides, so that both run the AuxK loss from step 3.
    kw = dict(architecture="topk", d_sae=d_sae, k=k, tokens=steps * batch, batch=batch, lr=2e-3, seed=0,
              dead_after_tokens=2 * batch, device="cpu")
    ours, ref = [], []
    for r in range(a.rounds):
        t0 = time.perf_counter()
        res = gwb.features.train_on_rows(rows, **kw)
        ours.append(steps * batch / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        reference_training(rows, res["initial"], "topk", k, 0.0, steps, batch, 2e-3, 2, 1 / 32)
        ref.append(steps * batch / (time.perf_counter() - t0))
        print(f"round {r}: gwb {ours[-1]:.0f} rows/s, PyTorch {ref[-1]:.0f} rows/s", flush=True)
    med = statistics.median

    gwb_program = os.path.join(ROOT, a.build, "bin", "gwb")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out_dir = os.path.join(work, "sae")
    t0 = time.perf_counter()
    p = subprocess.run([gwb_program, "features", "train", "--site", "resid.3", "--out", out_dir, "--device", "cpu"] +
                       sum((["--corpus", f] for f in train_files), []), capture_output=True, text=True, env=env,
                       check=True)
    train_s = time.perf_counter() - t0
    print(p.stdout, flush=True)
    t0 = time.perf_counter()
    q = subprocess.run([gwb_program, "features", "eval", "--dict", out_dir] + sum((["--corpus", f] for f in valid_files),
                                                                                  []),
                       capture_output=True, text=True, env=env, check=True)
    eval_s = time.perf_counter() - t0
    print(q.stdout, flush=True)
    t0 = time.perf_counter()
    subprocess.run([gwb_program, "features", "export", "--dict", out_dir, "--out", os.path.join(work, "dash.json")] +
                   sum((["--corpus", f] for f in valid_files), []), capture_output=True, text=True, env=env, check=True)
    export_s = time.perf_counter() - t0
    figures = dict(line.split(": ", 1) for line in q.stdout.splitlines() if ": " in line)

    lines = [
        "# Sparse dictionaries (scripts/bench --features)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} cores, CPU LibTorch "
        f"{torch.__version__} (both sides), {torch.get_num_threads()} threads; the bundled Grassmann model "
        f"(d = 128), site resid.3. No GPU was measured.",
        "",
        f"## The trainer on the same rows ({a.rounds} rounds, interleaved, medians)",
        "",
        f"{len(rows):,} activation rows, the same initial weights, {steps} steps of batch {batch}: TopK, "
        f"{d_sae} features, k = {k}, AuxK on dead features, unit-norm decoder rows, Adam.",
        "",
        "| | rows / s | rounds |",
        "|---|---|---|",
        f"| gwb (gwb.features.train_on_rows) | {med(ours):,.0f} | {', '.join(f'{x:,.0f}' for x in ours)} |",
        f"| plain PyTorch loop (tests/python/sae_reference.py) | {med(ref):,.0f} | "
        f"{', '.join(f'{x:,.0f}' for x in ref)} |",
        f"| gwb / PyTorch | {med(ours) / med(ref):.2f} | |",
        "",
        "## What a user runs (one run each)",
        "",
        "| command | wall |",
        "|---|---|",
        f"| `gwb features train --site resid.3` with the defaults (2,000,000 rows streamed from the Austen training "
        f"split, forward passes included; 1024 features, k = 32) | {train_s:.0f} s |",
        f"| `gwb features eval` over the Austen validation split ({figures.get('rows', '?')} rows; 3 forward "
        f"passes a window) | {eval_s:.1f} s |",
        f"| `gwb features export` (dashboards of all 1024 features) over the Austen validation split | "
        f"{export_s:.1f} s |",
        "",
        "The dictionary's figures on the validation split: explained variance "
        f"{figures.get('explained variance', '?')}, L0 {figures.get('L0', '?')}, dead fraction "
        f"{figures.get('dead fraction', '?')}, loss clean {figures.get('loss clean', '?')}, spliced "
        f"{figures.get('loss spliced', '?')}, ablated (per-position mean of the other windows) {figures.get('loss ablated (per-position mean of the other windows)', '?')}, "
        f"recovered {figures.get('loss recovered', '?')}.",
        "",
    ]
    write_doc(os.path.join(ROOT, a.out), "\n".join(lines))


if __name__ == "__main__":
    main()
