"""Shared pieces of the import parity scripts (parity_<family>.py).

Each family script builds that family's model in PyTorch from the equations in
docs/model-spec.md, with the family's own module names (so its state_dict keys
come out as that family's checkpoints have them), fills it with random weights,
saves it the way the family saves it, and writes the logits of a few prompts to
expected.json. tests/import/ then imports the file with `gwb` and compares.

This is our own code, written from the spec; it does not copy any of the
public repositories.
"""

import argparse
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

# Tiny sizes: positions up to Lmax - 1 = 39 lie past the largest offset (16).
TINY = dict(V=50, d=16, r=4, N=2, d_ff=64, Lmax=40, heads=4)
# The paper's 6-layer size (model-spec parameter counts), for manual checks of `gwb import`.
PAPER = dict(V=30522, d=256, r=32, N=6, d_ff=1024, Lmax=128, heads=4)
ALL_OFFSETS = [1, 2, 4, 8, 12, 16]


def per_layer_offsets(n_layers):
    """GrassLM's schedule: one offset per layer, layer l gets entry floor(l * 6 / N)."""
    return [[ALL_OFFSETS[(l * len(ALL_OFFSETS)) // n_layers]] for l in range(n_layers)]


def pair_indices(r):
    """(i, j) with i < j in lexicographic order, as int64 index buffers."""
    ii, jj = torch.triu_indices(r, r, offset=1)
    return ii.long(), jj.long()


def plucker_bivector(z, offsets, idx_i, idx_j, eps):
    """Spec steps 3-5 for a batch. z: B x T x r. Returns (mean of normalized Plücker vectors
    B x T x C, number of valid offsets per token T)."""
    b, t, _ = z.shape
    total = z.new_zeros(b, t, idx_i.numel())
    count = z.new_zeros(t)
    for dist in offsets:
        if dist >= t:
            continue
        cur = z[:, dist:, :]   # token t
        past = z[:, :-dist, :]  # token t - D
        p = cur[..., idx_i] * past[..., idx_j] - cur[..., idx_j] * past[..., idx_i]
        p = p / p.norm(dim=-1, keepdim=True).clamp(min=eps)
        total[:, dist:, :] += p
        count[dist:] += 1
    return total / count.clamp(min=1).view(1, t, 1), count


def geometric_feature(bivec, count, w_plu, empty):
    """Spec step 6 with the empty-offset rule: 'zero' -> g = 0, 'bias' -> g = b_plu at t with
    no valid offset (W_plu applied to a zero bivector gives exactly b_plu)."""
    g = w_plu(bivec)
    if empty == "zero":
        g = g * (count > 0).to(g.dtype).view(1, -1, 1)
    return g


def causal_attention(x, qkv, out, heads):
    """Fused qkv (rows q | k | v, heads contiguous inside each), scale 1/sqrt(d_head)."""
    b, t, d = x.shape
    dh = d // heads
    q, k, v = qkv(x).split(d, dim=-1)
    q, k, v = (y.view(b, t, heads, dh).transpose(1, 2) for y in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(dh)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).reshape(b, t, d)
    return out(y)


def randomize(model, seed, scale=0.35):
    """Every parameter random (LayerNorm weights around 1), so a wrong mapping shows."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen) * scale
            if ("norm" in name or "ln" in name) and name.endswith("weight"):
                p.copy_(1.0 + noise * 0.5)
            else:
                p.copy_(noise)


def prompts(vocab, lmax, seed):
    """t = 0 alone, a short prompt, one just past the largest offset, and a full-length one."""
    gen = torch.Generator().manual_seed(seed + 1)
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in (1, 5, 18, lmax)]


def write_safetensors(path, tensors, metadata=None):
    """The safetensors layout: u64 header length, JSON header, then the raw little-endian data."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    names = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "float64": "F64"}
    for name, t in tensors.items():
        t = t.detach().contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": names[str(t.dtype).replace("torch.", "")], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def cast_state(state, dtype):
    """Floating tensors cast to `dtype` (index buffers stay int64)."""
    return type(state)((k, v.to(dtype) if v.is_floating_point() else v) for k, v in state.items())


def sizes(args):
    return PAPER if args.size == "paper" else TINY


def parser(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--kind", choices=["grassmann", "transformer"], default="grassmann")
    ap.add_argument("--format", choices=["pt", "safetensors"], default="pt")
    ap.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", choices=["tiny", "paper"], default="tiny",
                    help="tiny (the tests) or paper (V=30522, d=256, r=32, N=6; ~50 MB)")
    ap.add_argument("--out", required=True, help="folder for model.pt|model.safetensors + expected.json")
    return ap


def finish(args, model, save_pt, family, config):
    """Casts (if asked), saves the checkpoint, runs the prompts with the saved weights and writes
    expected.json. `save_pt(state_dict, path)` saves the way the family does."""
    os.makedirs(args.out, exist_ok=True)
    dtype = getattr(torch, args.dtype)
    state = cast_state(model.state_dict(), dtype)
    # The reference runs in float32 on exactly the weights that were saved (after rounding).
    model.load_state_dict(cast_state(state, torch.float32))
    model.eval()
    if args.format == "pt":
        path = os.path.join(args.out, "model.pt")
        save_pt(state, path)
    else:
        path = os.path.join(args.out, "model.safetensors")
        # safetensors refuses shared storage: the tied head is written once, as the family would.
        write_safetensors(path, {k: v for k, v in state.items() if k != "lm_head.weight"},
                          {"format": "pt"})
    result = {"family": family, "kind": args.kind, "config": config, "checkpoint": path,
              "prompts": [], "logits": []}
    with torch.no_grad():
        for ids in prompts(config["V"], config["Lmax"], args.seed):
            logits = model(torch.tensor([ids]))[0]
            result["prompts"].append(ids)
            result["logits"].append([float(x) for x in logits.reshape(-1)])
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(result, f)
    print(path)
