#!/usr/bin/python3
"""The Python package's cost over the engine (issue 27), measured inside one process: each
repetition runs the work once in C++ (gwb._gwb._time_cpp: the engine called directly, no Python
object made) and once through the Python API, alternately, so both see the same machine load and
memory state. Prints one JSON line per figure:
  {"name": "trace/grassmann/T:128", "cpp": [s, ...], "python": [s, ...]}

  bench_python.py --grassmann G.gwb --transformer T.gwb --T 128 512 2048 [--min-time 4]

trace: traceIds (logit lens K = 5) + traceFile (the arrays and meta.json) in C++ against
model.trace(ids, lens=True) (the same, plus numpy arrays, meta parsed into a dict, a Trace object);
forward: runWithHooks without hooks against model.run(ids)."""

import argparse
import json
import random
import time

import gwb
from gwb import _gwb


def pairs(cpp, py, min_time):
    cpp(), py()  # warm-up (first-touch allocations, thread start)
    a, b, start = [], [], time.perf_counter()
    while len(a) < 5 or time.perf_counter() - start < min_time:
        a.append(cpp())
        t0 = time.perf_counter()
        py()
        b.append(time.perf_counter() - t0)
    return a, b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grassmann", required=True)
    ap.add_argument("--transformer", required=True)
    ap.add_argument("--T", type=int, nargs="+", default=[128, 512, 2048])
    ap.add_argument("--min-time", type=float, default=4.0)
    a = ap.parse_args()
    for kind, path in (("grassmann", a.grassmann), ("transformer", a.transformer)):
        m = gwb.load(path, device="cpu")
        V = m.config["vocab_size"]
        for T in a.T:
            rng = random.Random(7)
            ids = [rng.randrange(V) for _ in range(T)]
            for what, py in (("trace", lambda: m.trace(ids, lens=True)), ("forward", lambda: m.run(ids))):
                cpp_s, py_s = pairs(lambda: _gwb._time_cpp(m._m, what, ids), py, a.min_time)
                print(json.dumps({"name": f"{what}/{kind}/T:{T}", "cpp": cpp_s, "python": py_s}), flush=True)


if __name__ == "__main__":
    main()
