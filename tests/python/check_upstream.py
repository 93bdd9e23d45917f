#!/usr/bin/env python3
"""Checks the parity cases against each family's OWN upstream model code.

The parity references (parity_<family>.py) are our re-implementations, written from facts read in
the public repositories. This script closes the loop: it imports the upstream repository's own
model code from a checkout the user provides, builds the model the way that family's scripts build
it, loads our parity checkpoint with strict=True, and compares its logits with the case's
logits.f32. No upstream code is contained in this file; the repositories are read from PATH.

Usage (torch and numpy required; PyYAML for youdie006):

    cd tests/python && /usr/bin/python3 parity_all.py DIR        # writes the cases (1-2 min)
    /usr/bin/python3 tests/python/check_upstream.py --cases DIR --family F --repo PATH [--repo2 PATH]

For every case folder of family F in DIR (expected.json "family"; wake2vec also takes
"wake2vec-ln1"): build, strict load, eval, print max |diff| per prompt and a PASS/FAIL line
(tolerance 1e-4), then run negative controls, each of which must move the logits by more than
1e-2 (a control that cannot show anything for a case is reported as SKIP). Exit status 0 only if
everything passed.

Families: repository @ commit (PATH is a checkout there), files used, how the model is built
------------------------------------------------------------------------------------------------
youdie006   youdie006/grassmann: --repo @ 7a10f87 (HEAD; model.py as of e8aa8c8, the current
            code) and --repo2 @ 8aa6e5bceea2d0cf7f7668ffc033501010922583 (the initial code), in
            either order. model.py (LMConfig, Transformer). Built as train_hydra.py does, from the
            case's .hydra/config.yaml (model.*, data.max_context_len; layerwise_lags when the
            config has it); vocab from the embedding shape. A config with model.layerwise_lags was
            written by the current code and runs there; one without, by the initial code.
            Checkpoint: bare state_dict. Controls: model.pre_norm flipped; an initial-code
            pre_norm Grassmann case run by the current code.
kanenorman  kanenorman/grassmann @ af6a48608658800a3995fb27319556d27e60db50
            model.py (LMConfig, Transformer). Sizes from expected.json, lags [1,2,4,8,12,16] (the
            offsets of our kanenorman layout), weight_tying, pre_norm from the case's variant.
            einops is replaced by a two-pattern stand-in when it is not installed. A .safetensors
            case gets lm_head.weight filled from token_embedding.weight (tied, stored once).
            Control: pre_norm flipped.
alphaxiv    alphaXiv/paper-implementations @ 046a3443b03f6493eb1003431b771083768be5dc
            attention_is_not_all_you_need/src/attn_is_not_all_you_need/models/grassmann.py
            (GrassmannGPT) and .../models/gpt2.py (BaseTransformer), each imported by file path
            (not through the package, whose __init__ pulls in other models). Loaded as
            eval_wikitext.load_model: ckpt["model_state_dict"], "_orig_mod." stripped; float16
            cast to float32. Windows [1,2,4,8,12,16] in every layer. Controls: windows
            [1,2,4,8,12] and [1,2,4,8,12,15], PluckerEncoder eps 1e-6; Transformer: 8 heads.
            torch < 2.0: F.scaled_dot_product_attention is supplied (math version) when missing.
grasslm     adriansimonn/GrassLM; files read at python/grasslm/model.py @
            76c18f9bfc2caa303bf09b6f845b7712be41a2bd, layers.py @
            3df2a6004fb53419486d6a5b777d2030afd24ae1, __init__.py @
            5f3dbe0eaa7389c61e0649d4d73aebe28c3bcdaa (a checkout at or after 76c18f9b).
            PATH/python goes on sys.path and grasslm.model.GrassLM is imported. Built WITHOUT
            window_schedule (window_schedule=None), as train.py / evaluate.py / generate.py build
            it; the case's config.json window_schedule (train.py writes [1,2,4,8,12,16][:N]) is
            reported and used as a control that must change the logits (skipped when it equals
            the built-in schedule). Second control: the built-in schedule reversed (skipped when
            that equals the built-in one, e.g. [1,1]). .pt: ckpt["model_state_dict"];
            .safetensors: read here, BF16 widened, lm_head.weight filled from tok_embed.weight.
arledge     sherlok-xin/grassmann--flow @ 67efbc158ad823f7196f0696415f6e32b5e2e2fa (a copy of
            Elliot Arledge's grassmann-flows)
            src/cuda/grassmann_fused.py (GrassmannGPTFused): sys.modules["grassmann_cuda"] is set
            to None so the module's own `import grassmann_cuda` fails and its pure-PyTorch path
            runs; windows from the checkpoint's window_sizes_tensor buffer. train_wikitext2.py:
            the classes SmallTransformerBlock and SmallTransformer are extracted with `ast` and
            executed (the script imports datasets/transformers and trains at module level), 8
            heads. torch < 2.0: MultiheadAttention.forward(is_causal=) and
            Transformer.generate_square_subsequent_mask(dtype=) keywords are accepted and
            dropped / applied with .to(dtype) (no change in math). Controls: Grassmann eps 1e-6;
            Transformer 4 heads. (src/models/grassmann_v4.py is the alphaxiv layout; not used.)
arledge-v3  sherlok-xin/grassmann--flow @ 67efbc158ad823f7196f0696415f6e32b5e2e2fa
            src/models/grassmann_v3.py (GrassmannGPTv3), imported by file path, built as train.py's
            create_model builds `--model grassmann`: the config.json beside best_model.pt gives
            reduced_dim, ff_dim, window_sizes, model_dim, num_layers, vocab_size, max_seq_len.
            Loaded from ckpt["model_state_dict"] (strict). Control: window_sizes None (the
            model's own default, 1..128: another 1/sqrt(2|W|)).
causal-mixer  the repository holding training/grassman.py (CausalGrassmannMixer, GrassmannLM,
            TransformerLM) and training/checkpoints.py; its name is not known here (read from the
            code index). The checkout's root goes on sys.path and the family's own loader runs:
            training.checkpoints.load_model_from_checkpoint(torch.load(checkpoint.pt)) builds the
            model from ckpt["config"] and ckpt["model_type"] and loads ckpt["model"] strictly;
            logits are its forward()["logits"]. Controls: Grassmann config eps 1e-8 and offsets
            (1, 2, 4); Transformer n_heads 8.
adipks      Adipks/sparse_grassmann_llm; --repo @ f2fa152da34aed2a3e8e937abaa43005433db805
            (models/grassmann_sparse.py, models/transformer_baseline.py), --repo2 @
            6aa4170f38686ff0499b159feb898147485c3dd4 for models/blocks.py and utils/sparsity.py
            when --repo lacks them. The packages `models` and `utils` are set up with both
            folders on their __path__ (--repo first; their __init__.py are not run, they only
            re-export). Built as prompt.py / eval/bench_inference.py do: sizes from ckpt["config"],
            GrassmannConfig's default windows, strict load of ckpt["state_dict"], then the 2:4
            masks re-derived from the weights (weight != 0); Transformer n_heads =
            config.get("n_heads", 8). Variant: masks all ones (must also match). Controls:
            fresh random masks not re-derived, windows [1,2,4,8,12,16], Plucker eps 1e-6;
            Transformer 4 heads.
wake2vec    mahb97/Wake2vec, Grassmanntesting/Grassmann_v_attention_for_Wake.py; --repo @
            17552a8648ff251f93ffcf0db61cbb1e065dc11f (current Colab version), --repo2 a checkout
            holding the earlier full version with ln1 (no commit id known). The file trains at
            module level (Colab drive mount, __main__), so the classes Config, FFN,
            CausalSelfAttention, TransformerBlock, TransformerLM, GrassmannMixingBlock,
            GrassmannTransformerBlock, GrassmannLM are extracted with `ast` and executed with the
            file's torch/math imports only. Config() with sizes from expected.json, windows
            [1,2,4,8,12,16]. Cases: current GrassmannLM on "wake2vec", ln1 GrassmannLM on
            "wake2vec-ln1" (skipped with a message without --repo2), TransformerLM of each
            version on the Transformer case. Controls: current checkpoint into the ln1 model must
            fail strict loading (needs --repo2); windows [1,2,4,8,16]; clamp floor 1e-6 instead
            of 1e-8 (torch.clamp wrapped for the call).
"""

import argparse
import os
import sys

import numpy as np
import torch

# The command line only; the shared machinery is upstream_common.py, one check per family upstream_families.py.
from upstream_common import Report, find_cases
from upstream_families import CHECKS

FAMILIES = ["youdie006", "kanenorman", "alphaxiv", "grasslm", "arledge", "arledge-v3", "adipks", "wake2vec",
            "causal-mixer"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True, help="folder written by parity_all.py")
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--repo", required=True, help="checkout of the family's repository (see the table)")
    ap.add_argument("--repo2", help="adipks: checkout @ 6aa4170f (blocks.py, sparsity.py); "
                                    "wake2vec: checkout holding the earlier file with ln1")
    args = ap.parse_args()
    if not os.path.isdir(args.cases):
        ap.error(f"--cases {args.cases} is not a folder (write one with parity_all.py)")
    if not os.path.isdir(args.repo):
        ap.error(f"--repo {args.repo} is not a folder")
    args.repo = os.path.abspath(args.repo)
    args.repo2 = os.path.abspath(args.repo2) if args.repo2 else None
    if args.repo2 and args.family not in ("adipks", "wake2vec"):
        print(f"note: --repo2 is not used for {args.family}")

    print(f"torch {torch.__version__}, numpy {np.__version__}, python {sys.version.split()[0]}")
    fams = {"wake2vec", "wake2vec-ln1"} if args.family == "wake2vec" else {args.family}
    cases = find_cases(args.cases, fams)
    rep = Report()
    if not cases:
        rep.fail(f"no {args.family} case in {args.cases}")
    else:
        print(f"{args.family}: {len(cases)} case(s) in {args.cases}; repo {args.repo}"
              + (f", repo2 {args.repo2}" if args.repo2 else ""))
        CHECKS[args.family](cases, args, rep)
    c = rep.counts
    print(f"SUMMARY {args.family}: {c['PASS']} passed, {c['FAIL']} failed, {c['SKIP']} skipped -> "
          + ("PASS" if rep.ok else "FAIL"))
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
