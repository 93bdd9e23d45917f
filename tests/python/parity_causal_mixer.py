#!/usr/bin/env python3
"""Writes a parity case of the CausalGrassmannMixer family (training/grassman.py) saved exactly as
its training/train.py saves a run: OUT/<model>/checkpoint.pt = {"model": state_dict, "optimizer":
AdamW state, "step", "config": asdict(cfg) (offsets a tuple), "model_type", "checkpoint_version":
2}, OUT/expected.json and OUT/logits.f32 beside the model folder.

The model is written here from the family's code (layout causal-mixer's "facts"): a GrassmannLM
of pre-norm blocks x + mix(norm1 x), x + ff(norm2 x); the mixer reduces h = norm1 x to z = red(h),
forms every offset's plane past x current, normalises it with clamp_min(eps), maps it through
geom_proj (Linear -> exact GELU -> Linear), averages over the valid offsets and gates
alpha h + (1 - alpha) g with alpha = sigmoid(gate([h; g])); a TransformerLM of pre-norm blocks with
fused qkv. tests/python/check_upstream.py --family causal-mixer runs the family's own classes on
the same files.
Usage: parity_causal_mixer.py --kind grassmann|transformer --out OUT"""

import dataclasses
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

import parity_common as pc

# Sizes of the case: n_heads 10 as the family's default (d_head 16), r 24 (C = 276) as its
# default, a smaller d_geom and d; the default offsets 1..64 all reach the longest prompt.
SIZES = dict(V=2000, d=160, r=24, N=4, d_ff=640, Lmax=96, heads=10, d_geom=64)
OFFSETS = (1, 2, 4, 8, 16, 32, 64)
EPS = 1e-6


@dataclasses.dataclass
class GrassmannConfig:  # the family's dataclass fields, in its order
    vocab_size: int
    max_seq_len: int
    d_model: int
    n_layers: int
    d_ff: int
    r: int
    offsets: tuple
    d_geom: int
    dropout: float = 0.1
    eps: float = EPS
    tie_weights: bool = True


@dataclasses.dataclass
class TransformerConfig:
    vocab_size: int
    max_seq_len: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    dropout: float = 0.1
    tie_weights: bool = True


class FF(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, f), nn.Linear(f, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Mixer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.r, self.offsets, self.eps = c.r, tuple(sorted({o for o in c.offsets if o > 0})), c.eps
        C = c.r * (c.r - 1) // 2
        self.red = nn.Linear(c.d_model, c.r)
        self.geom_proj = nn.Sequential(nn.Linear(C, c.d_geom), nn.GELU(), nn.Linear(c.d_geom, c.d_model))
        self.gate = nn.Linear(2 * c.d_model, c.d_model)
        i, j = torch.triu_indices(c.r, c.r, offset=1)
        self.register_buffer("i", i, persistent=False)
        self.register_buffer("j", j, persistent=False)

    def forward(self, h):
        B, L, D = h.shape
        z = self.red(h)
        total, n = h.new_zeros(B, L, D), h.new_zeros(1, L, 1)
        for delta in self.offsets:
            if delta >= L:
                continue
            past, cur = z[:, :L - delta], z[:, delta:]  # the plane of (past, current), in that order
            p = past[..., self.i] * cur[..., self.j] - past[..., self.j] * cur[..., self.i]
            p = p / p.norm(dim=-1, keepdim=True).clamp_min(self.eps)
            total[:, delta:] += self.geom_proj(p)
            n[:, delta:] += 1
        g = total / n.clamp_min(1.0)
        a = torch.sigmoid(self.gate(torch.cat([h, g], dim=-1)))
        return a * h + (1 - a) * g


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.H = c.n_heads
        self.qkv, self.out_proj = nn.Linear(c.d_model, 3 * c.d_model), nn.Linear(c.d_model, c.d_model)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = (t.view(B, L, self.H, D // self.H).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        s = (q @ k.transpose(-2, -1)) * (D // self.H) ** -0.5
        s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
        return self.out_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, D))


class Block(nn.Module):
    def __init__(self, c, grassmann):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        if grassmann:
            self.mix = Mixer(c)
        else:
            self.attn = Attention(c)
        self.ff = FF(c.d_model, c.d_ff)

    def forward(self, x):
        x = x + (self.mix if hasattr(self, "mix") else self.attn)(self.norm1(x))
        return x + self.ff(self.norm2(x))


class LM(nn.Module):
    def __init__(self, c, grassmann):
        super().__init__()
        self.cfg = c
        self.MODEL_TYPE = "grassmann" if grassmann else "transformer"
        self.token_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.max_seq_len, c.d_model)
        self.blocks = nn.ModuleList(Block(c, grassmann) for _ in range(c.n_layers))
        self.final_norm = nn.LayerNorm(c.d_model)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.lm_head.weight = self.token_emb.weight

    def forward(self, ids):
        x = self.token_emb(ids) + self.pos_emb(torch.arange(ids.shape[1]).unsqueeze(0))
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.final_norm(x))


def config_for(kind, s=SIZES):
    if kind == "grassmann":
        return GrassmannConfig(vocab_size=s["V"], max_seq_len=s["Lmax"], d_model=s["d"], n_layers=s["N"],
                               d_ff=s["d_ff"], r=s["r"], offsets=OFFSETS, d_geom=s["d_geom"])
    return TransformerConfig(vocab_size=s["V"], max_seq_len=s["Lmax"], d_model=s["d"], n_layers=s["N"],
                             n_heads=s["heads"], d_ff=s["d_ff"])


def make(args):
    torch.manual_seed(args.seed)
    grassmann = args.kind == "grassmann"
    cfg = config_for(args.kind)
    model = LM(cfg, grassmann)
    # Layer 0's reduction small enough that its planes' norms fall between 1e-8 and 1e-6, so the
    # eps the family reads from its config (1e-6) reaches the logits.
    pc.randomize(model, args.seed, ("blocks.0.mix.red",) if grassmann else (), 5e-6)
    # One optimizer step, as a saved run holds AdamW moments for every parameter.
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)
    model(torch.tensor([[1, 2, 3]])).sum().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    def save(state, path):  # train.py's torch.save, under out_dir/<model>/checkpoint.pt
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"model": state, "optimizer": optimizer.state_dict(), "step": 200,
                    "config": dataclasses.asdict(cfg), "model_type": model.MODEL_TYPE,
                    "checkpoint_version": 2}, path)

    sizes = {k: SIZES[k] for k in ("V", "d", "r", "N", "d_ff", "Lmax", "heads", "d_geom")}
    variant = {"norm": "pre", "gate": "paper", "empty": "zero", "eps": EPS, "aggregation": "per_offset_mlp",
               "offsets": list(OFFSETS), "stages": {"wedge_order": "past_current"}} if grassmann else \
        {"norm": "pre"}
    pc.finish(args, model, save, "causal-mixer", variant, config=sizes,
              filename=os.path.join(args.kind, "checkpoint.pt"))


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
    sys.exit(0)
