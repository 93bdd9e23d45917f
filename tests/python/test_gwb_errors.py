"""Bad input raises a Python exception naming the problem; the interpreter never crashes."""

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import gwb
from conftest import PROMPT, run_gwb


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.gwb"):
        gwb.load(tmp_path / "nowhere.gwb")


@pytest.mark.parametrize("name,content", [("broken.gwb", b"\x10\x00\x00\x00\x00\x00\x00\x00{not json"),
                                          ("foreign.pt", b"PK\x03\x04 this is not a torch archive"),
                                          ("text.safetensors", "naïve text".encode("latin-1"))])
def test_broken_or_foreign_file_names_the_path(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises((RuntimeError, ValueError)) as e:
        gwb.load(path)
    assert name in str(e.value)


def test_unknown_hook_lists_the_valid_sites(grassmann, transformer):
    ids = grassmann.encode(PROMPT)
    with pytest.raises(ValueError, match=r"unknown hook site 'offset\.3\.5'.*offset\.L\.D.*\{1,2,4,8,12,16\}"):
        grassmann.run(ids, hooks={"offset.3.5": lambda v, n: None})
    with pytest.raises(ValueError, match=r"unknown hook site 'attn\.1'.*resid\.0 \.\. resid\.6"):
        grassmann.run(ids, hooks={"attn.1": lambda v, n: None})
    with pytest.raises(ValueError, match=r"'gate\.1'.*Transformer has no gate.*head\.L\.H"):
        transformer.run(ids, hooks={"gate.1": lambda v, n: None})
    with pytest.raises(ValueError, match=r"'mixer\.6'.*does not exist"):
        grassmann.run(ids, hooks={"mixer.6": lambda v, n: None})
    with pytest.raises(TypeError, match="'mixer.1' is not callable"):
        grassmann.run(ids, hooks={"mixer.1": 3})


def test_wrong_shape_or_dtype_names_the_hook_and_both_shapes(grassmann):
    ids = grassmann.encode(PROMPT)
    T, d = len(ids), grassmann.config["d_model"]
    with pytest.raises(ValueError, match=rf"hook 'mixer\.2' returned shape \[{T}, {d - 1}\]; expected shape \[{T}, {d}\]"):
        grassmann.run(ids, hooks={"mixer.2": lambda v, n: v[:, 1:]})
    with pytest.raises(ValueError, match=rf"hook 'gate\.1'.*dtype int64.*\[{T}, {d}\].*floats of shape \[{T}, {d}\]"):
        grassmann.run(ids, hooks={"gate.1": lambda v, n: np.zeros(v.shape, dtype=np.int64)})
    # float64 is fine (converted), and the model is still usable after every error above
    out = grassmann.run(ids, hooks={"gate.1": lambda v, n: v.astype(np.float64)})
    assert np.array_equal(out, grassmann.run(ids))


class Boom(Exception):
    pass


def test_an_exception_in_a_hook_propagates_as_itself(grassmann):
    ids = grassmann.encode(PROMPT)

    def bad(v, n):
        raise Boom(f"my own message at {n}")

    with pytest.raises(Boom, match="my own message at ffn.3"):
        grassmann.run(ids, hooks={"ffn.3": bad})
    with pytest.raises(ZeroDivisionError):
        grassmann.run(ids, hooks={"resid.2": lambda v, n: 1 / 0})
    assert grassmann.run(ids).shape[0] == len(ids)


def test_ids_outside_the_vocabulary_and_long_prompts(grassmann):
    V, L = grassmann.config["vocab_size"], grassmann.config["max_len"]
    with pytest.raises(ValueError, match=rf"token id {V} at position 1 is outside the vocabulary \(0\.\.{V - 1}\)"):
        grassmann.run([1, V])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        grassmann.run([-1])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        grassmann.trace([5, V + 3])
    with pytest.raises(ValueError, match=rf"{L + 1} tokens, longer than the model's context \(max_len {L}\)"):
        grassmann.run([5] * (L + 1))
    with pytest.raises(ValueError, match=rf"longer than the model's context"):
        grassmann.trace([5] * (L + 1))
    # a long text is traced up to the context, as the window does, with the rest reported
    t = grassmann.trace(" ".join(["the"] * (L + 20)))
    assert len(t.token_ids) == L and t.meta["dropped_tokens"] > 0
    assert t.warnings[0].startswith(f"the prompt is longer than the model's context of {L} tokens"), t.warnings
    short = grassmann.trace(" ".join(["the"] * 10), max_tokens=4)  # the warning names the limit that cut it
    assert len(short.token_ids) == 4 and "as max_tokens asks" in short.warnings[0], short.warnings
    with pytest.raises(ValueError, match="empty"):
        grassmann.run([])
    with pytest.raises(ValueError, match="empty"):
        grassmann.trace("")
    with pytest.raises(ValueError, match="1-D sequence of token ids"):
        grassmann.run([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        grassmann.decode([V])


def test_bad_text_and_options(grassmann):
    # text read from a non-UTF-8 file with errors="surrogateescape" holds lone surrogates
    bad = b"caf\xe9 au lait".decode("utf-8", "surrogateescape")
    with pytest.raises(ValueError, match="not valid text.*character 3"):
        grassmann.encode(bad)
    with pytest.raises(ValueError, match="the prompt is not valid text"):
        grassmann.trace(bad)
    with pytest.raises(ValueError, match="the clean prompt is not valid text"):
        grassmann.patch(clean=bad, site="ffn", mode="zero")
    with pytest.raises(ValueError, match="bundled"):
        gwb.bundled("lstm")
    with pytest.raises(ValueError, match="temperature"):
        grassmann.generate("It is", temperature=0)
    # The engine's option table: the sentence `gwb generate` prints (GenerateRefusesBadOptionsNamingThem).
    with pytest.raises(ValueError, match=re.escape("top_p (--top-p) must be a number in (0, 1]; got 1.5")):
        grassmann.generate("It is", top_p=1.5)
    with pytest.raises(ValueError, match="not one of: exact, attribution"):
        grassmann.patch(clean="She said", corrupt="He said", answer="she", wrong="he", method="fast")


def test_ctrl_c_stops_a_long_sweep(tmp_path):
    """SIGINT during a patching sweep raises KeyboardInterrupt within a second or so."""
    script = tmp_path / "sweep.py"
    script.write_text(
        "import sys, gwb\n"
        "m = gwb.bundled('grassmann')\n"
        "text = ' '.join(['She said that she would walk to the house'] * 11)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    for _ in range(30):  # about 3 s each\n"
        "        m.patch(clean=text, site='resid', mode='zero', progress=False)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n"
        "print('finished', flush=True)\n")
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ))
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    took = time.monotonic() - sent
    assert p.returncode == 3, (out, err)
    assert "interrupted" in out
    assert took < 10, took


def test_a_hook_that_runs_its_own_model_is_refused(grassmann):
    ids = grassmann.encode(PROMPT)
    with pytest.raises(RuntimeError, match="cannot use the model it is hooked into"):
        grassmann.run(ids, hooks={"mixer.1": lambda v, n: grassmann.run(ids)})
    with pytest.raises(RuntimeError, match="cannot use the model it is hooked into"):
        grassmann.run(ids, hooks={"mixer.1": lambda v, n: grassmann.trace(ids)})
    other = gwb.bundled("grassmann")  # an independent model may run inside a hook
    seen = {}
    grassmann.run(ids, hooks={"mixer.1": lambda v, n: seen.__setitem__("x", other.run(ids[:3]))})
    assert seen["x"].shape[0] == 3
    assert np.array_equal(grassmann.run(ids), other.run(ids))


def test_a_text_file_named_like_a_checkpoint_gets_one_message_everywhere(tmp_path):
    # gwb info, gwb trace, gwb import and gwb.load open the same file through the same reader and
    # say the same thing (gwb info used to try it as a .gwb and report a safetensors header length).
    fake = tmp_path / "fake.pt"
    fake.write_text("this is a text file, not a checkpoint\n")
    msg = "neither a torch.save zip archive nor a safetensors file"
    with pytest.raises(Exception, match=msg):
        gwb.load(fake)
    for args in (["info", "--model", fake], ["trace", "--model", fake, "--prompt", "It is", "--out", tmp_path / "t.npz"],
                 ["import", fake, tmp_path / "x.gwb"]):
        r = run_gwb(*args, check=False)
        assert r.returncode != 0, args
        assert msg in r.stderr, (args, r.stderr)
        assert "header length" not in r.stderr, (args, r.stderr)


def test_trace_names_a_prompt_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    r = run_gwb("trace", "--model", "grassmann", "--prompt-file", bad, "--out", tmp_path / "t.npz", check=False)
    assert r.returncode != 0
    assert "latin1.txt" in r.stderr and "UTF-8" in r.stderr, r.stderr


def test_figure_speaks_to_a_command_line_user(tmp_path):
    r = run_gwb("figure", "--view", "gate", "--prompt", "   ", "--out", tmp_path / "f.svg", check=False)
    assert r.returncode != 0
    assert "--prompt" in r.stderr and "then Run" not in r.stderr, r.stderr


def test_a_file_that_is_not_a_model_raises_value_error(tmp_path):
    # Like every other refusal of bad input (issue 52): ValueError, naming the file.
    note = tmp_path / "notamodel.txt"
    note.write_text("hello\n")
    with pytest.raises(ValueError, match=r"notamodel\.txt' is not a model file \(\.gwb, \.pt, \.safetensors\): "):
        gwb.load(note)
    # The command line says the same sentence first, and the parser's detail after it.
    r = run_gwb("info", "--model", note, check=False)
    assert r.returncode != 0
    assert "notamodel.txt' is not a model file (.gwb, .pt, .safetensors): " in r.stderr, r.stderr
    assert r.stderr.index("is not a model file") < r.stderr.index("too short"), r.stderr


def test_progress_bars_appear_only_once_work_starts_and_show_no_rate(grassmann, capsys):
    pytest.importorskip("tqdm")
    # Input the engine refuses raises before any bar is drawn (two empty bars used to come first).
    with pytest.raises(ValueError):
        grassmann.patch(clean=PROMPT, corrupt=PROMPT + " and", answer="she", wrong="he", site="resid",
                        progress=True)
    assert "patch" not in capsys.readouterr().err
    grassmann.patch(clean="They could not help laughing, and", corrupt="She could not help laughing, and",
                    answer="they", wrong="she", site="offset", progress=True)
    err = capsys.readouterr().err
    assert "patch offset: 100%" in err and "%/s" not in err and "it/s" not in err, err


# Issue 67: every call that writes checks its output before the work, raises one family of errors
# for the file system (OSError subclasses, naming the user's path, never a temporary file), and
# ValueError for bad arguments.
def _writers(grassmann, tmp_path, started):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("It is a truth universally acknowledged, that a single man in possession of a good "
                      "fortune, must be in want of a wife.\n" * 20)
    rows = np.random.default_rng(0).standard_normal((256, 8)).astype(np.float32)
    dictionary = gwb.features.train_on_rows(rows, d_sae=16, k=2, tokens=256, batch=64)["dictionary"]
    trace = grassmann.trace("It is a truth")
    return {
        "Model.stats": lambda p: grassmann.stats([corpus], window=16, stride=16, out=p / "s.npz",
                                                 progress=started),
        "Result.save": lambda p: trace.save(p / "t.npz"),
        "Model.save": lambda p: grassmann.save(p / "m.gwb"),
        "features.export": lambda p: gwb.features.export(grassmann, dictionary, [corpus], p / "d.json"),
        "features.train_transcoders": lambda p: gwb.features.train_transcoders(
            grassmann, [corpus], p / "tc", d_sae=16, k=2, tokens=512, batch=64, context=16, progress=started),
        "Dictionary.save": lambda p: dictionary.save(p / "sae"),
    }


def test_every_call_that_writes_checks_its_output_first(tmp_path, grassmann):
    started = []
    writers = _writers(grassmann, tmp_path, started.append)
    missing = tmp_path / "no-such-folder" / "deeper"
    for name, write in writers.items():
        if name in ("features.train_transcoders", "Dictionary.save"):
            continue  # output folders made when missing (their parents too)
        with pytest.raises(FileNotFoundError, match="no-such-folder") as e:
            write(missing)
        assert ".tmp" not in str(e.value), (name, e.value)
    assert started == [], "the work started before the output was checked"
    if os.geteuid() == 0:
        return  # root writes anywhere
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        for name, write in writers.items():
            with pytest.raises(PermissionError) as e:
                write(ro)
            assert str(ro) in str(e.value) and ".tmp" not in str(e.value), (name, e.value)
            assert str(e.value).startswith("cannot "), (name, e.value)  # the message alone, as Python's own
        assert started == [], "the work started before the output was checked"
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o700)


def test_piece_id_refuses_a_text_of_several_pieces_and_names_them(grassmann):
    she = grassmann.piece_id("she")
    assert she == grassmann.piece_id("▁she") == grassmann.piece_id("_she")
    assert grassmann.pieces([she]) == ["▁she"]
    pieces = grassmann.pieces(grassmann.encode(" she"))
    assert len(pieces) > 1
    with pytest.raises(ValueError, match=r"' she'.*" + str(len(pieces)) + r" pieces") as e:
        grassmann.piece_id(" she")
    assert all(f"'{p}'" in str(e.value) for p in pieces), e.value
    with pytest.raises(ValueError, match="empty"):
        grassmann.piece_id("")


def test_a_hook_returning_float64_is_cast_to_float32_as_the_docstring_says(grassmann):
    doc = " ".join(gwb.Model.run.__doc__.split())
    assert "float64" in doc and "is cast to float32" in doc, doc
    ids = grassmann.encode(PROMPT)
    bump = np.float64(1e-3)
    wide = grassmann.run(ids, hooks={"gate.1": lambda v, n: v.astype(np.float64) + bump})
    narrow = grassmann.run(ids, hooks={"gate.1": lambda v, n: (v.astype(np.float64) + bump).astype(np.float32)})
    assert np.array_equal(wide, narrow)


def test_a_stats_option_out_of_range_gets_the_command_lines_sentence(grassmann, tmp_path):
    text = tmp_path / "d.txt"
    text.write_text("It is a truth universally acknowledged. " * 8, encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("stride (--stride) must be an integer, at least 1; got 0")):
        grassmann.stats([text], stride=0, out=tmp_path / "s.npz")
    with pytest.raises(ValueError, match=re.escape("shard (--shard) is written i/n")):
        grassmann._m.stats(None, [os.fspath(text)], options={"shard": "two"}, out="", progress=None)
    assert not (tmp_path / "s.npz").exists()


def test_a_trace_option_out_of_range_gets_the_command_lines_sentence(grassmann):
    # The engine's table (traceOptions): the sentence `gwb trace` prints (TraceRefusesBadOptionsNamingThem).
    with pytest.raises(ValueError, match=re.escape("lens_k (--lens-k) must be an integer, at least 0; got -3")):
        grassmann.trace("It is", lens=True, lens_k=-3)
    with pytest.raises(ValueError, match=re.escape("max_tokens (--max-tokens) must be an integer, at least 0; got -1")):
        grassmann.trace("It is", max_tokens=-1)
