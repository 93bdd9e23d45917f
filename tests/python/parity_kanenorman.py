#!/usr/bin/env python3
"""kanenorman family: the gate only weighs the geometry (mix = sigmoid(gate_proj[x; g]) * g),
then x = attention_norm(x + mix) and x = ffn_norm(x + ffn(x)); all six offsets in every layer,
eps 1e-8, g = 0 at a token with no valid offset. Saved as a bare state_dict (an OrderedDict).
Its Transformer block holds an nn.MultiheadAttention-style attention (in_proj_weight,
in_proj_bias, out_proj) under the same block names."""

import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-8


class GrassmannMixer(nn.Module):
    def __init__(self, d, r):
        super().__init__()
        self.reduce = nn.Linear(d, r)
        self.expand = nn.Linear(r * (r - 1) // 2, d)
        self.gate_proj = nn.Linear(2 * d, d)
        ii, jj = pc.pair_indices(r)
        self.ii, self.jj = ii, jj  # plain attributes, not saved

    def forward(self, x):
        z = self.reduce(x)
        bivec, count = pc.plucker_bivector(z, pc.ALL_OFFSETS, self.ii, self.jj, EPS)
        g = pc.geometric_feature(bivec, count, self.expand, "zero")
        return torch.sigmoid(self.gate_proj(torch.cat([x, g], dim=-1))) * g


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * d))
        self.out_proj = nn.Linear(d, d)

    def forward(self, x):
        qkv = lambda y: torch.nn.functional.linear(y, self.in_proj_weight, self.in_proj_bias)
        return pc.causal_attention(x, qkv, self.out_proj, self.heads)


class FeedForward(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))

    def forward(self, x):
        return self.layers(x)


class Block(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        d = c["d"]
        self.attention_norm = nn.LayerNorm(d)
        self.attention = GrassmannMixer(d, c["r"]) if kind == "grassmann" else Attention(d, c["heads"])
        self.ffn_norm = nn.LayerNorm(d)
        self.ffn = FeedForward(d, c["d_ff"])

    def forward(self, x):
        x = self.attention_norm(x + self.attention(x))
        return self.ffn_norm(x + self.ffn(x))


class Model(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.transformer_blocks = nn.ModuleList(Block(c, kind) for _ in range(c["N"]))
        self.output_norm = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        h = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1]))[None]
        for b in self.transformer_blocks:
            h = b(h)
        return self.lm_head(self.output_norm(h))


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    torch.manual_seed(args.seed)
    model = Model(pc.sizes(args), args.kind)
    pc.randomize(model, args.seed)
    pc.finish(args, model, torch.save, "kanenorman", pc.sizes(args))


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
