#!/usr/bin/env python3
"""Arledge's grassmann-flows (facts read from sherlok-xin/grassmann--flow @ 67efbc15, a copy of
Elliot Arledge's repository; issue 23), written from those facts, not from the engine:

GrassmannGPTFused (src/cuda/grassmann_fused.py): GrassmannGPTv4's module names, but the mixer has
no `plucker` submodule (no idx_* buffers) and a persistent int32 buffer `window_sizes_tensor`.
FusedPluckerFunction's PyTorch path sums the RAW Plücker vectors of the valid offsets
(delta < T, current x past), divides by the number of valid offsets (clamped to 1), then divides
by sqrt(sum p^2 + 1e-8) (eps inside the sqrt), and W_plu projects once (so g = b_plu at a token
with no valid offset). Gate a = sigmoid(W_gate [h; g]), h_mix = a*h + (1-a)*g, then
dropout(layer_norm(h_mix)); block h + grassmann(ln1(h)), h + ffn(ln2(h)); ffn = Linear, GELU,
Dropout, Linear, Dropout. The windows here are configs.py's [1, 2, 4, 8, 16] (not the trainer's
[1, 2, 4, 8, 12, 16]), so the test sees that the importer reads them from the buffer.

SmallTransformer (train_wikitext2.py): pre-norm, nn.MultiheadAttention(d, 8 heads,
batch_first=True) with generate_square_subsequent_mask, is_causal=True; keys attn.in_proj_weight,
attn.in_proj_bias, attn.out_proj; ffn.0 / ffn.3; no mask buffer.

Both: token_embedding + position_embedding, ln_f, lm_head tied to token_embedding; GPT-2 BPE
(V = 50,257); checkpoint = bare state_dict saved as {grassmann|transformer}_best.pt, with a
results.json beside it holding only results."""

import inspect
import json
import os

import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-8  # FusedGrassmannMixing: self.eps = 1e-8, used as sqrt(sum p^2 + eps)
WINDOWS = [1, 2, 4, 8, 16]  # configs.py MODEL_CONFIGS["small"]["window_sizes"]
# The family passes is_causal=True and dtype=; torch 1.13 (Debian's) has neither: there the float
# -inf mask alone makes the attention causal (is_causal is only a hint next to an explicit mask).
_NEW_MHA = "is_causal" in inspect.signature(nn.MultiheadAttention.forward).parameters


def _pytorch_forward(z, window_sizes, scale, eps):
    """FusedPluckerFunction's CPU path: mean of the raw Plücker vectors, then one normalisation."""
    batch, seq_len, r = z.shape
    idx_i, idx_j = torch.triu_indices(r, r, offset=1)
    plucker_out = z.new_zeros(batch, seq_len, idx_i.numel())
    counts = z.new_zeros(batch, seq_len, 1)
    for delta in window_sizes.tolist():
        if delta >= seq_len:
            continue
        z_current, z_past = z[:, delta:, :], z[:, :-delta, :]
        p = z_current[..., idx_i] * z_past[..., idx_j] - z_current[..., idx_j] * z_past[..., idx_i]
        p = p * scale
        plucker_out[:, delta:, :] += p
        counts[:, delta:, :] += 1
    plucker_out = plucker_out / counts.clamp(min=1)
    norm = torch.sqrt((plucker_out ** 2).sum(dim=-1, keepdim=True) + eps)
    return plucker_out / norm


class FusedGrassmannMixing(nn.Module):
    def __init__(self, model_dim, reduced_dim, window_sizes, dropout=0.1):
        super().__init__()
        self.eps = EPS
        self.W_red = nn.Linear(model_dim, reduced_dim)
        self.W_plu = nn.Linear(reduced_dim * (reduced_dim - 1) // 2, model_dim)
        self.W_gate = nn.Linear(2 * model_dim, model_dim)
        self.layer_norm = nn.LayerNorm(model_dim)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("window_sizes_tensor", torch.tensor(window_sizes, dtype=torch.int32))

    def forward(self, hidden_states):
        z = self.W_red(hidden_states)
        plucker = _pytorch_forward(z, self.window_sizes_tensor, 1.0, self.eps)
        g = self.W_plu(plucker)
        alpha = torch.sigmoid(self.W_gate(torch.cat([hidden_states, g], dim=-1)))
        h_mix = alpha * hidden_states + (1 - alpha) * g
        return self.dropout(self.layer_norm(h_mix))


def feed_forward(d, ff, dropout=0.1):
    return nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(ff, d), nn.Dropout(dropout))


class FusedGrassmannBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = nn.LayerNorm(c["d"])
        self.grassmann = FusedGrassmannMixing(c["d"], c["r"], WINDOWS)
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = feed_forward(c["d"], c["d_ff"])

    def forward(self, h):
        h = h + self.grassmann(self.ln1(h))
        return h + self.ffn(self.ln2(h))


class TransformerBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = nn.LayerNorm(c["d"])
        self.attn = nn.MultiheadAttention(c["d"], c["heads"], dropout=0.1, batch_first=True)
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = feed_forward(c["d"], c["d_ff"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        normed = self.ln1(x)
        t = x.shape[1]
        if _NEW_MHA:
            attn_mask = nn.Transformer.generate_square_subsequent_mask(t, device=x.device, dtype=x.dtype)
            attn_out, _ = self.attn(normed, normed, normed, attn_mask=attn_mask, is_causal=True)
        else:
            attn_mask = nn.Transformer.generate_square_subsequent_mask(t, device=x.device).to(x.dtype)
            attn_out, _ = self.attn(normed, normed, normed, attn_mask=attn_mask)
        x = x + self.dropout(attn_out)
        return x + self.ffn(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, c, kind):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.drop = nn.Dropout(0.1)
        block = FusedGrassmannBlock if kind == "grassmann" else TransformerBlock
        self.blocks = nn.ModuleList(block(c) for _ in range(c["N"]))
        self.ln_f = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        h = self.drop(self.token_embedding(input_ids) + self.position_embedding(positions))
        for block in self.blocks:
            h = block(h)
        return self.lm_head(self.ln_f(h))


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    torch.manual_seed(args.seed)
    c = dict(pc.PAPER, V=50257, heads=8) if args.size == "paper" else dict(pc.TINY, heads=8)
    model = GPT(c, args.kind)
    # Layer 0's reduction small: the mean Plücker vector's squared norm is then ~1e-8 (1e-9..5e-8), so
    # both the eps (1e-8 vs 1e-6 inside the sqrt) and where it sits reach the logits.
    pc.randomize(model, args.seed, ("blocks.0.grassmann.W_red",), 2e-4 if c["d"] > 16 else 1e-3)
    variant = {"norm": "pre"}
    if args.kind == "grassmann":
        variant.update(gate="paper", empty="bias", eps=EPS, aggregation="mean_then_normalize")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({args.kind: {"num_params": sum(p.numel() for p in model.parameters()), "best_val_loss": 4.1,
                               "best_val_ppl": 60.3, "test_loss": 4.2, "test_ppl": 66.7}}, f)
    pc.finish(args, model, torch.save, "arledge", variant, config=c, filename=args.kind + "_best.pt")


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
