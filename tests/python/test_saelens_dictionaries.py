"""SAELens 6.x, its own code, as the judge of gwb's dictionary files, both ways.

Runs in the SAELens venv that scripts/pip-torch-env makes (build/pip-torch-env/saelens: SAELens 6.x
pins transformer-lens < 4, so it cannot share the venv of TransformerLens 4.x; the torch is the
pip-torch venv's), as ctest's PythonPackage.saelens_dictionaries in the pip-torch leg.

- Ours in SAELens: every kind gwb writes (TopK SAE, ReLU SAE, ReLU transcoder) loads with
  SAE.load_from_disk; its encode and decode equal gwb's on activations gwb takes at the site; its
  metadata names our site and model. A TopK transcoder has no SAELens architecture (6.x): SAELens
  refuses one whose d_out differs from d_in, as the file's "gwb.saelens" note says.
- SAELens's in ours: a TopK SAE trained by SAELens's own SAETrainer (its defaults, decoder-norm
  rescaling included) on gwb activations through a data provider opens in gwb.features, and gwb's
  explained variance and L0 equal SAELens's ExplainedVarianceCalculator and L0 on the same rows.
"""

import json
import os

import numpy as np
import pytest
import torch

import gwb
import sae_lens
from conftest import AUSTEN_EMMA, austen_split
from sae_lens import SAE
from sae_lens.config import LoggingConfig, SAETrainerConfig
from sae_lens.evals import ExplainedVarianceCalculator
from sae_lens.saes.topk_sae import TopKTrainingSAE, TopKTrainingSAEConfig
from sae_lens.training.sae_trainer import SAETrainer

CTX = 64


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return austen_split(tmp_path_factory, "saelens", 60_000, 52_000)


def site_rows(model, site, text_file):
    return gwb.features.activations(model, site, [text_file], context=CTX)["rows"].astype(np.float32)


def relative_error(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def check_in_saelens(model, d, folder, rows):
    """SAELens loads the folder; its encode/decode equal gwb's within 1e-5 relative; the metadata is ours."""
    sae = SAE.load_from_disk(str(folder), device="cpu")
    cfg = d.config
    assert sae.cfg.metadata.hook_name == cfg["site"]
    x = torch.from_numpy(rows)
    with torch.no_grad():
        z_lens = sae.encode(x).numpy()
        y_lens = sae.decode(torch.from_numpy(z_lens)).numpy()
    z_gwb = d.encode(rows)
    ez, ey = relative_error(z_lens, z_gwb), relative_error(y_lens, d.decode(z_gwb))
    print(f"{os.path.basename(str(folder))} ({cfg['architecture']}, {cfg['site']}): {rows.shape[0]} rows, "
          f"encode {ez:.1e}, decode {ey:.1e} relative")
    assert ez < 1e-5 and ey < 1e-5
    assert np.array_equal(z_lens != 0, z_gwb != 0)
    return sae


@pytest.mark.parametrize("architecture", ["topk", "relu"])
def test_gwb_saes_load_in_saelens_and_compute_the_same(grassmann, corpus, tmp_path, architecture):
    site = "resid.2"
    d = gwb.features.train(grassmann, site, [corpus[0]], architecture=architecture, d_sae=64, k=6, l1=0.5,
                           tokens=8192, batch=1024, context=CTX, progress=False)
    d.save(tmp_path / "sae")
    cfg = json.loads((tmp_path / "sae" / "cfg.json").read_text())
    assert cfg["metadata"]["hook_name"] == site and cfg["metadata"]["sae_lens_version"].startswith("6.")
    sae = check_in_saelens(grassmann, d, tmp_path / "sae", site_rows(grassmann, site, corpus[1]))
    assert sae.cfg.architecture() == ("topk" if architecture == "topk" else "standard")
    assert sae.cfg.metadata.model_name == d.config["model_name"]


def test_a_relu_transcoder_loads_as_saelens_transcoder(grassmann, corpus, tmp_path):
    d = gwb.features.train(grassmann, "ffn_in.1", [corpus[0]], target_site="ffn.1", architecture="relu",
                           d_sae=64, l1=0.5, tokens=8192, batch=1024, context=CTX, progress=False)
    d.save(tmp_path / "tc")
    sae = check_in_saelens(grassmann, d, tmp_path / "tc", site_rows(grassmann, "ffn_in.1", corpus[1]))
    assert type(sae).__name__ == "Transcoder" and sae.cfg.d_out == d.config["d_out"]
    assert sae.cfg.metadata.hook_name_out == "ffn.1"


def test_a_topk_transcoder_is_refused_by_saelens_as_the_file_says(transformer, corpus, tmp_path):
    # ffn_in.2 (d_model values) -> head.2.0 (d_head values): SAELens 6.x has no TopK transcoder and
    # opens the file as a TopK SAE, whose decoder then has the wrong width.
    d = gwb.features.train(transformer, "ffn_in.2", [corpus[0]], target_site="head.2.0", d_sae=48, k=4,
                           tokens=4096, batch=1024, context=CTX, progress=False)
    assert d.config["d_out"] != d.config["d_in"]
    d.save(tmp_path / "tc")
    cfg = json.loads((tmp_path / "tc" / "cfg.json").read_text())
    assert "no TopK transcoder" in cfg["gwb"]["saelens"]
    with pytest.raises(RuntimeError, match="size mismatch"):
        SAE.load_from_disk(str(tmp_path / "tc"), device="cpu")


def test_an_sae_trained_by_saelens_opens_in_gwb(grassmann, corpus, tmp_path):
    site = "resid.3"
    train = torch.from_numpy(site_rows(grassmann, site, corpus[0]))
    held = site_rows(grassmann, site, corpus[1])
    batch = 256
    torch.manual_seed(0)

    def provider():  # SAELens's DataProvider: an iterator of activation batches, gwb's rows
        while True:
            for i in torch.randperm(train.shape[0]).split(batch):
                if len(i) == batch:
                    yield train[i]

    sae = TopKTrainingSAE(TopKTrainingSAEConfig(
        d_in=train.shape[1], d_sae=96, k=8, dtype="float32", device="cpu",
        metadata=sae_lens.saes.sae.SAEMetadata(model_name="grassmann-austen", hook_name=site, context_size=CTX)))
    steps = 300
    trainer = SAETrainer(SAETrainerConfig(total_training_samples=steps * batch, train_batch_size_samples=batch,
                                          lr=4e-3, lr_end=4e-3, device="cpu",
                                          logger=LoggingConfig(log_to_wandb=False)),
                         sae, data_provider=provider())
    sae = trainer.fit()
    sae.save_inference_model(str(tmp_path / "lens"))
    cfg = json.loads((tmp_path / "lens" / "cfg.json").read_text())
    assert cfg["rescale_acts_by_decoder_norm"] is True  # SAELens's default, read by gwb as it is

    d = gwb.features.load(tmp_path / "lens")
    assert d.config["site"] == site and d.config["architecture"] == "topk" and d.config["k"] == 8
    mine = SAE.load_from_disk(str(tmp_path / "lens"), device="cpu")
    with torch.no_grad():
        z = mine.encode(torch.from_numpy(held))
        y = mine.decode(z)
    assert relative_error(d.encode(held), z.numpy()) < 1e-5
    assert relative_error(d.decode(d.encode(held)), y.numpy()) < 1e-5

    # gwb's evaluation of SAELens's SAE equals SAELens's own figures on the same held-out rows.
    q = gwb.features.eval(grassmann, d, [corpus[1]], context=CTX)
    assert q["rows"] == held.shape[0]
    calc = ExplainedVarianceCalculator()
    calc.add_batch(y, torch.from_numpy(held))
    l0 = float((z != 0).sum(-1).float().mean())
    print(f"SAELens-trained TopK SAE: explained variance gwb {q['explained_variance']:.6f}, SAELens "
          f"{calc.compute():.6f}; L0 gwb {q['l0']:.4f}, SAELens {l0:.4f}")
    assert abs(q["explained_variance"] - calc.compute()) < 1e-5
    assert abs(q["l0"] - l0) < 1e-6
    assert q["explained_variance"] > 0.5  # it learned something in 300 steps

    # Everywhere a gwb dictionary opens: top contexts and a causal edit.
    top = gwb.features.top(grassmann, d, [corpus[1]], features=[int(z.sum(0).argmax())], n=3, context=CTX)
    assert top
    out = gwb.features.edit(grassmann, d, int(z.sum(0).argmax()), "She could not help laughing, and", "she", "they")
    assert np.isfinite(out["metric_edited"])


def test_the_readme_section_runs_as_written(tmp_path, monkeypatch):
    from conftest import readme_python_blocks, run_readme_block
    if not os.path.exists(AUSTEN_EMMA):
        pytest.skip(f"{AUSTEN_EMMA} is absent")
    run_readme_block(readme_python_blocks("In the ecosystem: SAELens, TransformerLens, nnsight, transformers")[0], monkeypatch, tmp_path)
