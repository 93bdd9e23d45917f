#!/usr/bin/env python3
"""Writes every parity case of tests/import/parity_test.cpp in one process (importing torch
once): OUT/<family>_<kind>_<norm>_<format>_<dtype>_<size>/{checkpoint, expected.json, logits.f32}.
Every family x kind at paper size; bf16/fp16/safetensors readers at the tiny size; and
OUT/conditioning (parity_conditioning.py).
Usage: parity_all.py OUT"""

import os
import sys

import parity_alphaxiv
import parity_common as pc
import parity_conditioning
import parity_grasslm
import parity_kanenorman

FAMILIES = {"grasslm": parity_grasslm, "alphaxiv": parity_alphaxiv, "kanenorman": parity_kanenorman}
# (family, kind, norm, format, dtype, size). GrassLM has no Transformer baseline.
CASES = [
    ("grasslm", "grassmann", "post", "pt", "float32", "paper"),
    ("alphaxiv", "grassmann", "pre", "pt", "float32", "paper"),
    ("alphaxiv", "transformer", "pre", "pt", "float32", "paper"),
    ("kanenorman", "grassmann", "post", "pt", "float32", "paper"),
    ("kanenorman", "grassmann", "pre", "pt", "float32", "paper"),
    ("kanenorman", "transformer", "post", "pt", "float32", "paper"),
    ("kanenorman", "transformer", "pre", "pt", "float32", "paper"),
    ("grasslm", "grassmann", "post", "safetensors", "bfloat16", "tiny"),
    ("alphaxiv", "grassmann", "pre", "pt", "float16", "tiny"),
    ("kanenorman", "grassmann", "post", "safetensors", "float32", "tiny"),
]


def main():
    out = sys.argv[1]
    for family, kind, norm, fmt, dtype, size in CASES:
        name = "_".join((family, kind, norm, fmt, dtype, size))
        argv = ["--kind", kind, "--format", fmt, "--dtype", dtype, "--size", size, "--out", os.path.join(out, name)]
        if family == "kanenorman":
            argv += ["--norm", norm]
        FAMILIES[family].make(pc.parser("").parse_args(argv))
    parity_conditioning.make(os.path.join(out, "conditioning"))


if __name__ == "__main__":
    main()
