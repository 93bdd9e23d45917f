#!/usr/bin/env python3
"""Writes every parity case of tests/import/parity_test.cpp in one process (importing torch
once): OUT/<family>_<kind>_<format>_<dtype>/{model.pt|model.safetensors, expected.json}.
Usage: parity_all.py OUT"""

import os
import sys

import parity_alphaxiv
import parity_common as pc
import parity_grasslm
import parity_kanenorman

FAMILIES = {"grasslm": parity_grasslm, "alphaxiv": parity_alphaxiv, "kanenorman": parity_kanenorman}
CASES = [(f, k, "pt", "float32") for f in FAMILIES for k in ("grassmann", "transformer")] + [
    ("grasslm", "grassmann", "safetensors", "bfloat16"),
    ("alphaxiv", "grassmann", "pt", "float16"),
    ("kanenorman", "grassmann", "safetensors", "float32"),
]


def main():
    out = sys.argv[1]
    for family, kind, fmt, dtype in CASES:
        name = "_".join((family, kind, fmt, dtype))
        args = pc.parser("").parse_args(["--kind", kind, "--format", fmt, "--dtype", dtype,
                                         "--out", os.path.join(out, name)])
        FAMILIES[family].make(args)


if __name__ == "__main__":
    main()
