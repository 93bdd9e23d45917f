"""gwb.transformer_lens: gwb's models inside TransformerLens 4.x, through its TransformerBridge.

    import gwb.transformer_lens
    bridge = gwb.transformer_lens.bridge("grassmann-austen.gwb")    # or a gwb.Model, gwb.bundled(...)
    logits, cache = bridge.run_with_cache(ids)                      # ids: LongTensor B x T
    cache["blocks.3.hook_resid_pre"]     # resid.3        cache["blocks.3.mixer.hook_out"]   # mixer.3
    cache["blocks.3.gate.hook_out"]      # gate.3         cache["blocks.3.ffn.hook_out"]     # ffn.3
    cache["blocks.3.offset_4.hook_out"]  # offset.3.4     cache["blocks.3.w_red.hook_out"]   # z_t of layer 3
    cache["blocks.2.head_1.hook_out"]    # head.2.1 (the Transformer)

TransformerLens 4.x brings architectures it does not ship in through adapters registered under the
entry point group "transformer_lens.architectures"; gwb's package declares two there (pyproject.toml):
GwbGrassmannLM (GrassmannArchitectureAdapter) and GwbTransformerLM (TransformerArchitectureAdapter).
The bridge wraps gwb.torch.module(...): the arithmetic is gwb.torch's (checked against the engine),
TransformerLens adds its hook points around the modules it names. Every gwb site is a hook point:

    resid.L      blocks.L.hook_resid_pre (blocks.L.hook_in); resid.L+1 is blocks.L.hook_resid_post
    mixer.L      blocks.L.mixer.hook_out   (Grassmann: g_t before the gate; Transformer: attention out)
    gate.L       blocks.L.gate.hook_out    (Grassmann: alpha_t)
    ffn.L        blocks.L.ffn.hook_out     (alias blocks.L.hook_mlp_out)
    offset.L.D   blocks.L.offset_D.hook_out (Grassmann: offset D's Plucker vectors, rows t < D zero)
    head.L.H     blocks.L.head_H.hook_out  (Transformer: head H's context)

plus the projections' own hooks (blocks.L.w_red, w_plu, w_gate; blocks.L.qkv, out_proj; ffn_in,
ffn_out) and embed / pos_embed. A hook that returns a new value patches the site, as in
TransformerLens. What TransformerLens cannot do here: its weight processing (fold_ln and the
other HookedTransformer-compatible rewrites) assumes attention blocks, so a bridge of either gwb
model is used without enable_compatibility_mode; and gwb's tokenizers are not Hugging Face
tokenizers, so give token ids (gwb.Model.encode), not strings.
"""

import torch
from transformer_lens.config import TransformerBridgeConfig
from transformer_lens.factories.architecture_adapter_factory import ArchitectureAdapterFactory
from transformer_lens.model_bridge import TransformerBridge
from transformer_lens.model_bridge.architecture_adapter import ArchitectureAdapter
from transformer_lens.model_bridge.generalized_components import (
    BlockBridge,
    EmbeddingBridge,
    LinearBridge,
    PosEmbedBridge,
)
from transformer_lens.model_bridge.generalized_components.base import GeneralizedComponent

__all__ = ["bridge", "GrassmannArchitectureAdapter", "TransformerArchitectureAdapter", "SiteBridge",
           "GRASSMANN", "TRANSFORMER"]

GRASSMANN = "GwbGrassmannLM"
TRANSFORMER = "GwbTransformerLM"


class SiteBridge(GeneralizedComponent):
    """One gwb site (an identity module of gwb.torch): hook_in and hook_out see the site's value;
    what a hook on hook_out returns replaces it downstream."""

    def forward(self, value, *args, **kwargs):
        value = self.hook_in(value)
        return self.hook_out(self.original_component(value, *args, **kwargs))


class GwbBlockBridge(BlockBridge):
    """A gwb block: its input is resid.L and its output resid.L+1 (no attn or mlp submodules to alias)."""

    hook_aliases = {
        "hook_resid_pre": "hook_in",
        "hook_resid_post": "hook_out",
        "hook_mlp_out": "ffn.hook_out",
    }


def _offsets(cfg):
    return sorted({int(D) for layer in getattr(cfg, "gwb_layer_offsets", []) for D in layer})


class _GwbAdapter(ArchitectureAdapter):
    """What both gwb adapters share: embeddings, blocks whose input is resid.L, the mixer and FFN
    sites and their projections; each subclass adds its mixer's own parts (_mixer_sites)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.cfg.positional_embedding_type = "standard"
        self.weight_processing_conversions = {}
        sites = dict(self._mixer_sites())
        sites.update({
            "mixer": SiteBridge(name="site_mixer"),
            "ffn_in": LinearBridge(name="ffn_in"),
            "ffn_out": LinearBridge(name="ffn_out"),
            "ffn": SiteBridge(name="site_ffn"),
        })
        self.component_mapping = {
            "embed": EmbeddingBridge(name="tok_embed"),
            "pos_embed": PosEmbedBridge(name="pos_embed"),
            "blocks": GwbBlockBridge(name="blocks", submodules=sites),
        }

    def _mixer_sites(self):
        raise NotImplementedError


class GrassmannArchitectureAdapter(_GwbAdapter):
    """The Grassmann language model of gwb.torch (docs/model-spec.md): per block the reduction
    W_red, the Plucker vectors of each offset D, their map W_plu, the gate and the FFN."""

    def _mixer_sites(self):
        sites = {
            "w_red": LinearBridge(name="w_red"),
            "w_plu": LinearBridge(name="w_plu", optional=True),  # absent with per-offset MLPs
            "w_gate": LinearBridge(name="w_gate"),
            "gate": SiteBridge(name="site_gate"),
        }
        for D in _offsets(self.cfg):  # a layer without offset D skips it (optional)
            sites[f"offset_{D}"] = SiteBridge(name=f"site_offset_{D}", optional=True)
        return sites


class TransformerArchitectureAdapter(_GwbAdapter):
    """The size-matched baseline Transformer of gwb.torch (learned positions, fused qkv with
    heads contiguous, exact GELU), its heads as sites."""

    def _mixer_sites(self):
        sites = {"qkv": LinearBridge(name="qkv"), "out_proj": LinearBridge(name="out_proj")}
        for H in range(self.cfg.n_heads):
            sites[f"head_{H}"] = SiteBridge(name=f"site_head.{H}")
        return sites


def _adapter_for(name, adapter_class):
    """TransformerLens's adapter for `name`: the one its entry points registered (an installed gwb),
    else this module's class registered by hand (gwb used from a build folder, no package metadata)."""
    ArchitectureAdapterFactory.discover_entry_points()
    if name not in ArchitectureAdapterFactory._adapters:
        ArchitectureAdapterFactory.register_adapter(name, adapter_class)


def bridge(path_or_model, device="cpu", dtype=torch.float32):
    """A TransformerLens TransformerBridge over gwb.torch.module(path_or_model): run_with_cache,
    run_with_hooks and hooks by name on every gwb site (names in this module's docstring)."""
    import gwb
    import gwb.torch

    net = gwb.torch.module(path_or_model, device=device, dtype=dtype)
    c = net.config
    grassmann = c["kind"] == "grassmann"
    name = GRASSMANN if grassmann else TRANSFORMER
    _adapter_for(name, GrassmannArchitectureAdapter if grassmann else TransformerArchitectureAdapter)
    n_heads = int(c.get("n_heads", 4)) if not grassmann else 1
    cfg = TransformerBridgeConfig(
        d_model=c["d_model"], d_head=c["d_model"] // n_heads, n_layers=c["n_layers"], n_ctx=c["max_len"],
        n_heads=n_heads, d_vocab=c["vocab_size"], d_mlp=c["d_ff"], architecture=name,
        model_name=c.get("name") or name,
        act_fn="gelu_new" if c.get("activation", "gelu") == "gelu_tanh" else "gelu",
        eps=c.get("layer_norm_eps", 1e-5), device=str(device), dtype=dtype)
    cfg.gwb_layer_offsets = [list(o) for o in net.offsets] if grassmann else []
    adapter = ArchitectureAdapterFactory.select_architecture_adapter(cfg)
    return TransformerBridge(net, adapter, None)
