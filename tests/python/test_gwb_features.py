"""gwb.features checked independently: the trainer against a plain PyTorch loop written here, the
quality figures recomputed from the saved weights with numpy and the hooks API, the top contexts
by brute force, a planted direction recovered, the files in SAELens's layout."""

import json
import os
import struct

import numpy as np
import pytest

import gwb
from conftest import austen_split, run_gwb
from sae_reference import reference_training


def _position_sums(rows):
    """Each position's sum and count over windows of differing lengths (rows: T_w x d arrays)."""
    T = max(len(r) for r in rows)
    total = np.zeros((T, rows[0].shape[1]))
    count = np.zeros((T, 1))
    for r in rows:
        total[:len(r)] += np.asarray(r, np.float64)
        count[:len(r)] += 1
    return total, count


def _others_mean(sums, v):
    """The ablation baseline of one window: each position's mean over the OTHER windows (the
    window's own value v left out)."""
    total, count = sums
    n = len(v)
    return ((total[:n] - np.asarray(v, np.float64)) / (count[:n] - 1)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    # About 30k tokens of Emma for training, the next 8k characters held out.
    return austen_split(tmp_path_factory, "features", 160_000, 150_000)


@pytest.mark.parametrize("architecture", ["topk", "relu"])
def test_trainer_equals_a_plain_pytorch_loop(grassmann, corpus, architecture):
    pytest.importorskip("torch")
    rows = gwb.features.activations(grassmann, "resid.2", [corpus[0]], max_rows=3000)["rows"]
    steps, batch = 30, 256
    # TopK: features dead after 2 steps, so the AuxK loss takes part; ReLU: none dead (no resampling).
    dead_after = 2 * batch if architecture == "topk" else 10**9
    r = gwb.features.train_on_rows(rows, architecture=architecture, d_sae=96, k=8, l1=0.05, tokens=steps * batch,
                                   batch=batch, lr=1e-3, seed=3, dead_after_tokens=dead_after, device="cpu")
    assert r["steps"] == steps and r["complete"]
    want = reference_training(rows, r["initial"], architecture, 8, 0.05, steps, batch, 1e-3,
                              -(-dead_after // batch), 1 / 32)
    got = r["dictionary"]
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        a, b = getattr(got, name), want[name]
        scale = np.abs(b).max()
        # Per feature (W_enc's columns, W_dec's rows): float32 arithmetic in two different orders over
        # 30 Adam steps agrees to about 1e-7, except for a feature whose pre-activation sits at the
        # ReLU's kink on some row, where rounding decides the mask: seen for one or two of the 96
        # features with pip torch's MKL on an AVX-512 machine (8e-4 of the scale; 1e-7 everywhere with
        # MKL_CBWR=COMPATIBLE). So every feature but a few must agree closely, and those within 1e-2.
        per_feature = {"W_enc": lambda x: x.T, "W_dec": lambda x: x, "b_enc": lambda x: x[:, None],
                       "b_dec": lambda x: x[None, :]}[name](np.abs(a - b)).max(axis=1) / scale
        off = int((per_feature > 2e-4).sum())
        print(f"{architecture} {name}: {off} of {len(per_feature)} features past 2e-4, worst {per_feature.max():.1e}")
        assert off <= max(1, len(per_feature) // 32) and per_feature.max() < 1e-2, \
            f"{name}: {off} features differ by more than 2e-4 of max |PyTorch| (worst {per_feature.max():.2e})"
    # the loop moved the weights (the comparison is not of two initialisations)
    assert np.abs(got.W_dec - r["initial"].W_dec).max() > 1e-2


def test_quality_recomputed_from_the_saved_weights(grassmann, corpus, tmp_path):
    site, ctx = "mixer.1", 64
    d = gwb.features.train(grassmann, site, [corpus[0]], d_sae=128, k=8, tokens=40_000, batch=1024, context=ctx,
                           progress=False)
    d.save(tmp_path / "sae")
    d = gwb.features.load(tmp_path / "sae")
    q = gwb.features.eval(grassmann, tmp_path / "sae", [corpus[1]], context=ctx)
    W_enc, b_enc, W_dec, b_dec = (np.asarray(getattr(d, n), np.float64) for n in ("W_enc", "b_enc", "W_dec", "b_dec"))

    def encode(x):
        pre = (x - b_dec) @ W_enc + b_enc
        z = np.maximum(pre, 0)
        thresh = -np.sort(-z, axis=1)[:, 7:8]  # the 8th largest
        return np.where(z >= thresh, z, 0)

    # The windows as the engine cuts them: the file tokenized whole, `ctx` tokens each.
    text = open(corpus[1], encoding="utf-8").read()
    ids = grassmann.encode(text)
    windows = [ids[s:s + ctx] for s in range(0, len(ids), ctx) if len(ids[s:s + ctx]) >= 2]
    xs, zs, ce = [], [], {"clean": 0.0, "spliced": 0.0}

    def nll(logits, w):
        logits = np.asarray(logits, np.float64)
        m = logits.max(1, keepdims=True)
        lp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
        return -sum(lp[t, w[t + 1]] for t in range(len(w) - 1))

    for w in windows:
        seen = {}
        clean = grassmann.run(w, hooks={site: lambda v, name: seen.setdefault("x", np.array(v))})
        x = seen["x"].astype(np.float64)
        z = encode(x)
        xhat = z @ W_dec + b_dec
        xs.append(x)
        zs.append(z)
        ce["clean"] += nll(clean, w)
        ce["spliced"] += nll(grassmann.run(w, hooks={site: lambda v, name: xhat.astype(np.float32)}), w)
    # The ablation baseline: each position's mean over the other held-out windows (positions apart).
    sums = _position_sums(xs)
    ce["ablated"] = sum(nll(grassmann.run(w, hooks={site: lambda v, name: _others_mean(sums, v)}), w)
                        for w in windows)
    x, z = np.concatenate(xs), np.concatenate(zs)
    xhat = z @ W_dec + b_dec
    ev = 1 - ((x - xhat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    n_pred = sum(len(w) - 1 for w in windows)
    assert q["rows"] == len(x)
    assert q["loss_tokens"] == n_pred
    assert q["explained_variance"] == pytest.approx(ev, abs=2e-4)
    assert q["l0"] == pytest.approx((z > 0).sum(1).mean(), abs=1e-3)
    assert q["dead_fraction"] == pytest.approx(1 - (z > 0).any(0).mean(), abs=1e-9)
    assert q["loss_clean"] == pytest.approx(ce["clean"] / n_pred, rel=1e-5)
    assert q["loss_spliced"] == pytest.approx(ce["spliced"] / n_pred, rel=1e-4)
    assert q["ablation"] == "per-position mean of the other windows" and q["ablation_note"] == ""
    assert q["loss_ablated"] == pytest.approx(ce["ablated"] / n_pred, rel=1e-5)
    want = (ce["ablated"] - ce["spliced"]) / (ce["ablated"] - ce["clean"])
    assert q["loss_recovered"] == pytest.approx(want, abs=1e-3)
    assert 0.3 < q["explained_variance"] < 1


def test_top_contexts_are_the_top_rows(grassmann, corpus, tmp_path):
    d = gwb.features.train(grassmann, "resid.3", [corpus[0]], d_sae=64, k=4, tokens=20_000, batch=1024, context=64,
                           progress=False)
    acts = gwb.features.activations(grassmann, "resid.3", [corpus[1]], context=64)
    z = d.encode(acts["rows"])
    feats = [int(f) for f in np.argsort(-(z > 0).sum(0))[:3]]  # three that fire often
    sums = gwb.features.top(grassmann, d, [corpus[1]], feats, n=5, context=64)
    for s, f in zip(sums, feats):
        col = z[:, f]
        order = np.argsort(-col, kind="stable")[:5]  # ties: the earlier row first
        assert [c["activation"] for c in s["top"]] == pytest.approx(col[order].tolist(), rel=1e-5)
        assert [(c["window"], c["position"]) for c in s["top"]] == [(acts["window"][i], acts["position"][i])
                                                                    for i in order]
        assert s["fired"] == int((col > 0).sum())
        assert sum(s["histogram_counts"]) == s["fired"]
        for c in s["top"]:  # the activation shown on the token itself is the one ranked
            assert c["activations"][c["position"] - c["begin"]] == pytest.approx(c["activation"], rel=1e-5)
        assert s["name"] == f"feature.resid.3.{f}"
        assert 0 <= s["reading_share"] <= 1 and s["reading_layer"] == 3
        assert len(s["promoted"]) == 10 and len(s["suppressed"]) == 10


def test_ground_truth_features_are_recovered():
    # The standard toy: rows are sparse non-negative sums of 64 known unit directions in 32
    # dimensions (about 4 at a time); every one of them becomes a feature.
    rng = np.random.default_rng(0)
    truth = rng.standard_normal((64, 32))
    truth /= np.linalg.norm(truth, axis=1, keepdims=True)
    active = rng.random((40_000, 64)) < 4 / 64
    rows = ((rng.uniform(0.5, 1.5, active.shape) * active) @ truth).astype(np.float32)
    r = gwb.features.train_on_rows(rows, d_sae=128, k=4, tokens=400_000, batch=1024, lr=4e-3, seed=0, device="cpu")
    dec = r["dictionary"].W_dec
    dec = dec / np.linalg.norm(dec, axis=1, keepdims=True)
    best = (truth @ dec.T).max(1)
    assert (best > 0.9).all(), f"recovered {np.sum(best > 0.9)} of 64 (worst cosine {best.min():.3f})"


def test_a_direction_planted_in_real_activations_is_found(grassmann, corpus):
    # Real activations, edited: a random direction u added on a random 3% of the rows. Features fire
    # on exactly those rows, and what they add to the reconstruction there is u. (An SAE may share u
    # among a few features composed with other content, as SAEs do to save active slots; the
    # toy above checks one feature per direction.)
    acts = gwb.features.activations(grassmann, "resid.2", [corpus[0]], max_rows=20_000)
    orig = acts["rows"]
    rng = np.random.default_rng(0)
    on = rng.random(len(orig)) < 0.03
    u = rng.standard_normal(orig.shape[1]).astype(np.float32)
    u /= np.linalg.norm(u)
    size = np.float32(1.5 * np.linalg.norm(orig, axis=1).mean())
    rows = orig.copy()
    rows[on] += size * u
    d = gwb.features.train_on_rows(rows, d_sae=256, k=8, tokens=150_000, batch=1024, lr=4e-3, seed=1,
                                   device="cpu")["dictionary"]
    z = d.encode(rows)
    detectors = ((z[on] > 0).mean(0) > 0.99) & ((z[~on] > 0).mean(0) < 0.01)
    assert detectors.any(), "no feature fires on the planted rows alone"
    added = (d.decode(d.encode(rows[on])) - d.decode(d.encode(orig[on]))).mean(0)
    assert added @ u / np.linalg.norm(added) > 0.99
    assert np.linalg.norm(added) == pytest.approx(size, rel=0.05)


def test_files_are_in_saelens_layout(grassmann, corpus, tmp_path):
    out = tmp_path / "sae"
    r = run_gwb("features", "train", "--site", "ffn.2", "--corpus", corpus[0], "--out", out, "--d-sae", 48, "--k", 6,
                "--tokens", 4096, "--batch", 1024, "--context", 64)
    assert "dictionary:" in r.stdout
    cfg = json.loads((out / "cfg.json").read_text())
    # SAELens 6.x's layout: the architecture's fields at the top, the model and site in metadata.
    assert cfg["d_in"] == 128 and cfg["d_sae"] == 48 and cfg["metadata"]["hook_name"] == "ffn.2"
    assert cfg["architecture"] == "topk" and cfg["k"] == 6
    assert cfg["apply_b_dec_to_input"] is True and cfg["normalize_activations"] == "none"
    assert cfg["metadata"]["sae_lens_version"] == "6.0.0" and cfg["gwb"]["version"] == 3
    # The training files relative to the dictionary's folder, as gwb.corpus_paths says (issue 67).
    assert "relative to the folder of this cfg.json" in cfg["gwb"]["corpus_paths"]
    assert os.path.samefile(os.path.join(out, cfg["gwb"]["corpus"][0]), corpus[0])
    raw = (out / "sae_weights.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    shapes = {k: v["shape"] for k, v in header.items() if k != "__metadata__"}
    assert shapes == {"W_enc": [128, 48], "W_dec": [48, 128], "b_enc": [48], "b_dec": [128]}
    assert all(v["dtype"] == "F32" for k, v in header.items() if k != "__metadata__")
    # The same run from Python gives the same weights (one trainer, one seed).
    d = gwb.features.train(grassmann, "ffn.2", [corpus[0]], d_sae=48, k=6, tokens=4096, batch=1024, context=64,
                           progress=False)
    saved = gwb.features.load(out)
    assert np.array_equal(saved.W_dec, d.W_dec) and np.array_equal(saved.b_enc, d.b_enc)


def test_bad_input_is_refused_by_name(grassmann, transformer, corpus, tmp_path):
    with pytest.raises(ValueError, match="gate"):
        gwb.features.train(transformer, "gate.1", [corpus[0]], tokens=1024, progress=False)
    with pytest.raises(ValueError, match=r"k \(--k\) must be at most d_sae \(32\); got 40"):
        gwb.features.train(grassmann, "resid.1", [corpus[0]], d_sae=32, k=40, tokens=1024, progress=False)
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt"):
        gwb.features.train(grassmann, "resid.1", [str(bad)], tokens=1024, progress=False)
    d = gwb.features.train(grassmann, "resid.1", [corpus[0]], d_sae=32, k=4, tokens=2048, batch=1024, context=64,
                           progress=False)
    d.save(tmp_path / "sae")
    with pytest.raises(ValueError, match="trained on model"):
        gwb.features.eval(gwb.bundled("transformer"), tmp_path / "sae", [corpus[1]])
    (tmp_path / "sae" / "cfg.json").write_text("{ not json")
    with pytest.raises(RuntimeError, match="cfg.json"):
        gwb.features.load(tmp_path / "sae")


def test_crosscoder_relative_norms_tell_whose_feature_it_is():
    # Ground truth in two "models" of 24 dimensions each: 16 features only in the first, 16 in both,
    # 16 only in the second. The crosscoder recovers each, and its relative decoder norm puts them
    # at about 0, 0.5 and 1, the three bumps of the model-diffing histogram.
    rng = np.random.default_rng(0)
    d1 = d2 = 24
    truth, kinds = [], []
    for kind in ("first", "shared", "second"):
        for _ in range(16):
            v = np.zeros(d1 + d2)
            if kind != "second":
                v[:d1] = rng.standard_normal(d1)
            if kind != "first":
                v[d1:] = rng.standard_normal(d2)
            truth.append(v / np.linalg.norm(v))
            kinds.append(kind)
    truth = np.array(truth)
    active = rng.random((40_000, len(truth))) < 3 / len(truth)
    rows = ((rng.uniform(0.5, 1.5, active.shape) * active) @ truth).astype(np.float32)
    d = gwb.features.train_on_rows(rows, d_sae=96, k=3, tokens=400_000, batch=1024, lr=4e-3, seed=0, device="cpu",
                                   first_width=d1)["dictionary"]
    assert d.config["crosscoder"] and d.config["first_width"] == d1
    rel = gwb.features.relative_norms(d)
    scale = np.concatenate([np.full(d1, d.config["block_scaling"][0]), np.full(d2, d.config["block_scaling"][1])])
    dec = d.W_dec * scale
    dec /= np.linalg.norm(dec, axis=1, keepdims=True)
    cos = truth @ dec.T
    best = cos.argmax(1)
    assert (cos[np.arange(len(truth)), best] > 0.9).all()
    want = {"first": (0.0, 0.15), "shared": (0.3, 0.7), "second": (0.85, 1.0)}
    for i, kind in enumerate(kinds):
        lo, hi = want[kind]
        assert lo <= rel[best[i]] <= hi, f"{kind} feature {i}: relative norm {rel[best[i]]:.2f}"


def test_a_crosscoder_of_the_bundled_pair(grassmann, transformer, corpus, tmp_path):
    c = gwb.features.train(grassmann, "resid.3", [corpus[0]], d_sae=64, k=8, tokens=20_000, batch=1024, context=64,
                           second=transformer, second_site="resid.2", progress=False)
    assert c.config["crosscoder"] and c.config["second_site"] == "resid.2" and c.config["first_width"] == 128
    assert c.W_enc.shape == (256, 64)
    c.save(tmp_path / "cc")
    c = gwb.features.load(tmp_path / "cc")
    q = gwb.features.eval(grassmann, c, [corpus[1]], context=64, second=transformer)
    assert len(q) == 2 and q[0]["rows"] == q[1]["rows"] and q[0]["l0"] == q[1]["l0"]
    assert all(0.3 < x["explained_variance"] < 1 for x in q)
    rel = gwb.features.relative_norms(c)
    assert rel.shape == (64,) and np.all((rel >= 0) & (rel <= 1))
    sums = gwb.features.top(grassmann, c, [corpus[1]], [0, 1], n=3, context=64, second=transformer)
    assert [s["relative_norm"] for s in sums] == pytest.approx(rel[[0, 1]].tolist())
    # One feature edited in both models: the same tokens, one result each.
    f = int(np.argmax([s["fired"] for s in sums]))
    res = gwb.features.edit(grassmann, c, f, "It is a truth universally acknowledged, that a", "single", "man",
                            second=transformer)
    assert len(res) == 2 and res[0]["activation"] == res[1]["activation"]
    with pytest.raises(ValueError, match="give the second model"):
        gwb.features.eval(grassmann, c, [corpus[1]])
    with pytest.raises(ValueError, match="offset"):
        gwb.features.train(grassmann, "offset.1.1", [corpus[0]], tokens=1024, second=transformer,
                           second_site="resid.1", progress=False)


def test_a_transcoder_is_judged_on_its_target(grassmann, corpus, tmp_path):
    # ffn_in.1 -> ffn.1: the figures recomputed with hooks from the saved weights.
    ctx = 64
    d = gwb.features.train(grassmann, "ffn_in.1", [corpus[0]], target_site="ffn.1", d_sae=128, k=16, tokens=30_000,
                           batch=1024, context=ctx, progress=False)
    d.save(tmp_path / "tc")
    d = gwb.features.load(tmp_path / "tc")
    assert d.config["transcoder"] and d.config["target_site"] == "ffn.1" and d.config["d_out"] == 128
    cfg = json.loads((tmp_path / "tc" / "cfg.json").read_text())
    meta = cfg["metadata"]
    assert meta["hook_name"] == "ffn_in.1" and meta["hook_name_out"] == "ffn.1" and cfg["apply_b_dec_to_input"] is False
    assert cfg["architecture"] == "topk" and "no TopK transcoder" in cfg["gwb"]["saelens"]
    q = gwb.features.eval(grassmann, d, [corpus[1]], context=ctx)
    ids = grassmann.encode(open(corpus[1], encoding="utf-8").read())
    windows = [ids[s:s + ctx] for s in range(0, len(ids), ctx) if len(ids[s:s + ctx]) >= 2]
    ys, yhats, spliced, n = [], [], 0.0, 0
    for w in windows:
        seen = {}
        grassmann.run(w, hooks={"ffn_in.1": lambda v, name: seen.setdefault("x", np.array(v)),
                                "ffn.1": lambda v, name: seen.setdefault("y", np.array(v))})
        yhat = d.decode(d.encode(seen["x"]))
        ys.append(seen["y"].astype(np.float64))
        yhats.append(yhat.astype(np.float64))
        logits = np.asarray(grassmann.run(w, hooks={"ffn.1": lambda v, name: yhat}), np.float64)
        m = logits.max(1, keepdims=True)
        lp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
        spliced -= sum(lp[t, w[t + 1]] for t in range(len(w) - 1))
        n += len(w) - 1
    y, yhat = np.concatenate(ys), np.concatenate(yhats)
    ev = 1 - ((y - yhat) ** 2).sum() / ((y - y.mean(0)) ** 2).sum()
    assert q["explained_variance"] == pytest.approx(ev, abs=2e-4)
    assert q["loss_spliced"] == pytest.approx(spliced / n, rel=1e-4)
    # The target ablated: ffn.1 replaced at each position by its mean there over the other windows.
    ysums = _position_sums(ys)
    ablated = 0.0
    for w in windows:
        logits = np.asarray(grassmann.run(w, hooks={"ffn.1": lambda v, name: _others_mean(ysums, v)}), np.float64)
        m = logits.max(1, keepdims=True)
        lp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
        ablated -= sum(lp[t, w[t + 1]] for t in range(len(w) - 1))
    assert q["loss_ablated"] == pytest.approx(ablated / n, rel=1e-5)
    with pytest.raises(ValueError, match="can be read, not replaced"):
        grassmann.run(ids[:8], hooks={"ffn_in.1": lambda v, name: v * 0})
    # Its features as causal tests: z_f read from ffn_in.1, ffn.1 moved along W_dec[f], in one pass;
    # gwb.features.edit equals the same edit written by hand with numpy.
    w = windows[0][:12]
    seen = {}
    grassmann.run(w, hooks={"ffn_in.1": lambda v, name: seen.setdefault("x", np.array(v))})
    z = d.encode(seen["x"])
    f = int(np.argmax(z[-1]))
    assert z[-1, f] > 0
    by_hand = {"ffn.1": lambda v, name: v - z[:, f:f + 1] * d.W_dec[f][None, :]}
    logits = np.asarray(grassmann.run(w, hooks=by_hand), np.float64)
    answer, wrong = grassmann.pieces([w[3]])[0], grassmann.pieces([w[4]])[0]
    a, b = w[3], w[4]
    r = gwb.features.edit(grassmann, d, f, w, answer, wrong)
    assert r["metric_edited"] == pytest.approx(logits[-1, a] - logits[-1, b], abs=1e-4)
    np.testing.assert_allclose(r["activation"], z[:, f], atol=1e-5)
    steered = np.asarray(grassmann.run(w, hooks=gwb.features.hooks(d, f, mode="steer", value=3.0, position=5)))
    by_hand = {"ffn.1": lambda v, name: v + 3.0 * (np.arange(len(w)) == 5)[:, None] * d.W_dec[f][None, :]}
    np.testing.assert_allclose(steered, grassmann.run(w, hooks=by_hand), atol=1e-4)
    with pytest.raises(ValueError, match="use gwb.features.hooks"):
        gwb.features.hook(d, f)


def test_a_hook_knows_its_site_and_an_edit_names_its_pieces(grassmann, corpus, tmp_path):
    d = gwb.features.train(grassmann, "resid.2", [corpus[0]], d_sae=32, k=4, tokens=4096, batch=1024, context=64,
                           progress=False)
    assert d.site == "resid.2"
    h = gwb.features.hook(d, 3)
    assert h.site == "resid.2" and "feature 3 at resid.2" in repr(h)
    ids = grassmann.encode("It is a truth universally acknowledged")
    by_hand = grassmann.run(ids, hooks={"resid.2": lambda v, name: d.edit(v, 3, "ablate", 0.0, -1)})
    assert np.array_equal(grassmann.run(ids, hooks={h.site: h}), by_hand)
    res = gwb.features.edit(grassmann, d, 3, "It is a truth universally acknowledged, that a", "single", "man")
    assert res["top_clean_pieces"] == grassmann.pieces([i for i, _ in res["top_clean"]])
    assert res["top_edited_pieces"] == grassmann.pieces([i for i, _ in res["top_edited"]])
    assert all(isinstance(p, str) and p for p in res["top_clean_pieces"])


def test_the_command_line_checks_outputs_before_the_work(grassmann, corpus, tmp_path):
    # `features train --out` into a place that cannot hold a folder trained the whole run and then
    # failed (issue 52); eval --json, top --out and export --out also computed first.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = run_gwb("features", "train", "--site", "resid.1", "--corpus", corpus[0], "--out", blocker / "sae",
                "--d-sae", "32", "--k", "4", "--tokens", "100000", check=False)
    assert r.returncode != 0 and "cannot write --out" in r.stderr and "not a folder" in r.stderr, r.stderr
    assert "step " not in r.stderr, r.stderr
    d = gwb.features.train(grassmann, "resid.1", [corpus[0]], d_sae=32, k=4, tokens=2048, batch=1024, context=64,
                           progress=False)
    d.save(tmp_path / "sae")
    for args in (["eval", "--json", blocker / "q.json"], ["top", "--feature", "0", "--out", blocker / "t.json"],
                 ["export", "--out", blocker / "e.json"]):
        r = run_gwb("features", args[0], "--dict", tmp_path / "sae", "--corpus", corpus[1], *args[1:], check=False)
        assert r.returncode != 0 and "cannot write" in r.stderr, (args, r.stderr)
        assert "explained variance" not in r.stdout and "rows:" not in r.stdout, (args, r.stdout)
    # A feature that never fires on the prompt says so instead of an empty "activation by token:" line.
    prompt = "It is a truth universally acknowledged, that a"
    silent = [f for f in range(32)
              if not any(a > 0 for a in gwb.features.edit(grassmann, d, f, prompt, "single", "man")["activation"])]
    assert silent
    r = run_gwb("features", "edit", "--dict", tmp_path / "sae", "--feature", silent[0], "--prompt", prompt,
                "--answer", "single", "--wrong", "man")
    assert "activation by token: none (the feature does not fire on this prompt)" in r.stdout, r.stdout


def test_each_features_subcommand_names_itself_in_its_help():
    for sub in ("train", "eval", "top", "export", "edit"):
        r = run_gwb("features", sub, "--help")
        assert r.stdout.startswith(f"Usage: gwb features {sub} [options]"), r.stdout[:80]


def test_export_writes_the_command_lines_file(grassmann, corpus, tmp_path):
    # One writer of the dashboards file (the engine's featureDashboardsJson): Python's export and
    # `gwb features export` write the same bytes; top() returns the same numbers per feature.
    d = gwb.features.train(grassmann, "resid.1", [corpus[0]], d_sae=32, k=4, tokens=2048, batch=1024, context=64,
                           progress=False)
    d.save(tmp_path / "sae")
    run_gwb("features", "export", "--dict", tmp_path / "sae", "--corpus", corpus[1], "--feature", "0,3",
            "--top", "4", "--windows", "20", "--out", tmp_path / "cli.json")
    gwb.features.export(grassmann, tmp_path / "sae", [corpus[1]], tmp_path / "py.json", features=[0, 3], n=4,
                        max_windows=20)
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    doc = json.loads((tmp_path / "py.json").read_text())
    assert doc["format"] == "gwb-feature-dashboards" and [f["feature"] for f in doc["features"]] == [0, 3]
    tops = gwb.features.top(grassmann, d, [corpus[1]], [0, 3], n=4, max_windows=20)
    for mine, filed in zip(tops, doc["features"]):
        assert mine["name"] == filed["name"] and mine["fired"] == filed["fired"]
        assert [c["pieces"] for c in mine["top"]] == [c["pieces"] for c in filed["top"]]
        assert mine["histogram_counts"] == filed["histogram"]["counts"]
        assert [p for p, _ in mine["promoted"]] == [r["piece"] for r in filed["promoted"]]


def test_a_transcoder_set_from_python_equals_the_command_lines(grassmann, corpus, tmp_path):
    # One transcoder per block (ffn_in.L -> ffn.L), one implementation behind both front ends.
    common = dict(d_sae=32, k=4, tokens=384, batch=128, context=32)
    run_gwb("features", "train", "--transcoders", "--corpus", corpus[0], "--out", tmp_path / "cli", "--d-sae", "32",
            "--k", "4", "--tokens", "384", "--batch", "128", "--context", "32")
    mine = gwb.features.train_transcoders(grassmann, [corpus[0]], tmp_path / "py", progress=False, **common)
    theirs = gwb.features.load_transcoders(tmp_path / "cli", grassmann)
    assert len(mine) == len(theirs) == grassmann.config["n_layers"]
    for layer, (a, b) in enumerate(zip(mine, theirs)):
        assert a.config["site"] == f"ffn_in.{layer}" and a.config["target_site"] == f"ffn.{layer}"
        np.testing.assert_array_equal(a.W_dec, b.W_dec)
    index = json.loads((tmp_path / "cli" / "transcoders.json").read_text())
    assert index["format"] == "gwb-transcoders" and index["complete"]
    assert [e["folder"] for e in index["layers"]] == [f"ffn.{l}" for l in range(len(mine))]
    # A second run into the same folder is refused unless it goes on (--resume).
    r = run_gwb("features", "train", "--transcoders", "--corpus", corpus[0], "--out", tmp_path / "cli", check=False)
    assert r.returncode != 0 and "--resume" in r.stderr, r.stderr
    r = run_gwb("features", "train", "--transcoders", "--resume", "--corpus", corpus[0], "--out", tmp_path / "cli")
    assert "transcoders:" in r.stdout


def test_training_options_are_declared_once_and_refused_with_one_sentence(tmp_path):
    """The trainer's options: the engine's table, the command line's help and Python's signatures
    give the same defaults and ranges, and a bad value gets the same sentence everywhere."""
    import inspect
    import re
    table = gwb.features.TRAIN_OPTIONS
    assert list(table) == ["architecture", "d_sae", "k", "l1", "tokens", "batch", "context", "lr", "seed"]
    help_text = " ".join(run_gwb("features", "train", "--help").stdout.split())
    for f in (gwb.features.train, gwb.features.train_run, gwb.features.train_transcoders, gwb.features.train_on_rows):
        params = inspect.signature(f).parameters
        for key, o in table.items():
            if key in params and params[key].default is not None:  # train_on_rows: tokens = the rows given
                assert params[key].default == o["default"], (f.__name__, key)
                assert type(params[key].default) is type(o["default"]), (f.__name__, key)
                assert f"{key}: {o['help']} (default {o['default']!r}; {o['range']})" in f.__doc__, (f.__name__, key)
    for key, o in table.items():
        shown = o["default"] if isinstance(o["default"], (str, int)) else f"{o['default']:g}"
        rng = "" if o["kind"] == "text" else f"; {o['range']}"
        assert f"--{o['flag']}" in help_text or f"-{o['flag']}" in help_text, key
        assert f"(default {shown}{rng})" in help_text, (key, shown)
    model = gwb.bundled("grassmann")
    text = tmp_path / "t.txt"
    text.write_text("She was the youngest of the two daughters of a most affectionate father. " * 8)
    cases = [(dict(d_sae=0), ["--d-sae", "0"], "d_sae (--d-sae) must be an integer, at least 1; got 0"),
             (dict(lr=0.0), ["--lr", "0"], "lr (--lr) must be a number, above 0; got 0"),
             (dict(context=1), ["--context", "1"], "context (--context) must be an integer, at least 2; got 1"),
             (dict(architecture="gated"), ["--architecture", "gated"],
              "architecture (--architecture) is topk or relu; got 'gated'"),
             (dict(k=64, d_sae=32), ["-k", "64", "--d-sae", "32"], "k (--k) must be at most d_sae (32); got 64")]
    for kw, argv, sentence in cases:
        with pytest.raises(ValueError, match=re.escape(sentence)):
            gwb.features.train(model, "resid.1", [text], tokens=64, batch=32, progress=False, **kw)
        r = run_gwb("features", "train", "--model", "grassmann", "--site", "resid.1", "--corpus", text, "--out",
                    tmp_path / "d", "--tokens", "64", *argv, check=False)
        assert r.returncode == 1 and sentence in r.stderr, (argv, r.stderr)
    with pytest.raises(ValueError, match=re.escape("batch (--batch) must be an integer, at least 1; got 2.5")):
        gwb.features.train_on_rows(np.ones((8, 4), np.float32), batch=2.5)
    with pytest.raises(ValueError, match=re.escape("seed (--seed) must be an integer, at least 0; got -1")):
        gwb.features.train_transcoders(model, [text], tmp_path / "tc", seed=-1, progress=False)
