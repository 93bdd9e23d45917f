#!/usr/bin/python3
"""gwb at the published model's scale (issue 39), on the CPU (or --device cuda), through the Python
package; writes docs/performance-scale.md.

  scripts/bench --scale [--rounds 2] [--device cpu] [--out docs/performance-scale.md]

Two random-weight models, each with a word-level WordPiece vocabulary of its size drawn from the
Austen novels (so that prompts are text):
  - GrassLM-100M's shape (resources/configs/grasslm-100m-shape.json: d 640, r 80, 12 layers, one
    offset per layer, 30,522 pieces, 4,096 positions; 96M parameters);
  - GPT-2 small's shape (resources/configs/gpt2-small-shape.json: d 768, 12 layers of 12 heads,
    50,257 pieces, 1,024 positions; 124M parameters).

Per model and T (256, 1024, 4096 within the model's context), each in a fresh process: loading (the
file opened and a first 8-token run, which packs the weights); the trace alone; a window Run with
the Gates view in front (the trace and the core analysis the view draws, trace(analysis=["core"]))
and the trace with every analysis, each the first Run after loading, with the weight-only cache
empty (a model never opened before) and filled (reopened); `run` (logits) next to a plain PyTorch
forward of the same weights (gwb.torch.module), alternately. Generation: 64 new tokens after 16,
gwb's incremental generator against the plain PyTorch loop that runs the whole context again for
every token (gwb.torch has no cache). Causal claims: attribution against exact patching over 120
name-swap pairs whose prompts differ at their first token (resid sweeps, model.patch(pairs=...)).
At the bundled size (issue 39's last goal: the analyses add at most 50% to the trace), the engine
benchmark analysis/grassmann/bundled (tests/benchmarks/engine_trace_bench.cpp) on one thread and on
every core: the bundled Grassmann model's trace of 256 tokens as the window runs it, against the
analysis of that trace, core part and every part, weight-only results already cached.
Medians over the rounds; rounds interleave the two sides of every ratio."""

import argparse
import collections
import glob
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import cpu_model, write_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import os, sys, time, json, numpy as np, gwb
path, T, parts, device = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def status(key):  # MiB from /proc/self/status (VmRSS: now; VmHWM: the peak since the last reset)
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":")) / 1024
t0 = time.perf_counter()
m = gwb.load(path, device=device)
m.run([5] * 8)
load = time.perf_counter() - t0
loaded = status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:  # the peak from here on: the Run's, not the load's
    f.write("5")
ids = [int(x) for x in np.random.default_rng(T).integers(5, m.config["vocab_size"], T)]
analysis = True if parts == "all" else parts.split(",")
lens = parts == "all"  # the window traces without the lens unless the Lens view is in front
t0 = time.perf_counter(); m.trace(ids, analysis=analysis, lens=lens, progress=False); first = time.perf_counter() - t0
peak = status("VmHWM")
t0 = time.perf_counter(); m.trace(ids, lens=lens, progress=False); trace = time.perf_counter() - t0
print(json.dumps(dict(load=load, first=first, trace=trace, loaded=loaded, peak=peak)))
"""

GEN = r"""
import sys, time, json, torch, gwb, gwb.torch as gt
path, device = sys.argv[1], sys.argv[2]
m = gwb.load(path, device=device)
ref = gt.module(path, device=device).eval()
prompt = [int(x) for x in torch.randint(5, m.config["vocab_size"], (16,), generator=torch.Generator().manual_seed(0))]
m.generate(prompt, max_new=4, greedy=True)
def plain(new=64):
    ids = torch.tensor([prompt], device=device)
    with torch.inference_mode():
        for _ in range(new):  # the whole context again for every token: gwb.torch has no cache
            nxt = ref(ids)[0, -1].argmax()
            ids = torch.cat([ids, nxt.view(1, 1)], 1)
    return ids
plain(2)
out = {"gwb": [], "torch": []}
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter(); m.generate(prompt, max_new=64, greedy=True); out["gwb"].append(64 / (time.perf_counter() - t0))
    t0 = time.perf_counter(); plain(); out["torch"].append(64 / (time.perf_counter() - t0))
print(json.dumps(out))
"""

HISTORY = """Before issue 39 (main at 750b513, the same machine, through `gwb.load` of a GrassLM-layout
checkpoint of the same shape) a window Run at T = 256 computed everything and took 32 s, every
time. What changed: the Plücker residual from the spectrum of each antisymmetric matrix instead of
the C(80,4) = 1.58 million quadruples; one decomposition per read-out channel for its residual,
planarity and plane (the plane by inverse iteration on the tridiagonal form); weight-only results
(read-out planes, each layer's W_red pseudo-inverse, the reading subspaces) kept on disk under a
hash of the weights; the analyses' large double products through AVX-512/AVX2 FMA kernels
(geometry/product.h); the read-out contributions taken from the influence pass; and the window
computing first the parts its visible views draw. At the bundled size the analyses cost 0.92x the
trace on two cores (main at 426f9ac, the analysis/grassmann/bundled benchmark); then the angles
from the cosines alone down to 0.05 rad with a vectorized arccosine, the angles between layers
from 2 x 2 Gram products, B_t as one wedge z_t ^ y_t, only the prompt subspaces' top eigenvalues
(by bisection) and their covariance through the same kernels brought them under half of it."""

LONG_PROMPTS = """What changed for long prompts (issue 51), and the figures before: on 2026-11-28 (an AVX2 host,
`run` 10.25 s at 4,096) the window Run took 13.51 s there, 1.38x `run`. Since then (the AVX-512 host
of the figures above, where that code took 6.6 s for the window Run and 4.9 s for `run`): the prompt
subspaces (a d x d covariance and its top eigenvectors per layer, more than the rest of the core analysis
at 4,096 tokens) are their own part, computed when the Principal angles or Compare view is in front, or in
the background after the Run; B_t of a one-offset layer is formed 256 tokens at a time for its checks
(the whole T x C(r,2) was 100 MB a layer, paged in afresh each time); the residual and planarity of a
row come from one matrix; and without gradients a prompt over 1,024 tokens runs each block's
position-wise parts (the Plucker coordinates and W_plu, the FFN) over blocks of 1,024 tokens, so their
52 MB and 42 MB intermediates are reused instead of mapped afresh in every block (the engine benchmark
window/scale on this host: the trace 4.3 s, from 4.8; the core analysis 0.45 s, from 2.1). The
Transformer's analysis at 4,096 tokens (12 x 12 heads x 8.4 M causal entries, each an exp) takes its
exps on AVX-512 or AVX2 lanes (window/scale-transformer: 4.9 s on two threads; 39 s on one thread
before, on the AVX2 host)."""


def memory_note():
    """What a window Run keeps at T = 4,096, as gwb::engine::traceMemory counts it (the same sums)."""
    T, N, d, r, V = 4096, 12, 640, 80, 30522
    C = r * (r - 1) // 2
    states = (N * T * d + T * d + 2 * T) * 4 + N * T * (r + d) * 4  # h, final, surprisal, ids; z, gate
    weights = N * (r * d + r + d * C + d) * 4
    dropped = N * 2 * T * d * 4  # g and the mixer's input
    lens = (N + 1) * T * (2 * 5 + 2) * 4
    readout = N * (T * d + 2 * T * d) * 4
    mb = lambda b: f"{b / 2**20:,.0f} MB"  # noqa: E731
    H, dg, Ng = 12, 768, 12
    dense = Ng * H * 2048 * 2048 * 4
    dense512 = Ng * H * 512 * 512 * 4
    return (f"Memory at T = 4,096 (GrassLM-100M shape): a window Run keeps each block's input h, the reduced "
            f"vectors z and the gate ({mb(states)} with the final state), and the weights the analyses read "
            f"(W_red, W_plu: {mb(weights)}); it leaves out g and the mixer's input, which no view draws "
            f"({mb(dropped)}: `TraceOptions::keepMixerStates`, kept by `gwb trace` and Python for their files), and "
            f"the logit lens until the Lens view asks ({mb(lens)} then; its T x V logits are never kept, only the "
            f"top 5 and the next token's rank). The forward pass's own tensors are released block by block as the "
            f"trace copies them, so a long prompt is not held twice. The read-out part of the analysis (computed in "
            f"the background, or when its view is in front) adds T x d contributions and T x d x 2 angles per layer: "
            f"{mb(readout)}. The Transformer baseline's H x T x T attention probabilities are kept by the window "
            f"only up to 512 tokens (GPT-2 small's shape: {mb(dense512)} at 512; `gwb trace` keeps them up to "
            f"2,048, {mb(dense)}); beyond, each row is recomputed from q and k when a view or an analysis reads it "
            f"(softmax(q_t . k_j / sqrt(d_head)), the same numbers; the Attention view caches the rows it has "
            f"drawn), so at 4,096 it keeps q and k, T x d each per layer. The peak resident sets above are of the whole process "
            f"(Python, LibTorch, the model and its packed weights included).")


WOMEN = ["Elizabeth", "Jane", "Emma", "Anne", "Marianne", "Catherine", "Fanny", "Harriet", "Lydia", "Kitty"]
MEN = ["Darcy", "Bingley", "Knightley", "Wentworth", "Edward", "Henry", "Frank", "Robert", "Charles", "William"]
PLACES = ["house", "park", "church", "village", "garden"]

PATCH = r"""
import sys, time, json, gwb
path, pairs, device, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
m = gwb.load(path, device=device)
m.run([5] * 8)
out = {"exact": [], "attribution": []}
for _ in range(rounds):
    for method in ("exact", "attribution"):
        t0 = time.perf_counter()
        m.patch(pairs=pairs, method=method, progress=False, bootstrap=0)
        out[method].append(time.perf_counter() - t0)
print(json.dumps(out))
"""


def vocabulary(n, path):
    """A word-level WordPiece vocab.txt of exactly n entries: BERT's special pieces, characters, then
    the Austen novels' words by frequency, then unused slots."""
    words = collections.Counter()
    for f in sorted(glob.glob(os.path.join(ROOT, "..", "shared", "data", "austen", "*.txt"))):
        with open(f, encoding="utf-8", errors="ignore") as fh:
            words.update(w.lower() for w in fh.read().split() if w.isalpha())
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghijklmnopqrstuvwxyz.,;:!?'\"-")
    toks += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    seen = set(toks)
    for w, _ in words.most_common():
        if w not in seen:
            toks.append(w)
            seen.add(w)
    toks += [f"[unused{i}]" for i in range(max(0, n - len(toks)))]
    with open(path, "w") as f:
        f.write("\n".join(toks[:n]) + "\n")


def pairs_file(path, n, seed):
    """Name-swap pairs that differ at their first token only."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            w, m, p = rng.choice(WOMEN), rng.choice(MEN), rng.choice(PLACES)
            rest = f" walked to the {p} in the morning and then everyone said that"
            f.write(json.dumps({"clean": w + rest, "corrupt": m + rest, "answer": "she", "wrong": "he"}) + "\n")


def read_log(path):
    """Rows, generation and patching figures as main() prints them (one per line)."""
    import ast
    out = {"trace": [], "generate": {}, "patch": {}}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                out["trace"].append(ast.literal_eval(line))
            elif " generate (" in line or " patch (" in line:
                kind, what, rest = line.split(" ", 2)
                out[what][kind] = tuple(ast.literal_eval(rest))
    return out


def child(py, env, code, *args):
    r = subprocess.run([py, "-c", code, *map(str, args)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"failed: {args}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--T", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--skip", default="", help="comma list of: trace, generate, patch, bundled")
    ap.add_argument("--out", default="docs/performance-scale.md")
    ap.add_argument("--from-log", default="",
                    help="the printed output of an earlier run of this script: its rows, generation and "
                         "patching figures are taken from it and not measured again")
    a = ap.parse_args()
    skip = set(filter(None, a.skip.split(",")))
    logged = read_log(a.from_log) if a.from_log else None
    if logged:
        skip |= {k for k in ("trace", "generate", "patch") if logged[k]}
    gwb_program = os.path.join(ROOT, a.build, "bin", "gwb")
    py = "/usr/bin/python3"
    work = tempfile.mkdtemp(prefix="gwb-scale-")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, a.build, "python"))
    sys.path.insert(0, os.path.join(ROOT, a.build, "python"))
    import numpy as np
    import torch
    import gwb
    import gwb.torch as gt

    models = {}
    for kind, config, vocab in (("grassmann", "grasslm-100m-shape.json", 30522),
                                ("transformer", "gpt2-small-shape.json", 50257)):
        v = os.path.join(work, f"vocab-{vocab}.txt")
        vocabulary(vocab, v)
        path = os.path.join(work, config.replace(".json", ".gwb"))
        cfg = os.path.join(ROOT, "resources/configs", config)
        if kind == "transformer" and max(a.T) > 1024:
            # GPT-2 small's 1,024 positions extended to the longest T (4,096: 127M parameters), so
            # that the quadratic baseline is measured beside the Grassmann model at that length.
            with open(cfg) as f:
                c = json.load(f)
            c["max_len"] = max(a.T)
            cfg = os.path.join(work, "gpt2-small-shape-long.json")
            with open(cfg, "w") as f:
                json.dump(c, f)
        subprocess.run([gwb_program, "init", "--config", cfg, "--tokenizer", v, "--seed", "1", "--out", path],
                       check=True, capture_output=True)
        models[kind] = path
    med = statistics.median
    rows = list(logged["trace"]) if logged else []  # dicts, one per (model, T)
    for kind, path in models.items() if "trace" not in skip else []:
        m = gwb.load(path, device=a.device)
        ref = gt.module(path, device=a.device).eval()
        for T in a.T:
            if T > m.config["max_len"]:
                continue
            col = collections.defaultdict(list)
            ids = [int(x) for x in np.random.default_rng(1).integers(5, m.config["vocab_size"], T)]
            for k in range(a.rounds):
                # "window": what the window computes with the Gates view in front (no lens; the
                # core part of a Grassmann analysis, a Transformer's whole one); "all": the lens
                # and every analysis.
                for name, parts in (("window", "core"), ("all", "all")):
                    cache = os.path.join(work, f"cache-{kind}-{T}-{k}-{name}")
                    cold = child(py, dict(env, GWB_CACHE_DIR=cache), CHILD, path, T, parts, a.device)
                    warm = child(py, dict(env, GWB_CACHE_DIR=cache), CHILD, path, T, parts, a.device)
                    col[name + " cold"].append(cold["first"])
                    col[name + " warm"].append(warm["first"])
                    col["load"].append(warm["load"])
                    col["trace " + name].append(warm["trace"])
                    col["loaded"].append(warm["loaded"])
                    col["peak " + name].append(warm["peak"])
                # In this process, alternately: run (logits), the window's trace (no lens, core
                # analysis), the PyTorch forward.
                t0 = time.perf_counter(); m.run(ids); col["run"].append(time.perf_counter() - t0)
                t0 = time.perf_counter(); m.trace(ids, analysis=["core"], progress=False)
                col["core"].append(time.perf_counter() - t0)
                with torch.inference_mode():
                    x = torch.tensor([ids], device=a.device)
                    t0 = time.perf_counter(); ref(x).cpu(); col["torch"].append(time.perf_counter() - t0)
            row = {key: med(values) for key, values in col.items()}
            row.update(kind=kind, T=T)
            rows.append(row)
            print(row, flush=True)
    gen = dict(logged["generate"]) if logged else {}
    for kind, path in models.items() if "generate" not in skip else []:
        r = child(py, env, GEN, path, a.device, max(2, a.rounds))
        gen[kind] = (med(r["gwb"]), med(r["torch"]))
        print(kind, "generate", gen[kind], flush=True)
    patch = dict(logged["patch"]) if logged else {}
    if "patch" not in skip:
        pairs = os.path.join(work, "pairs.jsonl")
        pairs_file(pairs, a.pairs, 2)
        for kind, path in models.items():
            r = child(py, env, PATCH, path, pairs, a.device, a.rounds)
            patch[kind] = (med(r["exact"]), med(r["attribution"]))
            print(kind, "patch", patch[kind], flush=True)

    bundled = []  # (threads, trace, core, all) in ms
    bench = os.path.join(ROOT, a.build, "tests", "benchmarks", "engine_trace_bench")
    if "bundled" not in skip and os.path.exists(bench):
        for threads in sorted({1, os.cpu_count() or 1}):
            out = os.path.join(work, f"bundled-{threads}.json")
            subprocess.run([bench, "--benchmark_filter=analysis/grassmann/bundled/T:256/parts:(0|1|31)/",
                            f"--benchmark_repetitions={max(3, 2 * a.rounds + 1)}",
                            "--benchmark_enable_random_interleaving=true", f"--benchmark_out={out}",
                            "--benchmark_out_format=json"],
                           env=dict(os.environ, GWB_BENCH_BUNDLED=os.path.join(ROOT, "resources", "models"),
                                    GWB_BENCH_THREADS=str(threads)), check=True, capture_output=True)
            times = collections.defaultdict(list)
            for b in json.load(open(out))["benchmarks"]:
                if b.get("run_type") == "iteration":
                    times[b["run_name"].split("parts:")[1].split("/")[0]].append(b["real_time"])
            bundled.append((threads, med(times["0"]), med(times["1"]), med(times["31"])))
            print("bundled", bundled[-1], flush=True)

    names = {"grassmann": "GrassLM-100M shape", "transformer": "GPT-2 small shape"}
    lines = [
        "# gwb at GrassLM-100M's scale (scripts/bench --scale)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} cores, device {a.device}, LibTorch "
        f"{torch.__version__}; random weights of resources/configs/grasslm-100m-shape.json (96M parameters) and "
        f"gpt2-small-shape.json (124M; its positions extended to {max(a.T)} when T goes past 1,024), word-level vocabularies of their sizes; medians of {a.rounds} rounds; "
        "seconds. Written by scripts/bench_scale.py (do not edit by hand)."
        + (" The rows, generation and patching figures were measured by the same script earlier the same day "
           "and taken from its printed output (--from-log); the bundled-size figures now." if logged else ""),
        "",
        "Each figure but `run` and the PyTorch forward is measured in a fresh process: the first Run after loading. "
        "\"Window Run\" is what the window computes before it shows the Gates view (the trace without the logit "
        "lens, and the core analysis: planes, influence, gates); the prompt subspaces, the read-out planes, the "
        "angles between layers and the reading subspaces follow in the background unless a view that draws them is "
        "in front, and the lens is computed when the Lens view is shown. \"Trace\" is the trace alone, without the "
        "lens. \"Cache "
        "empty\": a model never opened before (its weight-only results are computed and kept on disk); \"filled\": "
        "reopened.",
        "",
        "| model | T | load | trace | trace + lens | window Run, cache empty | window Run, filled | trace + lens + "
        "every analysis, empty | the same, filled | run (logits) | PyTorch forward + .cpu() | run / PyTorch |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {names[r['kind']]} | {r['T']} | {r['load']:.2f} | {r['trace window']:.2f} | "
                     f"{r['trace all']:.2f} | {r['window cold']:.2f} | {r['window warm']:.2f} | {r['all cold']:.2f} | "
                     f"{r['all warm']:.2f} | {r['run']:.2f} | {r['torch']:.2f} | {r['run'] / r['torch']:.2f} |")
    if rows:
        lines += ["", "Long prompts (issue 51): the window's Run with the Gates view in front against `run` (logits) "
                  "in one process, alternately (`m.trace(ids, analysis=[\"core\"])`: no lens, the core analysis; a "
                  "Transformer's analysis is always whole); the window Run in a fresh process with the weight-only "
                  "results on disk; that process's resident set (MiB) once the model is loaded, and its peak during "
                  "the Run (Linux's VmHWM, reset after loading), for the window's Run and for the trace with the "
                  "lens and every analysis.", "",
                  "| model | T | run | trace + core analysis | ratio | goal <= 1.5x | window Run | goal <= 6 s at 4,096 "
                  "| RSS after loading | peak RSS, window Run | peak RSS, lens + every analysis |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            ratio = r["core"] / r["run"]
            grassmann = r["kind"] == "grassmann"
            lines.append(
                f"| {names[r['kind']]} | {r['T']} | {r['run']:.2f} | {r['core']:.2f} | {ratio:.2f} | "
                f"{('met' if ratio <= 1.5 else 'not met') if grassmann and r['T'] >= 1024 else '—'} | "
                f"{r['window warm']:.2f} | "
                f"{('met' if r['window warm'] <= 6 else 'not met') if grassmann and r['T'] == 4096 else '—'} | "
                f"{r['loaded']:.0f} | {r['peak window']:.0f} | {r['peak all']:.0f} |")
        lines += ["", LONG_PROMPTS]
    if gen:
        lines += ["", "| model | generate, tokens/s (64 after 16, greedy) | plain PyTorch loop, no cache | ratio |",
                  "|---|---|---|---|"]
        for kind, (g, t) in gen.items():
            lines.append(f"| {names[kind]} | {g:.1f} | {t:.1f} | {g / t:.1f}x |")
    if patch:
        lines += ["", f"| model | exact patching, {a.pairs} pairs | attribution, {a.pairs} pairs | attribution / exact "
                  "| goal <= 0.35 |", "|---|---|---|---|---|"]
        for kind, (e, at) in patch.items():
            lines.append(f"| {names[kind]} | {e:.1f} s | {at:.1f} s | {at / e:.2f} | "
                         f"{'met' if at / e <= 0.35 else 'not met'} |")
    if bundled:
        lines += ["", "At the bundled size (the bundled Grassmann model: d 128, r 22, 6 layers, 6 offsets each; 256 "
                  "tokens; weight-only results cached; medians of the benchmark's repetitions, interleaved; ms):", "",
                  "| threads | trace (as the window runs it) | core analysis | every analysis | every analysis / trace "
                  "| goal <= 0.50 |", "|---|---|---|---|---|---|"]
        for threads, tr, core, every in bundled:
            lines.append(f"| {threads} | {tr:.1f} | {core:.1f} | {every:.1f} | {every / tr:.2f} | "
                         f"{'met' if every / tr <= 0.5 else 'not met'} |")
    lines += ["", memory_note()]
    lines += ["", HISTORY]
    lines += ["", "The GPU column of issue 39 (a window Run at most 0.3 s, generation at least 1,000 tokens/s, run "
              "within 1.3x of a PyTorch forward) needs `--device cuda` on a GPU machine; it was not run here.", ""]
    write_doc(os.path.join(ROOT, a.out), "\n".join(lines))


if __name__ == "__main__":
    main()
