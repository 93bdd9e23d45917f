#!/usr/bin/python3
"""Attribution graphs (issue 50): `gwb graph` timed as a user runs it, then docs/performance-graph.md.

  scripts/bench --graph [--rounds 3] [--out docs/performance-graph.md]

1. The bundled pair with a transcoder set each (d_sae 1024, k 16, trained on 200k tokens of Emma,
   once, kept in build/bench-graph): the Pride and Prejudice opening cut to 24 and 64 tokens, the
   graph with and without the loadings (float64), and without loadings in float32; rounds
   interleaved, medians of the engine's own time (`time:`), wall time and peak resident memory.
2. Long prompts at the bundled size (a random model of the bundled shape with 4,096 positions, a
   transcoder set trained on 20k tokens): 1,024 tokens (float64) and 4,096 tokens (float32), once
   each, without loadings (--long picks the lengths).
3. GrassLM-100M's shape (resources/configs/grasslm-100m-shape.json, random weights, WordPiece
   vocabulary of 30,522 words, transcoders trained on 8k tokens): 256 tokens, once, without
   loadings, float32 (--no-scale skips it).
No reference implementation exists for a Grassmann model (circuit-tracer serves Transformers of a
handful of families), so there is no ratio: the figures are gwb's alone.
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

from bench_common import cpu_model, write_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMMA = os.path.join(ROOT, "..", "shared", "data", "austen", "emma.txt")


def timed(cmd, timeout=None):
    """(engine seconds from `time:`, wall seconds, peak RSS MB, stdout) of a gwb command."""
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True,
                       env=dict(os.environ, QT_QPA_PLATFORM="offscreen"), timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr[-2000:]}")
    wall, peak = r.stderr.strip().splitlines()[-1].split()
    engine = float(re.search(r"^time: ([0-9.]+) s", r.stdout, re.M).group(1))
    return engine, float(wall), int(peak) / 1024, r.stdout


def field(out, name):
    m = re.search(rf"^{re.escape(name)}: (.*)$", out, re.M)
    return m.group(1) if m else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="docs/performance-graph.md")
    ap.add_argument("--no-scale", action="store_true")
    ap.add_argument("--long", default="1024,4096", help="prompt lengths of the long-prompt runs (comma-separated)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, a.build, "python"))
    import gwb
    prog = os.path.join(ROOT, a.build, "bin", "gwb")
    cache = os.path.join(ROOT, "build", "bench-graph")
    os.makedirs(cache, exist_ok=True)
    sets = {}
    for kind in ("grassmann", "transformer"):
        out = os.path.join(cache, f"tc-{kind}")
        if not os.path.exists(os.path.join(out, "transcoders.json")):
            subprocess.run([prog, "features", "train", "--transcoders", "--model", kind, "--corpus", EMMA, "--out", out,
                            "--d-sae", "1024", "--k", "16", "--tokens", "200000", "--batch", "1024"], check=True)
        sets[kind] = out
    opening = open(os.path.join(ROOT, "resources", "prompts", "pride-opening.txt"), encoding="utf-8").read()
    text = opening + " " + open(EMMA, encoding="utf-8").read()[:4000]
    g = gwb.bundled("grassmann")
    prompts = {T: g.decode(g.encode(text)[:T]) for T in (24, 64)}
    modes = {"graph + loadings": [], "graph": ["--no-loadings"], "graph, float32": ["--no-loadings", "--float32"]}
    results = {}  # (kind, T, mode) -> list of (engine, wall, peak)
    info = {}
    for _ in range(a.rounds):
        for T, prompt in prompts.items():
            for kind in ("grassmann", "transformer"):
                for mode, extra in modes.items():
                    with tempfile.TemporaryDirectory() as tmp:
                        e, w, p, out = timed([prog, "graph", "--model", kind, "--transcoders", sets[kind], "--prompt",
                                              prompt, "--out", os.path.join(tmp, "g.json"), *extra])
                    results.setdefault((kind, T, mode), []).append((e, w, p))
                    if mode == "graph":  # the scores and completeness of the float64 graph
                        info[(kind, T)] = out
    med = statistics.median
    lines = [
        "# Attribution graphs: time and memory (scripts/bench --graph)",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores; {datetime.date.today().isoformat()}; "
        f"{a.rounds} rounds, interleaved; medians. Engine time is `gwb graph`'s own `time:` (replacement, rows, "
        "loadings); wall time adds loading the model and the transcoders, pruning and writing the JSON.",
        "",
        "Bundled models, transcoders d_sae 1024, k 16 (200k tokens of Emma):",
        "",
        "| model | tokens | active features | rows computed | mode | engine s | wall s | peak MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for T in prompts:
        for kind in ("grassmann", "transformer"):
            out = info[(kind, T)]
            active = field(out, "active features")
            m = re.match(r"(\d+) \(rows computed for (\d+)\)", active)
            for mode in modes:
                rs = results[(kind, T, mode)]
                lines.append(f"| {kind} | {T} | {m.group(1) if m else '?'} | {m.group(2) if m else '?'} | {mode} | "
                             f"{med(r[0] for r in rs):.2f} | {med(r[1] for r in rs):.2f} | "
                             f"{med(r[2] for r in rs):.0f} |")
    lines += ["", "Scores of the 64-token graphs (float64): " + "; ".join(
        f"{kind}: replacement {field(info[(kind, 64)], 'replacement score')}, completeness "
        f"{field(info[(kind, 64)], 'completeness score')}, completeness error "
        f"{field(info[(kind, 64)], 'completeness error (max over rows)')}" for kind in ("grassmann", "transformer")), ""]

    # Long prompts at the bundled size: a random model with 4,096 positions.
    work = os.path.join(cache, "long")
    os.makedirs(work, exist_ok=True)
    tok = os.path.join(work, "tok.model")
    subprocess.run([prog, "tokenizer", "export", "--model", "grassmann", "--out", tok], check=True, capture_output=True)
    cfg = json.load(open(os.path.join(ROOT, "resources", "configs", "austen-6L-128-grassmann.json")))
    cfg["max_len"] = 4096
    cfg["name"] = "bundled-shape-4096"
    json.dump(cfg, open(os.path.join(work, "g.json"), "w"))
    model = os.path.join(work, "g.gwb")
    subprocess.run([prog, "init", "--config", os.path.join(work, "g.json"), "--tokenizer", tok, "--seed", "1", "--out",
                    model], check=True, capture_output=True)
    tc = os.path.join(work, "tc")
    if not os.path.exists(os.path.join(tc, "transcoders.json")):
        subprocess.run([prog, "features", "train", "--transcoders", "--model", model, "--corpus", EMMA, "--out", tc,
                        "--d-sae", "1024", "--k", "16", "--tokens", "20000", "--batch", "1024"], check=True,
                       capture_output=True)
    lm = gwb.load(model)
    emma_ids = lm.encode(open(EMMA, encoding="utf-8").read()[:250000])
    lines += ["Long prompts (a random model of the bundled Grassmann shape with 4,096 positions, transcoders d_sae "
              "1024, k 16), no loadings, rows for the 4,096 most influential features:", "",
              "| tokens | precision | active features | engine s | wall s | peak MB |", "|---|---|---|---|---|---|"]
    for T in [int(t) for t in a.long.split(",") if t]:
        precision = ["--float32"] if T > 1024 else []
        with tempfile.TemporaryDirectory() as tmp:
            e, w, p, out = timed([prog, "graph", "--model", model, "--transcoders", tc, "--prompt",
                                  lm.decode(emma_ids[:T]), "--out", os.path.join(tmp, "g.json"), "--no-loadings",
                                  *precision])
        lines.append(f"| {T} | {'float32' if precision else 'float64'} | {field(out, 'active features')} | {e:.1f} | "
                     f"{w:.1f} | {p:.0f} |")
    lines.append("")

    if not a.no_scale:
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        from bench_scale import vocabulary
        vocab = os.path.join(work, "vocab-30522.txt")
        vocabulary(30522, vocab)
        big = os.path.join(work, "grasslm-100m.gwb")
        subprocess.run([prog, "init", "--config", os.path.join(ROOT, "resources", "configs", "grasslm-100m-shape.json"),
                        "--tokenizer", vocab, "--seed", "1", "--out", big], check=True, capture_output=True)
        words = open(EMMA, encoding="utf-8").read()[:200000].lower()
        corpus = os.path.join(work, "emma-lower.txt")
        open(corpus, "w").write(words)
        btc = os.path.join(work, "tc-100m")
        if not os.path.exists(os.path.join(btc, "transcoders.json")):
            subprocess.run([prog, "features", "train", "--transcoders", "--model", big, "--corpus", corpus, "--out", btc,
                            "--d-sae", "2048", "--k", "16", "--tokens", "8192", "--batch", "1024"], check=True,
                           capture_output=True)
        bm = gwb.load(big)
        prompt = bm.decode(bm.encode(words)[:256])
        lines += ["GrassLM-100M's shape (random weights; transcoders d_sae 2048, k 16), float32, no loadings, rows "
                  "for the 512 most influential features (at most 20 minutes):", "",
                  "| tokens | active features | engine s | wall s | peak MB |", "|---|---|---|---|---|"]
        with tempfile.TemporaryDirectory() as tmp:
            try:
                e, w, p, out = timed([prog, "graph", "--model", big, "--transcoders", btc, "--prompt", prompt, "--out",
                                      os.path.join(tmp, "g.json"), "--no-loadings", "--float32", "--max-features",
                                      "512", "--batch", "16"], timeout=1200)
                lines.append(f"| {len(bm.encode(prompt))} | {field(out, 'active features')} | {e:.1f} | {w:.1f} | "
                             f"{p:.0f} |")
            except subprocess.TimeoutExpired:
                lines.append(f"| {len(bm.encode(prompt))} | | did not finish in 20 minutes | | |")
        lines.append("")
    lines += ["Memory: the rows kept while features are chosen, (rows computed) x (every active feature, error "
              "and token) float32 by chunks that hold a non-zero, so it grows with the number of active nodes "
              "times the feature budget (--max-features), never with (tokens x features) squared; and one "
              "backward pass's tensors, about twenty B x tokens x d a block, which is most of the peak at long "
              "prompts (B, targets a pass, is 32 x 256 / tokens there, at least 4). The per-offset and per-head "
              "loadings of the pruned edges add one unrouted pass per batch of pruned rows and one routed pass "
              "per unit and block crossed, as deep as that block (the skip part is what the units leave of the "
              "edge).", ""]
    write_doc(os.path.join(ROOT, a.out), "\n".join(lines))


if __name__ == "__main__":
    main()
