"""gwb.lens: the files open in the reference tools' own loaders (torch.load(weights_only=True) as
TransformerLens's JacobianLens.load calls it; tuned-lens's TunedLens layout emulated from its
nn/lenses.py, since tuned-lens is not installed beside Debian's torch), the evaluation reopens in
numpy, the command line writes what Python writes, and bad input gets a clear message."""

import json
import os

import re

import numpy as np
import pytest

import gwb

from conftest import run_gwb

TEXT = ("It is a truth universally acknowledged, that a single man in possession of a good fortune, must be "
        "in want of a wife. However little known the feelings or views of such a man may be on his first "
        "entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families.")


def test_jacobian_lens_file_is_the_reference_format(model, tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "jacobian"
    r = gwb.lens.fit(model, "jacobian", texts=[TEXT, TEXT[60:]], out=out, window=24, skip_first=4, dim_batch=64,
                     progress=False)
    assert r["complete"] and r["n_prompts"] == 2 and r["layers"] == list(range(model.config["n_layers"] - 1))
    payload = torch.load(os.path.join(out, "jacobian_lens.pt"), map_location="cpu", weights_only=True)
    assert set(payload) >= {"J", "n_prompts", "source_layers", "d_model"}
    assert payload["n_prompts"] == 2 and payload["d_model"] == model.config["d_model"]
    assert payload["source_layers"] == r["layers"]
    for layer, matrix in payload["J"].items():
        assert matrix.dtype == torch.float32
        np.testing.assert_array_equal(matrix.numpy(), r["matrices"][layer])
    meta = json.load(open(out / "gwb_lens.json"))
    assert meta["estimator"] == "jacobian_lens" and meta["complete"]


def test_tuned_lens_file_opens_as_tuned_lens_loads_it(grassmann, tmp_path):
    torch = pytest.importorskip("torch")
    out = tmp_path / "tuned"
    gwb.lens.fit(grassmann, "tuned", texts=[TEXT], out=out, window=16, steps=3, tokens_per_step=32,
                 progress=False)
    # tuned-lens's TunedLens.from_unembed_and_pretrained: TunedLensConfig(**config.json), a ModuleList of
    # num_hidden_layers Linear(d, d, bias) translators, load_state_dict(torch.load(params.pt)).
    config = json.load(open(out / "config.json"))
    assert config["lens_type"] == "linear_tuned_lens"
    d, n = config["d_model"], config["num_hidden_layers"]
    translators = torch.nn.ModuleList([torch.nn.Linear(d, d, bias=config["bias"]) for _ in range(n)])
    translators.load_state_dict(torch.load(out / "params.pt", weights_only=True))
    # transform_hidden(h, 0) = h + translator(h) on the embedding, then the unembedding LN_final + W_U.
    p = grassmann.parameters()
    ids = grassmann.encode(TEXT)[:20]
    h = torch.tensor(p["tok_embed.weight"])[ids] + torch.tensor(p["pos_embed.weight"])[: len(ids)]
    with torch.no_grad():
        x = torch.nn.functional.layer_norm(h + translators[0](h), (d,), torch.tensor(p["ln_final.weight"]),
                                           torch.tensor(p["ln_final.bias"]), 1e-5)
        ref = (x @ torch.tensor(p["tok_embed.weight"]).T).numpy()
    ours = gwb.lens.logits(grassmann, ids, 0, out)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4)
    assert np.abs(translators[0].weight.detach().numpy()).max() > 0, "the fit moved the translator"


def test_eval_reopens_in_numpy_and_matches_the_command_line(transformer, tmp_path):
    text = tmp_path / "held_out.txt"
    text.write_text(TEXT)
    lens = tmp_path / "jacobian"
    gwb.lens.fit(transformer, "jacobian", texts=[TEXT], out=lens, window=24, skip_first=4, dim_batch=64,
                 progress=False)
    r = gwb.lens.eval(transformer, [lens], [text], window=32, out=tmp_path / "eval.npz")
    n = transformer.config["n_layers"]
    assert r["lenses"] == ["logit", "jacobian"] and r["kl"].shape == (2, n)
    assert np.isnan(r["kl"][1, 0]) and np.all(np.isfinite(r["kl"][1, 1:])), "no Jacobian map at the embedding"
    with np.load(tmp_path / "eval.npz") as z:
        np.testing.assert_array_equal(z["kl"], r["kl"])
    import zipfile
    meta = json.loads(zipfile.ZipFile(tmp_path / "eval.npz").read("meta.json"))
    assert [entry["estimator"].split()[0] for entry in meta["lenses"]] == ["logit_lens", "jacobian_lens"]
    run_gwb("lens", "eval", "--model", "transformer", "--lens", lens, "--corpus", text, "--window", "32",
            "--out", tmp_path / "cli.npz")
    with np.load(tmp_path / "cli.npz") as z, np.load(tmp_path / "eval.npz") as y:
        for key in ("kl", "ce", "top1", "rank", "final_ce"):
            np.testing.assert_array_equal(z[key], y[key])


def test_bad_input_gets_a_clear_message(grassmann, tmp_path):
    with pytest.raises(ValueError, match="choose tuned or jacobian"):
        gwb.lens.fit(grassmann, "tunned", texts=[TEXT], progress=False)
    with pytest.raises(ValueError, match="--shard i/n"):
        gwb.lens.fit(grassmann, "jacobian", texts=[TEXT], shard="3/2", progress=False)
    with pytest.raises(TypeError, match="unknown options"):
        gwb.lens.fit(grassmann, "jacobian", texts=[TEXT], learning_rate=1.0, progress=False)
    with pytest.raises(ValueError, match="no text"):
        gwb.lens.fit(grassmann, "jacobian", progress=False)
    assert gwb.lens.DEFAULTS["skip_first"] == 16 and gwb.lens.DEFAULTS["lr"] == 0.1
    # One table (the engine's): the same range, and the same sentence from Python and the command line.
    sentence = "momentum (--momentum) must be a number in [0, 1); got 1"
    with pytest.raises(ValueError, match=re.escape(sentence)):
        gwb.lens.fit(grassmann, "tuned", texts=[TEXT], momentum=1.0, progress=False)
    r = run_gwb("lens", "fit", "--kind", "tuned", "--model", "grassmann", "--corpus", tmp_path / "none.txt",
                "--out", tmp_path / "l", "--momentum", "1", check=False)
    assert r.returncode != 0 and sentence in r.stderr, r.stderr
    with pytest.raises(ValueError, match=re.escape("window (--window) must be an integer, at least 2; got 1")):
        gwb.lens.eval(grassmann, texts=[TEXT], window=1)
    table = gwb.lens.options()
    assert [o["key"] for o in table] == list(gwb.lens.DEFAULTS)
    assert {o["key"]: o["default"] for o in table} == gwb.lens.DEFAULTS
    help_text = " ".join(run_gwb("lens", "fit", "--help").stdout.split())
    for o in table:
        shown = o["default"] if isinstance(o["default"], str) else f"{o['default']:g}"
        assert f"--{o['flag']}" in help_text and f"default {shown}" in help_text, o
    assert [o["key"] for o in gwb.lens.options("eval")] == ["window", "max_prompts"]
