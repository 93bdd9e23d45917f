"""gwb.torch.module(): the same model as a torch.nn.Module. Its logits equal the engine's (bundled
pair) and each family's own code's (imported checkpoints made by the parity scripts, which run the
family's code); the site submodules take standard forward hooks; autograd reaches the inputs."""

import json
import os

import numpy as np
import pytest
import torch

import gwb
import parity_arledge
import parity_arledge_scripts
import parity_causal_mixer
import parity_common as pc
import parity_kanenorman
import parity_wake2vec
import parity_youdie006
from conftest import PROMPT


def test_bundled_logits_equal_the_engine(model):
    net = gwb.torch.module(model)
    ids = model.encode(PROMPT)
    with torch.no_grad():
        batch = net(torch.tensor([ids, ids[::-1]]))
    assert batch.shape == (2, len(ids), model.config["vocab_size"])
    np.testing.assert_allclose(batch[0].numpy(), model.run(ids), atol=1e-4, rtol=0)
    np.testing.assert_allclose(batch[1].numpy(), model.run(ids[::-1]), atol=1e-4, rtol=0)
    assert set(net.site_names()) == set(model.site_names())
    assert set(net.state_dict()) == set(model.parameters())


def test_a_path_opens_too(tmp_path):
    net = gwb.torch.module(gwb.bundled("grassmann").path)
    assert isinstance(net, torch.nn.Module) and not net.training


def test_forward_hooks_at_every_site_agree_with_engine_hooks(model):
    """Scaling each site by 0.5 through a torch forward hook and through an engine hook gives the
    same logits, site by site."""
    net = gwb.torch.module(model)
    ids = model.encode("She said that she would walk to the house")
    for name in model.site_names():
        handle = net.get_submodule(name).register_forward_hook(lambda mod, inp, out: out * 0.5)
        with torch.no_grad():
            ours = net(torch.tensor(ids)).numpy()
        handle.remove()
        engine = model.run(ids, hooks={name: lambda v, n: v * 0.5})
        assert np.abs(ours - engine).max() < 1e-4, name


def test_autograd_reaches_the_embedding(grassmann):
    net = gwb.torch.module(grassmann)
    ids = torch.tensor(grassmann.encode(PROMPT))
    store = {}
    net.get_submodule("resid.0").register_forward_hook(lambda m, i, o: store.setdefault("h0", o) if o.requires_grad
                                                       else None)
    logits = net(ids)
    logits[-1, 5].backward()
    assert net.tok_embed.weight.grad is not None
    assert net.tok_embed.weight.grad[ids[:-1]].abs().sum() > 0
    g = net.blocks[0].w_red.weight.grad
    assert g is not None and torch.isfinite(g).all() and g.abs().sum() > 0


FAMILIES = [
    ("kanenorman", parity_kanenorman.make, "grassmann", "pre"),
    ("kanenorman", parity_kanenorman.make, "transformer", "post"),
    ("youdie006", parity_youdie006.make, "grassmann", "pre_mix"),
    ("arledge", parity_arledge.make, "grassmann", "pre"),
    ("wake2vec", parity_wake2vec.make, "grassmann", "post_mix"),
    ("arledge-v3", parity_arledge_scripts.make_train_v3, "grassmann", "pre"),
    ("causal-mixer", parity_causal_mixer.make, "grassmann", "pre"),
]


@pytest.mark.parametrize("family,make,kind,norm", FAMILIES, ids=[f"{f[0]}-{f[2]}-{f[3]}" for f in FAMILIES])
def test_imported_family_equals_its_own_code(tmp_path, family, make, kind, norm):
    out = str(tmp_path / "case")
    argv = ["--kind", kind, "--size", "tiny", "--out", out]
    if family in ("kanenorman", "youdie006"):
        argv += ["--norm", norm]
    make(pc.parser("").parse_args(argv))
    with open(os.path.join(out, "expected.json")) as f:
        expected = json.load(f)
    # kanenorman's state dict cannot show its pre_norm flag: say it, as `gwb import --norm pre` would.
    m = gwb.load(expected["checkpoint"], norm=norm if family == "kanenorman" else None)
    assert m.config["norm"] == expected["variant"].get("norm", m.config["norm"])
    assert m.report["layout"], m.report
    net = gwb.torch.module(m)
    V = expected["config"]["V"]
    raw = np.fromfile(os.path.join(out, "logits.f32"), dtype="<f4")
    at = 0
    for ids in expected["prompts"]:
        theirs = raw[at:at + len(ids) * V].reshape(len(ids), V)
        at += len(ids) * V
        with torch.no_grad():
            ours = net(torch.tensor(ids)).numpy()
        np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)
        np.testing.assert_allclose(ours, m.run(ids), atol=1e-4, rtol=0)
