"""Harness shared by the import parity scripts (parity_<family>.py). No model maths here: each
family script implements its own forward pass, in that family's own style, from the section
"Verified semantics of each family" of docs/model-spec.md, with the family's own module names
(so its state_dict keys and buffers come out as that family's checkpoints have them). This file
only fills weights, saves, runs prompts and writes what tests/import/parity_test.cpp compares:

  OUT/model.pt | model.safetensors   the checkpoint, saved as the family saves it
  OUT/expected.json                  family, kind, sizes, prompts, variant flags
  OUT/logits.f32                     float32 logits of every prompt, rows concatenated (T x V each)

This is our own code, written from the spec; it does not copy any of the public repositories.
"""

import argparse
import json
import os
import struct

import torch

# The paper's 6-layer size (model-spec parameter counts); every family x kind is tested here.
PAPER = dict(V=30522, d=256, r=32, N=6, d_ff=1024, Lmax=128, heads=4)
# Small size for the format / dtype cases (bf16 safetensors, fp16 .pt).
TINY = dict(V=50, d=16, r=4, N=2, d_ff=64, Lmax=40, heads=4)
ALL_OFFSETS = [1, 2, 4, 8, 12, 16]


def randomize(model, seed, reduce_names=(), reduce_scale=None):
    """Every parameter random and non-zero: weights N(0, (1/sqrt(fan_in))^2), biases N(0, 0.1^2),
    LayerNorm weights 1 + N(0, 0.2^2) and biases N(0, 0.1^2), embeddings N(0, 0.5^2). Parameters
    whose name starts with one of `reduce_names` are scaled to `reduce_scale` instead (used to
    put layer 0's Plücker norms between 1e-8 and 1e-6, so the eps switch reaches the logits)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            is_norm = "norm" in name or ".ln" in name or name.startswith("ln")
            if any(name.startswith(r) for r in reduce_names):
                p.copy_(noise * reduce_scale)
            elif is_norm and name.endswith("weight"):
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith("bias") or is_norm:
                p.copy_(0.1 * noise)
            elif "emb" in name:  # token_embedding, tok_emb, pos_encoding.embedding, ...
                p.copy_(0.5 * noise)
            else:
                p.copy_(noise / (p.shape[-1] ** 0.5))


def prompts(vocab, lmax, seed):
    """t = 0 alone, a short prompt, one just past the largest offset (16), and a full-length one."""
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
    ap.add_argument("--size", choices=["tiny", "paper"], default="paper")
    ap.add_argument("--norm", choices=["post", "pre", "post_mix", "pre_mix"], default="post",
                    help="kanenorman's / youdie006's pre_norm flag (the family fixes the rest)")
    ap.add_argument("--out", required=True, help="folder for the checkpoint + expected.json + logits.f32")
    return ap


def finish(args, model, save_pt, family, variant, buffers_in_safetensors=True, config=None, filename="model.pt"):
    """Casts (if asked), saves the checkpoint, runs the prompts with the saved weights and writes
    expected.json + logits.f32. `save_pt(state_dict, path)` saves the way the family does, as
    OUT/`filename` (the family's own file name); `variant` records the flags the family uses (for
    the test's report and negative controls); `config` the sizes when the family's own differ
    from sizes(args)."""
    os.makedirs(args.out, exist_ok=True)
    config = config or sizes(args)
    dtype = getattr(torch, args.dtype)
    state = cast_state(model.state_dict(), dtype)
    # The reference runs in float32 on exactly the weights that were saved (after rounding).
    model.load_state_dict(cast_state(state, torch.float32))
    model.eval()
    if args.format == "pt":
        path = os.path.join(args.out, filename)
        save_pt(state, path)
    else:
        path = os.path.join(args.out, "model.safetensors")
        # safetensors refuses shared storage: the tied head is written once, as the family would.
        write_safetensors(path, {k: v for k, v in state.items() if k != "lm_head.weight"}, {"format": "pt"})
    result = {"family": family, "kind": args.kind, "config": config, "variant": variant,
              "checkpoint": path, "checkpoint_file": os.path.relpath(path, args.out), "prompts": [],
              "logits_file": "logits.f32"}
    with torch.no_grad(), open(os.path.join(args.out, "logits.f32"), "wb") as f:
        for ids in prompts(config["V"], config["Lmax"], args.seed):
            logits = model(torch.tensor([ids]))[0].float().contiguous()
            result["prompts"].append(ids)
            f.write(logits.numpy().astype("<f4").tobytes())
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(result, f)
    print(path)
