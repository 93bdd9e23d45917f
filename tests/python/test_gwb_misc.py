"""generate, open_stats, figure, the import report, and the GIL released while the engine works."""

import os
import re
import threading
import time

import numpy as np
import pytest

import gwb
from gwb import _paths
from conftest import PROMPT, need_figures, need_figures_in_process, run_gwb


def test_generate_equals_command_line(grassmann):
    r = run_gwb("generate", "--model", "grassmann", "--prompt", "It is a truth", "--max-new", "12", "--seed", "7",
                "--top-k", "20")
    g = grassmann.generate("It is a truth", max_new=12, seed=7, top_k=20)
    assert g.text in r.stdout, (g.text, r.stdout)
    assert len(g.ids) == g.prompt_length + 12
    assert g.text == "It is a truth" + g.completion or g.text.startswith("It is a truth")
    greedy = grassmann.generate(grassmann.encode("It is a truth"), max_new=5, greedy=True)
    assert greedy.ids == grassmann.generate("It is a truth", max_new=5, greedy=True, seed=99).ids


def test_open_stats_reads_what_gwb_stats_writes(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text((PROMPT + ". ") * 40, encoding="utf-8")
    out = tmp_path / "s.npz"
    run_gwb("stats", "--data", corpus, "--window", "32", "--stride", "32", "--max-windows", "3", "--out", out)
    s = gwb.open_stats(out)
    assert len(s) > 5
    assert s.meta
    import zipfile
    with zipfile.ZipFile(out) as z:
        assert {n[:-4] for n in z.namelist() if n.endswith(".npy")} == set(s)


def test_one_statistics_file_reopens_equal_in_python_and_the_window(tmp_path):
    # Issue 48: a file the command line writes (gwb stats) reads the same in Python (open_stats)
    # and in the window's Corpus view (gwb figure --stats --data writes that view's own tables:
    # the engine's one reader, CorpusStats::read, behind both).
    need_figures()
    corpus = tmp_path / "c.txt"
    corpus.write_text((PROMPT + ". ") * 40, encoding="utf-8")
    out = tmp_path / "s.npz"
    run_gwb("stats", "--data", corpus, "--window", "32", "--stride", "32", "--max-windows", "3", "--out", out)
    s = gwb.open_stats(out)
    run_gwb("figure", "--stats", out, "--view", "corpus", "--quantity", "gate_mean", "--out", tmp_path / "f.svg",
            "--data", tmp_path / "d")
    hist = np.load(tmp_path / "d_gate_mean_histogram.npy")
    summary = np.load(tmp_path / "d_gate_mean_summary.npy")
    counts = s["model.gate_mean.counts"]
    assert hist.shape == counts.shape and counts.sum() > 0
    np.testing.assert_array_equal(hist, counts.astype(np.float32))
    np.testing.assert_array_equal(summary[:, 0], s["model.gate_mean.n"].astype(np.float32))  # column n
    np.testing.assert_allclose(summary[:, 1], s["model.gate_mean.mean"], rtol=1e-6)  # column mean


def test_figure_is_an_inline_svg(tmp_path, grassmann):
    need_figures_in_process()
    f = gwb.figure(view="gate", prompt="It is a truth universally acknowledged", width="3.5in", layer=2)
    svg = f._repr_svg_()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg[:400]
    assert "</svg>" in svg
    f.save(tmp_path / "gate.svg")
    assert (tmp_path / "gate.svg").read_text(encoding="utf-8") == svg
    with pytest.raises(ValueError, match="format='pdf'"):
        f.save(tmp_path / "gate.pdf")
    pdf = gwb.figure(view="gate", prompt="It is a truth", format="pdf", model=grassmann)
    assert pdf.data.startswith(b"%PDF")
    with pytest.raises(ValueError, match="view"):
        gwb.figure(view="nonsense", prompt="It is")


def test_figure_is_drawn_in_process_as_the_program_draws_it(tmp_path, monkeypatch):
    """gwb.figure runs no program (every way to start one fails here) and draws the same figure
    `gwb figure` writes."""
    need_figures_in_process()
    import subprocess

    def no_program(*a, **k):
        raise AssertionError("gwb.figure started a program")

    args = dict(view="plucker", prompt="It is a truth universally acknowledged, that a single man", layer=1)
    with monkeypatch.context() as m:
        for name in ("run", "Popen", "call", "check_call", "check_output"):
            m.setattr(subprocess, name, no_program)
        m.setattr(os, "system", no_program)
        f = gwb.figure(**args)
    need_figures()
    out = tmp_path / "plucker.svg"
    run_gwb("figure", "--view", "plucker", "--prompt", args["prompt"], "--layer", "1", "--out", str(out))
    assert f.data == out.read_bytes()


def test_the_gil_is_released_while_the_engine_works(grassmann):
    text = " ".join(["She said that she would walk to the house"] * 11)
    done = threading.Event()

    def work():
        grassmann.patch(clean=text, site="resid", mode="zero", progress=False)
        done.set()

    ticks = 0
    t = threading.Thread(target=work)
    t.start()
    start = time.monotonic()
    while not done.is_set() and time.monotonic() - start < 1.0:
        time.sleep(0.005)
        ticks += 1
    t.join()
    # With the GIL held by the engine this loop would not run at all until the sweep ends (1 tick).
    assert ticks > 10, ticks


def test_import_report_is_kept(tmp_path):
    import parity_alphaxiv
    import parity_common as pc
    parity_alphaxiv.make(pc.parser("").parse_args(["--kind", "grassmann", "--size", "tiny", "--out", str(tmp_path)]))
    import json
    with open(tmp_path / "expected.json") as f:
        e = json.load(f)
    m = gwb.load(e["checkpoint"])
    assert m.report["layout"] == "alphaxiv"
    assert m.report["detection"] and m.report["flags"]
    assert m.config["family"] == "alphaxiv"
    assert gwb.bundled().report == {}


def test_stats_equal_command_line_and_stop_on_ctrl_c(tmp_path, grassmann, transformer):
    corpus = tmp_path / "c.txt"
    corpus.write_text((PROMPT + ". ") * 40, encoding="utf-8")
    run_gwb("stats", "--data", corpus, "--window", "32", "--stride", "32", "--max-windows", "3",
            "--out", tmp_path / "cli.npz")
    cli = gwb.open_stats(tmp_path / "cli.npz")
    s = grassmann.stats(corpus, baseline=transformer, window=32, stride=32, max_windows=3, out=tmp_path / "py.npz",
                        progress=False)
    assert set(s) == set(cli)
    for k in s:
        np.testing.assert_allclose(s[k], cli[k], rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=k)
    assert s.meta["complete"] is True or s.meta.get("complete") in (True, 1)

    calls = []

    def interrupt(fraction):
        calls.append(fraction)
        if len(calls) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grassmann.stats(corpus, window=16, stride=16, out=tmp_path / "partial.npz", progress=interrupt)
    partial = gwb.open_stats(tmp_path / "partial.npz")
    assert partial.meta["complete"] in (False, 0)


def test_info_prints_the_training_summary_one_field_a_line():
    out = run_gwb("info", "--model", "grassmann").stdout
    lines = out.splitlines()
    assert "training:" in lines, out
    start = lines.index("training:") + 1
    fields = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        fields.append(line)
    assert len(fields) > 5 and all(":" in f for f in fields), out
    assert not any(f.strip().startswith("{") or '":"' in f for f in fields), "JSON instead of fields"
    assert any(f.split()[0] == "train_files:" and "emma.txt, " in f for f in fields), out


def test_the_package_has_the_projects_version():
    # Issue 67: gwb.__version__, the version `gwb --version` prints (CMakeLists.txt's project VERSION).
    assert re.fullmatch(r"\d+\.\d+\.\d+", gwb.__version__), gwb.__version__
    cmake = os.path.join(_paths.SOURCE_DIR or "", "CMakeLists.txt")
    if os.path.exists(cmake):
        with open(cmake, encoding="utf-8") as f:
            assert re.search(r"project\(\s*\w+\s+VERSION\s+([0-9.]+)", f.read()).group(1) == gwb.__version__
    assert run_gwb("--version").stdout.split()[-1] == gwb.__version__


def test_info_says_what_the_validation_figures_are_over():
    # Issue 67: the checkpoint's valid_perplexity (a training-time sample) is labelled as such, so it
    # reads right beside the whole split's figure in resources/models/README.md.
    out = run_gwb("info", "--model", "grassmann").stdout
    fields = {line.split()[0]: line for line in out.splitlines() if line.startswith("  valid_")}
    for key in ("valid_loss:", "valid_perplexity:"):
        assert "at training time, over 15360 validation tokens (60 blocks of 256)" in fields[key], out
        assert "gwb eval scores the whole split" in fields[key], out


def test_figure_keywords_are_checked_in_pythons_words(tmp_path, capsys):
    need_figures_in_process()
    with pytest.raises(ValueError, match="format must be 'svg', 'png' or 'pdf', got 'jpg'"):
        gwb.figure("gate", prompt="It is", format="jpg")
    with pytest.raises(ValueError, match="view must be a view id"):
        gwb.figure(None, prompt="It is")
    with pytest.raises(ValueError, match=r"\.save\(path\)"):
        gwb.figure("gate", prompt="It is", out=str(tmp_path / "x.svg"))
    assert not (tmp_path / "x.svg").exists()
    assert gwb.figure("gate", help=True) is None
    assert "font_size" in capsys.readouterr().out  # the options as keywords
    with pytest.raises(ValueError) as e:
        gwb.figure("gate", prompt="It is a truth universally acknowledged", layer=99)
    assert "layer 99 is out of range" in str(e.value) and "--" not in str(e.value)
    png = gwb.figure("gate", prompt="It is a truth", format="PNG")
    assert png.format == "png" and png._repr_png_() is not None


def test_figure_save_says_where_it_could_not_write_and_writes_as_any_new_file(tmp_path):
    need_figures_in_process()
    f = gwb.figure("gate", prompt="It is a truth universally acknowledged")
    missing = tmp_path / "no-such-folder" / "g.svg"
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        f.save(missing)
    with pytest.raises(ValueError, match=r"ending in \.svg"):
        f.save(tmp_path)
    old = os.umask(0o022)
    try:
        f.save(tmp_path / "g.svg")
    finally:
        os.umask(old)
    assert (tmp_path / "g.svg").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(PermissionError, match="cannot write"):
            f.save(ro / "g.svg")


def test_figure_keeps_the_commands_notes():
    need_figures_in_process()
    f = gwb.figure("gate", prompt="It is a truth universally acknowledged", **{"continue": 3, "greedy": True})
    assert any("continued the prompt by 3 tokens" in w for w in f.warnings), f.warnings
