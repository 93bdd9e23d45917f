#!/usr/bin/env python3
"""GrassLM family, written from model-spec.md "Verified semantics of each family": each offset's
normalized Plücker vector is projected on its own (W_plu p^ + b_plu), rows t < D are padded with
zeros, the padded projections are summed and divided by the number of valid offsets (at least
one), so a token with no valid offset gets g = 0. eps 1e-8 (clamp(min=1e-8)), paper gate
m = a*h + (1-a)*g, post-norm with no residual around the mixer, one offset per layer from GrassLM's
built-in schedule (config.json's window_schedule is written by train.py but never read). Checkpoint: best_model.pt-style dict (model_state_dict, epoch, val_ppl, args),
and a model folder config.json with `architecture`. GrassLM has no Transformer baseline."""

import argparse
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import parity_common as pc

EPS = 1e-8


def window_schedule(n_layers):
    """GrassLM's built-in schedule (python/grasslm/model.py WINDOW_SCHEDULES, used because train.py,
    evaluate.py and generate.py never pass window_schedule): one offset per layer, 1,2,4,8,12,16 for
    6 layers, each twice for 12, otherwise 1 in every layer."""
    if n_layers == 6:
        return list(pc.ALL_OFFSETS)
    if n_layers == 12:
        return [w for w in pc.ALL_OFFSETS for _ in range(2)]
    return [1] * n_layers


def config_window_schedule(n_layers):
    """What GrassLM's train.py writes into config.json: [1,2,4,8,12,16][:N] (right only for N = 6;
    the importer must not apply it)."""
    return list(pc.ALL_OFFSETS)[:n_layers]


class PluckerEncoder(nn.Module):
    def __init__(self, d_model, d_reduce):
        super().__init__()
        self.W_red = nn.Linear(d_model, d_reduce)
        self.W_plu = nn.Linear(d_reduce * (d_reduce - 1) // 2, d_model)
        idx = torch.triu_indices(d_reduce, d_reduce, offset=1)
        self.register_buffer("idx_i", idx[0].clone())
        self.register_buffer("idx_j", idx[1].clone())

    def project(self, z, delta):
        """Projected feature of offset `delta` for every token, zero rows where t < delta.
        Returns (B x T x d features, T validity)."""
        b, t, _ = z.shape
        valid = torch.zeros(t)
        if delta >= t:
            return z.new_zeros(b, t, self.W_plu.out_features), valid
        u = z[:, delta:]   # current token t
        w = z[:, : t - delta]  # past token t - delta
        p = u[:, :, self.idx_i] * w[:, :, self.idx_j] - u[:, :, self.idx_j] * w[:, :, self.idx_i]
        p_hat = p / torch.clamp(p.norm(dim=-1, keepdim=True), min=EPS)
        feat = self.W_plu(p_hat)
        valid[delta:] = 1.0
        return F.pad(feat, (0, 0, delta, 0)), valid


class GrassmannMixing(nn.Module):
    def __init__(self, d_model, d_reduce, offsets):
        super().__init__()
        self.offsets = list(offsets)
        self.plucker_encoder = PluckerEncoder(d_model, d_reduce)
        self.W_gate = nn.Linear(2 * d_model, d_model)

    def forward(self, h):
        z = self.plucker_encoder.W_red(h)
        total, n_valid = 0.0, torch.zeros(h.shape[1])
        for delta in self.offsets:
            feat, valid = self.plucker_encoder.project(z, delta)
            total = total + feat
            n_valid = n_valid + valid
        g = total / torch.clamp(n_valid, min=1.0)[None, :, None]
        a = torch.sigmoid(self.W_gate(torch.cat([h, g], dim=-1)))
        return a * h + (1.0 - a) * g


class GrassmannBlock(nn.Module):
    def __init__(self, c, offsets):
        super().__init__()
        self.mixing = GrassmannMixing(c["d"], c["r"], offsets)
        self.ln1 = nn.LayerNorm(c["d"])
        self.ln2 = nn.LayerNorm(c["d"])
        self.ffn = nn.Sequential(nn.Linear(c["d"], c["d_ff"]), nn.GELU(), nn.Linear(c["d_ff"], c["d"]))
        self.dropout = nn.Dropout(0.1)

    def forward(self, h):
        x = self.dropout(self.ln1(self.mixing(h)))  # no residual around the mixer
        return self.ln2(x + self.dropout(self.ffn(x)))


class GrassLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_embed = nn.Embedding(c["V"], c["d"])
        self.pos_embed = nn.Embedding(c["Lmax"], c["d"])
        self.blocks = nn.ModuleList(GrassmannBlock(c, [w]) for w in window_schedule(c["N"]))
        self.ln_final = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.tok_embed.weight  # tied

    def forward(self, ids):
        h = self.tok_embed(ids) + self.pos_embed(torch.arange(ids.shape[1]))[None]
        for block in self.blocks:
            h = block(h)
        return self.lm_head(self.ln_final(h))


def make(args):
    """Builds, saves and records one case (args as parity_common.parser() defines them)."""
    if args.kind != "grassmann":
        raise SystemExit("GrassLM has no Transformer baseline")
    torch.manual_seed(args.seed)
    c = pc.sizes(args)
    model = GrassLM(c)
    # Layer 0's reduction small: its Plücker norms lie between 1e-8 and 1e-6, so eps matters.
    pc.randomize(model, args.seed, ("blocks.0.mixing.plucker_encoder.W_red",), 5e-6 if c["d"] > 16 else 1e-4)

    def save(state, path):
        ns = argparse.Namespace(lr=3e-4, dataset="wikitext-2", batch_size=32)
        torch.save({"model_state_dict": state, "epoch": 7, "val_ppl": 123.5, "args": ns}, path)

    os.makedirs(args.out, exist_ok=True)
    arch = {"vocab_size": c["V"], "d_model": c["d"], "n_layers": c["N"], "d_reduce": c["r"],
            "d_ff": c["d_ff"], "max_seq_len": c["Lmax"], "window_schedule": config_window_schedule(c["N"])}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"architecture": arch, "training": {"lr": 3e-4}}, f)
    pc.finish(args, model, save, "grasslm", {"norm": "post", "gate": "paper", "empty": "zero", "eps": EPS,
                                                      "aggregation": "normalize_then_mean"})


if __name__ == "__main__":
    make(pc.parser(__doc__).parse_args())
