"""tuned-lens 0.2.0's own code (AlignmentResearch/tuned-lens: TunedLens, LogitLens, Unembed) as the
judge of gwb's tuned lens. tuned-lens 0.2.0 (2023, dormant) imports beside torch 2.x, but its
Unembed asks for TransformerLens's HookedTransformer, which TransformerLens 4 removed, and its
requirements (wandb, datasets, torchdata, ...) are only for training: so it is installed without
its dependencies (python/pins.txt's [no-deps] part) into the venv of SAELens and circuit-tracer,
whose TransformerLens is 3.2.1 (build/pip-torch-env/saelens; ctest's PythonPackage.saelens_tuned_lens).

On a transformers GPT-2 with random weights (3 layers, d 64, save_pretrained), which gwb opens as a
baseline:
- gwb fits a tuned lens; tuned-lens's TunedLens.from_unembed_and_pretrained opens gwb's folder
  (config.json + params.pt) and, on transformers' hidden states, gives gwb's lens logits
  (gwb.lens.logits) at every layer within 1e-4 relative; its LogitLens gives gwb's logit lens;
- a lens tuned-lens makes and saves (TunedLens.save: an OrderedDict state dict) opens in gwb and
  gives tuned-lens's logits."""

import json

import numpy as np
import pytest
import torch
from conftest import prose_prompts, random_gpt2
from transformers import GPT2LMHeadModel
from tuned_lens.nn.lenses import LogitLens, TunedLens
from tuned_lens.nn.unembed import Unembed

import gwb


def relative(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    folder = random_gpt2(tmp_path_factory.mktemp("tuned") / "gpt2-3x64")
    return gwb.load(folder), GPT2LMHeadModel.from_pretrained(str(folder)).eval(), folder


def hidden_states(hf, ids):
    """transformers' hidden states: [0] the embeddings, [s] block s's input (gwb's state s)."""
    with torch.no_grad():
        return hf(torch.tensor([ids]), output_hidden_states=True).hidden_states


def test_tuned_lens_opens_gwb_lens_and_gives_its_logits(gpt2):
    model, hf, folder = gpt2
    prompts = prose_prompts(model, 24, 20, 60)
    out = folder.parent / "gwb-tuned"
    r = gwb.lens.fit(model, "tuned", texts=prompts[:-1], out=out, window=32, steps=5, tokens_per_step=256,
                     progress=False)
    assert r["complete"] and r["layers"] == list(range(model.config["n_layers"]))
    lens = TunedLens.from_unembed_and_pretrained(Unembed(hf), str(out))
    assert lens.config.d_model == model.config["d_model"]
    assert lens.config.num_hidden_layers == model.config["n_layers"]
    ids = model.encode(prompts[-1])
    hs = hidden_states(hf, ids)
    logit_lens = LogitLens.from_model(hf)
    with torch.no_grad():
        for s in range(model.config["n_layers"]):
            theirs = lens(hs[s], s)[0].numpy()
            ours = gwb.lens.logits(model, ids, s, out)
            plain = logit_lens(hs[s], s)[0].numpy()
            print(f"state {s}: tuned {relative(ours, theirs):.2e}, "
                  f"logit {relative(gwb.lens.logits(model, ids, s), plain):.2e}")
            assert relative(ours, theirs) < 1e-4
            assert relative(gwb.lens.logits(model, ids, s), plain) < 1e-4
            assert relative(theirs, plain) > 1e-3, "the fit moved the lens away from the logit lens"


def test_a_lens_tuned_lens_saves_opens_in_gwb(gpt2, tmp_path):
    model, hf, _ = gpt2
    lens = TunedLens.from_model(hf)
    torch.manual_seed(1)
    with torch.no_grad():
        for translator in lens:
            translator.weight.normal_(0, 0.05)
            translator.bias.normal_(0, 0.05)
    lens.save(tmp_path)
    assert json.load(open(tmp_path / "config.json"))["lens_type"] == "linear_tuned_lens"
    ids = model.encode("It is a truth universally acknowledged, that a single man in possession")
    hs = hidden_states(hf, ids)
    with torch.no_grad():
        for s in range(model.config["n_layers"]):
            assert relative(gwb.lens.logits(model, ids, s, tmp_path), lens(hs[s], s)[0].numpy()) < 1e-4
