"""model.patch() and model.paths() are what gwb patch and gwb paths write: the same array names
and values."""

import json

import numpy as np
import pytest

import gwb
from conftest import run_gwb

CLEAN = "She said that she would walk to the house"
CORRUPT = "He said that he would walk to the house"


@pytest.mark.parametrize("kind,site,mode,method", [
    ("grassmann", "resid", None, "exact"),
    ("grassmann", "offset", None, "exact"),
    ("grassmann", "gate", "mean", "exact"),
    ("grassmann", "mixer", None, "attribution"),
    ("transformer", "head", None, "exact"),
    ("transformer", "ffn", "zero", "exact"),
])
def test_patch_equals_command_line(tmp_path, kind, site, mode, method):
    m = gwb.bundled(kind)
    out = tmp_path / "p.npz"
    args = ["patch", "--model", kind, "--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "she", "--wrong", "he",
            "--site", site, "--out", out]
    if mode:
        args += ["--mode", mode]
    if method != "exact":
        args += ["--method", method]
    run_gwb(*args)
    file = gwb.open_patch(out)
    p = m.patch(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he", site=site, mode=mode, method=method,
                progress=False)
    assert set(p) == set(file), set(p) ^ set(file)
    for name in p:
        assert p[name].dtype == file[name].dtype, name
        np.testing.assert_allclose(p[name], file[name], rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=name)
    # One writer of meta.json (the engine's): the same keys and values as the command line's file,
    # but for the model's path as each was given.
    assert set(p.meta) == set(file.meta), set(p.meta) ^ set(file.meta)
    for key in file.meta:
        if key != "model_file":
            assert p.meta[key] == file.meta[key], key


def test_a_sweep_saved_from_python_is_resumed_by_the_command_line(tmp_path, grassmann):
    """Result.save writes the file gwb patch writes: --resume takes it as the same sweep (every cell
    done) and writes equal arrays; a sweep of another site is refused by name."""
    p = grassmann.patch(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he", site="offset", progress=False)
    saved = tmp_path / "python.npz"
    p.save(saved)
    out = tmp_path / "resumed.npz"
    r = run_gwb("patch", "--model", "grassmann", "--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "she",
                "--wrong", "he", "--site", "offset", "--resume", saved, "--out", out)
    n = p["computed"].size
    assert f"{n} of {n} cells computed already" in r.stderr
    resumed = gwb.open_patch(out)
    for name in p:
        np.testing.assert_array_equal(p[name], resumed[name], err_msg=name)
    other = run_gwb("patch", "--model", "grassmann", "--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "she",
                    "--wrong", "he", "--site", "resid", "--resume", saved, "--out", out, check=False)
    assert other.returncode != 0 and "different sweep" in other.stderr


def test_ablation_without_a_corrupted_prompt(grassmann):
    p = grassmann.patch(clean=CLEAN, site="ffn", mode="zero", progress=False)
    assert "delta_logprob" in p and "effect" not in p
    T = len(grassmann.encode(CLEAN))
    assert p["delta_logprob"].shape == (grassmann.config["n_layers"], T, T)


def test_one_layer_and_progress_callback(grassmann):
    seen = []
    p = grassmann.patch(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he", site="resid", layer=2,
                        progress=seen.append)
    assert p["computed"].shape[0] == 1 and p["computed"].all()
    assert p.meta["row_labels"] == ["h^2"]
    assert seen and seen[-1] == pytest.approx(1.0)


def test_paths_equals_command_line(tmp_path, grassmann):
    out = tmp_path / "paths.npz"
    run_gwb("paths", "--model", "grassmann", "--clean", CLEAN, "--corrupt", CORRUPT, "--answer", "she", "--wrong", "he",
            "--out", out)
    file = gwb.open_paths(out)
    assert isinstance(file, gwb.PathResult)
    p = grassmann.paths(CLEAN, CORRUPT, "she", "he", progress=False)
    np.testing.assert_allclose(p["effect"], file["effect"], rtol=1e-6, atol=1e-7, equal_nan=True)
    # One writer of meta.json (the engine's): the file's keys and values, but for the model's path.
    assert set(p.meta) == set(file.meta), set(p.meta) ^ set(file.meta)
    for key in file.meta:
        if key != "model_file":
            assert p.meta[key] == file.meta[key], key
    with pytest.raises(ValueError, match="not a file from gwb patch"):
        gwb.open_patch(out)


def test_every_patch_file_the_command_line_writes_opens(tmp_path, grassmann):
    # A pairs run, its two shards and their merge open with open_patch as what model.patch(pairs=)
    # returns; a paths --pairs file with open_paths; each refuses the other kinds.
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as f:
        for clean, corrupt in ((CLEAN, CORRUPT), ("She said that she would walk to the shop", "He said that he would walk to the shop")):
            f.write(json.dumps(dict(clean=clean, corrupt=corrupt, answer="she", wrong="he")) + "\n")
    common = ["--model", "grassmann", "--pairs", pairs, "--site", "resid", "--bootstrap", "20"]
    r = run_gwb("patch", *common, "--out", tmp_path / "all.npz")
    # The terminal shows four significant digits (the file keeps them all; issue 52 saw nine).
    import re
    cells = [line for line in r.stdout.splitlines() if ", n = " in line]
    assert cells, r.stdout
    for line in cells:
        for num in re.findall(r"-?\d[\d.]*(?:e[-+]\d+)?", line.split(":", 1)[1].split(", n =")[0]):
            assert len(num.lstrip("-").replace(".", "").split("e")[0].lstrip("0")) <= 4, line
    run_gwb("patch", *common, "--shard", "0/2", "--out", tmp_path / "s0.npz")
    run_gwb("patch", *common, "--shard", "1/2", "--out", tmp_path / "s1.npz")
    run_gwb("patch", "merge", tmp_path / "s0.npz", tmp_path / "s1.npz", "--out", tmp_path / "merged.npz")
    mine = grassmann.patch(pairs=pairs, site="resid", bootstrap=20, progress=False)
    for name in ("all", "s0", "s1", "merged"):
        f = gwb.open_patch(tmp_path / f"{name}.npz")
        assert isinstance(f, gwb.PatchResult), name
        assert "line" in f and "effect_mean" in f, name
    for name in ("all", "merged"):
        f = gwb.open_patch(tmp_path / f"{name}.npz")
        assert set(f) == set(mine), name
        np.testing.assert_allclose(f["effect"], mine["effect"], rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=name)
    # The same meta.json as the command line's file (one writer in the engine), no file in between.
    whole = gwb.open_patch(tmp_path / "all.npz")
    assert set(whole.meta) == set(mine.meta)
    for key in whole.meta:
        if key != "model_file":
            assert whole.meta[key] == mine.meta[key], key
    r = run_gwb("paths", "--model", "grassmann", "--pairs", pairs, "--out", tmp_path / "paths.npz",
                "--data", tmp_path / "paths.csv")
    # Both files named; the verdict on clean - corrupted first, then the strongest paths as patch
    # --pairs prints its cells.
    assert f"wrote {tmp_path / 'paths.npz'}, {tmp_path / 'paths.csv'}" in r.stdout, r.stdout
    assert "clean - corrupted over 2 pairs: mean" in r.stdout and "estimator: " in r.stdout, r.stdout
    assert " -> " in r.stdout and ", n = " in r.stdout, r.stdout
    assert (tmp_path / "paths.csv").exists()
    pp = gwb.open_paths(tmp_path / "paths.npz")
    assert pp["metric"].ndim == 3 and pp.meta["sender_labels"]
    with pytest.raises(ValueError, match="not a file from gwb paths"):
        gwb.open_paths(tmp_path / "all.npz")


def test_patch_messages(grassmann):
    with pytest.raises(ValueError, match="different lengths"):
        grassmann.patch(clean=CLEAN, corrupt="He said", answer="she", wrong="he", progress=False)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        grassmann.patch(clean=CLEAN, corrupt=CORRUPT, answer="shezzqx", wrong="he", progress=False)
    with pytest.raises(ValueError, match="head.*does not exist"):
        grassmann.patch(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he", site="head", progress=False)


def test_patch_over_pairs(tmp_path, grassmann):
    pairs = [{"clean": CLEAN, "corrupt": CORRUPT, "answer": "she", "wrong": "he", "template": "walk"},
             {"clean": "She could not help laughing, and", "corrupt": "He could not help laughing, and",
              "answer": "she", "wrong": "he"},
             {"clean": "She said", "corrupt": "He said that", "answer": "she", "wrong": "he"}]  # lengths differ
    p = grassmann.patch(pairs=pairs, site="resid", seed=3)
    assert p["metric"].shape[0] == 2
    assert len(p.meta["skipped"]) == 1 and "different lengths" in p.meta["skipped"][0]["reason"]
    shown = (p["effect_n"] > 1) & np.isfinite(p["effect_mean"]) & np.isfinite(p["effect_ci_low"])
    assert np.all(p["effect_ci_low"][shown] <= p["effect_ci_high"][shown] + 1e-12)
    # each pair's metric is the single-pair sweep's, aligned at the metric position (the last column)
    for i, pair in enumerate(pairs[:2]):
        one = grassmann.patch(clean=pair["clean"], corrupt=pair["corrupt"], answer="she", wrong="he", site="resid",
                              progress=False)
        np.testing.assert_allclose(p["metric"][i][:, -1], one["metric"][:, -1], rtol=1e-6)
    with pytest.raises(ValueError, match="no usable pair"):
        grassmann.patch(pairs=[pairs[2]])
    with pytest.raises(FileNotFoundError):
        grassmann.patch(pairs=tmp_path / "none.jsonl")


def test_paths_linear(tmp_path, grassmann):
    """Direct logit attribution of a pre-norm model (the bundled architecture, pre-norm, random
    weights, the bundled tokenizer): the terms sum to the corrupted metric; the bundled post-norm
    model is refused with the reason."""
    config = dict(grassmann.config, norm="pre", name="pre")
    (tmp_path / "pre.json").write_text(json.dumps(config))
    run_gwb("init", "--config", tmp_path / "pre.json", "--tokenizer", grassmann.path, "--seed", "3",
            "--out", tmp_path / "pre.gwb")
    m = gwb.load(tmp_path / "pre.gwb")
    assert m.config["norm"] == "pre"
    p = m.paths(CLEAN, CORRUPT, "she", "he", linear=True, progress=False)
    total = p["linear_corrupt"].sum() + p["linear_bias"]
    assert abs(total - p["corrupt_metric"]) < 1e-5
    assert p.meta["linear_labels"][0] == "embed"
    assert p["linear_channel_corrupt"].shape == (6, 128)
    with pytest.raises(ValueError, match="needs a pre-norm model"):
        grassmann.paths(CLEAN, CORRUPT, "she", "he", linear=True, progress=False)


def test_a_skipped_pair_counts_its_tokens_in_words(grassmann):
    assert len(grassmann.encode("She")) == 1
    r = grassmann.patch(pairs=[dict(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he"),
                               dict(clean="She", corrupt="She said that", answer="she", wrong="he")],
                        site="resid", bootstrap=10, progress=False)
    reason = r.meta["skipped"][0]["reason"]
    assert "clean 1 token," in reason and "tokens," not in reason.split("clean 1 token,")[0], reason


def test_paths_over_pairs_equals_the_command_line(tmp_path, grassmann):
    """model.paths(pairs=) runs the engine's pairs loop (gwb paths --pairs): the same arrays and
    meta, from a file or from a list of dicts (no file in between), unusable lines skipped."""
    rows = [dict(clean=CLEAN, corrupt=CORRUPT, answer="she", wrong="he"),
            dict(clean="She said that she would walk to the shop", corrupt="He said that he would walk to the shop",
                 answer="she", wrong="he"),
            dict(clean=CLEAN, corrupt="He said", answer="she", wrong="he")]  # other length: skipped
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    out = tmp_path / "paths.npz"
    run_gwb("paths", "--model", "grassmann", "--pairs", pairs, "--receiver", "logits", "--bootstrap", "50",
            "--out", out)
    file = gwb.open_paths(out)
    for given in (pairs, rows):
        mine = grassmann.paths(pairs=given, receivers="logits", bootstrap=50, progress=False)
        assert set(mine) == set(file), set(mine) ^ set(file)
        for name in file:
            np.testing.assert_array_equal(mine[name], file[name], err_msg=name)
        for key in ("sender_labels", "receiver_labels", "skipped", "pairs", "bootstrap", "seed", "definitions"):
            assert mine.meta[key] == file.meta[key], key
    assert file["effect"].shape[0] == 2 and [s["line"] for s in file.meta["skipped"]] == [3]
    with pytest.raises(ValueError, match="no usable pair"):
        grassmann.paths(pairs=rows[2:], progress=False)
