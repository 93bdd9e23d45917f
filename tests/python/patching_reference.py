"""Independent PyTorch reference for the engine's causal-test interventions (issue 21).

Written from docs/model-spec.md (the two models and their variants) and the site / mode
definitions of engine/include/gwb/engine/patching.h, NOT from the engine's code: a parity test
whose reference shares the engine's assumptions proves nothing. The model is a plain PyTorch
module whose forward pass calls a named hook at every site; an intervention is a hook that
replaces the activation at that site.

Sites (layer l):
  resid  l = 0..N   the block input h^l (l = N: the last block's output, before the final LayerNorm)
  mixer             Grassmann: g_t after the empty rule, before the gate (the gate sees the new g);
                    Transformer: the attention output after out_proj (before ln_mix / residual)
  gate              Grassmann: a_t = sigmoid(W_gate [x; g] + b_gate)
  ffn               the FFN output, before the residual
  head              Transformer: head h's slice of the attention context (input of out_proj)
  offset            Grassmann: offset D's normalised Plucker vectors p^(D)_t (t >= D); zero drops
                    D from the mean (empty rule where no offset is left), patch puts in the source
                    run's p^(D)_t, mean puts in their mean over t >= D of the changed run.
Modes: patch (the source run's value), zero, mean (the mean over the prompt's positions of that
site in the changed run). resid/mixer/gate/ffn act at one position p, or every position (p = -1);
offset and head always act at every position.

Usage: patching_reference.py REQUESTS.json OUT.f32
REQUESTS.json: one request object or a list of them:
  {"model": "m.gwb", "changed": [ids], "source": [ids] | null,
   "site": "none"|"resid"|"mixer"|"gate"|"ffn"|"offset"|"head", "mode": "patch"|"zero"|"mean",
   "layer": l, "position": p, "offset": D, "head": h}
OUT.f32: for every request in order, float32 logits of the changed run with the intervention
(T x V, row-major), then the unchanged changed run's logits (T x V).
The arithmetic runs in float64, so the reference's own rounding is far below the tolerance.
"""

import json
import math
import struct
import sys

import torch
import torch.nn.functional as F

DTYPE = torch.float64


# ---------------------------------------------------------------------------------------------
# .gwb = safetensors: u64 little-endian header length, JSON header, raw little-endian data.
def read_gwb(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    config = json.loads(meta["model_config"])
    tensors = {}
    for name, info in header.items():
        if name == "tokenizer.model":  # the embedded tokenizer (U8 bytes), not a weight
            continue
        dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
        if info["dtype"] not in dtypes:
            raise ValueError(f"{path}: tensor {name} is {info['dtype']}, only F32, F16 and BF16 are supported")
        begin, end = info["data_offsets"]
        dt = dtypes[info["dtype"]]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=dt) if end > begin else torch.zeros(0, dtype=dt)
        tensors[name] = t.reshape(info["shape"]).to(DTYPE)
    return config, tensors


def layer_offsets(config):
    """Per-layer offset sets from the model_config JSON (every schedule the format allows)."""
    n = config["n_layers"]
    o = config.get("offsets")
    if o is None:
        return [[1, 2, 4, 8, 12, 16]] * n
    if isinstance(o, list):
        return [list(o)] * n
    schedule = o.get("schedule", "all")
    if schedule == "all":
        return [list(o.get("set", [1, 2, 4, 8, 12, 16]))] * n
    if schedule == "per_layer":
        return [[d] for d in o["list"]]
    return [list(s) for s in o["layers"]]


# ---------------------------------------------------------------------------------------------
class Hooks:
    """Calls the hook registered for (site, layer), if any, on the activation and returns what the
    hook returns (the activation, possibly replaced)."""

    def __init__(self):
        self.fns = {}

    def __call__(self, site, layer, value):
        fn = self.fns.get((site, layer))
        return value if fn is None else fn(value)


class Reference(torch.nn.Module):
    def __init__(self, config, tensors):
        super().__init__()
        self.c = config
        self.w = tensors
        self.kind = config["kind"]
        self.N = config["n_layers"]
        self.d = config["d_model"]
        self.norm = config.get("norm", "post")
        self.gate_variant = config.get("gate", "paper")
        self.empty = config.get("empty", "zero")
        self.peps = config.get("plucker_eps", 1e-8)
        self.lneps = config.get("layer_norm_eps", 1e-5)
        # model-spec steps 4-5: "normalize_then_mean" (paper) or "mean_then_normalize" (Arledge's
        # fused kernel: mean of the raw p over valid offsets, then / sqrt(||mean||^2 + eps)).
        self.aggregation = config.get("aggregation", "normalize_then_mean")
        self.mix_ln = config.get("mixer_layer_norm", False)
        # Mixer stages (GrassmannGPTv3): LN of z, the raw planes' scale, LN of g, the gate of x alone,
        # x + a g s, an output projection.
        st = config.get("mixer_stages", {})
        self.red_ln = st.get("reduction_norm", False)
        self.plucker_scale = st.get("plucker_scale", 1.0)
        self.geo_ln = st.get("feature_norm", False)
        self.gate_x = st.get("gate_input", "x_and_g") == "x"
        self.mix_scale = st.get("mix_scale", 1.0)
        self.out_proj = st.get("output_projection", False)
        # CausalGrassmannMixer: planes past x current, each normalised plane through an MLP
        # (geo_in, exact GELU, geo_out) and the outputs averaged ("per_offset_mlp").
        self.past_first = st.get("wedge_order", "current_past") == "past_current"
        self.heads = config.get("n_heads", 4)
        if self.kind == "grassmann":
            self.r = config["reduced"]
            self.offsets = layer_offsets(config)
            # Plucker pairs (i, j), i < j, lexicographic.
            pairs = [(i, j) for i in range(self.r) for j in range(i + 1, self.r)]
            self.pi = torch.tensor([p[0] for p in pairs])
            self.pj = torch.tensor([p[1] for p in pairs])
        self.hooks = Hooks()

    # -- pieces --------------------------------------------------------------------------------
    def p(self, l, name):
        return self.w[f"blocks.{l}.{name}"]

    def linear(self, l, name, x):
        return x @ self.p(l, name + ".weight").T + self.p(l, name + ".bias")

    def ln(self, x, prefix):
        return F.layer_norm(x, (self.d,), self.w[prefix + ".weight"], self.w[prefix + ".bias"], self.lneps)

    def ffn(self, l, x):
        return self.linear(l, "ffn_out", F.gelu(self.linear(l, "ffn_in", x)))  # exact (erf) GELU

    # -- Grassmann mixing (model-spec steps 1-8) -----------------------------------------------
    def plucker_per_offset(self, l, x):
        """{D: (T x C) Plucker vectors, valid rows t >= D (other rows unused)}: normalised, or raw
        when the layer averages first (mean_then_normalize)."""
        T = x.shape[0]
        z = self.linear(l, "w_red", x)  # T x r
        if self.red_ln:
            z = F.layer_norm(z, (self.r,), self.p(l, "ln_red.weight"), self.p(l, "ln_red.bias"), self.lneps)
        out = {}
        for D in self.offsets[l]:
            p = torch.zeros(T, self.pi.numel(), dtype=DTYPE)
            if D < T:
                cur, past = z[D:], z[:T - D]  # current x past
                if self.past_first:
                    cur, past = past, cur
                pd = cur[:, self.pi] * past[:, self.pj] - cur[:, self.pj] * past[:, self.pi]
                if self.aggregation == "mean_then_normalize":
                    p[D:] = pd
                elif self.aggregation == "mean":  # the raw planes, scaled, averaged as they are
                    p[D:] = pd * self.plucker_scale
                else:
                    p[D:] = pd / pd.norm(dim=1, keepdim=True).clamp(min=self.peps)
            out[D] = p
        return out

    def geometry(self, l, x):
        T = x.shape[0]
        per = self.plucker_per_offset(l, x)
        # The offset hook may replace vectors or drop offsets: it gets {D: p} and returns
        # ({D: p}, set of dropped D).
        per, dropped = self.hooks("offset", l, (per, set()))
        mlp = self.aggregation == "per_offset_mlp"
        total = torch.zeros(T, self.d if mlp else self.pi.numel(), dtype=DTYPE)
        count = torch.zeros(T, 1, dtype=DTYPE)
        for D, p in per.items():
            if D in dropped:
                continue
            valid = (torch.arange(T) >= D).to(DTYPE).unsqueeze(1)
            if mlp:
                p = self.linear(l, "geo_out", F.gelu(self.linear(l, "geo_in", p)))
            total = total + p * valid
            count = count + valid
        if mlp:
            g = torch.where(count > 0, total / count.clamp(min=1.0), torch.zeros_like(total))
            return self.ln(g, f"blocks.{l}.ln_geo") if self.geo_ln else g
        B = total / count.clamp(min=1.0)
        if self.aggregation == "mean_then_normalize":
            B = B / torch.sqrt((B * B).sum(dim=1, keepdim=True) + self.peps)
        g = self.linear(l, "w_plu", B)
        empty_row = torch.zeros(self.d, dtype=DTYPE) if self.empty == "zero" else self.p(l, "w_plu.bias")
        g = torch.where(count > 0, g, empty_row.unsqueeze(0).expand(T, self.d))
        if self.geo_ln:
            g = self.ln(g, f"blocks.{l}.ln_geo")
        return g

    def grassmann_block(self, l, h):
        # The mixer's input: LN1(h) for pre and pre_mix, h for post and post_mix.
        x = self.ln(h, f"blocks.{l}.ln1") if self.norm in ("pre", "pre_mix") else h
        g = self.hooks("mixer", l, self.geometry(l, x))
        a = torch.sigmoid(self.linear(l, "w_gate", x if self.gate_x else torch.cat([x, g], dim=1)))
        a = self.hooks("gate", l, a)
        if self.gate_variant == "paper":
            mix = a * x + (1 - a) * g
        elif self.gate_variant == "residual":
            mix = x + a * g * self.mix_scale
        else:
            mix = a * g
        if self.out_proj:
            mix = self.linear(l, "w_out", mix)
        if self.norm == "post":
            if self.gate_variant == "paper":
                y = self.ln(mix, f"blocks.{l}.ln1")  # no residual around the paper mixer
            else:
                y = self.ln(h + mix, f"blocks.{l}.ln1")
            f = self.hooks("ffn", l, self.ffn(l, y))
            return self.ln(y + f, f"blocks.{l}.ln2")
        if self.norm in ("post_mix", "pre_mix"):
            # No skip path around the mixer; a pre-LN FFN with its residual. post_mix (Wake2vec):
            # y = LN1(mix(h)); pre_mix (youdie006 pre_norm): y = mix(LN1(h)).
            y = self.ln(mix, f"blocks.{l}.ln1") if self.norm == "post_mix" else mix
            f = self.hooks("ffn", l, self.ffn(l, self.ln(y, f"blocks.{l}.ln2")))
            return y + f
        if self.mix_ln:
            mix = self.ln(mix, f"blocks.{l}.ln_mix")
        h2 = h + mix
        f = self.hooks("ffn", l, self.ffn(l, self.ln(h2, f"blocks.{l}.ln2")))
        return h2 + f

    # -- Transformer ---------------------------------------------------------------------------
    def attention(self, l, x):
        T, d, H = x.shape[0], self.d, self.heads
        dh = d // H
        qkv = self.linear(l, "qkv", x)  # rows q | k | v, heads contiguous in each
        q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        ctx = []
        for hd in range(H):
            sl = slice(hd * dh, (hd + 1) * dh)
            s = (q[:, sl] @ k[:, sl].T) / math.sqrt(dh)
            s = s.masked_fill(~mask, float("-inf"))
            c = torch.softmax(s, dim=1) @ v[:, sl]
            ctx.append(self.hooks("head", l * 1000 + hd, c))
        return self.linear(l, "out_proj", torch.cat(ctx, dim=1))

    def transformer_block(self, l, h):
        if self.norm == "post":
            att = self.hooks("mixer", l, self.attention(l, h))
            y = self.ln(h + att, f"blocks.{l}.ln1")
            f = self.hooks("ffn", l, self.ffn(l, y))
            return self.ln(y + f, f"blocks.{l}.ln2")
        att = self.hooks("mixer", l, self.attention(l, self.ln(h, f"blocks.{l}.ln1")))
        if self.mix_ln:
            att = self.ln(att, f"blocks.{l}.ln_mix")
        h2 = h + att
        f = self.hooks("ffn", l, self.ffn(l, self.ln(h2, f"blocks.{l}.ln2")))
        return h2 + f

    # -- the whole model -----------------------------------------------------------------------
    def forward(self, ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        T = ids.numel()
        E = self.w["tok_embed.weight"]
        h = E[ids] + self.w["pos_embed.weight"][:T]
        for l in range(self.N):
            h = self.hooks("resid", l, h)
            h = self.grassmann_block(l, h) if self.kind == "grassmann" else self.transformer_block(l, h)
        h = self.hooks("resid", self.N, h)
        return self.ln(h, "ln_final") @ E.T  # head tied to the token table


# ---------------------------------------------------------------------------------------------
def capture(model, ids, site, key):
    """The activation of `site` at `key` in a plain run of `ids`."""
    box = {}

    def grab(v):
        box["v"] = v
        return v

    model.hooks.fns = {(site, key): grab}
    model(ids)
    model.hooks.fns = {}
    return box["v"]


def run_request(model, req):
    changed = req["changed"]
    site, mode = req.get("site", "none"), req.get("mode", "zero")
    layer = int(req.get("layer", 0))
    position = int(req.get("position", -1))
    model.hooks.fns = {}
    plain = model(changed)
    if site == "none":
        return plain, plain
    if mode not in ("patch", "zero", "mean"):
        raise ValueError(f"unknown mode {mode}")

    if site == "offset":
        D = int(req["offset"])
        if D not in model.offsets[layer]:
            raise ValueError(f"offset {D} not in layer {layer}: {model.offsets[layer]}")
        if mode == "patch":
            src = capture(model, req["source"], "offset", layer)[0][D]

        def hook(arg):
            per, dropped = arg
            per = dict(per)
            T = per[D].shape[0]
            if mode == "zero":
                return per, dropped | {D}
            if mode == "patch":
                new = per[D].clone()
                new[D:] = src[D:]
            else:  # mean over the positions where D is valid, of the changed run
                new = per[D].clone()
                if D < T:
                    new[D:] = per[D][D:].mean(dim=0, keepdim=True)
            per[D] = new
            return per, dropped

        model.hooks.fns = {("offset", layer): hook}
    else:
        if site == "head":
            key = layer * 1000 + int(req["head"])
            position = -1
        else:
            key = layer
        if site not in ("resid", "mixer", "gate", "ffn", "head"):
            raise ValueError(f"unknown site {site}")
        if mode == "patch":
            src = capture(model, req["source"], site, key)

        def hook(v):
            if mode == "patch":
                value = src
            elif mode == "zero":
                value = torch.zeros_like(v)
            else:
                value = v.mean(dim=0, keepdim=True).expand_as(v)
            out = v.clone()
            if position < 0:
                out[:] = value
            else:
                out[position] = value[position]
            return out

        model.hooks.fns = {(site, key): hook}
    changed_logits = model(changed)
    model.hooks.fns = {}
    return changed_logits, plain


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        requests = json.load(f)
    if isinstance(requests, dict):
        requests = [requests]
    models = {}
    with torch.no_grad(), open(sys.argv[2], "wb") as out:
        for req in requests:
            path = req["model"]
            if path not in models:
                models[path] = Reference(*read_gwb(path))
            changed, plain = run_request(models[path], req)
            out.write(changed.to(torch.float32).contiguous().numpy().tobytes())
            out.write(plain.to(torch.float32).contiguous().numpy().tobytes())


if __name__ == "__main__":
    main()
