#!/usr/bin/python3
"""Lenses (issue 69): `gwb lens fit` timed as a user runs it, beside a plain PyTorch fit of the same
lens on the same windows, then docs/performance-lens.md.

  scripts/bench --lens [--rounds 1] [--out docs/performance-lens.md]

1. The Jacobian lens of each bundled model over the first 100 windows of 128 tokens of Emma (the
   issue's budget: the pair in at most 2 minutes on 2 cores), gwb's defaults (skip 16, dim_batch 8),
   and also dim_batch 32. The reference is the estimator as TransformerLens and Anthropic's
   reference write it (one forward pass of the prompt replicated dim_batch times, one backward
   pass per dim_batch output dimensions with one-hot cotangents at every valid target position),
   on scripts/bench_reference.py's PyTorch modules loaded from the same .gwb file; its J_l is
   compared with gwb's (the same work, checked).
2. The tuned lens of each bundled model with gwb's defaults (100 steps of 2,048 tokens; the issue's
   budget: the pair in at most 10 minutes), beside a plain PyTorch loop of the same steps (SGD with
   Nesterov momentum, linear decay, clipping, KL(p_final || p_lens) summed over layers).
Rounds alternate gwb and the reference; figures are medians of wall time and peak resident memory
(/usr/bin/time for gwb; ru_maxrss of a child process for the reference).
"""

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import cpu_model, write_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMMA = os.path.join(ROOT, "..", "shared", "data", "austen", "emma.txt")
MODELS = {k: os.path.join(ROOT, "resources", "models", f"{k}-austen.gwb") for k in ("grassmann", "transformer")}


def windows(build, kind, n, T):
    """The first n windows of T tokens of Emma, as `gwb lens fit --window T` cuts the file."""
    sys.path.insert(0, os.path.join(ROOT, build, "python"))
    import gwb
    ids = gwb.bundled(kind).encode(open(EMMA, encoding="utf-8").read(n * T * 8))
    return [ids[i * T:(i + 1) * T] for i in range(n)]


def reference_jacobian(kind, prompts, dim_batch, skip):
    import torch
    from bench_reference import load_gwb
    model = load_gwb(MODELS[kind])
    for p in model.parameters():
        p.requires_grad_(False)
    N, d = len(model.blocks), model.ln_final.normalized_shape[0]
    sums = [torch.zeros(d, d) for _ in range(N - 1)]
    for prompt in prompts:
        ids = torch.tensor(prompt)[None].expand(dim_batch, -1)
        T = ids.shape[1]
        with torch.enable_grad():
            h = model.tok_embed(ids) + model.pos_embed(torch.arange(T))[None]
            outs = []
            for i, block in enumerate(model.blocks):
                h = block(h)
                if i == 0:
                    h.requires_grad_(True)
                outs.append(h)
            target, sources = outs[-1], outs[:-1]
            valid = torch.arange(skip, T - 1)
            rows = torch.arange(dim_batch)
            cot = torch.zeros_like(target)
            for start in range(0, d, dim_batch):
                n = min(dim_batch, d - start)
                cot.zero_()
                cot[rows[:n, None], valid[None, :], start + rows[:n, None]] = 1.0
                grads = torch.autograd.grad(target, sources, cot, retain_graph=start + dim_batch < d)
                for layer, g in enumerate(grads):
                    sums[layer][start:start + n] += g[:n, valid].mean(1)
    return [s / len(prompts) for s in sums]


def reference_tuned(kind, prompts, steps, tokens_per_step, seed=0):
    import torch
    import torch.nn.functional as F
    from bench_reference import load_gwb
    model = load_gwb(MODELS[kind])
    for p in model.parameters():
        p.requires_grad_(False)
    N, d = len(model.blocks), model.ln_final.normalized_shape[0]
    A = [torch.nn.Linear(d, d) for _ in range(N)]
    for a in A:
        torch.nn.init.zeros_(a.weight)
        torch.nn.init.zeros_(a.bias)
    params = [p for a in A for p in a.parameters()]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 - s / steps)
    g = torch.Generator().manual_seed(seed)
    per_step = max(1, tokens_per_step // len(prompts[0]))
    data = torch.tensor(prompts)
    for _ in range(steps):
        batch = data[torch.randint(len(prompts), (per_step,), generator=g)]
        with torch.no_grad():
            cap = []
            final = model.head(model.hidden(batch, cap)).log_softmax(-1)
        loss = 0
        for s, c in enumerate(cap):
            h = c["h"]
            logp = model.head(h + A[s](h)).log_softmax(-1)
            loss = loss + F.kl_div(logp, final, log_target=True, reduction="none").sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
    return float(loss)


def child(args):
    """Runs one reference measurement in this process and prints {seconds, peak_mb, ...}."""
    import resource
    import numpy as np
    job = json.loads(args.child)
    prompts = windows(args.build, job["kind"], job["n"], job["T"])
    start = time.perf_counter()
    out = {}
    if job["lens"] == "jacobian":
        J = reference_jacobian(job["kind"], prompts, job["dim_batch"], 16)
        out["seconds"] = time.perf_counter() - start
        if job.get("compare"):
            import torch
            theirs = torch.load(os.path.join(job["compare"], "jacobian_lens.pt"), weights_only=True)["J"]
            out["rel"] = max(float(np.abs(J[l].numpy() - theirs[l].numpy()).max() / np.abs(J[l].numpy()).max())
                             for l in range(len(J)))
    else:
        out["loss"] = reference_tuned(job["kind"], prompts, job["steps"], job["tokens"])
        out["seconds"] = time.perf_counter() - start
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def run_reference(args, **job):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--build", args.build, "--child", json.dumps(job)],
                       capture_output=True, text=True, cwd=os.path.join(ROOT, "scripts"))
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_gwb(args, kind, lens, out, extra):
    cmd = ["/usr/bin/time", "-f", "%e %M", os.path.join(ROOT, args.build, "bin", "gwb"), "lens", "fit", "--kind", lens,
           "--model", kind, "--corpus", EMMA, "--out", out, *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr[-2000:]}")
    wall, peak = r.stderr.strip().splitlines()[-1].split()
    engine = float(re.search(r"time: ([0-9.]+) s", r.stderr).group(1))
    return dict(seconds=engine, wall=float(wall), peak_mb=int(peak) / 1024)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default="docs/performance-lens.md")
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--no-tuned", action="store_true")
    ap.add_argument("--ratio-prompts", type=int, default=20, help="Jacobian windows of the runs beside the reference")
    ap.add_argument("--ratio-steps", type=int, default=20, help="tuned-lens steps of the runs beside the reference")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    results = {}
    checks = {}
    budget = {}  # (lens, kind) -> gwb's own run at the size: wall seconds
    n = a.ratio_prompts
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("grassmann", "transformer"):
            # The budgets: gwb alone at full size.
            out = os.path.join(tmp, f"{kind}-jacobian-full")
            budget[("jacobian", kind)] = run_gwb(a, kind, "jacobian", out, ["--window", "128", "--max-prompts",
                                                                           str(a.prompts)])
            if not a.no_tuned:
                budget[("tuned", kind)] = run_gwb(a, kind, "tuned", os.path.join(tmp, f"{kind}-tuned-full"), [])
            print(kind, budget, flush=True)
        for _ in range(a.rounds):
            for lens in ("jacobian",) + (() if a.no_tuned else ("tuned",)):
                for kind in ("grassmann", "transformer"):
                    out = os.path.join(tmp, f"{kind}-{lens}")
                    if lens == "jacobian":
                        ours = run_gwb(a, kind, lens, out, ["--window", "128", "--max-prompts", str(n)])
                        theirs = run_reference(a, lens=lens, kind=kind, n=n, T=128, dim_batch=8, compare=out)
                        checks[kind] = theirs["rel"]
                    else:
                        ours = run_gwb(a, kind, lens, out, ["--steps", str(a.ratio_steps)])
                        theirs = run_reference(a, lens=lens, kind=kind, n=a.prompts, T=128, steps=a.ratio_steps,
                                               tokens=2048)
                    results.setdefault((lens, kind), []).append((ours, theirs))
                    print(lens, kind, ours, theirs, flush=True)
    today = datetime.date.today().isoformat()
    lines = [
        "# Performance: lenses", "",
        f"Measured {today} by `scripts/bench --lens` ({a.rounds} round(s), rounds alternating gwb and the "
        f"reference), on {cpu_model()}, {os.cpu_count()} cores, build `{a.build}`.", "",
        "gwb: `gwb lens fit` as a user runs it (its `time:` line, the fit alone; wall time and peak memory of "
        "the whole process, which also loads the model and reads the corpus). Reference: the same estimator "
        "in plain PyTorch (Debian's torch) on scripts/bench_reference.py's modules loaded from the same .gwb "
        "file, in its own process (fit time; peak memory of that process). Ratio = gwb / reference "
        "(below 1: gwb is faster).", "",
        "| lens | model | work | gwb fit | gwb wall | gwb peak | reference | reference peak | ratio | check |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (lens, kind), rs in results.items():
        o = statistics.median(r[0]["seconds"] for r in rs)
        w = statistics.median(r[0]["wall"] for r in rs)
        op = max(r[0]["peak_mb"] for r in rs)
        t = statistics.median(r[1]["seconds"] for r in rs)
        tp = max(r[1]["peak_mb"] for r in rs)
        if lens == "jacobian":
            work = f"{n} prompts x 128 tokens, dim_batch 8"
            check = f"J_l equal to {checks[kind]:.1e} relative"
        else:
            work = f"{a.ratio_steps} steps x 2,048 tokens"
            check = "same steps and tokens (windows drawn differently)"
        lines.append(f"| {lens} | {kind} | {work} | {o:.1f} s | {w:.1f} s | {op:.0f} MB | {t:.1f} s | {tp:.0f} MB | "
                     f"{o / t:.2f} | {check} |")
    lines += ["", "The issue's budgets, gwb alone with its defaults (`gwb lens fit`, wall time of the process, "
              "which also loads the model and reads Emma):", "",
              "| lens | work | Grassmann | Transformer | the pair | goal |", "|---|---|---|---|---|---|"]
    for lens, work, goal in (("jacobian", f"{a.prompts} windows x 128 tokens, skip 16, dim_batch 8", 120),
                             ("tuned", "100 steps x 2,048 tokens", 600)):
        if ("jacobian" if lens == "jacobian" else "tuned", "grassmann") not in budget:
            continue
        g, t = budget[(lens, "grassmann")], budget[(lens, "transformer")]
        total = g["wall"] + t["wall"]
        lines.append(f"| {lens} | {work} | {g['wall']:.0f} s ({g['peak_mb']:.0f} MB) | {t['wall']:.0f} s "
                     f"({t['peak_mb']:.0f} MB) | {total:.0f} s | <= {goal} s: {'met' if total <= goal else '**not met**'} |")
    lines.append("")
    write_doc(os.path.join(ROOT, a.out), "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
