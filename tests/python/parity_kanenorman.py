#!/usr/bin/env python3
"""kanenorman family, written from model-spec.md "Verified semantics of each family": the
normalized Plücker vectors (eps 1e-6, clamp(min=1e-6)) are averaged in Plücker space over the
valid lags (count clamped to 1; lags >= T skipped), then projected once, g = expand(mean), so a
token with no valid lag gets g = b_plu. Geometry-only gate: mix = sigmoid(gate_proj([x; g])) * g.
Post-norm x = attention_norm(x + drop(mix(x))), ffn_norm(x + drop(ffn(x))); with pre_norm,
x + drop(mix(attention_norm(x))), x + drop(ffn(ffn_norm(x))), same keys. int64 buffers
attention.idx_i / idx_j (triu indices). Transformer baseline: attention.qkv_projection split as
(qkv, head, d_head), scale d_head^-0.5, attention.out_projection, float buffer
attention.causal_mask (Lmax x Lmax tril ones). Bare state_dict, head tied to token_embedding."""

import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-6


class GrassmannMixing(nn.Module):
    def __init__(self, d_model, d_reduce, lags):
        super().__init__()
        self.lags = lags
        self.reduce = nn.Linear(d_model, d_reduce)
        self.expand = nn.Linear(d_reduce * (d_reduce - 1) // 2, d_model)
        self.gate_proj = nn.Linear(2 * d_model, d_model)
        ii, jj = torch.triu_indices(d_reduce, d_reduce, offset=1)
        self.register_buffer("idx_i", ii)
        self.register_buffer("idx_j", jj)

    def forward(self, x):
        batch, seq, _ = x.shape
        z = self.reduce(x)
        acc = z.new_zeros(batch, seq, self.idx_i.numel())
        count = z.new_zeros(1, seq, 1)
        for lag in self.lags:
            if lag >= seq:
                continue
            now, before = z[:, lag:], z[:, :-lag]
            # Exterior product as an antisymmetric matrix, read off above the diagonal.
            outer = now.unsqueeze(-1) * before.unsqueeze(-2)  # [.., i, j] = now_i * before_j
            wedge = (outer - outer.transpose(-1, -2))[..., self.idx_i, self.idx_j]
            wedge = wedge / wedge.norm(dim=-1, keepdim=True).clamp(min=EPS)
            acc[:, lag:] += wedge
            count[:, lag:] += 1
        g = self.expand(acc / count.clamp(min=1))
        return torch.sigmoid(self.gate_proj(torch.cat([x, g], dim=-1))) * g


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, max_len):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv_projection = nn.Linear(d_model, 3 * d_model)
        self.out_projection = nn.Linear(d_model, d_model)
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        batch, seq, d = x.shape
        qkv = self.qkv_projection(x).view(batch, seq, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.d_head ** -0.5
        scores = scores.masked_fill(self.causal_mask[:seq, :seq] == 0, float("-inf"))
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out_projection(out.transpose(1, 2).reshape(batch, seq, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model), nn.Dropout(0.1))

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, c, kind, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.attention_norm = nn.LayerNorm(c["d"])
        self.attention = (GrassmannMixing(c["d"], c["r"], pc.ALL_OFFSETS) if kind == "grassmann"
                          else CausalSelfAttention(c["d"], c["heads"], c["Lmax"]))
        self.ffn_norm = nn.LayerNorm(c["d"])
        self.ffn = FeedForward(c["d"], c["d_ff"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        if self.pre_norm:
            x = x + self.dropout(self.attention(self.attention_norm(x)))
            return x + self.dropout(self.ffn(self.ffn_norm(x)))
        x = self.attention_norm(x + self.dropout(self.attention(x)))
        return self.ffn_norm(x + self.dropout(self.ffn(x)))


class LanguageModel(nn.Module):
    def __init__(self, c, kind, pre_norm):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.transformer_blocks = nn.ModuleList(TransformerBlock(c, kind, pre_norm) for _ in range(c["N"]))
        self.output_norm = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.transformer_blocks:
            x = block(x)
        return self.lm_head(self.output_norm(x))


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    torch.manual_seed(args.seed)
    c = pc.sizes(args)
    model = LanguageModel(c, args.kind, args.norm == "pre")
    # Layer 0's reduction small: its Plücker norms lie between 1e-8 and 1e-6, so eps matters.
    pc.randomize(model, args.seed, ("transformer_blocks.0.attention.reduce",), 5e-6 if c["d"] > 16 else 1e-4)
    variant = {"norm": args.norm}
    if args.kind == "grassmann":
        variant.update(gate="geometry_only", empty="bias", eps=EPS, aggregation="normalize_then_mean")
    pc.finish(args, model, torch.save, "kanenorman", variant)


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
