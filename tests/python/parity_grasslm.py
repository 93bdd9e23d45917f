#!/usr/bin/env python3
"""GrassLM family: paper-exact post-norm blocks, one offset per layer, Plücker encoder module
holding W_red, W_plu and the idx_i/idx_j buffers. At a token with no valid offset the encoder
projects a zero bivector, so g = b_plu (empty=bias). Checkpoint: a dict with model_state_dict,
optimizer_state_dict, epoch, val_ppl and args (an argparse.Namespace), saved with torch.save.
The Transformer baseline uses blocks.{i}.attn.{qkv,out_proj}."""

import argparse

import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-8


class PluckerEncoder(nn.Module):
    def __init__(self, d, r):
        super().__init__()
        self.W_red = nn.Linear(d, r)
        self.W_plu = nn.Linear(r * (r - 1) // 2, d)
        ii, jj = pc.pair_indices(r)
        self.register_buffer("idx_i", ii)
        self.register_buffer("idx_j", jj)


class Mixing(nn.Module):
    def __init__(self, d, r, offsets):
        super().__init__()
        self.offsets = offsets
        self.plucker_encoder = PluckerEncoder(d, r)
        self.W_gate = nn.Linear(2 * d, d)

    def forward(self, h):
        enc = self.plucker_encoder
        z = enc.W_red(h)
        bivec, count = pc.plucker_bivector(z, self.offsets, enc.idx_i, enc.idx_j, EPS)
        g = pc.geometric_feature(bivec, count, enc.W_plu, "bias")
        a = torch.sigmoid(self.W_gate(torch.cat([h, g], dim=-1)))
        return a * h + (1 - a) * g


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        return pc.causal_attention(x, self.qkv, self.out_proj, self.heads)


class Block(nn.Module):
    def __init__(self, c, kind, offsets):
        super().__init__()
        self.kind = kind
        if kind == "grassmann":
            self.mixing = Mixing(c["d"], c["r"], offsets)
        else:
            self.attn = Attention(c["d"], c["heads"])
        self.ln1 = nn.LayerNorm(c["d"])
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = nn.Sequential(nn.Linear(c["d"], c["d_ff"]), nn.GELU(), nn.Linear(c["d_ff"], c["d"]))

    def forward(self, h):
        if self.kind == "grassmann":
            x = self.ln1(self.mixing(h))  # no residual around the mixer (spec step 9, post)
        else:
            x = self.ln1(h + self.attn(h))
        return self.ln2(x + self.ffn(x))


class GrassLM(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.tok_embed = nn.Embedding(c["V"], c["d"])
        self.pos_embed = nn.Embedding(c["Lmax"], c["d"])
        offs = pc.per_layer_offsets(c["N"])
        self.blocks = nn.ModuleList(Block(c, kind, offs[l]) for l in range(c["N"]))
        self.ln_final = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.tok_embed.weight  # tied

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        h = self.tok_embed(ids) + self.pos_embed(pos)[None]
        for b in self.blocks:
            h = b(h)
        return self.lm_head(self.ln_final(h))


def save(state, path):
    opt = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.zeros(4)}},
           "param_groups": [{"lr": 3e-4, "params": [0]}]}
    args = argparse.Namespace(n_heads=pc.TINY["heads"], lr=3e-4, dataset="wikitext-2")
    torch.save({"model_state_dict": state, "optimizer_state_dict": opt, "epoch": 7,
                "val_ppl": 123.5, "args": args}, path)


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    torch.manual_seed(args.seed)
    model = GrassLM(pc.sizes(args), args.kind)
    pc.randomize(model, args.seed)
    pc.finish(args, model, save, "grasslm", pc.sizes(args))


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
