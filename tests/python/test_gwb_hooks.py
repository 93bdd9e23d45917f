"""model.run(ids, hooks=...): what hooks see, identity hooks, and activation patching written with
hooks checked against the independent PyTorch reference (patching_reference.py, written from
docs/model-spec.md, not from the engine or the package)."""

import numpy as np
import pytest
import torch

import gwb
import patching_reference as ref
from conftest import PROMPT

CLEAN = "She said that she would walk to the house"
CORRUPT = "He said that he would walk to the house"


def test_identity_and_observing_hooks_leave_logits_bit_identical(model):
    ids = model.encode(PROMPT)
    plain = model.run(ids)
    seen = {}

    def observe(v, name):
        seen[name] = v.shape

    assert np.array_equal(model.run(ids, hooks={n: observe for n in model.site_names()}), plain)
    assert set(seen) == set(model.site_names())
    assert np.array_equal(model.run(ids, hooks={n: (lambda v, name: v.copy()) for n in model.site_names()}), plain)


def test_hooks_see_the_traced_values(model):
    ids = model.encode(PROMPT)
    t = model.trace(ids)
    got = {}
    names = ["resid.0", "resid.3", "resid.6", "mixer.2", "ffn.1"] + (["gate.4"] if model.kind == "grassmann" else [])
    model.run(ids, hooks={n: (lambda v, name: got.__setitem__(name, v.copy())) for n in names})
    np.testing.assert_array_equal(got["resid.0"], t["l0_h"])
    np.testing.assert_array_equal(got["resid.3"], t["l3_h"])
    np.testing.assert_allclose(got["resid.6"], t["final_h"], atol=1e-5)
    if model.kind == "grassmann":
        np.testing.assert_allclose(got["mixer.2"], t["l2_g"], atol=1e-5)
        np.testing.assert_allclose(got["gate.4"], t["l4_gate"], atol=1e-5)
    T, d = len(ids), model.config["d_model"]
    assert got["ffn.1"].shape == (T, d) and got["ffn.1"].dtype == np.float32


def test_a_replacement_reaches_later_sites(grassmann):
    ids = grassmann.encode(PROMPT)
    seen = {}
    grassmann.run(ids, hooks={"gate.2": lambda v, n: seen.__setitem__("before", v.copy())})
    grassmann.run(ids, hooks={"mixer.2": lambda v, n: np.zeros_like(v),
                              "gate.2": lambda v, n: seen.__setitem__("after", v.copy())})
    assert not np.allclose(seen["before"], seen["after"])


def reference(model):
    config, tensors = ref.read_gwb(model.path)
    return ref.Reference(config, tensors)


def ref_capture(r, ids, site, key):
    box = {}

    def grab(v):
        box["v"] = v
        return v

    r.hooks.fns = {(site, key): grab}
    r(ids)
    r.hooks.fns = {}
    return box["v"]


def assert_close_logits(ours, theirs):
    theirs = theirs.detach().numpy()
    scale = np.abs(theirs).max()
    assert np.abs(ours - theirs).max() <= 1e-4 * scale + 1e-4, np.abs(ours - theirs).max()


@pytest.mark.parametrize("layer,offset", [(3, 2), (0, 1), (5, 16)])
def test_patching_one_offset_with_a_hook_matches_the_reference(grassmann, layer, offset):
    clean, corrupt = grassmann.encode(CLEAN), grassmann.encode(CORRUPT)
    assert len(clean) == len(corrupt)
    name = f"offset.{layer}.{offset}"
    box = {}
    grassmann.run(clean, hooks={name: lambda v, n: box.__setitem__("clean", v.copy())})
    patched = grassmann.run(corrupt, hooks={name: lambda v, n: box["clean"]})

    r = reference(grassmann)
    per_clean, _ = ref_capture(r, clean, "offset", layer)

    def put_clean(value):
        per, dropped = value
        per = dict(per)
        per[offset] = per_clean[offset]
        return per, dropped

    r.hooks.fns = {("offset", layer): put_clean}
    expected = r(corrupt)
    r.hooks.fns = {}
    assert_close_logits(patched, expected)
    # and the patch matters: the corrupted run alone is elsewhere
    assert np.abs(patched - grassmann.run(corrupt)).max() > 1e-3 or offset >= len(clean)


@pytest.mark.parametrize("site,layer,position", [("resid", 2, 3), ("mixer", 1, -1), ("gate", 4, 0), ("ffn", 5, 3)])
def test_patching_a_site_with_a_hook_matches_the_reference(grassmann, site, layer, position):
    clean, corrupt = grassmann.encode(CLEAN), grassmann.encode(CORRUPT)
    name = f"{site}.{layer}"
    box = {}
    grassmann.run(clean, hooks={name: lambda v, n: box.__setitem__("clean", v.copy())})

    def patch(v, n):
        out = v.copy()
        if position < 0:
            out[:] = box["clean"]
        else:
            out[position] = box["clean"][position]
        return out

    patched = grassmann.run(corrupt, hooks={name: patch})
    r = reference(grassmann)
    c = ref_capture(r, clean, site, layer)

    def put(v):
        v = v.clone()
        if position < 0:
            v[:] = c
        else:
            v[position] = c[position]
        return v

    r.hooks.fns = {(site, layer): put}
    assert_close_logits(patched, r(corrupt))


@pytest.mark.parametrize("layer,head", [(2, 1), (0, 3)])
def test_patching_a_head_with_a_hook_matches_the_reference(transformer, layer, head):
    clean, corrupt = transformer.encode(CLEAN), transformer.encode(CORRUPT)
    name = f"head.{layer}.{head}"
    box = {}
    transformer.run(clean, hooks={name: lambda v, n: box.__setitem__("clean", v.copy())})
    patched = transformer.run(corrupt, hooks={name: lambda v, n: box["clean"]})
    r = reference(transformer)
    c = ref_capture(r, clean, "head", layer * 1000 + head)
    r.hooks.fns = {("head", layer * 1000 + head): lambda v: c}
    assert_close_logits(patched, r(corrupt))
    assert np.abs(patched - transformer.run(corrupt)).max() > 1e-3


def test_hook_written_patching_equals_model_patch(grassmann):
    """A resid sweep's cell by hand equals the same cell of model.patch()."""
    clean, corrupt = grassmann.encode(CLEAN), grassmann.encode(CORRUPT)
    p = grassmann.patch(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he", site="resid", progress=False)
    she, he = grassmann._m.piece_id("she"), grassmann._m.piece_id("he")
    box = {}
    grassmann.run(clean, hooks={"resid.3": lambda v, n: box.__setitem__("v", v.copy())})

    def put(v, n):
        v = v.copy()
        v[4] = box["v"][4]
        return v

    logits = grassmann.run(corrupt, hooks={"resid.3": put})
    assert abs((logits[-1, she] - logits[-1, he]) - p["metric"][3, 4]) < 1e-4


def test_a_zeroed_residual_says_its_planes_are_noise(grassmann, recwarn):
    # Issue 49: zeroing resid.L makes every later position alike; the pair planes of the layers
    # after it join nearly parallel vectors and are rounding noise, which run() says in a warning.
    ids = grassmann.encode(PROMPT)
    with pytest.warns(RuntimeWarning, match=r"resid\.2.*pair planes of layer 2.*rounding noise"):
        grassmann.run(ids, hooks={"resid.2": lambda v, name: np.zeros_like(v)})
    # A patch that keeps the positions apart (half the residual, one position zeroed) says nothing.
    recwarn.clear()
    grassmann.run(ids, hooks={"resid.2": lambda v, name: v * 0.5})

    def one_row(v, name):
        v = v.copy()
        v[5] = 0
        return v

    grassmann.run(ids, hooks={"resid.2": one_row})
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in recwarn]
