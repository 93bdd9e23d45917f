"""What check_upstream.py's family checks share: the PASS/FAIL/SKIP report, the parity cases and
their checkpoints, importing upstream code from a checkout (a file, or only some classes of a
script), and the stand-ins and torch < 2.0 shims installed when the environment lacks them."""

import ast
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
