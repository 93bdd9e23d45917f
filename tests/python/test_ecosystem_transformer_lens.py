"""TransformerLens 4.x (its own TransformerBridge code) over gwb's models: gwb.transformer_lens's
adapters, found through TransformerLens's entry point group as pyproject.toml declares them, wrap
gwb.torch modules; run_with_cache gives every gwb site (residual, mixer, gate, FFN, per offset,
per head) within 1e-5 of the engine's own hooks, and a hook through the bridge patches as a gwb
hook does. Runs in the pip-torch leg (python/pins.txt)."""

import os
import sys
import tomllib

import numpy as np
import pytest
import torch
from transformer_lens.factories.architecture_adapter_factory import ArchitectureAdapterFactory

import gwb
import gwb.transformer_lens as gtl

TEXT = "She said that she would walk to the house with her sister, and they"
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def gwb_sites(m, ids, names):
    seen = {}
    logits = m.run(ids, hooks={n: (lambda v, name: seen.__setitem__(name, np.array(v))) for n in names})
    return logits, seen


def cache_name(site):
    parts = site.split(".")
    L = int(parts[1])
    if parts[0] == "resid":
        return f"blocks.{L}.hook_resid_pre"
    if parts[0] in ("offset", "head"):
        return f"blocks.{L}.{parts[0]}_{parts[2]}.hook_out"
    return f"blocks.{L}.{parts[0]}.hook_out"


@pytest.mark.parametrize("kind", ["grassmann", "transformer"])
def test_run_with_cache_gives_gwb_sites(kind):
    m = gwb.bundled(kind)
    ids = m.encode(TEXT)
    N = m.config["n_layers"]
    names = [f"resid.{L}" for L in range(N)] + [f"mixer.{L}" for L in range(N)] + [f"ffn.{L}" for L in range(N)]
    if kind == "grassmann":
        names += [f"gate.{L}" for L in range(N)]
        names += [f"offset.{L}.{D}" for L in range(N) for D in m.layer_offsets[L]]
    else:
        names += [f"head.{L}.{H}" for L in range(N) for H in range(m.config["n_heads"])]
    ours, seen = gwb_sites(m, ids, names)
    b = gtl.bridge(m)
    with torch.no_grad():
        logits, cache = b.run_with_cache(torch.tensor([ids]))
    assert relative(logits[0].numpy(), ours) < 1e-5
    worst = max((relative(cache[cache_name(n)][0].numpy(), seen[n]), n) for n in names)
    print(f"{kind}: {len(names)} sites, worst relative difference {worst[0]:.2e} at {worst[1]}")
    assert worst[0] < 1e-5, worst
    last = cache[f"blocks.{N - 1}.hook_resid_post"][0].numpy()  # resid.N
    _, final = gwb_sites(m, ids, [f"resid.{N}"])
    assert relative(last, final[f"resid.{N}"]) < 1e-5


@pytest.mark.parametrize("kind,site", [("grassmann", "offset.2.4"), ("grassmann", "gate.3"), ("transformer", "head.2.1")])
def test_a_hook_through_the_bridge_patches_as_a_gwb_hook(kind, site):
    m = gwb.bundled(kind)
    ids = m.encode(TEXT)
    ours = m.run(ids, hooks={site: lambda v, name: np.asarray(v) * 0.5})
    b = gtl.bridge(m)
    with torch.no_grad():
        theirs = b.run_with_hooks(torch.tensor([ids]), fwd_hooks=[(cache_name(site), lambda t, hook: t * 0.5)])
    assert relative(theirs[0].numpy(), ours) < 1e-5
    assert np.abs(ours - m.run(ids)).max() > 1e-3  # the hook changed the logits


def test_the_adapters_come_through_transformer_lens_entry_points(tmp_path, monkeypatch):
    """What pyproject.toml declares is what TransformerLens's discovery loads: the declaration put in
    package metadata (as pip install writes it) on sys.path, discovery run afresh."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["entry-points"]["transformer_lens.architectures"]
    assert declared == {gtl.GRASSMANN: "gwb.transformer_lens:GrassmannArchitectureAdapter",
                        gtl.TRANSFORMER: "gwb.transformer_lens:TransformerArchitectureAdapter"}
    info = tmp_path / "gwb_entry_points-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gwb-entry-points\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[transformer_lens.architectures]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    adapters = dict(ArchitectureAdapterFactory._adapters)
    for name in declared:
        adapters.pop(name, None)
    monkeypatch.setattr(ArchitectureAdapterFactory, "_adapters", adapters)
    monkeypatch.setattr(ArchitectureAdapterFactory, "_entry_points_discovered", False)
    ArchitectureAdapterFactory.discover_entry_points()
    assert ArchitectureAdapterFactory._adapters[gtl.GRASSMANN] is gtl.GrassmannArchitectureAdapter
    assert ArchitectureAdapterFactory._adapters[gtl.TRANSFORMER] is gtl.TransformerArchitectureAdapter


def test_the_readme_section_runs_as_written(tmp_path, monkeypatch):
    from conftest import readme_python_blocks, run_readme_block
    run_readme_block(readme_python_blocks("In the ecosystem: SAELens, TransformerLens, nnsight, transformers")[1], monkeypatch, tmp_path)
