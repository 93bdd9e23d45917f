"""TransformerLens 4.x's own Jacobian lens (transformer_lens/tools/analysis/jacobian_lens.py, the
port of Anthropic's reference estimator) as the judge of gwb's: on a transformers GPT-2 with random
weights (3 layers, d 64, save_pretrained), which gwb opens as a baseline and TransformerLens boots as
itself (TransformerBridge.boot_transformers, raw weights), both fit the lens on the same prompts
with the same options, and

- gwb's J_l equals TransformerLens's JacobianLens.fit within 1e-4 relative (to J_l's largest entry);
- TransformerLens's JacobianLens.load opens gwb's jacobian_lens.pt, and its readout gives gwb's
  lens logits (gwb.lens.logits), and with use_jacobian=False gwb's logit lens;
- gwb opens the file TransformerLens's JacobianLens.save writes (float16 matrices, provenance).

TransformerLens prepends a BOS token by default, gwb's encode does not: the bridge is set not to
(default_prepend_bos = False), so both see the same token ids. Runs in the pip-torch leg
(python/pins.txt)."""

import numpy as np
import pytest
import torch
from conftest import prose_prompts, random_gpt2
from transformer_lens.model_bridge import TransformerBridge
from transformer_lens.tools.analysis import JacobianLens

import gwb

OPTIONS = dict(dim_batch=16, max_seq_len=64, skip_first_positions=4)


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """(gwb model, bridge, prompts, gwb's lens folder, gwb's fit, TransformerLens's lens)."""
    folder = random_gpt2(tmp_path_factory.mktemp("jlens") / "gpt2-3x64")
    model = gwb.load(folder)
    bridge = TransformerBridge.boot_transformers(str(folder), device="cpu")
    bridge.eval()
    bridge.cfg.default_prepend_bos = False
    prompts = prose_prompts(model, 6, 24, 60)
    assert len(prompts) == 6
    for p in prompts:
        assert bridge.to_tokens(p)[0].tolist() == model.encode(p)
    theirs = JacobianLens.fit(bridge, prompts, corpus="gwb-test", show_progress=False, **OPTIONS)
    out = folder.parent / "gwb-jacobian"
    ours = gwb.lens.fit(model, "jacobian", texts=prompts, out=out, window=OPTIONS["max_seq_len"],
                        skip_first=OPTIONS["skip_first_positions"], dim_batch=OPTIONS["dim_batch"], progress=False)
    return model, bridge, prompts, out, ours, theirs


def test_gwb_jacobian_lens_equals_transformer_lens_fit(fitted):
    model, _, prompts, _, ours, theirs = fitted
    assert ours["complete"] and ours["n_prompts"] == theirs.n_prompts == len(prompts)
    assert ours["layers"] == theirs.source_layers == list(range(model.config["n_layers"] - 1))
    worst = max(relative(ours["matrices"][layer], theirs.jacobians[layer].numpy()) for layer in theirs.source_layers)
    print(f"J_l: worst relative difference to TransformerLens's fit {worst:.2e}")
    assert worst < 1e-4
    # Not the identity in disguise: the lens's logits differ from the logit lens's by far more
    # than the tolerance.
    ids = model.encode(prompts[0])
    assert relative(gwb.lens.logits(model, ids, 1, fitted[3]), gwb.lens.logits(model, ids, 1)) > 1e-2


def test_transformer_lens_reads_gwb_file_and_gives_gwb_lens_logits(fitted):
    model, bridge, prompts, out, _, _ = fitted
    lens = JacobianLens.load(str(out / "jacobian_lens.pt"))
    # TransformerLens checks the name it booted the model by against the file's provenance; gwb
    # records the model's name (a local folder's name), TransformerLens the path it was booted from.
    assert lens.metadata["model_name"] == "gpt2-3x64"
    lens.metadata["model_name"] = bridge.cfg.model_name
    ids = model.encode(prompts[-1])
    for use_jacobian in (True, False):
        readout = lens.readout(bridge, torch.tensor([ids]), use_jacobian=use_jacobian, return_full_logits=True)
        for layer in lens.source_layers:
            # J_l acts on block l's output, gwb's residual state l + 1.
            ours = gwb.lens.logits(model, ids, layer + 1, out if use_jacobian else None)
            difference = relative(ours, readout.lens_logits[layer].numpy())
            print(f"readout use_jacobian={use_jacobian} layer {layer}: {difference:.2e}")
            assert difference < 1e-4


def test_gwb_reads_the_file_transformer_lens_saves(fitted, tmp_path):
    model, _, prompts, out, _, theirs = fitted
    theirs.save(str(tmp_path / "jacobian_lens.pt"))  # float16, as the reference writes it
    ids = model.encode(prompts[0])
    for layer in theirs.source_layers:
        ours = gwb.lens.logits(model, ids, layer + 1, out)
        from_theirs = gwb.lens.logits(model, ids, layer + 1, tmp_path)
        assert relative(from_theirs, ours) < 2e-3  # float16 matrices
