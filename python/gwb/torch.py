"""gwb.torch: any model gwb opens as a torch.nn.Module, with one identity submodule per named site.

    net = gwb.torch.module("checkpoint.pt")          # or a gwb.Model, or gwb.bundled(...)
    logits = net(ids)                                 # LongTensor B x T -> B x T x V
    net.get_submodule("offset.3.2").register_forward_hook(lambda mod, inp, out: out * 0)

The site submodules carry the names of gwb patch, the NPZ labels and the window:
resid.L (block input h^L, L = 0..N; resid.N = the final state before the final LayerNorm),
mixer.L, gate.L (Grassmann), ffn.L, offset.L.D (Grassmann: offset D's Plucker vectors,
B x T x C(r,2), rows t < D zero and not averaged), head.L.H (Transformer: head H's context,
B x T x d_head). So standard forward hooks, nnsight, pyvene, autograd, SAE or tuned-lens training
work on every family gwb imports. Parameters are named as in the .gwb file (state_dict() matches
model.parameters()). The arithmetic is the engine's (docs/model-spec.md) written in PyTorch; the
tests check its logits against the engine's.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["module", "LanguageModel"]


class _Block(nn.Module):
    """The parameters of one block, named as in the .gwb file (blocks.L.<name>)."""

    def __init__(self, c, grassmann, C):
        super().__init__()
        d, eps = c["d_model"], c.get("layer_norm_eps", 1e-5)
        if grassmann:
            r = c["reduced"]
            st = c.get("mixer_stages", {})
            self.w_red = nn.Linear(d, r)
            if st.get("reduction_norm", False):
                self.ln_red = nn.LayerNorm(r, eps=eps)
            if c.get("aggregation") == "per_offset_mlp":  # each plane through an MLP, no W_plu
                self.geo_in = nn.Linear(C, c["d_geom"])
                self.geo_out = nn.Linear(c["d_geom"], d)
            else:
                self.w_plu = nn.Linear(C, d)
            if st.get("feature_norm", False):
                self.ln_geo = nn.LayerNorm(d, eps=eps)
            self.w_gate = nn.Linear(d if st.get("gate_input", "x_and_g") == "x" else 2 * d, d)
            if st.get("output_projection", False):
                self.w_out = nn.Linear(d, d)
        else:
            self.qkv = nn.Linear(d, 3 * d)
            self.out_proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.ln2 = nn.LayerNorm(d, eps=eps)
        if c.get("mixer_layer_norm", False):
            self.ln_mix = nn.LayerNorm(d, eps=eps)
        self.ffn_in = nn.Linear(d, c["d_ff"])
        self.ffn_out = nn.Linear(c["d_ff"], d)
        # Exact (erf) GELU, or GPT-2's tanh approximation (config "activation": "gelu_tanh").
        self.gelu_approximate = "tanh" if c.get("activation", "gelu") == "gelu_tanh" else "none"

    def ffn(self, x):
        return self.ffn_out(F.gelu(self.ffn_in(x), approximate=self.gelu_approximate))

    def forward(self, h):
        """Block L: the residual stream h^L -> h^(L+1) (LanguageModel.blocks[L](h))."""
        net = self._net
        if net.grassmann:
            return net._grassmann_block(self._layer, self, h)
        return net._transformer_block(self._layer, self, h)


class LanguageModel(nn.Module):
    """A Grassmann or Transformer language model (docs/model-spec.md) with named identity sites."""

    def __init__(self, config, layer_offsets=None):
        super().__init__()
        c = self.config = dict(config)
        self.grassmann = c["kind"] == "grassmann"
        N, d, V = c["n_layers"], c["d_model"], c["vocab_size"]
        self.norm = c.get("norm", "post")
        self.gate_variant = c.get("gate", "paper")
        self.empty = c.get("empty", "zero")
        self.plucker_eps = c.get("plucker_eps", 1e-8)
        aggregation = c.get("aggregation", "normalize_then_mean")
        self.mean_first = aggregation == "mean_then_normalize"
        self.raw_mean = aggregation == "mean"  # scaled raw planes averaged, no normalisation
        self.mlp = aggregation == "per_offset_mlp"  # g = mean_D MLP(p^(D))
        st = c.get("mixer_stages", {})
        self.past_first = st.get("wedge_order", "current_past") == "past_current"
        self.plucker_scale = st.get("plucker_scale", 1.0)
        self.mix_scale = st.get("mix_scale", 1.0)
        self.gate_from_input = st.get("gate_input", "x_and_g") == "x"
        self.n_heads = c.get("n_heads", 4)
        C = 0
        if self.grassmann:
            r = c["reduced"]
            C = r * (r - 1) // 2
            self.offsets = [list(o) for o in layer_offsets]
            pairs = [(i, j) for i in range(r) for j in range(i + 1, r)]
            self.register_buffer("_pi", torch.tensor([p[0] for p in pairs], dtype=torch.long), persistent=False)
            self.register_buffer("_pj", torch.tensor([p[1] for p in pairs], dtype=torch.long), persistent=False)
        self.tok_embed = nn.Embedding(V, d)
        self.pos_embed = nn.Embedding(c["max_len"], d)
        self.blocks = nn.ModuleList(_Block(c, self.grassmann, C) for _ in range(N))
        self.ln_final = nn.LayerNorm(d, eps=c.get("layer_norm_eps", 1e-5))
        # Named sites: identity modules whose outputs a forward hook may replace.
        self.resid = nn.ModuleList(nn.Identity() for _ in range(N + 1))
        self.mixer = nn.ModuleList(nn.Identity() for _ in range(N))
        self.ffn = nn.ModuleList(nn.Identity() for _ in range(N))
        if self.grassmann:
            self.gate = nn.ModuleList(nn.Identity() for _ in range(N))
            self.offset = nn.ModuleList(nn.ModuleDict({str(D): nn.Identity() for D in o}) for o in self.offsets)
        else:
            self.head = nn.ModuleList(nn.ModuleList(nn.Identity() for _ in range(self.n_heads)) for _ in range(N))
        # Each block runs itself (blocks[L](h)) and calls its layer's sites through references of its
        # own (site_mixer, site_gate, site_ffn, site_offset_D, site_head[H]: the modules above, not
        # registered twice), so wrappers that replace a block's submodules, such as TransformerLens's
        # TransformerBridge (gwb.transformer_lens), see every site of the layer.
        for l, blk in enumerate(self.blocks):
            object.__setattr__(blk, "_net", self)  # not a submodule: no second registration
            object.__setattr__(blk, "_layer", l)
            object.__setattr__(blk, "site_mixer", self.mixer[l])
            object.__setattr__(blk, "site_ffn", self.ffn[l])
            if self.grassmann:
                object.__setattr__(blk, "site_gate", self.gate[l])
                for D in self.offsets[l]:
                    object.__setattr__(blk, f"site_offset_{D}", self.offset[l][str(D)])
            else:
                object.__setattr__(blk, "site_head", self.head[l])

    def site_names(self):
        """Every site, as named_modules() lists them."""
        return [n for n, m in self.named_modules() if isinstance(m, nn.Identity)]

    # -- Grassmann mixing (model-spec steps 1-8) -------------------------------------------------
    def _geometry(self, l, blk, x):
        B, T, _ = x.shape
        z = blk.w_red(x)
        if hasattr(blk, "ln_red"):
            z = blk.ln_red(z)
        C = self._pi.numel()
        total = x.new_zeros(B, T, blk.geo_out.out_features if self.mlp else C)
        count = x.new_zeros(1, T, 1)
        pos = torch.arange(T, device=x.device).view(1, T, 1)
        for D in self.offsets[l]:
            p = x.new_zeros(B, T, C)
            if D < T:
                cur, past = z[:, D:], z[:, :T - D]  # current x past
                if self.past_first:
                    cur, past = past, cur
                pd = cur[..., self._pi] * past[..., self._pj] - cur[..., self._pj] * past[..., self._pi]
                if self.raw_mean:
                    pd = pd * self.plucker_scale
                elif not self.mean_first:
                    pd = pd / pd.norm(dim=-1, keepdim=True).clamp(min=self.plucker_eps)
                p = F.pad(pd, (0, 0, D, 0))
            p = getattr(blk, f"site_offset_{D}")(p)
            valid = (pos >= D).to(x.dtype)
            if self.mlp:
                p = blk.geo_out(F.gelu(blk.geo_in(p)))
            total = total + p * valid
            count = count + valid
        if self.mlp:
            g = total / count.clamp(min=1.0) * (count > 0).to(x.dtype)
            return blk.ln_geo(g) if hasattr(blk, "ln_geo") else g
        Bt = total / count.clamp(min=1.0)
        if self.mean_first:
            Bt = Bt / torch.sqrt((Bt * Bt).sum(-1, keepdim=True) + self.plucker_eps)
        g = blk.w_plu(Bt)
        if self.empty == "zero":
            g = g * (count > 0).to(g.dtype)
        if hasattr(blk, "ln_geo"):
            g = blk.ln_geo(g)
        return g  # rows without a valid offset: B_t = 0, so g = b_plu for the "bias" rule

    def _grassmann_block(self, l, blk, h):
        x = blk.ln1(h) if self.norm in ("pre", "pre_mix") else h
        g = blk.site_mixer(self._geometry(l, blk, x))
        a = blk.site_gate(torch.sigmoid(blk.w_gate(x if self.gate_from_input else torch.cat([x, g], dim=-1))))
        if self.gate_variant == "paper":
            mix = a * x + (1 - a) * g
        elif self.gate_variant == "residual":
            mix = x + a * g * self.mix_scale
        else:
            mix = a * g
        if hasattr(blk, "w_out"):
            mix = blk.w_out(mix)
        if self.norm == "post":
            y = blk.ln1(mix) if self.gate_variant == "paper" else blk.ln1(h + mix)
            return blk.ln2(y + blk.site_ffn(blk.ffn(y)))
        if self.norm in ("post_mix", "pre_mix"):
            y = blk.ln1(mix) if self.norm == "post_mix" else mix
            return y + blk.site_ffn(blk.ffn(blk.ln2(y)))
        if hasattr(blk, "ln_mix"):
            mix = blk.ln_mix(mix)
        h2 = h + mix
        return h2 + blk.site_ffn(blk.ffn(blk.ln2(h2)))

    # -- attention ---------------------------------------------------------------------------------
    def _attention(self, l, blk, x):
        B, T, d = x.shape
        H = self.n_heads
        dh = d // H
        q, k, v = blk.qkv(x).split(d, dim=-1)  # rows q | k | v, heads contiguous in each
        q, k, v = (t.view(B, T, H, dh).transpose(1, 2) for t in (q, k, v))
        s = q @ k.transpose(-2, -1) / math.sqrt(dh)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        ctx = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v  # B x H x T x dh
        heads = [blk.site_head[i](ctx[:, i]) for i in range(H)]
        return blk.out_proj(torch.cat(heads, dim=-1))

    def _transformer_block(self, l, blk, h):
        if self.norm == "post":
            a = blk.site_mixer(self._attention(l, blk, h))
            y = blk.ln1(h + a)
            return blk.ln2(y + blk.site_ffn(blk.ffn(y)))
        a = blk.site_mixer(self._attention(l, blk, blk.ln1(h)))
        if hasattr(blk, "ln_mix"):
            a = blk.ln_mix(a)
        h2 = h + a
        return h2 + blk.site_ffn(blk.ffn(blk.ln2(h2)))

    # -- the whole model ---------------------------------------------------------------------------
    def forward(self, ids):
        """ids: LongTensor T or B x T -> logits B x T x V (T x V for 1-D ids)."""
        ids = torch.as_tensor(ids, dtype=torch.long, device=self.tok_embed.weight.device)
        squeeze = ids.dim() == 1
        if squeeze:
            ids = ids.unsqueeze(0)
        T = ids.shape[1]
        if T > self.pos_embed.num_embeddings:
            raise ValueError(f"the prompt is {T} tokens, longer than the model's context "
                             f"(max_len {self.pos_embed.num_embeddings})")
        V = self.tok_embed.num_embeddings
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= V):
            raise ValueError(f"token ids must be in 0..{V - 1}")
        h = self.tok_embed(ids) + self.pos_embed(torch.arange(T, device=ids.device))
        for l, blk in enumerate(self.blocks):
            h = blk(self.resid[l](h))
            if isinstance(h, tuple):  # a wrapper's block that answers as a Hugging Face block does
                h = h[0]
        h = self.resid[len(self.blocks)](h)
        logits = self.ln_final(h) @ self.tok_embed.weight.T  # head tied to the token table
        return logits.squeeze(0) if squeeze else logits


def module(path_or_model, device="cpu", dtype=torch.float32):
    """The model as a torch.nn.Module (in eval mode): a path (anything gwb.load opens) or a gwb.Model."""
    import gwb

    m = path_or_model if isinstance(path_or_model, gwb.Model) else gwb.load(path_or_model, device="cpu")
    config = m.config
    net = LanguageModel(config, m.layer_offsets if config["kind"] == "grassmann" else None)
    state = {k: torch.from_numpy(v) for k, v in m.parameters().items()}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"gwb.torch: parameters do not match the config (missing {missing}, unexpected {unexpected})")
    net.gwb_model = m
    return net.to(device=device, dtype=dtype).eval()
