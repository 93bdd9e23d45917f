#!/usr/bin/env python3
"""alphaXiv family: pre-norm blocks with an extra LayerNorm around the mix, all six offsets in
every layer, Plücker eps 1e-6, g = 0 at a token with no valid offset (empty=zero). Saved from a
compiled model, so every key carries the `_orig_mod.` prefix. Checkpoint: a dict with
model_state_dict, epoch, val_loss and val_ppl (a numpy float64). Its Transformer uses
blocks.{i}.qkv_proj and blocks.{i}.out_proj."""

import numpy as np
import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-6


class PluckerIndex(nn.Module):
    """Holds only the pair-index buffers (alphaXiv keeps them in their own submodule)."""

    def __init__(self, r):
        super().__init__()
        ii, jj = pc.pair_indices(r)
        self.register_buffer("idx_i", ii)
        self.register_buffer("idx_j", jj)


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
        bivec, count = pc.plucker_bivector(z, pc.ALL_OFFSETS, self.plucker.idx_i, self.plucker.idx_j, EPS)
        g = pc.geometric_feature(bivec, count, self.W_plu, "zero")
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

    def forward(self, h):
        n = self.ln1(h)
        if self.kind == "grassmann":
            h = h + self.grassmann(n)
        else:
            h = h + pc.causal_attention(n, self.qkv_proj, self.out_proj, self.heads)
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
    model = Model(pc.sizes(args), args.kind)
    pc.randomize(model, args.seed)
    pc.finish(args, model, save, "alphaxiv", pc.sizes(args))


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
