"""transformers' GPT-2 as gwb's baseline, judged by transformers' own code: a folder written by
save_pretrained (config.json, model.safetensors or pytorch_model.bin, tokenizer.json or
vocab.json + merges.txt) opens as it is, through gwb.load, `gwb import` and `gwb info`, and its
logits, attention patterns and token ids equal transformers' on the same files. The models are
random-initialised (2 layers x d 64, and the GPT-2 small shape); the byte-level BPE is trained here
with `tokenizers` on the repository's prose, as no hub download is possible. Runs in the pip-torch leg
(python/pins.txt)."""

import json
import os

import numpy as np
import pytest
import torch
from conftest import run_gwb
from tokenizers import ByteLevelBPETokenizer
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model, PreTrainedTokenizerFast

import gwb

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
TEXTS = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune",
    "  Leading spaces, and trailing ones   ",
    "Café, naïve façade, Ångström; über-Ärger; São Paulo",
    "Emoji: 🎉🙂 and 👩\u200d👩\u200d👧 families, ✓ marks",
    "Line one\nLine two\n\n\tTabbed line\r\nWindows line",
    "numbers 12345 and 3.14159, symbols #@$%^&*()_+ <|endoftext|>",
    "日本語のテキストと中文文本",
]


def training_lines():
    """The repository's own prose (README and docs/): in every clone, unlike ../shared/data."""
    lines = []
    for folder, _, files in os.walk(ROOT):
        if "/build" in folder or "/." in folder:
            continue
        for name in files:
            if name.endswith(".md"):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    lines += [line for line in f.read().splitlines() if line.strip()]
    return lines + TEXTS


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bpe")
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(training_lines(), vocab_size=1000, min_frequency=2, special_tokens=["<|endoftext|>"])
    tok.save_model(str(d))  # vocab.json + merges.txt
    fast = PreTrainedTokenizerFast(tokenizer_object=tok._tokenizer, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>")
    fast.save_pretrained(str(d))  # tokenizer.json
    return d, fast


def gpt2_folder(tmp_path, tokenizer_dir, shape, tokenizer="json", model_class=GPT2LMHeadModel):
    src, fast = tokenizer_dir
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(fast), bos_token_id=0, eos_token_id=0, **shape)
    model = model_class(cfg).eval()
    with torch.no_grad():  # random LayerNorm and bias parameters: a zero bias would hide a mismapped one
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    d = tmp_path / f"gpt2-{shape['n_layer']}x{shape['n_embd']}"
    model.save_pretrained(str(d))
    names = ["vocab.json", "merges.txt"] + (["tokenizer.json", "tokenizer_config.json"] if tokenizer == "json" else [])
    for name in names:
        (d / name).write_bytes((src / name).read_bytes())
    return d, model


SMALL = dict(n_layer=2, n_embd=64, n_head=4, n_positions=128)
GPT2_SMALL = dict(n_layer=12, n_embd=768, n_head=12, n_positions=1024)


def hf_forward(model, ids):
    with torch.no_grad():
        eager = model.config._attn_implementation == "eager"
        if isinstance(model, GPT2LMHeadModel):
            out = model(torch.tensor([ids]), output_attentions=eager)
            return out.logits[0].numpy(), [a[0].numpy() for a in out.attentions or ()]
        out = model(torch.tensor([ids]), output_attentions=model.config._attn_implementation == "eager")
        logits = out.last_hidden_state[0] @ model.wte.weight.T
        return logits.numpy(), [a[0].numpy() for a in out.attentions or ()]


@pytest.mark.parametrize("shape", [SMALL, GPT2_SMALL], ids=["2x64", "gpt2-small"])
def test_a_save_pretrained_folder_opens_as_it_is_and_runs_as_transformers(tmp_path, tokenizer_dir, shape):
    d, model = gpt2_folder(tmp_path, tokenizer_dir, shape)
    model.set_attn_implementation("eager")  # sdpa returns no attention weights
    m = gwb.load(d)
    assert m.config["kind"] == "transformer" and m.config["activation"] == "gelu_tanh"
    assert m.config["n_heads"] == shape["n_head"] and m.config["norm"] == "pre"
    assert m.config["name"] == d.name
    ids = m.encode(TEXTS[0] + " " + TEXTS[2])
    logits, attentions = hf_forward(model, ids)
    ours = m.run(ids)
    worst_logit = float(np.abs(ours - logits).max())
    t = m.trace(ids)
    worst_attn = max(float(np.abs(t[f"l{L}_attn"] - attentions[L]).max()) for L in range(shape["n_layer"]))
    print(f"{d.name}: T={len(ids)}, logits max |diff| {worst_logit:.2e} (max |logit| "
          f"{float(np.abs(logits).max()):.2f}), attention max |diff| {worst_attn:.2e}")
    assert worst_logit < 1e-4
    assert worst_attn < 1e-5


@pytest.mark.parametrize("tokenizer", ["json", "vocab_merges"])
def test_token_ids_equal_transformers_on_hard_texts(tmp_path, tokenizer_dir, tokenizer):
    d, _ = gpt2_folder(tmp_path, tokenizer_dir, SMALL, tokenizer=tokenizer)
    _, fast = tokenizer_dir
    m = gwb.load(d)
    for text in TEXTS:
        theirs = fast(text, add_special_tokens=False)["input_ids"]
        assert list(m.encode(text)) == theirs, text
        assert m.decode(theirs) == fast.decode(theirs), text


def test_pytorch_model_bin_and_a_bare_gpt2model_open_too(tmp_path, tokenizer_dir):
    # torch.save'd weights (pytorch_model.bin); GPT2Model's keys carry no "transformer." prefix.
    d, model = gpt2_folder(tmp_path, tokenizer_dir, SMALL, model_class=GPT2Model)
    (d / "model.safetensors").unlink()  # transformers 5 writes only safetensors: the older file by hand
    torch.save(model.state_dict(), d / "pytorch_model.bin")
    assert (d / "pytorch_model.bin").exists() and not (d / "model.safetensors").exists()
    m = gwb.load(d)
    ids = m.encode(TEXTS[4])
    logits, _ = hf_forward(model, ids)
    assert float(np.abs(m.run(ids) - logits).max()) < 1e-4


def test_gwb_import_and_info_take_the_folder(tmp_path, tokenizer_dir):
    d, model = gpt2_folder(tmp_path, tokenizer_dir, SMALL)
    out = tmp_path / "gpt2.gwb"
    r = run_gwb("import", d, out)
    assert "hf-gpt2" in r.stdout + r.stderr
    info = run_gwb("info", d)  # the folder as MODEL
    assert "gelu_tanh" in info.stdout and "hf-gpt2" in info.stdout, info.stdout
    m = gwb.load(out)  # the .gwb written from the folder: same model, tokenizer inside
    ids = m.encode(TEXTS[3])
    logits, _ = hf_forward(model, ids)
    assert float(np.abs(m.run(ids) - logits).max()) < 1e-4


@pytest.mark.parametrize("flag,value", [("scale_attn_by_inverse_layer_idx", True), ("add_cross_attention", True),
                                        ("activation_function", "relu"), ("scale_attn_weights", False)])
def test_a_config_flag_gwb_cannot_honour_is_refused_by_name(tmp_path, tokenizer_dir, flag, value):
    d, _ = gpt2_folder(tmp_path, tokenizer_dir, SMALL)
    cfg = json.loads((d / "config.json").read_text())
    cfg[flag] = value
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=flag):
        gwb.load(d)


def test_the_readme_block_runs_as_written(tmp_path, monkeypatch):
    from conftest import readme_python_blocks, run_readme_block
    run_readme_block(readme_python_blocks("In the ecosystem: SAELens, TransformerLens, nnsight, transformers")[3],
                     monkeypatch, tmp_path)
