#!/usr/bin/env python3
"""Arledge's grassmann-flows as its training scripts save it (issue 30; facts read from
sherlok-xin/grassmann--flow: train.py, src/models/grassmann_v4.py and src/models/gpt2.py @
67efbc15, train_exp4_ddp.py @ 9fec0ac4), written from those facts, not from the engine:

GrassmannGPTv4 (grassmann_v4.py): token_embedding + position_embedding, blocks of
h + grassmann(ln1 h), h + ffn(ln2 h); the mixer: z = W_red n; for each window delta < T the plane
of z_t (current) and z_{t-delta} (past), p / clamp(||p||, 1e-8) (plucker.idx_i / idx_j buffers),
each projected by W_plu (with its bias), summed and divided by the count clamped to 1 (so g = 0
where no window is valid); a = sigmoid(W_gate [n; g]); dropout(layer_norm(a n + (1 - a) g)); ffn =
Linear, GELU, Dropout, Linear, Dropout; ln_f; lm_head tied.

GPT2 (gpt2.py): the same embeddings and block shape with CausalSelfAttention: qkv_proj (d -> 3d,
bias) chunked q|k|v, heads contiguous, scores * head_dim**-0.5, masked where the float buffer
causal_mask (1 x 1 x Lmax x Lmax, tril ones) is 0, softmax, out_proj.

train.py: create_model builds grassmann_v4 with reduced_dim=32 and window_sizes [1,2,4,8,12,16]
whatever TrainingConfig says, and gpt2 with config.num_heads; it saves
best_model.pt = {model_state_dict, optimizer_state_dict, config: asdict(config), step, val_loss}
and config.json (asdict(config)) beside it. TrainingConfig's defaults are reduced_dim 64 and
window_sizes [1, 2, 4, 8, 16, 32], so a grassmann_v4 checkpoint's config states values its code
never used.

train_exp4_ddp.py: GrassmannGPTv4 with --reduced-dim and --window-sizes (a string, "1,3,5" here),
ff_dim = 4 d; SmallTransformer with 8 heads (parity_arledge.py's); bare state dicts saved as
run_dir/checkpoints/{grassmann,transformer}_best.pt; run_dir/config.json =
{run_id, ..., "config": vars(args), "env": ..., "dataset_stats": ...}."""

import json
import os
import sys

import torch
import torch.nn as nn

import parity_arledge
import parity_common as pc

TRAIN_PY_WINDOWS = [1, 2, 4, 8, 12, 16]  # create_model, grassmann_v4
CONFIG_DEFAULT_WINDOWS = [1, 2, 4, 8, 16, 32]  # TrainingConfig.__post_init__
EXP4_WINDOWS = "1,3,5"  # --window-sizes as the script's argparse keeps it


class PluckerEncoder(nn.Module):
    def __init__(self, r, eps=1e-8):
        super().__init__()
        self.eps = eps
        ii, jj = zip(*[(i, j) for i in range(r) for j in range(i + 1, r)])
        self.register_buffer("idx_i", torch.tensor(ii, dtype=torch.long))
        self.register_buffer("idx_j", torch.tensor(jj, dtype=torch.long))

    def forward(self, cur, past):
        p = cur[..., self.idx_i] * past[..., self.idx_j] - cur[..., self.idx_j] * past[..., self.idx_i]
        return p / torch.clamp(torch.norm(p, dim=-1, keepdim=True), min=self.eps)


class CausalGrassmannMixing(nn.Module):
    def __init__(self, d, r, windows):
        super().__init__()
        self.windows = list(windows)
        self.W_red = nn.Linear(d, r)
        self.plucker = PluckerEncoder(r)
        self.W_plu = nn.Linear(r * (r - 1) // 2, d)
        self.W_gate = nn.Linear(2 * d, d)
        self.layer_norm = nn.LayerNorm(d)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h):
        b, t, d = h.shape
        z = self.W_red(h)
        acc = torch.zeros(b, t, d)
        counts = torch.zeros(b, t, 1)
        for delta in self.windows:
            if delta >= t:
                continue
            acc[:, delta:] = acc[:, delta:] + self.W_plu(self.plucker(z[:, delta:], z[:, :-delta]))
            counts[:, delta:] = counts[:, delta:] + 1
        g = acc / counts.clamp(min=1)
        a = torch.sigmoid(self.W_gate(torch.cat([h, g], dim=-1)))
        return self.dropout(self.layer_norm(a * h + (1 - a) * g))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, lmax):
        super().__init__()
        self.heads, self.dh = heads, d // heads
        self.qkv_proj = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)
        self.register_buffer("causal_mask", torch.tril(torch.ones(lmax, lmax)).view(1, 1, lmax, lmax))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (y.view(b, t, self.heads, self.dh).transpose(1, 2) for y in self.qkv_proj(x).chunk(3, dim=-1))
        w = torch.matmul(q, k.transpose(-2, -1)) * self.dh ** -0.5
        w = w.masked_fill(self.causal_mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.matmul(torch.softmax(w, dim=-1), v)
        return self.out_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, c, kind, windows):
        super().__init__()
        d = c["d"]
        self.ln1 = nn.LayerNorm(d)
        if kind == "grassmann":
            self.grassmann = CausalGrassmannMixing(d, c["r"], windows)
        else:
            self.attention = CausalSelfAttention(d, c["heads"], c["Lmax"])
        self.ln2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, c["d_ff"]), nn.GELU(), nn.Dropout(0.1), nn.Linear(c["d_ff"], d),
                                 nn.Dropout(0.1))

    def forward(self, h):
        mix = self.grassmann if hasattr(self, "grassmann") else self.attention
        h = h + mix(self.ln1(h))
        return h + self.ffn(self.ln2(h))


class LM(nn.Module):
    def __init__(self, c, kind, windows=TRAIN_PY_WINDOWS):
        super().__init__()
        self.token_embedding = nn.Embedding(c["V"], c["d"])
        self.position_embedding = nn.Embedding(c["Lmax"], c["d"])
        self.blocks = nn.ModuleList(Block(c, kind, windows) for _ in range(c["N"]))
        self.ln_f = nn.LayerNorm(c["d"])
        self.lm_head = nn.Linear(c["d"], c["V"], bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        t = ids.shape[1]
        h = self.token_embedding(ids) + self.position_embedding(torch.arange(t))
        for b in self.blocks:
            h = b(h)
        return self.lm_head(self.ln_f(h))


def training_config(c, model_type):
    """asdict(TrainingConfig) as train.py saves it (defaults, the run's sizes)."""
    return {"model_type": model_type, "vocab_size": c["V"], "max_seq_len": c["Lmax"], "model_dim": c["d"],
            "num_layers": c["N"], "num_heads": c["heads"], "reduced_dim": 64, "ff_dim": c["d_ff"], "dropout": 0.1,
            "window_sizes": CONFIG_DEFAULT_WINDOWS, "dataset": "wikitext", "max_train_samples": None,
            "max_val_samples": None, "batch_size": 32, "epochs": 5, "learning_rate": 3e-4, "weight_decay": 0.1,
            "warmup_steps": 500, "max_grad_norm": 1.0, "use_amp": True, "log_interval": 10, "eval_interval": 500,
            "save_interval": 1000, "output_dir": "outputs", "device": "cuda", "num_workers": 4}


def train_py_saver(config):
    """How train.py saves best_model.pt: the state dict with the optimizer, config, step and loss."""
    def save(state, path):
        torch.save({"model_state_dict": state, "optimizer_state_dict": {"state": {}, "param_groups": []},
                    "config": config, "step": 1500, "val_loss": 4.25}, path)
    return save


def make_train_py(args):
    """train.py --model grassmann_v4 (kind grassmann) or --model gpt2 (kind transformer)."""
    torch.manual_seed(args.seed)
    c = dict(pc.PAPER, V=50257, heads=8)
    model = LM(c, args.kind)
    pc.randomize(model, args.seed, ("blocks.0.grassmann.W_red",), 5e-6)
    config = training_config(c, "grassmann_v4" if args.kind == "grassmann" else "gpt2")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    save = train_py_saver(config)
    if args.kind == "grassmann":
        variant = {"norm": "pre", "gate": "paper", "empty": "zero", "eps": 1e-8,
                   "aggregation": "normalize_then_mean", "offsets": TRAIN_PY_WINDOWS,
                   "config_offsets": CONFIG_DEFAULT_WINDOWS}
        family = "alphaxiv"
    else:
        variant = {"norm": "pre"}
        family = "arledge-gpt2"
    pc.finish(args, model, save, family, variant, config=c, filename="best_model.pt")


def make_exp4(args):
    """train_exp4_ddp.py --window-sizes 1,3,5: run_dir/checkpoints/<kind>_best.pt, run_dir/config.json."""
    torch.manual_seed(args.seed)
    c = dict(pc.PAPER, V=50257, heads=8)
    windows = [int(x) for x in EXP4_WINDOWS.split(",")]
    if args.kind == "grassmann":
        model = LM(c, "grassmann", windows)
        pc.randomize(model, args.seed, ("blocks.0.grassmann.W_red",), 5e-6)
        variant = {"norm": "pre", "gate": "paper", "empty": "zero", "eps": 1e-8,
                   "aggregation": "normalize_then_mean", "offsets": windows}
        family = "alphaxiv"
    else:
        model = parity_arledge.GPT(c, "transformer")
        pc.randomize(model, args.seed)
        variant = {"norm": "pre"}
        family = "arledge"
    run = {"experiment_name": "wikitext2_reproduction", "notes": "", "tags": ["baseline", "wikitext2"],
           "config": {"model": "both", "model_dim": c["d"], "num_layers": c["N"], "max_seq_len": c["Lmax"],
                      "batch_size": 32, "epochs": 20, "lr": 3e-4, "output_dir": "outputs/experiments", "seed": 42,
                      "num_workers": 4, "experiment_name": "wikitext2_reproduction", "notes": "",
                      "tags": "baseline,wikitext2", "reduced_dim": c["r"], "window_sizes": EXP4_WINDOWS,
                      "dropout": 0.1, "dataset_name": "wikitext2", "dataset_path": "", "text_field": "",
                      "offline": False, "max_lines": 0, "encode_chars_per_batch": 200000,
                      "tinystories_val_frac": 0.02, "split_seed": 42, "amp": False},
           "env": {"python_version": "3.11.4", "rank": 0, "world_size": 1},
           "dataset_stats": {"train": {"split": "train", "max_seq_len": c["Lmax"], "num_chunks": 9000}}}
    os.makedirs(os.path.join(args.out, "checkpoints"), exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(run, f, indent=2)
    pc.finish(args, model, torch.save, family, variant, config=c,
              filename=os.path.join("checkpoints", args.kind + "_best.pt"))
    # The test opens the checkpoint where the script saved it.
    meta_path = os.path.join(args.out, "expected.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["checkpoint_file"] = os.path.join("checkpoints", args.kind + "_best.pt")
    with open(meta_path, "w") as f:
        json.dump(meta, f)


class StableMixing(nn.Module):
    """GrassmannGPTv3's mixer (src/models/grassmann_v3.py StableGrassmannMixing), from its steps:
    z = reduction_ln(reduction(n)); each window delta < T: the raw plane of z_t (current) and
    z_{t-delta} (past) times 1/sqrt(C(r,2)) (StablePluckerEncoder with normalize=False, idx buffers),
    projected by plucker_proj, summed over the valid windows and divided by their count clamped to
    1; plucker_ln; gate = sigmoid(gate_proj(n)); out_proj(n + gate * g / sqrt(2 len(windows)))."""

    def __init__(self, d, r, windows):
        super().__init__()
        self.windows = list(windows)
        self.reduction = nn.Linear(d, r)
        self.reduction_ln = nn.LayerNorm(r)
        self.plucker = nn.Module()
        ii, jj = zip(*[(i, j) for i in range(r) for j in range(i + 1, r)])
        self.plucker.register_buffer("idx_i", torch.tensor(ii, dtype=torch.long))
        self.plucker.register_buffer("idx_j", torch.tensor(jj, dtype=torch.long))
        self.plucker_proj = nn.Linear(len(ii), d)
        self.plucker_ln = nn.LayerNorm(d)
        self.gate_proj = nn.Linear(d, d)
        self.out_proj = nn.Linear(d, d)
        self.scale = len(ii) ** -0.5
        self.output_scale = (2 * len(self.windows)) ** -0.5

    def forward(self, n):
        b, t, d = n.shape
        z = self.reduction_ln(self.reduction(n))
        geo = torch.zeros_like(n)
        counts = torch.zeros(b, t, 1)
        I, J = self.plucker.idx_i, self.plucker.idx_j
        for delta in self.windows:
            if delta >= t:
                continue
            cur, past = z[:, delta:], z[:, :-delta]
            p = (cur[..., I] * past[..., J] - cur[..., J] * past[..., I]) * self.scale
            geo[:, delta:] = geo[:, delta:] + self.plucker_proj(p)
            counts[:, delta:] = counts[:, delta:] + 1
        geo = self.plucker_ln(geo / counts.clamp(min=1))
        gate = torch.sigmoid(self.gate_proj(n))
        return self.out_proj(n + gate * geo * self.output_scale)


def make_train_v3(args):
    """train.py --model grassmann: GrassmannGPTv3 with the TrainingConfig's reduced_dim, ff_dim and
    window_sizes (the defaults [1, 2, 4, 8, 16, 32]), saved as best_model.pt + config.json."""
    torch.manual_seed(args.seed)
    c = dict(pc.PAPER, V=50257, heads=8)
    model = LM(c, "grassmann")
    for blk in model.blocks:
        blk.grassmann = StableMixing(c["d"], c["r"], CONFIG_DEFAULT_WINDOWS)
    pc.randomize(model, args.seed)
    config = training_config(c, "grassmann")
    config["reduced_dim"] = c["r"]  # GrassmannGPTv3 is built with the config's reduced_dim
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    save = train_py_saver(config)
    variant = {"norm": "pre", "gate": "residual", "empty": "zero", "eps": 1e-8, "aggregation": "mean",
               "offsets": CONFIG_DEFAULT_WINDOWS,
               "stages": {"reduction_norm": True, "plucker_scale": (c["r"] * (c["r"] - 1) // 2) ** -0.5,
                          "feature_norm": True, "gate_input": "x",
                          "mix_scale": (2 * len(CONFIG_DEFAULT_WINDOWS)) ** -0.5, "output_projection": True}}
    pc.finish(args, model, save, "arledge-v3", variant, config=c, filename="best_model.pt")


SCRIPTS = {"train": make_train_py, "exp4": make_exp4, "train-v3": make_train_v3}

if __name__ == "__main__":
    ap = pc.parser(__doc__)
    ap.add_argument("--script", choices=sorted(SCRIPTS), required=True)
    a = ap.parse_args()
    SCRIPTS[a.script](a)
    sys.exit(0)
