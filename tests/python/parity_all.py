#!/usr/bin/env python3
"""Writes every parity case of tests/import/parity_test.cpp in one process (importing torch
once): OUT/<family>_<kind>_<norm>_<format>_<dtype>_<size>/{checkpoint, expected.json, logits.f32}.
Every family x kind at paper size; bf16/fp16/safetensors readers at the tiny size; and
OUT/conditioning (parity_conditioning.py).
Usage: parity_all.py OUT"""

import os
import sys

import parity_adipks
import parity_alphaxiv
import parity_arledge
import parity_arledge_scripts
import parity_causal_mixer
import parity_common as pc
import parity_conditioning
import parity_grasslm
import parity_kanenorman
import parity_wake2vec
import parity_youdie006

# Layout name -> the function writing one case of it.
FAMILIES = {"grasslm": parity_grasslm.make, "alphaxiv": parity_alphaxiv.make, "kanenorman": parity_kanenorman.make,
            "arledge": parity_arledge.make, "adipks": parity_adipks.make, "wake2vec": parity_wake2vec.make,
            "wake2vec-ln1": lambda args: parity_wake2vec.make(args, with_ln1=True),
            "youdie006": parity_youdie006.make}
# (family, kind, norm, format, dtype, size, script) -> the function for cases made as one
# family's training script saves them (issue 30): Arledge's train.py and train_exp4_ddp.py, the
# CausalGrassmannMixer family's train.py.
SCRIPT_CASES = [
    (("alphaxiv", "grassmann", "pre", "pt", "float32", "paper", "arledge-train"), parity_arledge_scripts.make_train_py),
    (("arledge-gpt2", "transformer", "pre", "pt", "float32", "paper", "arledge-train"),
     parity_arledge_scripts.make_train_py),
    (("alphaxiv", "grassmann", "pre", "pt", "float32", "paper", "arledge-exp4"), parity_arledge_scripts.make_exp4),
    (("arledge", "transformer", "pre", "pt", "float32", "paper", "arledge-exp4"), parity_arledge_scripts.make_exp4),
    (("arledge-v3", "grassmann", "pre", "pt", "float32", "paper", "arledge-train"),
     parity_arledge_scripts.make_train_v3),
    # The CausalGrassmannMixer family's training/train.py: out_dir/<model>/checkpoint.pt.
    (("causal-mixer", "grassmann", "pre", "pt", "float32", "paper", "causal-train"), parity_causal_mixer.make),
    (("causal-mixer", "transformer", "pre", "pt", "float32", "paper", "causal-train"), parity_causal_mixer.make),
]
# (family = layout name, kind, norm, format, dtype, size); the same list as parity_test.cpp's.
# GrassLM has no Transformer baseline; the earlier Wake2vec version differs only in its Grassmann
# block. Arledge's Grassmann case is the fused kernel's model (GrassmannGPTv4 is alphaXiv's).
CASES = [
    ("grasslm", "grassmann", "post", "pt", "float32", "paper"),
    ("alphaxiv", "grassmann", "pre", "pt", "float32", "paper"),
    ("alphaxiv", "transformer", "pre", "pt", "float32", "paper"),
    ("kanenorman", "grassmann", "post", "pt", "float32", "paper"),
    ("kanenorman", "grassmann", "pre", "pt", "float32", "paper"),
    ("kanenorman", "transformer", "post", "pt", "float32", "paper"),
    ("kanenorman", "transformer", "pre", "pt", "float32", "paper"),
    ("arledge", "grassmann", "pre", "pt", "float32", "paper"),
    ("arledge", "transformer", "pre", "pt", "float32", "paper"),
    ("adipks", "grassmann", "pre", "pt", "float32", "paper"),
    ("adipks", "transformer", "pre", "pt", "float32", "paper"),
    ("wake2vec", "grassmann", "post_mix", "pt", "float32", "paper"),
    ("wake2vec-ln1", "grassmann", "pre", "pt", "float32", "paper"),
    ("wake2vec", "transformer", "pre", "pt", "float32", "paper"),
    ("youdie006", "grassmann", "post", "pt", "float32", "paper"),
    ("youdie006", "grassmann", "pre_mix", "pt", "float32", "paper"),
    ("youdie006", "grassmann", "pre", "pt", "float32", "paper"),
    ("youdie006", "transformer", "post", "pt", "float32", "paper"),
    ("youdie006", "transformer", "pre", "pt", "float32", "paper"),
    ("grasslm", "grassmann", "post", "safetensors", "bfloat16", "tiny"),
    ("alphaxiv", "grassmann", "pre", "pt", "float16", "tiny"),
    ("kanenorman", "grassmann", "post", "safetensors", "float32", "tiny"),
]


def main():
    out = sys.argv[1]
    for family, kind, norm, fmt, dtype, size in CASES:
        name = "_".join((family, kind, norm, fmt, dtype, size))
        argv = ["--kind", kind, "--format", fmt, "--dtype", dtype, "--size", size, "--out", os.path.join(out, name)]
        if family in ("kanenorman", "youdie006"):  # the families with a pre_norm switch
            argv += ["--norm", norm]
        FAMILIES[family](pc.parser("").parse_args(argv))
    for case, make in SCRIPT_CASES:
        family, kind, norm, fmt, dtype, size, script = case
        name = "_".join(case)
        make(pc.parser("").parse_args(["--kind", kind, "--format", fmt, "--dtype", dtype, "--size", size,
                                       "--out", os.path.join(out, name)]))
    parity_conditioning.make(os.path.join(out, "conditioning"))


if __name__ == "__main__":
    main()
