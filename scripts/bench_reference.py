#!/usr/bin/python3
"""PyTorch reference for scripts/bench: the same work as tests/benchmarks/engine_trace_bench.cpp,
written the way a plain PyTorch re-implementation of the paper writes it (model-spec.md steps 1-9
with one Plücker vector per offset, the T x V head in one piece, generation that re-runs the whole
context per token like GrassLM). Same sizes as the engine benchmark; `--checkpoint` loads the very
.gwb file the engine loads. Prints one JSON object per measurement:

  {"name": "trace/grassmann/T:256", "seconds": [per-iteration wall times], "extra": {...}}

Run by scripts/bench; by hand: /usr/bin/python3 scripts/bench_reference.py --only trace --T 128,256
"""

import argparse
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAPER = dict(V=30522, d=256, r=32, N=6, d_ff=1024, heads=4)
OFFSETS = [1, 2, 4, 8, 12, 16]


class GrassmannBlock(nn.Module):
    """Post-norm block, paper gate, empty = zero (the gwb defaults), per-offset formula."""

    def __init__(self, d, r, d_ff, offsets, eps=1e-8):
        super().__init__()
        self.offsets, self.eps = offsets, eps
        self.w_red = nn.Linear(d, r)
        self.w_plu = nn.Linear(r * (r - 1) // 2, d)
        self.w_gate = nn.Linear(2 * d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn_in, self.ffn_out = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        ij = torch.triu_indices(r, r, 1)
        self.register_buffer("ii", ij[0], persistent=False)
        self.register_buffer("jj", ij[1], persistent=False)

    def forward(self, h, capture=None):
        B, T, _ = h.shape
        z = self.w_red(h)
        total = z.new_zeros(B, T, self.ii.numel())
        count = z.new_zeros(T)
        for D in self.offsets:
            if D >= T:
                continue
            cur, past = z[:, D:], z[:, :-D]
            p = cur[..., self.ii] * past[..., self.jj] - cur[..., self.jj] * past[..., self.ii]
            p = p / p.norm(dim=-1, keepdim=True).clamp_min(self.eps)
            total = total + F.pad(p, (0, 0, D, 0))
            count[D:] += 1
        g = self.w_plu(total / count.clamp_min(1)[None, :, None]) * (count > 0).to(z.dtype)[None, :, None]
        a = torch.sigmoid(self.w_gate(torch.cat([h, g], -1)))
        if capture is not None:
            capture.append(dict(h=h, z=z, g=g, gate=a))
        y = self.ln1(a * h + (1 - a) * g)
        return self.ln2(y + self.ffn_out(F.gelu(self.ffn_in(y))))


class AttentionBlock(nn.Module):
    def __init__(self, d, heads, d_ff):
        super().__init__()
        self.heads = heads
        self.qkv, self.out_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ffn_in, self.ffn_out = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, h, capture=None):
        B, T, d = h.shape
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        p = s.softmax(-1)
        if capture is not None:
            capture.append(dict(h=h, q=q, k=k, attn=p))
        y = self.ln1(h + self.out_proj((p @ v).transpose(1, 2).reshape(B, T, d)))
        return self.ln2(y + self.ffn_out(F.gelu(self.ffn_in(y))))


class LM(nn.Module):
    def __init__(self, kind, V, d, r, N, d_ff, heads, max_len):
        super().__init__()
        self.tok_embed, self.pos_embed = nn.Embedding(V, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(
            GrassmannBlock(d, r, d_ff, OFFSETS) if kind == "grassmann" else AttentionBlock(d, heads, d_ff)
            for _ in range(N))
        self.ln_final = nn.LayerNorm(d)

    def hidden(self, ids, capture=None):
        h = self.tok_embed(ids) + self.pos_embed(torch.arange(ids.shape[1]))[None]
        for b in self.blocks:
            h = b(h, capture)
        return h

    def head(self, h):
        return self.ln_final(h) @ self.tok_embed.weight.t()

    def forward(self, ids, capture=None):
        return self.head(self.hidden(ids, capture))


def timed(fn, min_time=0.5, max_iter=50):
    """Per-iteration wall times: at least one run, more until min_time has passed (as gbench does)."""
    out, start = [], time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
        if time.perf_counter() - start >= min_time or len(out) >= max_iter:
            return out


def trace(model, ids, lens_k):
    """What gwb's trace records: captures as arrays, surprisal, optionally the logit lens."""
    with torch.inference_mode():
        cap = []
        h = model.hidden(ids, cap)
        logp = model.head(h)[0].log_softmax(-1)
        surprisal = -logp[:-1].gather(1, ids[0, 1:, None])[:, 0].numpy().copy()
        arrays = [np.array(t[0]) for c in cap for t in c.values()] + [np.array(h[0])]
        if lens_k:
            states = [c["h"] for c in cap] + [h]
            nxt = ids[0, 1:, None]
            for s in states:
                lp = model.head(s)[0].log_softmax(-1)
                vals, idx = lp.topk(lens_k, -1)
                target = lp[:-1].gather(1, nxt)
                rank = (lp[:-1] > target).sum(1)
                arrays += [vals.numpy().copy(), idx.numpy().copy(), rank.numpy().copy(), target.numpy().copy()]
        return surprisal, arrays


def load_gwb(path):
    """A .gwb (safetensors) into the reference module: parse the header, numpy views of the file,
    load_state_dict (which copies), as a PyTorch user would without the safetensors package."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    config = json.loads(header.pop("__metadata__")["model_config"])
    model = LM(config["kind"], config["vocab_size"], config["d_model"], config.get("reduced", 32),
               config["n_layers"], config["d_ff"], config.get("n_heads", 4), config["max_len"])
    dtypes = {"F32": np.float32, "F16": np.float16, "U8": np.uint8}
    state = {}
    for name, e in header.items():
        if name == "tokenizer.model":
            continue
        b, en = e["data_offsets"]
        arr = np.frombuffer(data, dtype=dtypes[e["dtype"]], count=(en - b) // np.dtype(dtypes[e["dtype"]]).itemsize,
                            offset=8 + n + b).reshape(e["shape"])
        state[name] = torch.from_numpy(arr.astype(np.float32))
    model.load_state_dict(state)
    return model.eval()


def resid_patch_loop(model, clean, corrupt, answer, wrong):
    """Activation patching the plain PyTorch way: for every cell (layer l = 0..N, position p) the
    whole model runs on the corrupted prompt, with a forward pre-hook on block l (the final
    LayerNorm for l = N) that puts in the clean run's h^l at position p; the metric is the logit
    difference at the last position. (N + 1) x T full forward passes."""
    with torch.inference_mode():
        cap = []
        final = model.hidden(clean, cap)
        clean_h = [c["h"] for c in cap] + [final]
        N, T = len(model.blocks), clean.shape[1]
        out = torch.empty(N + 1, T)
        for l in range(N + 1):
            target = model.blocks[l] if l < N else model.ln_final
            for p in range(T):
                def hook(module, args, l=l, p=p):
                    h = args[0].clone()
                    h[:, p] = clean_h[l][:, p]
                    return (h,)

                handle = target.register_forward_pre_hook(hook)
                logits = model(corrupt)
                handle.remove()
                out[l, p] = logits[0, -1, answer] - logits[0, -1, wrong]
        return out


def emit(name, seconds, **extra):
    print(json.dumps(dict(name=name, seconds=seconds, extra=extra)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="trace,lens,load,generate,train",
                    help="comma list of: trace, lens, transformer, load, generate, train, process")
    ap.add_argument("--T", default="128,256,512,1024,2048,4096", help="trace lengths")
    ap.add_argument("--lens-T", default="128,256,1024", help="trace lengths with the K=5 lens")
    ap.add_argument("--checkpoint", help="paper-size .gwb for load (and process)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: all cores)")
    ap.add_argument("--train-steps", type=int, default=4)
    ap.add_argument("--out", help="process: where to write the trace NPZ")
    ap.add_argument("--bundled", help="patching: folder with grassmann-austen.gwb and transformer-austen.gwb")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    only = set(args.only.split(","))
    torch.manual_seed(0)

    if "process" in only:  # a whole process: load the checkpoint, trace 256 ids, write an NPZ
        model = load_gwb(args.checkpoint)
        ids = torch.randint(0, model.tok_embed.num_embeddings, (1, 256))
        surprisal, arrays = trace(model, ids, 5)
        np.savez(args.out, surprisal=surprisal, *arrays)
        return

    p = PAPER
    if "patching" in only:  # a full resid sweep, (N + 1) x T cells (issue 21)
        cases = [(kind, "paper", 128, LM(kind, p["V"], p["d"], p["r"], p["N"], p["d_ff"], p["heads"], 8192).eval())
                 for kind in ("grassmann", "transformer")]
        if args.bundled:
            cases = [(kind, "bundled", 64, load_gwb(f"{args.bundled}/{kind}-austen.gwb"))
                     for kind in ("grassmann", "transformer")] + cases
        for kind, size, T, m in cases:
            V = m.tok_embed.num_embeddings
            gen = torch.Generator().manual_seed(11)
            clean, corrupt = torch.randint(0, V, (1, T), generator=gen), torch.randint(0, V, (1, T), generator=gen)
            emit(f"patch/resid/{kind}/{size}/T:{T}", timed(lambda: resid_patch_loop(m, clean, corrupt, 3, 4), min_time=0))
        return
    if only & {"trace", "lens", "generate"}:
        g = LM("grassmann", p["V"], p["d"], p["r"], p["N"], p["d_ff"], p["heads"], 8192).eval()
        for T in [int(t) for t in args.T.split(",")] if "trace" in only else []:
            ids = torch.randint(0, p["V"], (1, T))
            emit(f"trace/grassmann/T:{T}", timed(lambda: trace(g, ids, 0)))
        for T in [int(t) for t in args.lens_T.split(",")] if "lens" in only else []:
            ids = torch.randint(0, p["V"], (1, T))
            emit(f"trace_lens5/grassmann/T:{T}", timed(lambda: trace(g, ids, 5)))
        if "generate" in only:
            prompt = torch.randint(0, p["V"], (1, 16))

            def gen(new=64):
                ids = prompt
                with torch.inference_mode():
                    for _ in range(new):  # the whole context again for every new token
                        nxt = g(ids)[0, -1].argmax()
                        ids = torch.cat([ids, nxt.view(1, 1)], 1)
                return ids

            s = timed(gen, min_time=0)
            emit("generate/grassmann/new:64", s, tokens_per_second=64 / s[0])
    if "transformer" in only:
        tr = LM("transformer", p["V"], p["d"], p["r"], p["N"], p["d_ff"], p["heads"], 8192).eval()
        for T in (128, 256, 512, 2048):
            ids = torch.randint(0, p["V"], (1, T))
            emit(f"trace/transformer/T:{T}", timed(lambda: trace(tr, ids, 0)))
    if "load" in only:
        emit("load/grassmann", timed(lambda: load_gwb(args.checkpoint)))
    if "train" in only:
        for kind in ("grassmann", "transformer"):
            m = LM(kind, 8000, p["d"], p["r"], p["N"], p["d_ff"], p["heads"], 256).train()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
            data = torch.randint(0, 8000, (8, 257))
            t0 = time.perf_counter()
            for _ in range(args.train_steps):
                loss = F.cross_entropy(m(data[:, :-1]).reshape(-1, 8000), data[:, 1:].reshape(-1))
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
                opt.step()
            s = time.perf_counter() - t0
            emit(f"train/{kind}/steps:{args.train_steps}", [s],
                 tokens_per_second=args.train_steps * 8 * 256 / s)


if __name__ == "__main__":
    sys.exit(main())
