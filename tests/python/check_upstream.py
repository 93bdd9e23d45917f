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
import ast
import importlib
import importlib.util
import inspect
import json
import math
import os
import struct
import sys
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

TOL = 1e-4           # a case passes when max |diff| < TOL
CONTROL_MIN = 1e-2   # a negative control passes when max |diff| > CONTROL_MIN
ALL_OFFSETS = [1, 2, 4, 8, 12, 16]

FAMILIES = ["youdie006", "kanenorman", "alphaxiv", "grasslm", "arledge", "arledge-v3", "adipks", "wake2vec",
            "causal-mixer"]


# --------------------------------------------------------------------------------------------
# Reporting

class Report:
    """Collects PASS/FAIL/SKIP lines; `ok` is False after any failure."""

    def __init__(self):
        self.ok = True
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def line(self, status, text):
        self.counts[status] += 1
        if status == "FAIL":
            self.ok = False
        print(f"{status} {text}", flush=True)

    def match(self, label, worst, per):
        self.line("PASS" if worst < TOL else "FAIL",
                  f"{label}: max |diff| = {worst:.3e} (tolerance {TOL:g}; per prompt {fmt(per)})")

    def control(self, label, worst, per):
        self.line("PASS" if worst > CONTROL_MIN else "FAIL",
                  f"control {label}: max |diff| = {worst:.3e} (must be > {CONTROL_MIN:g}; per prompt {fmt(per)})")

    def skip(self, text):
        self.line("SKIP", text)

    def fail(self, text):
        self.line("FAIL", text)


def fmt(per):
    return ", ".join(f"{x:.2e}" for x in per)


def info(text):
    print("    " + text, flush=True)


# --------------------------------------------------------------------------------------------
# Cases and checkpoints

class Case:
    """One parity case folder: expected.json, its reference logits and its checkpoint path."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(os.path.normpath(path))
        with open(os.path.join(path, "expected.json")) as f:
            self.exp = json.load(f)
        self.family = self.exp["family"]
        self.kind = self.exp["kind"]
        self.config = self.exp["config"]
        self.variant = self.exp.get("variant", {})
        self.prompts = self.exp["prompts"]
        self.ref = np.fromfile(os.path.join(path, self.exp["logits_file"]), dtype="<f4")
        self.checkpoint = os.path.join(path, self.exp["checkpoint_file"])
        want = sum(len(p) for p in self.prompts) * self.config["V"]
        if self.ref.size != want:
            raise ValueError(f"{self.name}: logits file holds {self.ref.size} floats, expected {want}")

    def compare(self, model):
        """Runs every prompt through `model` (batch 1); returns (max |diff|, per-prompt list)."""
        V, off, per = self.config["V"], 0, []
        with torch.no_grad():
            for ids in self.prompts:
                out = model(torch.tensor([ids], dtype=torch.long))
                if isinstance(out, (tuple, list)):  # (logits, loss) for several families
                    out = out[0]
                got = out[0].float().numpy()
                want = self.ref[off:off + len(ids) * V].reshape(len(ids), V)
                off += len(ids) * V
                if got.shape != want.shape:
                    raise ValueError(f"{self.name}: logits shape {got.shape}, expected {want.shape}")
                per.append(float(np.abs(got - want).max()))
        return max(per), per


def find_cases(root, families):
    out = []
    for name in sorted(os.listdir(root)):
        exp = os.path.join(root, name, "expected.json")
        if not os.path.isfile(exp):
            continue
        with open(exp) as f:
            fam = json.load(f).get("family")
        if fam in families:
            out.append(Case(os.path.join(root, name)))
    return out


def read_safetensors(path):
    """Minimal safetensors reader (the package may be absent): {name: tensor}, metadata.
    BF16 is widened to float32 exactly; other dtypes keep their type."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    np_types = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
                "I8": "i1", "U8": "u1", "BOOL": "?"}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        buf = raw[base + a:base + b]
        if v["dtype"] == "BF16":
            arr = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(buf, dtype=np_types[v["dtype"]])
        out[k] = torch.from_numpy(arr.copy()).reshape(v["shape"])
    return out, header.get("__metadata__")


def load_checkpoint(case):
    if case.checkpoint.endswith(".safetensors"):
        sd, meta = read_safetensors(case.checkpoint)
        info(f"safetensors read here ({len(sd)} tensors, metadata {meta})")
        return sd
    # Full unpickling (torch >= 2.6 defaults to weights_only=True, which refuses e.g. alphaXiv's
    # numpy val_ppl); these are checkpoints parity_all.py wrote.
    kw = {"weights_only": False} if "weights_only" in inspect.signature(torch.load).parameters else {}
    return torch.load(case.checkpoint, map_location="cpu", **kw)


def as_float32(sd):
    return {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}


def fill_tied_head(sd, head, embedding):
    """A safetensors export stores a tied table once; the model's state_dict has both keys."""
    if head not in sd and embedding in sd:
        sd[head] = sd[embedding]
        info(f"{head} absent -> filled from {embedding} (tied)")
    return sd


def strict_load(model, sd):
    res = model.load_state_dict(sd, strict=True)  # raises on missing/unexpected keys or shapes
    model.eval()
    return res


# --------------------------------------------------------------------------------------------
# Importing upstream code from a checkout (never copied)

def need_file(path):
    if not os.path.isfile(path):
        sys.exit(f"error: {path} not found (is the checkout at the commit named in --help?)")
    return path


def import_file(modname, path):
    """Imports the file at `path` as module `modname` (registered in sys.modules first, as the
    import system does, so dataclasses and pickling can find it)."""
    spec = importlib.util.spec_from_file_location(modname, need_file(path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod


# Top-level imports that the class extraction executes (the rest of a script's module level,
# data loading, training, Colab mounts, __main__, is never run).
SAFE_IMPORT_ROOTS = {"math", "torch", "typing", "dataclasses", "functools", "collections"}


def extract_classes(path, names, modname):
    """Executes only the top-level classes `names` of a script file (plus its imports of torch /
    math / typing), in a fresh module `modname`; returns that module."""
    with open(need_file(path), encoding="utf-8") as f:
        src = f.read()
    tree = ast.parse(src, filename=path)
    mod = types.ModuleType(modname)
    mod.__file__ = path
    sys.modules[modname] = mod
    ns = mod.__dict__
    ns.update({"math": math, "torch": torch, "nn": nn, "F": F})
    found = set()
    for node in tree.body:
        keep = False
        if isinstance(node, ast.Import):
            keep = all(a.name.split(".")[0] in SAFE_IMPORT_ROOTS for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            keep = node.level == 0 and (node.module or "").split(".")[0] in SAFE_IMPORT_ROOTS
        elif isinstance(node, ast.ClassDef) and node.name in names:
            keep = True
            found.add(node.name)
        if keep:
            seg = ast.Module(body=[node], type_ignores=[])
            exec(compile(seg, path, "exec"), ns)
    missing = [n for n in names if n not in found]
    if missing:
        sys.exit(f"error: {path} defines no top-level class {missing}")
    return mod


# --------------------------------------------------------------------------------------------
# Stand-ins and torch < 2.0 shims (installed only when the running torch / environment lacks them)

def install_einops_standin():
    """kanenorman's model.py imports einops.rearrange / einops.einsum for two patterns only."""
    try:
        import einops  # noqa: F401
        return "einops " + getattr(einops, "__version__", "?")
    except ImportError:
        pass

    def rearrange(t, pattern, **sizes):
        p = " ".join(pattern.split())
        if p == "b n (qkv h d) -> qkv b h n d":
            b, n, x = t.shape
            qkv, h = sizes["qkv"], sizes["h"]
            return t.reshape(b, n, qkv, h, x // (qkv * h)).permute(2, 0, 3, 1, 4)
        if p == "b h n d -> b n (h d)":
            b, h, n, d = t.shape
            return t.permute(0, 2, 1, 3).reshape(b, n, h * d)
        raise NotImplementedError("einops stand-in: pattern " + pattern)

    def einsum(a, b, pattern):
        lhs, out = pattern.split("->")
        x, y = lhs.split(",")
        return torch.einsum("%s,%s->%s" % (x.replace(" ", ""), y.replace(" ", ""), out.replace(" ", "")), a, b)

    mod = types.ModuleType("einops")
    mod.rearrange, mod.einsum = rearrange, einsum
    sys.modules["einops"] = mod
    return "einops stand-in (two rearrange patterns + einsum; einops not installed)"


def install_torch_shims(which):
    """Installs the torch >= 2.0 features in `which` ("sdpa", "mha_is_causal", "mask_dtype") that
    the running torch lacks; prints and returns what was installed (nothing on torch >= 2.0)."""
    shims = []
    if "sdpa" in which and not hasattr(F, "scaled_dot_product_attention"):
        def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
            if attn_mask is not None or dropout_p != 0.0:
                raise NotImplementedError("stand-in scaled_dot_product_attention: mask/dropout")
            s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if is_causal:
                t, u = q.shape[-2], k.shape[-2]
                s = s.masked_fill(torch.ones(t, u, dtype=torch.bool).triu(1), float("-inf"))
            return s.softmax(-1) @ v
        F.scaled_dot_product_attention = sdpa
        shims.append("F.scaled_dot_product_attention stand-in (math, causal, no dropout)")
    if "mha_is_causal" in which and "is_causal" not in inspect.signature(nn.MultiheadAttention.forward).parameters:
        # With an explicit -inf mask, is_causal is only a hint; dropping it changes no math.
        orig_forward = nn.MultiheadAttention.forward

        def mha_forward(self, *args, is_causal=False, **kwargs):
            return orig_forward(self, *args, **kwargs)
        nn.MultiheadAttention.forward = mha_forward
        shims.append("MultiheadAttention.forward: is_causal keyword dropped (explicit mask kept)")
    if "mask_dtype" in which and \
            "dtype" not in inspect.signature(nn.Transformer.generate_square_subsequent_mask).parameters:
        orig_gen = nn.Transformer.generate_square_subsequent_mask

        def gen(sz, device="cpu", dtype=None):
            m = orig_gen(sz, device=device)
            return m if dtype is None else m.to(dtype)
        nn.Transformer.generate_square_subsequent_mask = staticmethod(gen)
        shims.append("Transformer.generate_square_subsequent_mask: dtype keyword -> .to(dtype)")
    info(f"torch {torch.__version__} shims: " + ("; ".join(shims) if shims else "none needed"))
    return shims


# --------------------------------------------------------------------------------------------
# Families

def check_youdie006(cases, args, rep):
    import yaml
    # Two code generations: configs written by the current code (e8aa8c8 and later) carry
    # model.layerwise_lags; the initial code's (8aa6e5bc) do not. Each case is run by the code
    # that wrote it: --repo and --repo2 are checkouts of both (either order; told apart by
    # whether LMConfig has layerwise_lags).
    generations = {}
    for n, path in enumerate(p for p in (args.repo, args.repo2) if p):
        mod = import_file(f"youdie006_model_{n}", os.path.join(path, "model.py"))
        current = "layerwise_lags" in getattr(mod.LMConfig, "__dataclass_fields__", {})
        generations["current" if current else "initial"] = mod
        info(f"upstream {mod.__file__}: {'current code (layerwise_lags)' if current else 'initial code'}")
    for case in cases:
        print(f"== {case.name}")
        ypath = os.path.join(case.path, ".hydra", "config.yaml")
        with open(ypath) as f:
            y = yaml.safe_load(f)
        m, data = y["model"], y["data"]
        generation = "current" if "layerwise_lags" in m else "initial"
        up = generations.get(generation)
        if up is None:
            rep.skip(f"{case.name}: written by the {generation} code; give a checkout of it (--repo / --repo2)")
            continue
        sd = load_checkpoint(case)

        def build(pre_norm, code=up):
            extra = {"layerwise_lags": bool(m["layerwise_lags"])} if "layerwise_lags" in m else {}
            cfg = code.LMConfig(vocab_size=sd["token_embedding.weight"].shape[0],
                                max_context_len=data["max_context_len"], num_layers=m["num_layers"],
                                tensor_lifting_strategy=m["tensor_lifting_strategy"], lags=list(m["lags"]),
                                d_model=m["d_model"], num_heads=m["num_heads"],
                                expansion_ratio=m["expansion_ratio"], dropout_rate=0.1,
                                weight_tying=m["weight_tying"], d_low=m["d_low"], pre_norm=pre_norm, **extra)
            model = code.Transformer(cfg)
            strict_load(model, sd)
            return model

        info(f".hydra/config.yaml: strategy {m['tensor_lifting_strategy']}, pre_norm {m['pre_norm']}, "
             f"lags {m['lags']}, layerwise_lags {m.get('layerwise_lags', '(absent)')}, heads {m['num_heads']}, "
             f"{generation} code")
        rep.match(f"{case.name} (model.Transformer of the {generation} code, strict load ok)",
                  *case.compare(build(m["pre_norm"])))
        rep.control(f"{case.name} pre_norm={not m['pre_norm']}", *case.compare(build(not m["pre_norm"])))
        other = generations.get("initial" if generation == "current" else "current")
        if other is not None and m["pre_norm"] and m["tensor_lifting_strategy"] == "grassmann" \
                and "layerwise_lags" not in m:
            rep.control(f"{case.name} run by the current code", *case.compare(build(True, other)))


def check_kanenorman(cases, args, rep):
    info(install_einops_standin())
    up = import_file("kanenorman_model", os.path.join(args.repo, "model.py"))
    info(f"upstream {up.__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        sd = as_float32(load_checkpoint(case))
        fill_tied_head(sd, "lm_head.weight", "token_embedding.weight")
        pre = case.variant.get("norm") == "pre"

        def build(pre_norm):
            cfg = up.LMConfig(vocab_size=c["V"], max_context_len=c["Lmax"], num_layers=c["N"],
                              tensor_lifting_strategy="grassmann" if case.kind == "grassmann" else "attention",
                              lags=list(ALL_OFFSETS), d_model=c["d"], num_heads=c["heads"],
                              expansion_ratio=c["d_ff"] // c["d"], dropout_rate=0.1, weight_tying=True,
                              d_low=c["r"], pre_norm=pre_norm)
            model = up.Transformer(cfg)
            strict_load(model, sd)
            return model

        rep.match(f"{case.name} (model.Transformer, pre_norm={pre}, strict load ok)", *case.compare(build(pre)))
        rep.control(f"{case.name} pre_norm={not pre}", *case.compare(build(not pre)))


def check_alphaxiv(cases, args, rep):
    install_torch_shims({"sdpa"})  # gpt2.py calls F.scaled_dot_product_attention(is_causal=True)
    base = os.path.join(args.repo, "attention_is_not_all_you_need", "src", "attn_is_not_all_you_need", "models")
    grassmann = import_file("alphaxiv_grassmann", os.path.join(base, "grassmann.py"))
    gpt2 = import_file("alphaxiv_gpt2", os.path.join(base, "gpt2.py"))
    info(f"upstream {grassmann.__file__}, {gpt2.__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        ckpt = load_checkpoint(case)
        sd = ckpt["model_state_dict"] if isinstance(ckpt, dict) and "model_state_dict" in ckpt else ckpt
        n_pref = sum(k.startswith("_orig_mod.") for k in sd)
        dtypes = sorted({str(v.dtype) for v in sd.values()})
        sd = as_float32({k.replace("_orig_mod.", "", 1): v for k, v in sd.items()})
        info(f"stored dtypes {dtypes}; '_orig_mod.' stripped from {n_pref}/{len(sd)} keys")

        def build(window_sizes=ALL_OFFSETS, heads=None):
            if case.kind == "grassmann":
                model = grassmann.GrassmannGPT(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                               num_layers=c["N"], reduced_dim=c["r"], ff_dim=c["d_ff"],
                                               window_sizes=list(window_sizes), dropout=0.1)
            else:
                model = gpt2.BaseTransformer(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                             num_layers=c["N"], num_heads=heads or c["heads"], ff_dim=c["d_ff"],
                                             dropout=0.1)
            strict_load(model, sd)
            return model

        if case.kind == "grassmann":
            rep.match(f"{case.name} (grassmann.GrassmannGPT, windows {ALL_OFFSETS})", *case.compare(build()))
            for ws in ([1, 2, 4, 8, 12], [1, 2, 4, 8, 12, 15]):
                rep.control(f"{case.name} window_sizes={ws}", *case.compare(build(window_sizes=ws)))
            model = build()
            for b in model.blocks:
                b.grassmann.plucker.eps = 1e-6
            rep.control(f"{case.name} PluckerEncoder eps=1e-6", *case.compare(model))
        else:
            rep.match(f"{case.name} (gpt2.BaseTransformer, {c['heads']} heads)", *case.compare(build()))
            rep.control(f"{case.name} num_heads=8", *case.compare(build(heads=8)))


def check_grasslm(cases, args, rep):
    sys.path.insert(0, os.path.join(args.repo, "python"))
    need_file(os.path.join(args.repo, "python", "grasslm", "model.py"))
    from grasslm.model import GrassLM
    info(f"upstream {sys.modules['grasslm.model'].__file__}")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        n = c["N"]
        ckpt = load_checkpoint(case)
        if case.checkpoint.endswith(".safetensors"):
            sd = fill_tied_head(dict(ckpt), "lm_head.weight", "tok_embed.weight")
        else:
            sd = ckpt["model_state_dict"]
            info(f"checkpoint keys {sorted(ckpt)}")
        sd = as_float32({k.replace("_orig_mod.", "", 1) if k.startswith("_orig_mod.") else k: v
                         for k, v in sd.items()})

        def build(schedule):
            model = GrassLM(vocab_size=c["V"], d_model=c["d"], n_layers=n, d_reduce=c["r"], d_ff=c["d_ff"],
                            max_seq_len=c["Lmax"], dropout=0.1, window_schedule=schedule)
            strict_load(model, sd)
            return model

        model = build(None)  # as train.py / evaluate.py / generate.py build it
        used = [list(b.mixing.window_offsets) for b in model.blocks]
        builtin = [o for offs in used for o in offs] if all(len(o) == 1 for o in used) else None
        rep.match(f"{case.name} (grasslm.model.GrassLM, window_schedule=None -> per-block offsets {used})",
                  *case.compare(model))

        cfg_path = os.path.join(case.path, "config.json")
        sched = None
        if os.path.isfile(cfg_path):
            with open(cfg_path) as f:
                sched = json.load(f).get("architecture", {}).get("window_schedule")
            note = "agrees with" if sched == builtin else "differs from"
            info(f"config.json window_schedule {sched} {note} the built-in schedule {builtin} "
                 f"(train.py writes {ALL_OFFSETS[:n]}; the scripts never pass it to GrassLM)")
        controls = []
        if builtin is not None:
            controls.append(("built-in schedule reversed", builtin[::-1]))
        if sched is not None:
            controls.append(("config.json's window_schedule", sched))
        for label, s in controls:
            if s == builtin:
                rep.skip(f"control {case.name} {label} {s}: equals the built-in schedule, nothing to show")
            elif len(s) != n:
                rep.skip(f"control {case.name} {label} {s}: {len(s)} entries for {n} layers")
            else:
                rep.control(f"{case.name} {label} {s} applied", *case.compare(build(s)))


def check_arledge(cases, args, rep):
    install_torch_shims({"mha_is_causal", "mask_dtype"})  # SmallTransformer's calls
    sys.modules["grassmann_cuda"] = None  # its `import grassmann_cuda` raises -> PyTorch path
    fused = import_file("grassmann_fused", os.path.join(args.repo, "src", "cuda", "grassmann_fused.py"))
    if fused.CUDA_AVAILABLE:
        sys.exit("error: grassmann_fused reports CUDA_AVAILABLE; the PyTorch path is not the one checked")
    small = extract_classes(os.path.join(args.repo, "train_wikitext2.py"),
                            ["SmallTransformerBlock", "SmallTransformer"], "arledge_train_wikitext2_classes")
    info(f"upstream {fused.__file__} (CUDA_AVAILABLE False), {small.__file__} (2 classes via ast)")
    for case in cases:
        print(f"== {case.name}")
        c = case.config
        sd = as_float32(load_checkpoint(case))
        if case.kind == "grassmann":
            windows = sd["blocks.0.grassmann.window_sizes_tensor"].tolist()
            same = all(sd[f"blocks.{i}.grassmann.window_sizes_tensor"].tolist() == windows for i in range(c["N"]))
            info(f"windows from window_sizes_tensor {windows} (same in every layer: {same})")
            model = fused.GrassmannGPTFused(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                            num_layers=c["N"], reduced_dim=c["r"], ff_dim=c["d_ff"],
                                            window_sizes=windows, dropout=0.1, tie_weights=True)
            strict_load(model, sd)
            rep.match(f"{case.name} (grassmann_fused.GrassmannGPTFused, PyTorch path)", *case.compare(model))
            for b in model.blocks:
                b.grassmann.eps = 1e-6
            rep.control(f"{case.name} eps=1e-6", *case.compare(model))
        else:
            def build(heads):
                model = small.SmallTransformer(vocab_size=c["V"], max_seq_len=c["Lmax"], model_dim=c["d"],
                                               num_layers=c["N"], num_heads=heads, ff_dim=c["d_ff"],
                                               dropout=0.1, tie_weights=True)
                strict_load(model, sd)
                return model
            rep.match(f"{case.name} (train_wikitext2.SmallTransformer, {c['heads']} heads)",
                      *case.compare(build(c["heads"])))
            rep.control(f"{case.name} num_heads=4", *case.compare(build(4)))


def check_arledge_v3(cases, args, rep):
    v3 = import_file("arledge_grassmann_v3", os.path.join(args.repo, "src", "models", "grassmann_v3.py"))
    info(f"upstream {v3.__file__}")
    for case in cases:
        print(f"== {case.name}")
        with open(os.path.join(case.path, "config.json")) as f:
            tc = json.load(f)  # asdict(TrainingConfig), as train.py writes it beside best_model.pt
        ckpt = torch.load(case.checkpoint, map_location="cpu")
        sd = as_float32(ckpt["model_state_dict"])

        def build(window_sizes):
            model = v3.GrassmannGPTv3(vocab_size=tc["vocab_size"], max_seq_len=tc["max_seq_len"],
                                      model_dim=tc["model_dim"], num_layers=tc["num_layers"],
                                      reduced_dim=tc["reduced_dim"], ff_dim=tc["ff_dim"], window_sizes=window_sizes,
                                      dropout=tc["dropout"])
            strict_load(model, sd)
            return model
        info(f"train.py create_model: reduced_dim {tc['reduced_dim']}, window_sizes {tc['window_sizes']}")
        rep.match(f"{case.name} (grassmann_v3.GrassmannGPTv3, strict load)", *case.compare(build(tc["window_sizes"])))
        rep.control(f"{case.name} window_sizes None (the model's default)", *case.compare(build(None)))


def check_causal_mixer(cases, args, rep):
    need_file(os.path.join(args.repo, "training", "grassman.py"))
    need_file(os.path.join(args.repo, "training", "checkpoints.py"))
    sys.path.insert(0, args.repo)
    checkpoints = importlib.import_module("training.checkpoints")
    info(f"upstream {checkpoints.__file__}")
    for case in cases:
        print(f"== {case.name}")
        ckpt = torch.load(case.checkpoint, map_location="cpu")
        info(f"checkpoint keys {sorted(ckpt)}; model_type {ckpt.get('model_type')}; config {ckpt['config']}")

        def build(**over):
            c = dict(ckpt, config=dict(ckpt["config"], **over), model=as_float32(ckpt["model"]))
            model, _ = checkpoints.load_model_from_checkpoint(c)
            model.eval()
            return lambda ids: model(ids)["logits"]
        rep.match(f"{case.name} (training.checkpoints.load_model_from_checkpoint, strict)", *case.compare(build()))
        if case.kind == "grassmann":
            rep.control(f"{case.name} eps 1e-8", *case.compare(build(eps=1e-8)))
            rep.control(f"{case.name} offsets (1, 2, 4)", *case.compare(build(offsets=(1, 2, 4))))
        else:
            rep.control(f"{case.name} 8 heads", *case.compare(build(n_heads=8)))


def setup_adipks_packages(args):
    """`models` and `utils` as packages spanning --repo then --repo2 (their __init__.py, which only
    re-export, are not executed)."""
    for pkg in ("models", "utils"):
        dirs = [os.path.join(r, pkg) for r in (args.repo, args.repo2) if r and os.path.isdir(os.path.join(r, pkg))]
        mod = types.ModuleType(pkg)
        mod.__path__ = dirs
        mod.__package__ = pkg
        sys.modules[pkg] = mod
    for rel in ("models/grassmann_sparse.py", "models/transformer_baseline.py"):
        need_file(os.path.join(args.repo, rel))
    for rel in ("models/blocks.py", "utils/sparsity.py"):
        if not any(r and os.path.isfile(os.path.join(r, rel)) for r in (args.repo, args.repo2)):
            sys.exit(f"error: {rel} is in neither --repo nor --repo2 (6aa4170f has it)")


def check_adipks(cases, args, rep):
    setup_adipks_packages(args)
    blocks = importlib.import_module("models.blocks")
    gs = importlib.import_module("models.grassmann_sparse")
    tb = importlib.import_module("models.transformer_baseline")
    sp = importlib.import_module("utils.sparsity")
    for m in (gs, tb, blocks, sp):
        info(f"upstream {m.__name__}: {m.__file__}")

    def masked(model):
        return [m for m in model.modules() if isinstance(m, blocks.MaskedLinear)]

    def rederive_masks(model):  # as prompt.py / eval/bench_inference.py after loading
        for m in masked(model):
            m.weight_mask.copy_((m.weight != 0).to(m.weight_mask.dtype))

    for case in cases:
        print(f"== {case.name}")
        ckpt = load_checkpoint(case)
        cfg, sd = ckpt["config"], as_float32(ckpt["state_dict"])
        info(f"ckpt config {cfg}; other keys {sorted(k for k in ckpt if k not in ('state_dict', 'config'))}")
        if case.kind == "grassmann":
            def build(seed, **over):
                torch.manual_seed(seed)  # apply_2to4_masks draws random masks at construction
                kw = dict(vocab_size=cfg["vocab_size"], d_model=cfg["d_model"], n_layers=cfg["n_layers"],
                          d_ff=cfg["d_ff"], reduced_dim=cfg["reduced_dim"], max_seq_len=cfg["max_seq_len"],
                          apply_sparse=cfg.get("apply_sparse", True))
                kw.update(over)
                model = gs.GrassmannLM(gs.GrassmannConfig(**kw))
                strict_load(model, sd)
                return model

            model = build(0)
            rederive_masks(model)
            info(f"windows (GrassmannConfig default) {model.config.window_sizes}; "
                 f"{len(masked(model))} MaskedLinear layers, masks re-derived from weight != 0")
            rep.match(f"{case.name} (grassmann_sparse.GrassmannLM)", *case.compare(model))
            for m in masked(model):
                m.weight_mask.data.fill_(1.0)
            rep.match(f"{case.name} variant: masks all ones (saved weights are the effective ones)",
                      *case.compare(model))
            rep.control(f"{case.name} fresh random 2:4 masks, not re-derived", *case.compare(build(1)))
            old = build(0, window_sizes=list(ALL_OFFSETS))
            rederive_masks(old)
            rep.control(f"{case.name} window_sizes={ALL_OFFSETS} (6aa4170f's)", *case.compare(old))
            model = build(0)
            rederive_masks(model)
            for b in model.blocks:
                b.grassmann.plucker.eps = 1e-6
            rep.control(f"{case.name} Plucker eps=1e-6", *case.compare(model))
        else:
            def build(heads):
                model = tb.TransformerLM(tb.TransformerConfig(
                    vocab_size=cfg["vocab_size"], d_model=cfg["d_model"], n_layers=cfg["n_layers"],
                    n_heads=heads, d_ff=cfg["d_ff"], max_seq_len=cfg["max_seq_len"]))
                strict_load(model, sd)
                return model
            heads = cfg.get("n_heads", 8)  # as prompt.py; bench_inference.py hard-codes 8
            rep.match(f"{case.name} (transformer_baseline.TransformerLM, {heads} heads)", *case.compare(build(heads)))
            rep.control(f"{case.name} n_heads=4", *case.compare(build(4)))


WAKE2VEC_FILE = os.path.join("Grassmanntesting", "Grassmann_v_attention_for_Wake.py")
WAKE2VEC_CLASSES = ["Config", "FFN", "CausalSelfAttention", "TransformerBlock", "TransformerLM",
                    "GrassmannMixingBlock", "GrassmannTransformerBlock", "GrassmannLM"]


def check_wake2vec(cases, args, rep):
    versions = {"current": extract_classes(os.path.join(args.repo, WAKE2VEC_FILE), WAKE2VEC_CLASSES,
                                           "wake2vec_current")}
    if args.repo2:
        versions["ln1"] = extract_classes(os.path.join(args.repo2, WAKE2VEC_FILE), WAKE2VEC_CLASSES, "wake2vec_ln1")
    for k, m in versions.items():
        info(f"upstream ({k}) {m.__file__}: {len(WAKE2VEC_CLASSES)} classes via ast")

    def build(mod, cls, c, sd=None, windows=ALL_OFFSETS):
        cfg = mod.Config()
        cfg.vocab_size, cfg.d_model, cfg.n_layers, cfg.n_heads = c["V"], c["d"], c["N"], c["heads"]
        cfg.d_ff, cfg.max_seq_len, cfg.grassmann_r = c["d_ff"], c["Lmax"], c["r"]
        cfg.grassmann_windows = list(windows)
        cfg.dropout = 0.1
        model = getattr(mod, cls)(cfg)
        if sd is not None:
            strict_load(model, sd)
        return model

    for case in cases:
        print(f"== {case.name}")
        sd = load_checkpoint(case)
        if case.kind == "transformer":
            runs = [(v, "TransformerLM") for v in ("current", "ln1")]
        else:
            runs = [("ln1" if case.family == "wake2vec-ln1" else "current", "GrassmannLM")]
        for version, cls in runs:
            if version not in versions:
                rep.skip(f"{case.name} with the {version} version's {cls}: no --repo2 (earlier file with ln1)")
                continue
            model = build(versions[version], cls, case.config, sd)
            tied = model.lm_head.weight.data_ptr() == model.tok_emb.weight.data_ptr()
            rep.match(f"{case.name} ({version} {cls}, strict load ok, tied head {tied})", *case.compare(model))
        if case.family == "wake2vec" and case.kind == "grassmann":
            cur = versions["current"]
            if "ln1" in versions:
                try:
                    build(versions["ln1"], "GrassmannLM", case.config, sd)
                    rep.fail(f"control {case.name} into the ln1 GrassmannLM: strict load succeeded")
                except RuntimeError as e:
                    first = [s.strip() for s in str(e).splitlines() if s.strip()][1:2]
                    rep.line("PASS", f"control {case.name} into the ln1 GrassmannLM: strict load fails "
                                     f"as it must ({first[0][:90] if first else e})")
            else:
                rep.skip(f"control {case.name} into the ln1 GrassmannLM: no --repo2")
            model = build(cur, "GrassmannLM", case.config, sd)
            for b in model.blocks:
                b.grass.windows = [1, 2, 4, 8, 16]
            rep.control(f"{case.name} windows [1, 2, 4, 8, 16]", *case.compare(model))
            model = build(cur, "GrassmannLM", case.config, sd)
            orig = torch.clamp

            def clamp_floor_1e6(x, min=None, max=None):  # only the 1e-8 norm floor is changed
                return orig(x, min=1e-6 if min == 1e-8 else min, max=max)
            torch.clamp = clamp_floor_1e6
            try:
                result = case.compare(model)
            finally:
                torch.clamp = orig
            rep.control(f"{case.name} clamp floor 1e-6 instead of 1e-8", *result)


CHECKS = {"youdie006": check_youdie006, "kanenorman": check_kanenorman, "alphaxiv": check_alphaxiv,
          "grasslm": check_grasslm, "arledge": check_arledge, "arledge-v3": check_arledge_v3, "adipks": check_adipks,
          "causal-mixer": check_causal_mixer,
          "wake2vec": check_wake2vec}


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
