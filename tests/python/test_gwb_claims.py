"""Claims that hold up (issue 65): a normalised effect from a vanishing clean - corrupted difference
is flagged, never returned as an effect; the estimators over pairs equal a plain numpy computation
on the per-pair arrays the files carry."""

import json

import re

import numpy as np
import pytest

import gwb
from conftest import run_gwb

ELIZABETH = "Elizabeth walked to the window, and then"
DARCY = "Darcy walked to the window, and then"

MASK64 = (1 << 64) - 1


def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def _draw(seed, resample, k, pairs):
    """effect_claims.h's bootstrapDraw, stated plainly."""
    x = _splitmix64(seed ^ _splitmix64(resample * pairs + k))
    return min(pairs - 1, int(((x >> 11) * 2.0 ** -53) * pairs))


def _ratio_of_means(num, den, threshold):
    ok = np.isfinite(num)
    n = ok.sum(axis=0)
    s_num = np.where(ok, num, 0).sum(axis=0)
    s_den = np.where(ok, den[:, None], 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = s_num / s_den
        mean_den = s_den / n
    return np.where((n > 0) & (np.abs(mean_den) >= threshold) & (s_den != 0), ratio, np.nan)


def test_a_rounding_level_difference_warns_and_returns_no_effect(grassmann):
    with pytest.warns(gwb.ClaimWarning, match=r"clean - corrupted is 0\.000\d+ logits, below 0\.05"):
        p = grassmann.patch(clean=ELIZABETH, corrupt=DARCY, answer="she", wrong="he", site="resid", progress=False)
    assert p.meta["effect_defined"] is False and p.meta["min_difference"] == 0.05
    assert "below 0.05" in p.meta["effect_note"]
    assert np.all(np.isnan(p["effect"]))
    np.testing.assert_allclose(p["raw_effect"], p["metric"] - p["corrupt_metric"], atol=0)
    # The threshold is an option: 0 gives the quotient back (and no warning).
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", gwb.ClaimWarning)
        q = grassmann.patch(clean=ELIZABETH, corrupt=DARCY, answer="she", wrong="he", site="resid", progress=False,
                            min_difference=0)
    assert q.meta["effect_defined"] is True
    with pytest.raises(ValueError, match=re.escape("min_difference (--min-difference) must be a number, at least 0; "
                                                   "got -1")):
        grassmann.patch(clean=ELIZABETH, corrupt=DARCY, answer="she", wrong="he", min_difference=-1)
    with pytest.warns(gwb.ClaimWarning, match="no normalised effect"):
        r = grassmann.paths(clean=ELIZABETH, corrupt=DARCY, answer="she", wrong="he", progress=False)
    assert r.meta["effect_defined"] is False and np.all(np.isnan(r["effect"]))


def test_pairs_estimators_equal_plain_numpy(tmp_path, grassmann):
    pairs = tmp_path / "pairs.jsonl"
    rows = [("She said that she would walk to the shop", "He said that he would walk to the shop"),
            ("She could not help laughing, and", "He could not help laughing, and"),
            (ELIZABETH, DARCY),
            ("Elizabeth said that", "Darcy said that"),
            ("She was in the room, and", "He was in the room, and")]
    with open(pairs, "w") as f:
        for clean, corrupt in rows:
            f.write(json.dumps(dict(clean=clean, corrupt=corrupt, answer="she", wrong="he")) + "\n")
    B, seed = 60, 7
    with _any_warnings():
        p = grassmann.patch(pairs=pairs, site="offset", bootstrap=B, seed=seed, progress=False)
    metric, c, k = p["metric"], p["clean_metric"], p["corrupt_metric"]
    P = metric.shape[0]
    num = (metric - k[:, None, None]).reshape(P, -1)
    den = c - k
    ratio = _ratio_of_means(num, den, 0.05).reshape(metric.shape[1:])
    np.testing.assert_allclose(p["effect_mean"], ratio, rtol=1e-12, atol=1e-12, equal_nan=True)
    # The paired bootstrap: resample the pairs, recompute the ratio; 2.5th/97.5th percentiles.
    draws = np.array([[_draw(seed, b, j, P) for j in range(P)] for b in range(B)])
    boot = np.stack([_ratio_of_means(num[d], den[d], 0.05) for d in draws])
    enough = np.isfinite(boot).sum(axis=0) >= int(np.ceil(0.5 * B))
    defined = np.isfinite(ratio.reshape(-1)) & enough
    low = np.full(num.shape[1], np.nan)
    high = np.full(num.shape[1], np.nan)
    for i in np.flatnonzero(defined):
        v = boot[:, i][np.isfinite(boot[:, i])]
        low[i], high[i] = np.quantile(v, 0.025), np.quantile(v, 0.975)
    np.testing.assert_allclose(p["effect_ci_low"].reshape(-1), low, rtol=1e-12, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(p["effect_ci_high"].reshape(-1), high, rtol=1e-12, atol=1e-12, equal_nan=True)
    # Is there anything to explain: the mean difference, its interval, the share in the answer's direction.
    diff = p["difference"]
    assert diff[0] == pytest.approx(den.mean(), abs=1e-12)
    means = np.array([den[d].mean() for d in draws])
    assert diff[1] == pytest.approx(np.quantile(means, 0.025), abs=1e-12)
    assert diff[2] == pytest.approx(np.quantile(means, 0.975), abs=1e-12)
    assert diff[3] == pytest.approx((den > 0).mean(), abs=1e-12)
    # The mean of per-pair ratios only over the pairs above the threshold, saying how many it left out.
    above = np.abs(den) >= 0.05
    with np.errstate(invalid="ignore"):
        mor = np.nanmean(np.where(above[:, None], num / den[:, None], np.nan), axis=0)
    np.testing.assert_allclose(p["mean_of_ratios"].reshape(-1), mor, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert np.all(p["mean_of_ratios_left_out"].reshape(-1)[np.isfinite(num).any(axis=0)] <= (~above).sum())
    assert p.meta["estimator"].startswith("ratio of means")
    assert p.meta["correction"].startswith("Holm")
    assert p.meta["verdict"].startswith(f"clean - corrupted over {P} pairs")


class _any_warnings:
    """Collects ClaimWarnings without failing (a pairs file may or may not have an effect to localise)."""

    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", gwb.ClaimWarning)
        return self

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


def test_the_command_line_says_it_first(tmp_path):
    r = run_gwb("patch", "--model", "grassmann", "--clean", ELIZABETH, "--corrupt", DARCY, "--answer", "she",
                "--wrong", "he", "--site", "resid", "--out", tmp_path / "p.npz")
    assert r.stdout.startswith("note: no normalised effect: clean - corrupted is 0.000"), r.stdout


def test_causal_options_are_the_engines_in_every_front_end(tmp_path):
    """min_difference, bootstrap, seed and check: one table (the engine's). Python's signatures and the
    command lines' help give its defaults and ranges, and a bad value gets the same sentence."""
    import inspect
    table = {o["key"]: o for o in gwb._gwb.causal_options()}
    assert list(table) == ["min_difference", "bootstrap", "seed", "check"]
    assert gwb.MIN_DIFFERENCE == table["min_difference"]["default"]
    for f, keys in ((gwb.Model.patch, list(table)), (gwb.Model.paths, ["min_difference", "bootstrap", "seed"])):
        params = inspect.signature(f).parameters
        for key in keys:
            assert params[key].default == table[key]["default"], (f.__name__, key)
    for command, keys in ((["patch"], list(table)), (["paths"], ["min_difference", "bootstrap", "seed"]),
                          (["patch", "merge"], ["bootstrap", "seed"])):
        text = " ".join(run_gwb(*command, "--help").stdout.split())
        for key in keys:
            o = table[key]
            assert f"--{o['flag']}" in text and f"(default {o['default']:g}; {o['range']})" in text, (command, key)
    model = gwb.bundled("grassmann")
    pairs = [dict(clean=ELIZABETH, corrupt=DARCY, answer="she", wrong="he")]
    for kw, argv, sentence in (
            (dict(bootstrap=-3), ["--bootstrap", "-3"], "bootstrap (--bootstrap) must be an integer in [0, 1000000]; "
                                                         "got -3"),
            (dict(seed=-1), ["--seed", "-1"], "seed (--seed) must be an integer, at least 0; got -1"),
            (dict(min_difference=-1), ["--min-difference", "-1"],
             "min_difference (--min-difference) must be a number, at least 0; got -1")):
        for method in ("patch", "paths"):
            with pytest.raises(ValueError, match=re.escape(sentence)):
                getattr(model, method)(pairs=pairs, progress=False, **kw)
            r = run_gwb(method, "--model", "grassmann", "--pairs", tmp_path / "none.jsonl", "--site", "resid",
                        "--out", tmp_path / "o.npz", *argv, check=False) if method == "patch" else \
                run_gwb(method, "--model", "grassmann", "--pairs", tmp_path / "none.jsonl", "--out",
                        tmp_path / "o.npz", *argv, check=False)
            assert r.returncode == 1 and sentence in r.stderr, (method, argv, r.stderr)
    with pytest.raises(ValueError, match=re.escape("check (--check) must be an integer in [0, 100000]; got 100001")):
        model.patch(pairs=pairs, method="attribution", check=100001, progress=False)
