#!/usr/bin/env python3
"""gwb's attribution graph beside circuit-tracer 0.5.0's attribute() (issue 70), side by side in one
run, then docs/performance-circuit-tracer.md.

  scripts/bench --circuit-tracer [--rounds 3]

Runs in the venv of SAELens and circuit-tracer (build/pip-torch-env/saelens, made by
scripts/pip-torch-env) with the pip-torch build's package (build/pip-torch; `cmake --build --preset
pip-torch`). The model is a transformers GPT-2 with random weights (4 layers, d 128, 4 heads, 320
positions, a byte-level BPE of 2,000 pieces trained on the repository's prose) with a ReLU
transcoder set gwb trains on Emma (d_sae 512, 16,384 tokens), kept in build/bench-circuit-tracer.
circuit-tracer's ReplacementModel is built as tests/python/test_saelens_circuit_tracer.py builds it
(set to gwb's design, so both compute the same graph; that test checks they do). Prompts of 16, 64
and 256 tokens (Emma's opening after an end-of-text token). Both at circuit-tracer's defaults as
gwb uses them: 10 logits, probability 0.95, 4,096 features, batch 32; in float32 and in float64;
gwb without the per-offset/head loadings, which circuit-tracer does not compute.

Each measurement runs in its own process, rounds interleaved; the figures are medians of the call's
wall time (attribute() or gwb.graph(), after the model and transcoders are loaded) and of the
process's peak resident memory, and of the peak's growth during the call (peak minus the resident
memory before it).
"""

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
EMMA = os.path.join(ROOT, "..", "shared", "data", "austen", "emma.txt")
CACHE = os.path.join(ROOT, "build", "bench-circuit-tracer")
LENGTHS = (16, 64, 256)


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def prepare():
    """The GPT-2, gwb's transcoder set and circuit-tracer's copy of it, made once."""
    import pathlib
    import gwb
    from conftest import random_gpt2
    folder = pathlib.Path(CACHE) / "gpt2-4x128"
    tc = pathlib.Path(CACHE) / "gwb-transcoders"
    ct = pathlib.Path(CACHE) / "ct-transcoders"
    if not (ct / "config.yaml").exists():
        random_gpt2(folder, n_layer=4, n_embd=128, n_head=4, vocab_size=2000, n_positions=320)
        model = gwb.load(folder)
        gwb.features.train_transcoders(model, [EMMA], tc, architecture="relu", d_sae=512, l1=1.0, tokens=16384,
                                       batch=256, context=64, device="cpu", progress=False)
        from test_saelens_circuit_tracer import write_circuit_tracer_set
        ct.mkdir(parents=True, exist_ok=True)
        write_circuit_tracer_set(tc, ct, 4)
    return folder, tc, ct


def prompt_ids(model, T):
    """Emma's opening after the end-of-text token (id 0 in random_gpt2's vocabulary), T tokens."""
    return [0] + list(model.encode(open(EMMA, encoding="utf-8").read(20000)))[:T - 1]


def child(job):
    import torch
    import gwb
    folder, tc, ct = prepare()
    model = gwb.load(folder)
    ids = prompt_ids(model, job["T"])
    dtype = torch.float64 if job["dtype"] == "float64" else torch.float32
    if job["tool"] == "circuit-tracer":
        import yaml
        from circuit_tracer import attribute
        from circuit_tracer.utils.hf_utils import load_transcoders
        import test_saelens_circuit_tracer as t
        t.DTYPE = dtype
        config = yaml.safe_load((ct / "config.yaml").read_text())
        config["scan"] = "gwb-bench"
        rm = t.replacement_model(folder, load_transcoders(config, device=torch.device("cpu"), dtype=dtype,
                                                          lazy_decoder=False))
        before = rss_mb()
        start = time.perf_counter()
        g = attribute(torch.tensor(ids), rm, max_n_logits=10, desired_logit_prob=0.95, batch_size=32,
                      max_feature_nodes=4096, verbose=False)
        seconds = time.perf_counter() - start
        features = int(len(g.selected_features))
    else:
        sets = gwb.features.load_transcoders(tc, model)
        before = rss_mb()
        start = time.perf_counter()
        g = gwb.graph(model, ids, sets, double_precision=job["dtype"] == "float64", loadings=False, progress=False)
        seconds = time.perf_counter() - start
        features = int(g.counts["features"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(seconds=seconds, peak_mb=peak, growth_mb=peak - before, features=features)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "performance-circuit-tracer.md"))
    ap.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(json.loads(a.child))
    prepare()
    lengths = [int(x) for x in a.lengths.split(",")]
    results = {}
    for _ in range(a.rounds):
        for dtype in ("float32", "float64"):
            for T in lengths:
                for tool in ("circuit-tracer", "gwb"):
                    job = dict(tool=tool, T=T, dtype=dtype)
                    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        raise RuntimeError(f"{job}: {r.stderr[-3000:]}")
                    m = json.loads(r.stdout.strip().splitlines()[-1])
                    results.setdefault((dtype, T, tool), []).append(m)
                    print(job, m, flush=True)
    import torch
    from bench_common import cpu_model, write_doc
    lines = ["# Performance: attribution graphs beside circuit-tracer", "",
             f"Measured {datetime.date.today().isoformat()} by `scripts/bench --circuit-tracer` ({a.rounds} rounds, "
             f"interleaved), on {cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__} (pip), "
             "circuit-tracer 0.5.0, the pip-torch build.", "",
             __doc__.split("\n\n")[2].replace("\n", " "), "",
             "| dtype | tokens | features | circuit-tracer | gwb | time ratio gwb / ct | ct peak (growth) | "
             "gwb peak (growth) | gwb at most ct |",
             "|---|---|---|---|---|---|---|---|---|"]
    for dtype in ("float32", "float64"):
        for T in lengths:
            ct, ours = results[(dtype, T, "circuit-tracer")], results[(dtype, T, "gwb")]
            med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
            ok = med(ours, "seconds") <= med(ct, "seconds") and med(ours, "peak_mb") <= med(ct, "peak_mb")
            lines.append(f"| {dtype} | {T} | {ours[0]['features']} / {ct[0]['features']} | {med(ct, 'seconds'):.2f} s | "
                         f"{med(ours, 'seconds'):.2f} s | {med(ours, 'seconds') / med(ct, 'seconds'):.2f} | "
                         f"{med(ct, 'peak_mb'):.0f} MB ({med(ct, 'growth_mb'):.0f}) | "
                         f"{med(ours, 'peak_mb'):.0f} MB ({med(ours, 'growth_mb'):.0f}) | {'yes' if ok else '**no**'} |")
    lines += ["", "features: gwb's / circuit-tracer's active features in the graph (equal when both compute the "
              "same graph). Peak: the process's peak resident memory (model, transcoders and the call); growth: "
              "how much the call added to it.", ""]
    write_doc(a.out, "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
