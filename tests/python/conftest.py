"""pytest set-up for the gwb Python package's tests (tests/python/test_*.py).

Run through ctest (test PythonPackage) or by hand:
    scripts/python -m pytest tests/python
The package comes from PYTHONPATH (scripts/python sets it to build/ci/python); the gwb program for
the command-line comparisons from GWB_PROGRAM, else the one the package was built with.
The other files of this folder are the independent PyTorch references of the C++ parity tests;
the tests here import some of them (patching_reference, the families' parity scripts)."""

import os
import pathlib
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gwb  # noqa: E402
from gwb import _paths  # noqa: E402

PROMPT = "It is a truth universally acknowledged, that a single man in possession of a good fortune"


def gwb_program():
    return os.environ.get("GWB_PROGRAM") or _paths.GWB_PROGRAM


_FIGURE = {}


def figure_available():
    """Whether this build's gwb program has the figure command (a headless build, such as the
    pip-torch leg's, has no window and no figures)."""
    if "ok" not in _FIGURE:
        prog = gwb_program()
        ok = bool(prog) and os.path.exists(prog)
        if ok:
            r = subprocess.run([prog, "--help"], capture_output=True, text=True,
                               env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
            ok = "\n  figure " in r.stdout
        _FIGURE["ok"] = ok
    return _FIGURE["ok"]


def need_figures():
    if not figure_available():
        pytest.skip("this build's gwb has no window, so no figure command (headless build)")


def need_figures_in_process():
    """gwb.figure draws in this process with the figure library, built where Qt Gui is found."""
    import gwb
    if not hasattr(gwb._gwb, "figure_command"):
        pytest.skip("this build of the package has no figure library (built without Qt Gui)")


def run_gwb(*args, check=True):
    """Runs the gwb program; returns the CompletedProcess (text). Skips the test where no gwb program
    was built (an engine-only build, such as scripts/gpu-check's on a machine without Qt)."""
    if not gwb_program() or not os.path.exists(gwb_program()):
        pytest.skip("no gwb program in this build (engine only): the comparison with the command line is not run")
    if args and str(args[0]) == "figure":
        need_figures()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = subprocess.run([gwb_program(), *map(str, args)], capture_output=True, text=True, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"gwb {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}")
    return r


@pytest.fixture(scope="session")
def grassmann():
    return gwb.bundled("grassmann")


@pytest.fixture(scope="session")
def transformer():
    return gwb.bundled("transformer")


@pytest.fixture(scope="session", params=["grassmann", "transformer"])
def model(request):
    return gwb.bundled(request.param)


def readme_python_blocks(section):
    """The ```python blocks of the section titled `section` in README.md or a page of docs/ (the
    documentation site's pages), up to the next heading of the same or a higher level."""
    import glob
    import re
    root = os.path.join(HERE, "..", "..")
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"),
                                                                 recursive=True))
    for page in pages:
        with open(page, encoding="utf-8") as f:
            lines = f.read().split("\n")
        level, body, fenced = None, [], False
        for line in lines:
            heading = None if fenced else re.match(r"(#+) (.*)$", line)
            if line.startswith("```"):
                fenced = not fenced
            if level is None:
                if heading and heading.group(2) == section:
                    level = len(heading.group(1))
                continue
            if heading and len(heading.group(1)) <= level:
                break
            body.append(line)
        if level is not None:
            return re.findall(r"```python\n(.*?)```", "\n".join(body), re.S)
    raise ValueError(f"no section {section!r} in README.md or docs/")


def run_readme_block(code, monkeypatch, tmp_path):
    """Runs one docs block as a researcher would paste it into a checkout, but in `tmp_path`, so
    the files it writes never land in the source tree: the block's working folder is
    `tmp_path/checkout`, beside a `shared` link to the real ../shared, so "../shared/..." paths
    resolve as they do from the checkout's root."""
    import linecache
    work = pathlib.Path(tmp_path) / "checkout"
    work.mkdir(parents=True, exist_ok=True)
    shared = pathlib.Path(HERE, "..", "..", "..", "shared").resolve()
    if shared.exists() and not (work.parent / "shared").exists():
        (work.parent / "shared").symlink_to(shared, target_is_directory=True)
    monkeypatch.chdir(work)
    name = f"<README block {abs(hash(code))}>"
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)  # tracers (nnsight) read the source
    exec(compile(code, name, "exec"), {"__name__": "__readme__"})


AUSTEN_EMMA = os.path.join(HERE, "..", "..", "..", "shared", "data", "austen", "emma.txt")


def austen_split(tmp_path_factory, name, chars, held_from):
    """(train, held-out) text files: Emma's first `chars` characters, held out from `held_from` on.
    Skips the test where ../shared/data is absent (it is not in a fresh clone)."""
    if not os.path.exists(AUSTEN_EMMA):
        pytest.skip(f"{AUSTEN_EMMA} is absent (../shared/data is not in a fresh clone)")
    with open(AUSTEN_EMMA, encoding="utf-8") as f:
        text = f.read(chars)
    d = tmp_path_factory.mktemp(name)
    train, held = d / "train.txt", d / "held.txt"
    train.write_text(text[:held_from], encoding="utf-8")
    held.write_text(text[held_from:], encoding="utf-8")
    return str(train), str(held)


def repository_prose():
    """Non-empty lines of the repository's own prose (README and docs/*.md): in every clone, unlike
    ../shared/data. Sorted by path, so the same checkout gives the same lines."""
    root = os.path.join(HERE, "..", "..")
    lines = []
    for folder, dirs, files in sorted(os.walk(root)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "build")
        for name in sorted(files):
            if name.endswith(".md"):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    lines += [line for line in f.read().splitlines() if line.strip()]
    return lines


def random_gpt2(folder, n_layer=3, n_embd=64, n_head=4, vocab_size=1000, n_positions=128):
    """A transformers GPT-2 with random weights (LayerNorm and bias parameters too, so a mismapped
    one shows) and a byte-level BPE trained on the repository's prose, written to `folder` by
    save_pretrained as a hub folder is laid out. Returns the folder."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(repository_prose(), vocab_size=vocab_size, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    tok.save_model(str(folder))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok._tokenizer, bos_token="<|endoftext|>",
                                   eos_token="<|endoftext|>")
    fast.save_pretrained(str(folder))
    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(vocab_size=len(fast), bos_token_id=0, eos_token_id=0, n_layer=n_layer,
                                    n_embd=n_embd, n_head=n_head, n_positions=n_positions)).eval()
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    hf.save_pretrained(str(folder))
    return folder


def prose_prompts(model, n, lo, hi):
    """`n` paragraphs of the repository's prose that `model` encodes in lo..hi tokens."""
    out = []
    for line in repository_prose():
        if lo <= len(model.encode(line)) <= hi and line not in out:
            out.append(line)
            if len(out) == n:
                break
    return out
