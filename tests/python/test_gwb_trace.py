"""model.trace() is gwb trace's NPZ: the same names, shapes and values; open_trace reads the file
into the same object."""

import json
import zipfile

import numpy as np
import pytest

import gwb
from conftest import PROMPT, run_gwb


@pytest.mark.parametrize("kind", ["grassmann", "transformer"])
def test_trace_equals_command_line(tmp_path, kind):
    m = gwb.bundled(kind)
    out = tmp_path / "t.npz"
    run_gwb("trace", "--model", kind, "--prompt", PROMPT, "--logits", "--analysis", "--threads", "1", "--out", out)
    file = gwb.open_trace(out)
    t = m.trace(PROMPT, logits=True, analysis=True, lens=True)  # gwb trace computes the lens by default
    assert set(t) == set(file), (set(t) ^ set(file))
    assert len(t) > 20
    for name in t:
        a, b = t[name], file[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        # Same engine on the same weights: the recorded arrays are bitwise equal; the analyses may
        # differ in the last bits (summation order with other thread counts).
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name, equal_nan=True)
    assert t.meta["tokens"] == file.meta["tokens"]
    assert t.meta["model_config"] == file.meta["model_config"]
    assert t.meta["definitions"] == file.meta["definitions"]
    assert list(t.token_ids) == [tok["id"] for tok in t.tokens]
    assert t.tokens[0]["byte_begin"] == 0


def test_trace_arrays_and_ids(grassmann):
    t = grassmann.trace(PROMPT)
    ids = grassmann.encode(PROMPT)
    assert list(t.token_ids) == ids
    T = len(ids)
    c = grassmann.config
    assert t["l2_gate"].shape == (T, c["d_model"])
    assert t["l0_z"].shape == (T, c["reduced"])
    assert "logits" not in t
    by_ids = grassmann.trace(ids, logits=True)
    np.testing.assert_array_equal(by_ids["l5_gate"], t["l5_gate"])
    np.testing.assert_array_equal(by_ids["logits"], grassmann.run(ids))
    assert grassmann.decode(ids) == PROMPT
    assert grassmann.pieces(ids[:2]) == [tok["text"] for tok in t.tokens[:2]]


def test_saved_trace_reads_back(tmp_path, transformer):
    t = transformer.trace("It is a truth")
    t.save(tmp_path / "x.npz")
    back = gwb.open_trace(tmp_path / "x.npz")
    assert set(back) == set(t)
    for k in t:
        np.testing.assert_array_equal(back[k], t[k])
    assert back.meta == json.loads(json.dumps(t.meta))
    with zipfile.ZipFile(tmp_path / "x.npz") as z:
        assert "meta.json" in z.namelist()
    with np.load(tmp_path / "x.npz") as z:  # numpy reads it like gwb trace's file
        assert "l0_attn" in z.files


def test_open_trace_refuses_other_files(tmp_path):
    (tmp_path / "no.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="no.npz"):
        gwb.open_trace(tmp_path / "no.npz")
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        gwb.open_trace(tmp_path / "missing.npz")


def test_analysis_parts_leave_the_other_arrays_out(grassmann, transformer):
    # analysis=[...] computes only the parts named (the core one always); what it computes equals
    # the whole analysis, and the arrays of the parts left out are absent, not empty or NaN.
    whole = grassmann.trace(PROMPT, analysis=True)
    core = grassmann.trace(PROMPT, analysis=["core"])
    readout = grassmann.trace(PROMPT, analysis=["readout"])
    assert whole.meta["analysis_parts"] == ["planes, influence and gates", "read-out planes",
                                            "angles between layers", "reading subspaces", "prompt subspaces"]
    assert core.meta["analysis_parts"] == ["planes, influence and gates"]
    absent = {n for n in whole if n.endswith("angles_next") or "readout_" in n
              or n in ("reading_subspace_distance", "prompt_subspace_distance")}
    assert "prompt_subspace_distance" in absent
    prompt = grassmann.trace(PROMPT, analysis=["prompt_subspaces"])
    assert set(prompt) == set(core) | {"prompt_subspace_distance"}
    np.testing.assert_array_equal(prompt["prompt_subspace_distance"], whole["prompt_subspace_distance"])
    assert absent and absent.isdisjoint(core)
    assert set(core) | absent == set(whole)
    assert {n for n in readout if "readout_" in n} == {n for n in whole if "readout_" in n}
    assert not any(n.endswith("angles_next") for n in readout)
    for t in (core, readout):
        for name in t:
            np.testing.assert_array_equal(t[name], whole[name], err_msg=name)
    # A Transformer's analysis has one part: the same arrays whatever is named, and its own names.
    whole_t = transformer.trace(PROMPT, analysis=["core"])
    assert set(whole_t) == set(transformer.trace(PROMPT, analysis=True))
    assert whole_t.meta["analysis_parts"] == ["attention-row metrics", "prompt subspaces"]
    with pytest.raises(ValueError, match="not one of: core, readout"):
        grassmann.trace(PROMPT, analysis=["planes"])
    with pytest.raises(TypeError, match="not a string"):
        grassmann.trace(PROMPT, analysis="core")


LENS = {"lens_top_ids", "lens_top_logprobs", "lens_next_rank", "lens_next_logprob"}


@pytest.mark.parametrize("kind", ["grassmann", "transformer"])
def test_the_lens_is_computed_only_when_asked_and_equals_the_eager_one(kind):
    m = gwb.bundled(kind)
    plain = m.trace(PROMPT, analysis=True)
    assert not LENS & set(plain), "trace() computes no logit lens unless asked"
    with_lens = m.trace(PROMPT, analysis=True, lens=True, lens_k=7)
    assert set(with_lens) - set(plain) == LENS
    for name in plain:  # the rest of the trace does not depend on the lens
        np.testing.assert_array_equal(plain[name], with_lens[name], err_msg=name)
    # The lens by hand from the recorded states: final LayerNorm, then the tied unembedding.
    N, T = m.config["n_layers"], len(m.encode(PROMPT))
    assert with_lens["lens_top_ids"].shape == (N + 1, T, 7)
    logits = m.trace(PROMPT, logits=True)["logits"]
    top = np.argsort(-logits, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(with_lens["lens_top_ids"][N], top)


def test_a_prompt_files_final_line_end_is_not_part_of_the_prompt(tmp_path, grassmann):
    # Issue 67: one rule for a prompt file (the window, gwb figure and gwb trace), stated in --help.
    f = tmp_path / "prompt.txt"
    f.write_bytes(b"It is a truth\r\n")
    run_gwb("trace", "--model", "grassmann", "--prompt-file", f, "--out", tmp_path / "t.npz")
    assert list(gwb.open_trace(tmp_path / "t.npz").token_ids) == grassmann.encode("It is a truth")
    assert "one line end at the very end of the file" in run_gwb("trace", "--help").stdout
