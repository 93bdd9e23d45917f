#!/usr/bin/env python3
"""youdie006/grassmann, a fork of kanenorman/grassmann (facts read from model.py and
train_hydra.py @ 8aa6e5bc, the initial code, and @ 7a10f87 (HEAD; model.py unchanged since
e8aa8c8), and the Hydra run folders @ e8aa8c8f / f295355c; issues 23 and 30), written from those
facts, not from the engine.

Two code generations. The current one (e8aa8c8 and later): a pre_norm Grassmann block is
x = x + dropout(mix(attention_norm(x))) (a residual around the mixer), and layerwise_lags: true
gives layer i the single lag lags[i]; its configs carry layerwise_lags (and, from f295355, use_custom_init).
The initial one (8aa6e5bc), described below, has no residual in that block and no layerwise_lags key.

GrassmannMixing: kanenorman's names (attention.reduce, .expand, .gate_proj, int64 buffers
idx_i / idx_j = triu_indices(d_low, d_low, 1)); for each lag (0 < lag < n) the plane of current x
past, p / clamp(||p||, min=1e-6), summed into plucker_total with a count; plucker_avg =
total / clamp(count, min=1); g = expand(plucker_avg) (so g = b_expand where no lag is valid);
gate = sigmoid(gate_proj([x; g])) and out = gate*x + (1-gate)*g (the paper's blend, not
kanenorman's sigmoid(...)*g). Every layer gets the whole `lags` list.
TransformerBlock, pre_norm false: x = dropout(attention_norm(mix(x))), ffn_norm(x + dropout(ffn(x)));
pre_norm true: x = dropout(mix(attention_norm(x))) with NO residual, then x + dropout(ffn(ffn_norm(x))).
Attention baseline: qkv_projection chunked q|k|v, heads contiguous, scale d_head**-0.5, float buffer
causal_mask (tril ones, Lmax x Lmax), out_projection; post-norm LN(x + drop(attn(x))), pre-norm
x + drop(attn(LN(x))); 4 heads. FFN ffn.layers = Linear, GELU, Linear (no dropout inside).
Model: token_embedding + position_embedding, dropout, blocks, output_norm, lm_head tied.
Saved: torch.save(model.state_dict(), run_dir / "best.pt") beside run_dir/.hydra/config.yaml
(model.pre_norm, model.lags, model.num_heads, ...; vocab from bert-base-uncased, 30,522)."""

import os

import torch
import torch.nn as nn

import parity_common as pc

EPS = 1e-6


class GrassmannMixing(nn.Module):
    def __init__(self, d_model, d_low, lags):
        super().__init__()
        self.lags = list(lags)
        self.d_plucker = d_low * (d_low - 1) // 2
        self.reduce = nn.Linear(d_model, d_low)
        self.expand = nn.Linear(self.d_plucker, d_model)
        self.gate_proj = nn.Linear(2 * d_model, d_model)
        idx = torch.triu_indices(d_low, d_low, offset=1)
        self.register_buffer("idx_i", idx[0])
        self.register_buffer("idx_j", idx[1])

    def forward(self, x):
        b, n, _ = x.shape
        z = self.reduce(x)
        plucker_total = torch.zeros(b, n, self.d_plucker, dtype=x.dtype, device=x.device)
        counts = torch.zeros(b, n, 1, dtype=x.dtype, device=x.device)
        for lag in self.lags:
            if lag <= 0 or lag >= n:
                continue
            z_curr, z_past = z[:, lag:, :], z[:, :-lag, :]
            z_i, z_j = z_curr[..., self.idx_i], z_curr[..., self.idx_j]
            zp_i, zp_j = z_past[..., self.idx_i], z_past[..., self.idx_j]
            plucker = z_i * zp_j - z_j * zp_i
            plucker_norm = torch.norm(plucker, dim=-1, keepdim=True)
            plucker = plucker / torch.clamp(plucker_norm, min=EPS)
            plucker_total[:, lag:, :] = plucker_total[:, lag:, :] + plucker
            counts[:, lag:, :] = counts[:, lag:, :] + 1
        counts = torch.clamp(counts, min=1.0)
        g_avg = self.expand(plucker_total / counts)
        gate = torch.sigmoid(self.gate_proj(torch.cat([x, g_avg], dim=-1)))
        return gate * x + (1 - gate) * g_avg


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, max_context_len):
        super().__init__()
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        self.qkv_projection = nn.Linear(d_model, 3 * d_model)
        self.out_projection = nn.Linear(d_model, d_model)
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_context_len, max_context_len)))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.num_heads, self.d_head).transpose(1, 2)
                   for t in self.qkv_projection(x).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1)) * self.d_head ** -0.5
        scores.masked_fill_(self.causal_mask[:n, :n] == 0, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.out_projection(out.transpose(1, 2).reshape(b, n, d))


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, c, strategy, lags, pre_norm, current=False):
        super().__init__()
        self.grassmann, self.pre_norm, self.current = strategy == "grassmann", pre_norm, current
        self.attention_norm = nn.LayerNorm(c["d"])
        self.attention = (GrassmannMixing(c["d"], c["r"], lags) if self.grassmann
                          else CausalSelfAttention(c["d"], c["heads"], c["Lmax"]))
        self.ffn_norm = nn.LayerNorm(c["d"])
        self.ffn = FeedForward(c["d"], c["d_ff"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        if self.pre_norm:
            if self.grassmann and self.current:
                x = x + self.dropout(self.attention(self.attention_norm(x)))  # e8aa8c8: a residual path
            elif self.grassmann:
                x = self.dropout(self.attention(self.attention_norm(x)))  # 8aa6e5bc: without an extra residual
            else:
                x = x + self.dropout(self.attention(self.attention_norm(x)))
            return x + self.dropout(self.ffn(self.ffn_norm(x)))
        if self.grassmann:
            x = self.dropout(self.attention_norm(self.attention(x)))
        else:
            x = self.attention_norm(x + self.dropout(self.attention(x)))
        return self.ffn_norm(x + self.dropout(self.ffn(x)))


class LanguageModel(nn.Module):
    def __init__(self, c, strategy, lags, pre_norm, layerwise=False):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.dropout = nn.Dropout(0.1)
        # Transformer._resolve_layer_lags (current code): layerwise_lags gives layer i [lags[i]].
        per_layer = [[lag] for lag in lags] if layerwise else [list(lags)] * c["N"]
        self.transformer_blocks = nn.ModuleList(
            TransformerBlock(c, strategy, per_layer[i], pre_norm, current=layerwise) for i in range(c["N"]))
        self.output_norm = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        n = ids.shape[1]
        h = self.dropout(self.token_embedding(ids) + self.position_embedding(torch.arange(n, device=ids.device)))
        for block in self.transformer_blocks:
            h = block(h)
        return self.lm_head(self.output_norm(h))


def hydra_config(c, strategy, lags, pre_norm, current=False):
    """.hydra/config.yaml as Hydra writes it for a run of train_hydra.py (initial code: no
    layerwise_lags key; current code: layerwise_lags and use_custom_init, as in the f295355 run)."""
    lag_lines = "".join(f"  - {lag}\n" for lag in lags)
    later = "  layerwise_lags: true\n  use_custom_init: false\n" if current else ""
    return (f"model:\n  tensor_lifting_strategy: {strategy}\n  num_layers: {c['N']}\n  d_model: {c['d']}\n"
            f"  num_heads: {c['heads']}\n  expansion_ratio: {c['d_ff'] // c['d']}\n  d_low: {c['r']}\n"
            f"  lags:\n{lag_lines}  pre_norm: {'true' if pre_norm else 'false'}\n  weight_tying: true\n{later}"
            f"data:\n  source: local_parquet\n  data_root: /tmp/wikitext2_official/wikitext-2-raw-v1\n"
            f"  tokenizer_name: bert-base-uncased\n  max_context_len: {c['Lmax']}\n  max_samples_train: null\n"
            f"  max_samples_val: null\nseed: 42\ntrain:\n  device: cuda\n  batch_size: 32\n  num_epochs: 30\n"
            f"  learning_rate: 0.001\n  weight_decay: 0.01\n  grad_clip: 1.0\n  dropout_rate: 0.1\n"
            f"  num_workers: 2\n  pin_memory: true\n  amp: true\nexperiment:\n  name: paper_6l_128\n"
            f"  run_id: null\n  output_root: training_results_hydra\n")


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them);
    --norm pre_mix (grassmann, initial code) / pre (transformer) writes pre_norm: true; a
    Grassmann --norm pre is the current code's pre_norm run with layerwise_lags: true."""
    torch.manual_seed(args.seed)
    c = pc.sizes(args)
    pre_norm = args.norm in ("pre", "pre_mix")
    strategy = "grassmann" if args.kind == "grassmann" else "attention"
    current = args.kind == "grassmann" and args.norm == "pre"
    # The pre_norm run uses a Hydra override of the lags (model.lags=[1,2,4,8,16]), so the test
    # sees that the importer reads them from the YAML rather than the layout's default; the
    # current code's run gives each of the 6 layers one lag.
    lags = [1, 2, 4, 8, 12, 16][:c["N"]] if current else [1, 2, 4, 8, 16] if pre_norm else [1, 2, 4, 8, 12, 16]
    model = LanguageModel(c, strategy, lags, pre_norm, layerwise=current)
    pc.randomize(model, args.seed, ("transformer_blocks.0.attention.reduce",), 5e-6 if c["d"] > 16 else 1e-4)
    if args.kind == "grassmann":
        variant = {"norm": "pre" if current else "pre_mix" if pre_norm else "post", "gate": "paper",
                   "empty": "bias", "eps": EPS, "aggregation": "normalize_then_mean"}
        if current:
            variant["offsets_per_layer"] = [[lag] for lag in lags]
    else:
        variant = {"norm": "pre" if pre_norm else "post"}
    os.makedirs(os.path.join(args.out, ".hydra"), exist_ok=True)
    with open(os.path.join(args.out, ".hydra", "config.yaml"), "w") as f:
        f.write(hydra_config(c, strategy, lags, pre_norm, current))
    with open(os.path.join(args.out, ".hydra", "overrides.yaml"), "w") as f:
        f.write(f"- model={strategy}\n" + ("- model.pre_norm=true\n- model.lags=[1,2,4,8,16]\n" if pre_norm else ""))
    pc.finish(args, model, torch.save, "youdie006", variant, filename="best.pt")


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
