"""Lenses beyond the logit lens, as `gwb lens` fits and evaluates them:

    lens = gwb.lens.fit(model, "tuned", ["austen.txt"], "lenses/tuned")     # or "jacobian"
    gwb.lens.fit(model, "jacobian", ["austen.txt"], "lenses/j0", shard="0/4")  # then merge()
    r = gwb.lens.eval(model, ["lenses/tuned", "lenses/jacobian"], ["held_out.txt"], out="eval.npz")
    r["kl"]        # lenses x N: KL(p_final || p_lens) per residual state (rows: r["lenses"])

The tuned lens (Belrose et al. 2023) is written as tuned-lens's TunedLens loads it (config.json +
params.pt); the Jacobian lens (Gurnee et al. 2026) as TransformerLens's JacobianLens.load reads it
(jacobian_lens.pt). docs/workflows/lenses.md gives the definitions and the layer numbering.
"""

import os

from . import _gwb
from .features import _files, _native
from .results import _check_output, _check_output_folder

#: The engine's defaults (LensFitRequest): every option of fit() not given takes these.
DEFAULTS = dict(_gwb.lens_defaults())


def options(which="fit"):
    """The options of fit() (which="fit") or eval() (which="eval") as the engine declares them, one
    dict each (key, flag, help, kind, default, range): the table `gwb lens fit|eval --help` prints
    and both check against, so a bad value raises ValueError with the command line's sentence."""
    if which not in ("fit", "eval"):
        raise ValueError(f"which must be 'fit' or 'eval', got {which!r}")
    return list(_gwb.lens_fit_options() if which == "fit" else _gwb.lens_eval_options())


def _texts(model, texts):
    if texts is None:
        return []
    if isinstance(texts, str):
        texts = [texts]
    return [list(model.encode(t)) for t in texts]


def fit(model, kind, corpus=None, out=None, *, texts=None, resume=None, progress=True, **options):
    """Fits a lens of `kind` ("tuned" or "jacobian") of `model` over the text files `corpus` (or the
    strings `texts`) and writes it to the folder `out` (when given).

    Options (defaults in gwb.lens.DEFAULTS, the engine's): window, max_prompts, shard ("i/n",
    Jacobian), skip_first, dim_batch (Jacobian), steps, tokens_per_step, lr, momentum,
    weight_decay, clip, seed (tuned). Ctrl-C stops after the current prompt or step; the partial
    lens is written to `out` and fit(..., resume=out) carries on.

    Returns a dict: kind, complete, n_prompts, steps_done, seconds, layers, model, options, and the
    lens's matrices (J_l or A_s, numpy d x d) and biases (b_s, tuned)."""
    from . import _progress
    unknown = sorted(set(options) - set(DEFAULTS) - {"kind"})
    if unknown:
        raise TypeError(f"fit() got unknown options {unknown}; known: {sorted(DEFAULTS)}")
    files = _files(corpus) if corpus is not None else []
    ids = _texts(model, texts)
    if not files and not ids:
        raise ValueError("no text: give corpus files or texts")
    folder = "" if out is None else _check_output_folder(out, "out")
    opts = dict(options)
    opts["kind"] = kind
    callback, close = _progress(progress, f"{kind} lens")
    try:
        return _gwb.lens_fit(_native(model), files, ids, folder, opts,
                             "" if resume is None else os.fspath(resume), callback)
    finally:
        close()


def merge(folders, out):
    """Merges Jacobian lens shards (fit(..., shard="i/n")) into the folder `out`: the
    prompt-weighted mean of their matrices. Returns the number of prompts."""
    return _gwb.lens_merge([os.fspath(f) for f in folders], _check_output_folder(out, "out"))


def eval(model, lenses=(), corpus=None, *, texts=None, window=None, max_prompts=None, out=None):  # noqa: A001
    """Evaluates the logit lens and the lens folders `lenses` of `model` over held-out text (files
    `corpus` or strings `texts`): per lens (rows, "lenses") and residual state s = 0..N-1 (columns,
    the input of block s), the mean KL(p_final || p_lens) ("kl", nats), cross-entropy against the
    next token ("ce"), top-1 agreement with the final layer ("top1") and the next token's rank
    ("rank", 0 = the lens's top token); NaN where a lens has no map. With `out`, also writes the
    NPZ + meta.json `gwb lens eval` writes. window (tokens per prompt) and max_prompts (the first N
    windows, 0 = all) take the engine's defaults, 128 and 0, when None (options("eval"))."""
    files = _files(corpus) if corpus is not None else []
    if isinstance(lenses, (str, os.PathLike)):
        lenses = [lenses]
    target = "" if out is None else _check_output(out, "out")
    return dict(_gwb.lens_eval(_native(model), [os.fspath(f) for f in lenses], files, _texts(model, texts),
                               {"window": window, "max_prompts": max_prompts}, target))


def logits(model, text, state, lens=None):
    """The lens logits (T x V) of residual state `state` of `text` (a string or token ids): the logit
    lens without `lens`, else the lens folder's map at that state."""
    ids = list(model.encode(text)) if isinstance(text, str) else [int(i) for i in text]
    return _gwb.lens_logits(_native(model), ids, int(state), "" if lens is None else os.fspath(lens))
