#!/usr/bin/env python3
"""Wake2vec, Grassmanntesting/Grassmann_v_attention_for_Wake.py (facts read from mahb97/Wake2vec:
the current Colab version @ 17552a86 and the earlier full version with ln1; issue 23), written
from those facts, not from the engine:

GrassmannMixingBlock (both versions): W_red; buffers idx_i / idx_j (int64, i < j); for each window
delta < L: p = z_t[idx_i] * z_past[idx_j] - z_t[idx_j] * z_past[idx_i], p / clamp(||p||, min=1e-8),
g_delta = W_plu(p), accumulated with a count, g = g_accum / clamp(count, min=1) (g = 0 where no
window is valid); alpha = sigmoid(W_gate [h; g]); dropout(ln(alpha*h + (1-alpha)*g)).
Windows [1, 2, 4, 8, 12, 16] in every layer.
Current block: x = grass(x) (no ln1, no residual: "the gated fusion already acts as the skip"),
then x + ffn(ln2(x)). Earlier block (version "ln1"): x + grass(ln1(x)), then x + ffn(ln2(x)).
FFN: w2(dropout(gelu(w1(x)))).
TransformerLM baseline: pre-norm x + attn(ln1(x)), x + ffn(ln2(x)); attn.qkv reshaped
(B, L, 3, H, dh) and permuted (2, 0, 3, 1, 4), scale dh**-0.5, persistent float buffer attn.mask =
tril(ones(Lmax, Lmax)) viewed 1 x 1 x Lmax x Lmax, masked_fill(mask[:, :, :L, :L] == 0, -inf),
softmax, attn.out_proj; 4 heads.
Model: tok_emb + pos_emb, dropout, blocks, ln_f, lm_head with weight = tok_emb.weight.
Character vocabulary ("<pad>", "<eos>" + the text's characters); bare state_dict saved as
{output_dir}/{grassmann|transformer}/best.pt with history.json beside it."""

import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import parity_common as pc

EPS = 1e-8
WINDOWS = [1, 2, 4, 8, 12, 16]


class GrassmannMixingBlock(nn.Module):
    def __init__(self, d_model, r, windows, dropout):
        super().__init__()
        self.windows = windows
        self.W_red = nn.Linear(d_model, r)
        self.W_plu = nn.Linear(r * (r - 1) // 2, d_model)
        self.W_gate = nn.Linear(2 * d_model, d_model)
        self.ln = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        idx_i, idx_j = [], []
        for i in range(r):
            for j in range(i + 1, r):
                idx_i.append(i)
                idx_j.append(j)
        self.register_buffer("idx_i", torch.tensor(idx_i, dtype=torch.long))
        self.register_buffer("idx_j", torch.tensor(idx_j, dtype=torch.long))

    def plucker_coords(self, z1, z2):
        return z1[..., self.idx_i] * z2[..., self.idx_j] - z1[..., self.idx_j] * z2[..., self.idx_i]

    def forward(self, h):
        B, L, D = h.shape
        z = self.W_red(h)
        g_accum = torch.zeros(B, L, D)
        count = torch.zeros(B, L, 1)
        for delta in self.windows:
            if delta >= L:
                continue
            if delta > 0:
                p = self.plucker_coords(z[:, delta:, :], z[:, :-delta, :])
                p = p / torch.clamp(p.norm(dim=-1, keepdim=True), min=EPS)
                g_accum[:, delta:, :] += self.W_plu(p)
                count[:, delta:, :] += 1.0
        g = g_accum / torch.clamp(count, min=1.0)
        alpha = torch.sigmoid(self.W_gate(torch.cat([h, g], dim=-1)))
        h_mix = alpha * h + (1.0 - alpha) * g
        return self.dropout(self.ln(h_mix))


class FFN(nn.Module):
    def __init__(self, d_model, d_ff, dropout):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w2(self.dropout(F.gelu(self.w1(x))))


class GrassmannTransformerBlock(nn.Module):
    def __init__(self, c, with_ln1):
        super().__init__()
        self.with_ln1 = with_ln1
        if with_ln1:  # the earlier version
            self.ln1 = nn.LayerNorm(c["d"])
        self.grass = GrassmannMixingBlock(c["d"], c["r"], WINDOWS, 0.1)
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = FFN(c["d"], c["d_ff"], 0.1)

    def forward(self, x):
        x = x + self.grass(self.ln1(x)) if self.with_ln1 else self.grass(x)
        return x + self.ffn(self.ln2(x))


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, max_seq_len, dropout):
        super().__init__()
        self.n_heads, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(max_seq_len, max_seq_len)).unsqueeze(0).unsqueeze(0))

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).reshape(B, L, 3, self.n_heads, self.dh).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * self.dh ** -0.5
        att = att.masked_fill(self.mask[:, :, :L, :L] == 0, float("-inf"))
        y = self.attn_drop(torch.softmax(att, dim=-1)) @ v
        return self.resid_drop(self.out_proj(y.transpose(1, 2).reshape(B, L, D)))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = nn.LayerNorm(c["d"])
        self.attn = CausalSelfAttention(c["d"], c["heads"], c["Lmax"], 0.1)
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = FFN(c["d"], c["d_ff"], 0.1)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class LM(nn.Module):
    def __init__(self, c, kind, with_ln1=False):
        super().__init__()
        self.tok_emb = nn.Embedding(c["V"], c["d"])
        self.pos_emb = nn.Embedding(c["Lmax"], c["d"])
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList((GrassmannTransformerBlock(c, with_ln1) if kind == "grassmann"
                                     else TransformerBlock(c)) for _ in range(c["N"]))
        self.ln_f = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.tok_emb.weight

    def forward(self, x):
        L = x.shape[1]
        h = self.drop(self.tok_emb(x) + self.pos_emb(torch.arange(L, device=x.device)))
        for block in self.blocks:
            h = block(h)
        return self.lm_head(self.ln_f(h))


def make(args, with_ln1=False):
    """Builds, saves and records one case (args as parity_common.parser() defines them);
    `with_ln1` selects the earlier version of the Grassmann block."""
    torch.manual_seed(args.seed)
    # A character vocabulary: "<pad>", "<eos>" and the characters of the text (~100 for the Wake).
    c = dict(pc.PAPER, V=2 + 101) if args.size == "paper" else dict(pc.TINY)
    model = LM(c, args.kind, with_ln1)
    pc.randomize(model, args.seed, ("blocks.0.grass.W_red",), 5e-6 if c["d"] > 16 else 1e-4)
    if args.kind == "grassmann":
        variant = {"norm": "pre" if with_ln1 else "post_mix", "gate": "paper", "empty": "zero", "eps": EPS,
                   "aggregation": "normalize_then_mean"}
    else:
        variant = {"norm": "pre"}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump({"train_loss": [2.1, 1.7], "val_loss": [2.0, 1.8], "val_ppl": [7.4, 6.0], "step": [100, 200]}, f)
    pc.finish(args, model, torch.save, "wake2vec-ln1" if with_ln1 else "wake2vec", variant, config=c,
              filename="best.pt")


if __name__ == "__main__":
    ap = pc.parser(__doc__)
    ap.add_argument("--ln1", action="store_true", help="the earlier version (x + grass(ln1(x)))")
    a = ap.parse_args()
    make(a, a.ln1)
