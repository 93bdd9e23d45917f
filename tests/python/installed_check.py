"""The pip-installed package as a researcher uses it (run by pip_install_check.sh, not by the ctest glob).

    python -m pytest -q tests/python/installed_check.py     # from another folder, in the venv

Checks that `gwb` comes from the environment's site-packages (no PYTHONPATH, no gwb program), then:
load (.gwb, a .pt, a .safetensors, each against the family's own PyTorch forward), trace, a hook,
patch (one pair and a pairs list), paths, stats, generate, features train/eval/edit, and
gwb.torch.module with autograd, and the TransformerLens entry points. GWB_EXPECT_ROOT (when set) is the folder gwb must be installed under.
"""

import json
import os
import shutil

import numpy as np
import pytest

import gwb

CLEAN, CORRUPT = "They could not help laughing, and", "She could not help laughing, and"
TEXT = ("It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a wife. However little known the feelings or views of such a man may be. ")


def test_the_package_is_the_installed_one_with_no_program():
    root = os.environ.get("GWB_EXPECT_ROOT")
    here = os.path.realpath(gwb.__file__)
    if root:
        assert here.startswith(os.path.realpath(root) + os.sep), here
    assert "site-packages" in here, here
    from gwb import _paths
    assert _paths.GWB_PROGRAM == "" and not os.environ.get("GWB_PROGRAM")
    assert shutil.which("gwb") is None, "a gwb program is on PATH"
    with pytest.raises(RuntimeError, match="Qt") as e:
        gwb.figure("gate", prompt="It is")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_load_a_checkpoint_equals_its_own_pytorch_forward(tmp_path, fmt):
    import parity_alphaxiv
    import parity_common as pc
    parity_alphaxiv.make(pc.parser("").parse_args(["--kind", "grassmann", "--size", "tiny", "--format", fmt,
                                                   "--out", str(tmp_path)]))
    e = json.loads((tmp_path / "expected.json").read_text())
    assert e["checkpoint"].endswith("." + fmt)
    m = gwb.load(e["checkpoint"])
    want = np.fromfile(tmp_path / e["logits_file"], dtype="<f4")
    got = np.concatenate([np.asarray(m.run(ids), dtype=np.float32).ravel() for ids in e["prompts"]])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    assert m.report["layout"] == "alphaxiv"


def test_trace_hook_patch_paths_stats_generate(tmp_path):
    m = gwb.bundled("grassmann")
    t = m.trace(TEXT[:60])
    assert t["l0_h"].shape[0] == len(t.tokens)
    seen = {}
    ids = m.encode("It is a truth")
    logits = m.run(ids, hooks={"resid.1": lambda v, name: seen.setdefault(name, v.shape) and None})
    assert seen["resid.1"][0] == len(ids) and logits.shape[0] == len(ids)
    zeroed = m.run(ids, hooks={"offset.2.1": lambda v, name: 0 * v})
    assert np.abs(np.asarray(zeroed) - np.asarray(logits)).max() > 0
    one = m.patch(clean=CLEAN, corrupt=CORRUPT, answer="they", wrong="she", site="resid", progress=False)
    pairs = m.patch(pairs=[dict(clean=CLEAN, corrupt=CORRUPT, answer="they", wrong="she")], site="resid",
                    bootstrap=50, progress=False)
    cols = one["effect"].shape[1]
    assert np.allclose(pairs["effect"][0][:, -cols:], one["effect"], equal_nan=True, atol=1e-12)
    p = m.paths(CLEAN, CORRUPT, "they", "she", progress=False)
    assert p["metric"].size > 0
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT * 6, encoding="utf-8")
    s = m.stats(str(corpus), window=32, stride=32, max_windows=2, progress=False)
    assert s.meta["complete"]
    g = m.generate("It is a truth", max_new=4, greedy=True)
    assert len(g.ids) == len(m.encode("It is a truth")) + 4


def test_features_train_eval_edit(tmp_path):
    m = gwb.bundled("grassmann")
    corpus = tmp_path / "train.txt"
    corpus.write_text(TEXT * 40, encoding="utf-8")
    d = gwb.features.train(m, "resid.2", [str(corpus)], d_sae=32, k=4, tokens=4096, batch=512, context=64,
                           progress=False)
    d.save(tmp_path / "sae")
    d = gwb.features.load(tmp_path / "sae")
    q = gwb.features.eval(m, d, [str(corpus)], context=64)
    assert q["rows"] > 0 and 0 <= q["l0"] <= 4
    f = 0
    res = gwb.features.edit(m, d, f, "It is a truth universally acknowledged, that a", "single", "man")
    assert "activation" in res


def test_torch_module_with_autograd():
    import torch
    m = gwb.bundled("grassmann")
    net = gwb.torch.module(m)
    ids = torch.tensor([m.encode("It is a truth universally")])
    logits = net(ids)
    assert np.abs(logits[0].detach().numpy() - np.asarray(m.run(ids[0].tolist()))).max() < 1e-4
    logits[0, -1].logsumexp(0).backward()
    grads = [p.grad for p in net.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_transformer_lens_finds_the_installed_adapters():
    """The installed package's metadata carries the entry points TransformerLens 4.x discovers."""
    from importlib.metadata import entry_points
    eps = {ep.name: ep.value for ep in entry_points(group="transformer_lens.architectures")}
    assert eps.get("GwbGrassmannLM") == "gwb.transformer_lens:GrassmannArchitectureAdapter", eps
    assert eps.get("GwbTransformerLM") == "gwb.transformer_lens:TransformerArchitectureAdapter", eps
    try:
        import transformer_lens  # noqa: F401
    except ImportError:
        pytest.skip("TransformerLens is not in this environment: the entry points alone were checked")
    import torch
    import gwb.transformer_lens
    m = gwb.bundled("grassmann")
    ids = m.encode(TEXT)
    logits, cache = gwb.transformer_lens.bridge(m).run_with_cache(torch.tensor([ids]))
    assert np.abs(logits[0].detach().numpy() - m.run(ids)).max() < 1e-3
    assert "blocks.2.offset_4.hook_out" in cache
