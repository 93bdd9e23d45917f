#!/usr/bin/env python3
"""alphaXiv family (model-spec.md): pre-norm blocks, the Grassmann mixer wrapped in its own
LayerNorm, all six offsets in every layer, Plücker eps 1e-8, g = 0 at a token with no valid
offset (empty=zero), paper gate on the normalized input. Saved from a compiled model, so every
key carries `_orig_mod.`. Checkpoint: dict with model_state_dict, epoch, val_loss, val_ppl (a
numpy float64). Its Transformer uses blocks.{i}.qkv_proj and blocks.{i}.out_proj."""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import parity_common as pc

EPS = 1e-8  # PluckerEncoder(eps=1e-8), alphaXiv/paper-implementations models/grassmann.py


class PluckerIndex(nn.Module):
    """Holds only the pair-index buffers (alphaXiv keeps them in their own submodule)."""

    def __init__(self, r):
        super().__init__()
        pairs = [(i, j) for i in range(r) for j in range(i + 1, r)]
        self.register_buffer("idx_i", torch.tensor([p[0] for p in pairs], dtype=torch.long))
        self.register_buffer("idx_j", torch.tensor([p[1] for p in pairs], dtype=torch.long))


class Grassmann(nn.Module):
    def __init__(self, d, r):
        super().__init__()
        self.W_red = nn.Linear(d, r)
        self.plucker = PluckerIndex(r)
        self.W_plu = nn.Linear(r * (r - 1) // 2, d)
        self.W_gate = nn.Linear(2 * d, d)
        self.layer_norm = nn.LayerNorm(d)

    def forward(self, n):
        z = self.W_red(n)
        t = z.shape[1]
        ii, jj = self.plucker.idx_i, self.plucker.idx_j
        feats, masks = [], []
        for delta in pc.ALL_OFFSETS:
            past = F.pad(z, (0, 0, delta, 0))[:, :t]  # z_{t-delta}, zeros before the start
            p = z[..., ii] * past[..., jj] - z[..., jj] * past[..., ii]
            p = p / p.norm(dim=-1, keepdim=True).clamp(min=EPS)
            ok = (torch.arange(t) >= delta).float()[None, :, None]
            feats.append(p * ok)
            masks.append(ok)
        count = torch.stack(masks).sum(0)
        g = self.W_plu(torch.stack(feats).sum(0) / count.clamp(min=1)) * (count > 0).float()
        a = torch.sigmoid(self.W_gate(torch.cat([n, g], dim=-1)))
        return self.layer_norm(a * n + (1 - a) * g)


class Block(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.kind = kind
        d = c["d"]
        self.ln1 = nn.LayerNorm(d)
        if kind == "grassmann":
            self.grassmann = Grassmann(d, c["r"])
        else:
            self.heads = c["heads"]
            self.qkv_proj = nn.Linear(d, 3 * d)
            self.out_proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, c["d_ff"]), nn.GELU(), nn.Dropout(0.1), nn.Linear(c["d_ff"], d))

    def attend(self, n):
        b, t, d = n.shape
        dh = d // self.heads
        q, k, v = (y.reshape(b, t, self.heads, dh).transpose(1, 2) for y in self.qkv_proj(n).chunk(3, dim=-1))
        att = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(dh)
        att = att + torch.full((t, t), float("-inf")).triu(1)
        y = torch.einsum("bhqk,bhke->bhqe", att.softmax(-1), v)
        return self.out_proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, h):
        n = self.ln1(h)
        h = h + (self.grassmann(n) if self.kind == "grassmann" else self.attend(n))
        return h + self.ffn(self.ln2(h))


class Model(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.blocks = nn.ModuleList(Block(c, kind) for _ in range(c["N"]))
        self.ln_f = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        h = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1]))[None]
        for b in self.blocks:
            h = b(h)
        return self.lm_head(self.ln_f(h))


def save(state, path):
    compiled = type(state)(("_orig_mod." + k, v) for k, v in state.items())
    torch.save({"model_state_dict": compiled, "epoch": 3, "val_loss": 5.5,
                "val_ppl": np.exp(np.float64(5.5))}, path)


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    torch.manual_seed(args.seed)
    c = pc.sizes(args)
    model = Model(c, args.kind)
    pc.randomize(model, args.seed, ("blocks.0.grassmann.W_red",), 5e-6 if c["d"] > 16 else 1e-4)
    variant = {"norm": "pre"}
    if args.kind == "grassmann":
        variant.update(gate="paper", empty="zero", eps=EPS, aggregation="normalize_then_mean")
    pc.finish(args, model, save, "alphaxiv", variant)


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
