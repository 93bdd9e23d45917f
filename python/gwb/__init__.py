"""Grassmann Workbench from Python: the engine behind the `gwb` window and command line.

    import gwb
    m = gwb.bundled("grassmann")
    t = m.trace("It is a truth universally acknowledged")
    t["l2_gate"]                                  # the arrays of `gwb trace`'s NPZ, by the same names
    logits = m.run(t.token_ids, hooks={"offset.3.2": lambda v, name: 0 * v})
    p = m.patch(clean=..., corrupt=..., answer="she", wrong="he", site="resid")   # as `gwb patch`
    gwb.figure(view="gate", prompt="...")        # the figure of `gwb figure`, inline in Jupyter
    net = gwb.torch.module(m)                     # the same model as a torch.nn.Module

Site names (hooks, patching, NPZ labels, the window): resid.L (block input h^L, L = 0..N),
mixer.L, gate.L, ffn.L, offset.L.D (offset D's Plucker vectors), head.L.H (head H's context).
"""

import json
import os
import tempfile
import warnings as _warnings

import numpy as np

from . import _gwb, _paths

__all__ = [
    "Model", "Trace", "Result", "PatchResult", "PathResult", "Stats", "Figure", "Generation",
    "load", "bundled", "open_trace", "open_patch", "open_paths", "open_stats", "figure", "site_names",
    "ClaimWarning", "MIN_DIFFERENCE",
]

_BUNDLED = {"grassmann": "grassmann-austen.gwb", "transformer": "transformer-austen.gwb"}

__version__ = _gwb.__version__  # the project's version (CMakeLists.txt), as `gwb --version` says it


# Results and the readers of the command line's files (results.py).
from .results import (PatchResult, PathResult, Result, Stats, Trace, _read_npz,  # noqa: F401 (re-exported)
                      open_patch, open_paths, open_stats, open_trace)
from .results import _check_output, _write_atomic


def _progress(enabled, desc):
    """A callback(fraction) drawing a tqdm bar (when tqdm is installed and enabled), and a closer.
    `enabled` may be a callable itself: it is then called with the fraction done (0..1). The bar is
    drawn at the first progress report, so input the engine refuses raises before any bar appears;
    it shows the percentage done, the time spent and the time left (no rate: a percent per second
    says nothing)."""
    if callable(enabled):
        return enabled, lambda: None
    if not enabled:
        return None, lambda: None
    try:
        # tqdm.auto draws a notebook widget, which needs ipywidgets (without it: "TqdmWarning:
        # IProgress not found"); the plain bar works everywhere.
        try:
            import ipywidgets  # noqa: F401
            from tqdm.auto import tqdm
        except ImportError:
            from tqdm import tqdm
    except ImportError:
        return None, lambda: None
    state = {}

    def update(fraction):
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=100, desc=desc, leave=True,
                                      bar_format="{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]")
        n = int(round(100 * fraction))
        if n > bar.n:
            bar.update(n - bar.n)

    def close():
        if "bar" in state:
            state["bar"].close()

    return update, close


MIN_DIFFERENCE = 0.05
"""The default least |clean - corrupted| metric difference (logits) for a normalised effect (the
engine's kDefaultMinDifference; docs: causal claims)."""


class ClaimWarning(UserWarning):
    """A causal result whose normalised numbers are not defined: a clean - corrupted difference
    below min_difference, or pairs that show no effect to localise. The raw effects are defined."""


def _causal_options(**given):
    """The causal options given (min_difference, bootstrap, seed, check) checked by the engine's table,
    with the command line's sentences (a ValueError); None keeps the default."""
    return _gwb.check_causal_options(given)


def _warn_claims(result):
    """Warns (ClaimWarning) when a result's normalised effect is not defined or its pairs show no
    effect to localise, with the engine's sentence; returns the result."""
    meta = result.meta
    if meta.get("effect_note"):
        _warnings.warn("no normalised effect: " + meta["effect_note"], ClaimWarning, stacklevel=3)
    if "effect_to_localise" in meta and not meta["effect_to_localise"]:
        _warnings.warn(meta.get("verdict", "the pairs show no effect to localise"), ClaimWarning, stacklevel=3)
    return result


def _text(text, what="the prompt"):
    """`text` checked to be encodable as UTF-8 (a str from a badly decoded file may hold lone surrogates)."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} is not valid text: {e.reason} at character {e.start} "
                         f"({text[e.start:e.end]!r}); was it read with the right encoding?") from None
    return text


def _ids(model, text_or_ids):
    if isinstance(text_or_ids, str):
        return model.encode(text_or_ids)
    ids = np.asarray(text_or_ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise ValueError(f"expected text or a 1-D sequence of token ids, got an array of shape {list(ids.shape)} "
                         f"and dtype {ids.dtype}")
    return [int(i) for i in ids]


class Generation:
    """What model.generate() returns: ids (prompt + new), prompt_length, text, completion."""

    def __init__(self, ids, prompt_length, text, completion):
        self.ids, self.prompt_length, self.text, self.completion = ids, prompt_length, text, completion

    def __repr__(self):
        return f"<gwb.Generation {self.prompt_length} + {len(self.ids) - self.prompt_length} tokens: {self.text!r}>"


class Model:
    """A Grassmann or Transformer language model in the engine (CPU, or CUDA with a CUDA LibTorch)."""

    def __init__(self, native):
        self._m = native
        self._config = json.loads(native.config_json)

    # -- what it is ------------------------------------------------------------------------------
    @property
    def config(self):
        """The model's configuration (model_config of the .gwb) as a dict."""
        return dict(self._config)

    @property
    def kind(self):
        """"grassmann" or "transformer"."""
        return self._m.kind

    @property
    def report(self):
        """The import report (layout, how it was chosen, flags and notes); {} for a .gwb file."""
        return dict(self._m.report)

    path = property(lambda self: self._m.path)
    name = property(lambda self: self._m.name)
    device = property(lambda self: self._m.device)

    @property
    def layer_offsets(self):
        """Grassmann: each layer's offset set W_l."""
        return [list(o) for o in self._m.layer_offsets()]

    def site_names(self):
        """Every hook site of the model, in the order the hooks run."""
        return list(self._m.site_names())

    def parameters(self):
        """Every parameter as a float32 numpy array, by the .gwb's tensor names."""
        return self._m.parameters()

    def summary(self):
        return self._m.summary

    def save(self, path):
        """Writes the model (and its tokenizer) as a .gwb file (atomically). A path that cannot be
        written raises the OSError subclass that says why (gwb.results: the package's errors)."""
        self._m.save(_check_output(path))

    def __repr__(self):
        return f"<gwb.Model {self.name!r} {self.kind} d={self._config.get('d_model')} " \
               f"N={self._config.get('n_layers')} on {self.device}>"

    # -- tokens ----------------------------------------------------------------------------------
    def encode(self, text):
        return list(self._m.encode(_text(text, "the text")))

    def decode(self, ids):
        return self._m.decode(_ids(self, ids))

    def pieces(self, ids):
        """Display text of each id ("▁she")."""
        return list(self._m.pieces(_ids(self, ids)))

    def piece_id(self, text):
        """The id of the one vocabulary piece `text` names, as patch() reads answer= and wrong=: the
        text's encoding when that is one piece ("she" is "▁she"), else the piece shown as exactly
        the text ("▁she", or "_she" for it). A text of several pieces raises ValueError naming them:
        encode(" she") is ['▁', '▁she'], so encode(text)[0] would silently be the wrong id."""
        return int(self._m.piece_id(_text(text, "the piece")))

    # -- runs ------------------------------------------------------------------------------------
    def trace(self, text_or_ids, logits=False, analysis=False, lens_k=5, max_tokens=0, progress=False, lens=False):
        """Everything `gwb trace` records (and, with analysis=True, computes) for one prompt.

        analysis may also list the parts of a Grassmann model's analysis to compute: "core"
        (always: planes, influence, gates), "readout" (the read-out planes), "layer_angles"
        (angles between layers), "reading_subspaces", "prompt_subspaces" (prompt_subspace_distance;
        a Transformer's analysis always has it); the arrays of the others are left out (at
        GrassLM-100M's size the read-out planes cost the most, once per model; at 4,096 tokens the
        prompt subspaces cost more than the core part). Until 2026-11-29 "core" included the
        prompt subspaces.

        The logit lens (lens_top_ids, lens_top_logprobs, lens_next_rank, lens_next_logprob, with
        the top lens_k pieces) is computed only with lens=True: it multiplies every block's state
        by the unembedding, (N+1) x T x d x V multiply-adds, most of a trace at a large
        vocabulary. Until 2026-11-28 trace always computed it; `gwb trace` still does
        (--lens-k 0 leaves it out)."""
        inp = _text(text_or_ids) if isinstance(text_or_ids, str) else _ids(self, text_or_ids)
        cb, close = _progress(progress, "trace")
        try:
            out = self._m.trace(inp, logits=logits, analysis=analysis, lens_k=lens_k if lens else 0,
                                max_tokens=max_tokens, progress=cb)
        finally:
            close()
        return Trace(out["arrays"], json.loads(out["meta"]), out["warnings"])

    def run(self, ids, hooks=None):
        """Logits (T x V, numpy float32) of one forward pass; hooks = {site name: fn(value, name)}.

        A hook gets the site's value (numpy float32, T x width) and returns None to observe only, or
        an array of the same shape that replaces the value for the rest of the pass. The engine
        computes in float32: a replacement of another float dtype (float64, float16) is cast to
        float32 (float64 values round to the nearest float32); integer or other arrays are refused.

        In a Grassmann model, a replacement that leaves a later layer's pair planes made of nearly
        parallel reduced vectors (a zeroed residual makes every later position alike) gives logits
        that are rounding noise: run() says so with a RuntimeWarning naming the layer."""
        return self._m.run(_ids(self, ids), dict(hooks or {}))

    def patch(self, clean=None, corrupt=None, answer=None, wrong=None, site="resid", mode=None, position=-1,
              layer=-1, offset=-1, head=-1, method="exact", progress=True, pairs=None, bootstrap=1000, seed=0,
              check=0, min_difference=MIN_DIFFERENCE):
        """A patching or ablation sweep, as `gwb patch` writes it (the same array names).

        min_difference: the least |clean - corrupted| metric difference (logits) for a normalised
        effect. Below it `effect` is NaN, meta["effect_defined"] is False, `raw_effect` (logits) is
        what is defined, and a ClaimWarning says why (meta["effect_note"]).

        pairs=FILE (JSONL or CSV) or a list of dicts with clean, corrupt, answer, wrong (optional
        position, other fields kept as tags): the sweep over every usable pair, as `gwb patch --pairs`
        writes it: per-pair metric, effect and raw_effect; the ratio of means sum(p - k) / sum(c - k)
        with its paired-bootstrap interval (effect_mean, effect_ci_low/high, effect_n); raw_mean,
        mean_of_ratios (pairs above min_difference only), p_value and holm_marked; meta["verdict"]
        says whether the pairs show anything to explain (a ClaimWarning when not); skipped lines in
        meta["skipped"]. Computed by the engine as that command computes it. Ctrl-C stops after the
        pairs being run and raises KeyboardInterrupt."""
        _causal_options(min_difference=min_difference, bootstrap=bootstrap, seed=seed, check=check)
        if pairs is not None:
            if clean is not None or corrupt is not None:
                raise ValueError("give either pairs or one clean/corrupt pair, not both")
            return self._patch_pairs(pairs, site, mode, position, layer, offset, head, method, bootstrap, seed, check,
                                     progress, min_difference)
        if clean is None:
            raise ValueError("patch needs a clean prompt (or pairs=...)")
        t = _gwb.PatchText()
        t.clean = _text(clean, "the clean prompt")
        t.corrupt = _text(corrupt or "", "the corrupted prompt")
        t.answer = _text(answer or "", "the answer piece")
        t.wrong = _text(wrong or "", "the wrong piece")
        t.site = site
        t.mode = mode or ""
        t.position = position
        cb, close = _progress(progress if method == "exact" else False, f"patch {site}")
        try:
            out = self._m.patch(t, method=method, layer=layer, offset=offset, head=head,
                                model_file=os.fspath(self.path or ""), progress=cb, min_difference=min_difference)
        finally:
            close()
        # meta.json as gwb patch writes it (the engine's one writer): save() writes the same file.
        return _warn_claims(PatchResult(out["arrays"], json.loads(out["meta_json"])))

    def _patch_pairs(self, pairs, site, mode, position, layer, offset, head, method, bootstrap, seed, check,
                     progress, min_difference):
        # A file goes to the engine by its path (its messages name it); a list goes in as JSONL text.
        # Either way the arrays and meta.json come back in memory, as `gwb patch --pairs` writes them.
        if isinstance(pairs, (str, os.PathLike)):
            path = os.fspath(pairs)
            if not os.path.exists(path):
                raise FileNotFoundError(f"{path}: no such file")
            text, name = "", ""
        else:
            path, name = "", "<list>"
            text = "".join(json.dumps(dict(p), ensure_ascii=False) + "\n" for p in pairs)
        cb, close = _progress(progress, "pairs")
        try:
            out = self._m.patch_pairs(os.fspath(self.path or ""), path, text, False, name, site, mode=mode or "",
                                      position=-1 if position is None else position,
                                      layer=-1 if layer is None else layer, offset=-1 if offset is None else offset,
                                      head=-1 if head is None else head, method=method or "exact",
                                      bootstrap=bootstrap, seed=seed, check=check or 0, progress=cb,
                                      min_difference=min_difference)
        finally:
            close()
        return _warn_claims(PatchResult(out["arrays"], json.loads(out["meta_json"])))

    def paths(self, clean=None, corrupt=None, answer=None, wrong=None, position=-1, senders=(), sender_position=-1,
              linear=False, progress=True, pairs=None, receivers="all", bootstrap=1000, seed=0,
              min_difference=MIN_DIFFERENCE):
        """Path patching, as `gwb paths` writes it: metric and effect, senders x receivers; with
        linear=True (pre-norm models) also the direct logit attribution of every write, as
        `gwb paths --linear` (linear_corrupt, linear_clean, linear_delta, linear_bias,
        linear_channel_*; meta["linear_labels"]).

        pairs=FILE (JSONL or CSV) or a list of dicts with clean, corrupt, answer, wrong (optional
        position, other fields kept as tags): every usable pair's matrix, as `gwb paths --pairs`
        writes it (metric and effect per pair, effect_mean, effect_ci_low/high over `bootstrap`
        resamples from `seed`, effect_n; skipped lines in meta["skipped"]), computed by the engine
        as that command computes it. `receivers`: "all", "logits" or "resid" (pairs only; one pair
        takes all). effect_mean is the ratio of means; raw_mean, mean_of_ratios, p_value and
        holm_marked as patch(pairs=...) has them. min_difference as patch() takes it."""
        _causal_options(min_difference=min_difference, bootstrap=bootstrap, seed=seed)
        if pairs is not None:
            if clean is not None or corrupt is not None:
                raise ValueError("give either pairs or one clean/corrupt pair, not both")
            if isinstance(pairs, (str, os.PathLike)):
                name = os.fspath(pairs)
                if not os.path.exists(name):
                    raise FileNotFoundError(f"{name}: no such file")
                with open(name, "rb") as f:
                    text = f.read().decode("utf-8", errors="strict")
                csv = name.lower().endswith(".csv")
            else:
                name, csv = "<list>", False
                text = "".join(json.dumps(dict(p), ensure_ascii=False) + "\n" for p in pairs)
            cb, close = _progress(progress, "paths pairs")
            try:
                out = self._m.paths_pairs(os.fspath(self.path or ""), text, csv, name, senders=list(senders),
                                          receivers=receivers, bootstrap=bootstrap, seed=seed, progress=cb,
                                          min_difference=min_difference)
            finally:
                close()
            return _warn_claims(PathResult(out["arrays"], json.loads(out["meta_json"])))
        if clean is None or corrupt is None or answer is None or wrong is None:
            raise ValueError("paths needs clean, corrupt, answer and wrong (or pairs=...)")
        t = _gwb.PatchText()
        t.clean, t.corrupt = _text(clean, "the clean prompt"), _text(corrupt, "the corrupted prompt")
        t.answer, t.wrong, t.position = _text(answer, "the answer piece"), _text(wrong, "the wrong piece"), position
        cb, close = _progress(progress, "paths")
        try:
            out = self._m.paths(t, senders=list(senders), sender_position=sender_position, linear=linear,
                                model_file=os.fspath(self.path or ""), progress=cb, min_difference=min_difference)
        finally:
            close()
        # meta.json as gwb paths writes it (the engine's one writer): save() writes the same file.
        return _warn_claims(PathResult(out["arrays"], json.loads(out["meta_json"])))

    def stats(self, files, baseline=None, window=None, stride=None, max_windows=None, lens_k=None, out=None,
              progress=True):
        """Corpus statistics, as `gwb stats` computes them: files (paths of UTF-8 text) stream window
        by window through this model (and a baseline Model, if given). Written to `out` when given;
        returns a Stats. Ctrl-C stops after the current window: the partial statistics (meta
        "complete": false) are written to `out`, then KeyboardInterrupt is raised. An `out` that
        cannot be written raises its OSError before any window is read, as `gwb stats` refuses it.
        window, stride, max_windows (0 = all) and lens_k take the engine's defaults (256, 256, 0, 10)
        when None; a value out of range raises ValueError with the sentence `gwb stats` prints."""
        files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
        for f in files:
            if not os.path.exists(f):
                raise FileNotFoundError(f"{f}: no such file")
        tmpdir = None
        if out is None:
            tmpdir = tempfile.mkdtemp(prefix="gwb-stats-")
            path = os.path.join(tmpdir, "stats.npz")
        else:
            path = _check_output(out, "out")
        cb, close = _progress(progress, "stats")
        try:
            options = dict(window=window, stride=stride, max_windows=max_windows, lens_k=lens_k)
            warnings = self._m.stats(None if baseline is None else baseline._m, files, options=options, out=path,
                                     progress=cb)
            result = open_stats(path)
            result.warnings = list(warnings)
            return result
        finally:
            close()
            if tmpdir is not None:
                if os.path.exists(path):
                    os.unlink(path)
                os.rmdir(tmpdir)

    def generate(self, prompt, max_new=None, temperature=None, top_k=None, top_p=None, seed=None, greedy=False):
        """Continues the prompt (text or ids), as `gwb generate` does. max_new, temperature, top_k,
        top_p and seed take the engine's defaults (32, 1, 0 = all, 1 = off, 0) when None; a value out
        of range raises ValueError with the sentence `gwb generate` prints."""
        ids = _ids(self, prompt)
        options = dict(max_new=max_new, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        out = list(self._m.generate(ids, options, bool(greedy)))
        has_text = self._m.has_tokenizer
        return Generation(out, len(ids), self._m.decode(out) if has_text else None,
                          self._m.decode(out[len(ids):]) if has_text else None)


def load(path, layout=None, vocab=None, device="auto", norm=None, offsets=None, heads=None):
    """Opens any file the window opens: a .gwb, or a .pt / .pth / .bin / .ckpt / .safetensors file of a
    public implementation through the import rules (layout auto-detected unless given: a built-in
    layout's name or a layout file). The import report is kept on the model (model.report).

    For imported checkpoints, as `gwb import` has them: norm ("post", "pre", "post_mix",
    "pre_mix") where a state dict cannot show it, offsets (a schedule: "1,2,4,8,12,16",
    "per_layer:1,2,4", "1,2;4;8,12"), heads (Transformer heads)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if vocab is not None and not os.path.exists(os.fspath(vocab)):
        raise FileNotFoundError(f"{os.fspath(vocab)}: no such file (the vocabulary)")
    try:
        native = _gwb.Model.load(path, layout=layout, vocab=None if vocab is None else os.fspath(vocab),
                                 device=device, norm=norm, offsets=offsets, heads=heads)
    except RuntimeError as e:
        # A file that is not a model (or not one gwb can open) is bad input, like the other refusals.
        raise ValueError(str(e)) from None
    return Model(native)


def _bundled_path(kind):
    if kind not in _BUNDLED:
        raise ValueError(f"unknown bundled model {kind!r}: 'grassmann' or 'transformer'")
    dirs = [os.environ["GWB_MODELS_DIR"]] if os.environ.get("GWB_MODELS_DIR") else [
        os.path.join(os.path.dirname(__file__), "models"),  # a pip-installed package
        os.path.join(os.path.dirname(__file__), "..", "..", "share", "gwb", "models"),
        *([os.path.join(_paths.SOURCE_DIR, "resources", "models")] if _paths.SOURCE_DIR else [])]
    for d in dirs:
        p = os.path.join(d, _BUNDLED[kind])
        if os.path.exists(p):
            return os.path.abspath(p)
    raise FileNotFoundError(f"the bundled {kind} model {_BUNDLED[kind]} is in none of: " + ", ".join(dirs))


def bundled(kind="grassmann", device="auto"):
    """The bundled models: "grassmann" (grassmann-austen.gwb) or "transformer" (transformer-austen.gwb)."""
    return load(_bundled_path(kind), device=device)


def site_names(model):
    return model.site_names()


# ---------------------------------------------------------------------------------------------
class Figure:
    """A figure as `gwb figure` makes it (drawn in this process): shows inline in Jupyter (SVG); save()
    writes it anywhere. `warnings`: the notes the command printed (truncation, per-model problems,
    the text Continue generated)."""

    def __init__(self, data, fmt, args, warnings=()):
        self.data, self.format, self.args, self.warnings = data, fmt, args, list(warnings)

    @property
    def svg(self):
        return self.data.decode("utf-8") if self.format == "svg" else None

    def _repr_svg_(self):
        return self.svg

    def _repr_png_(self):
        return self.data if self.format == "png" else None

    def save(self, path):
        """Writes the figure to `path` (its suffix must be the figure's format), atomically."""
        path = os.fspath(path)
        ext = os.path.splitext(path)[1].lower().lstrip(".")
        if ext != self.format:
            if not ext or os.path.isdir(path):
                raise ValueError(f"save needs a file name ending in .{self.format}, got {path!r}")
            raise ValueError(f"this figure is {self.format}, not {ext}: make a {ext} figure with "
                             f"gwb.figure(..., format={ext!r}) (figures are drawn, never converted)")
        _write_atomic(path, lambda f: f.write(self.data))

    def __repr__(self):
        return f"<gwb.Figure {self.format}, {len(self.data)} bytes: gwb figure {' '.join(self.args)}>"


_FIGURE_FORMATS = ("svg", "png", "pdf")


def _python_words(message):
    """A `gwb figure` message in gwb.figure's words: its options are keywords (--font-size: font_size)."""
    import re
    return re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), message)


def _figure_command(args):
    """`gwb figure ARGS` in this process (the figure library: no window, no gwb program):
    (status, standard output, messages)."""
    run = getattr(_gwb, "figure_command", None)
    if run is None:
        raise RuntimeError("gwb.figure draws with the figure library (Qt Gui), which this package was built "
                           "without: build it where Qt is installed (scripts/run builds it with the window)")
    return run(args)


def figure(view, prompt=None, width="3.5in", model=None, baseline=None, format="svg", **options):
    """The figure `gwb figure` makes (same options, with _ for -: font_size=9, no_caption=True), drawn
    in this process by the figure library (where the package was built with Qt; no gwb program runs).
    Returns a Figure (save() it anywhere); gwb.figure(help=True) prints the options.

    model / baseline: a path, or a gwb.Model (saved to a temporary .gwb when it did not come from one)."""
    if options.pop("help", False):
        print(_python_words(_figure_command(["--help"])[1]))
        return None
    if "out" in options:
        raise ValueError("gwb.figure returns the figure: write it with .save(path) instead of out=")
    if not isinstance(view, str):
        raise ValueError(f"view must be a view id such as 'gate' (gwb.figure(help=True) lists them), got {view!r}")
    fmt = str(format).lower()
    if fmt not in _FIGURE_FORMATS:
        raise ValueError(f"format must be 'svg', 'png' or 'pdf', got {format!r}")
    args = ["--view", view, "--width", str(width)]
    if prompt is not None:
        args += ["--prompt", prompt]
    tmpdir = tempfile.mkdtemp(prefix="gwb-figure-")
    try:
        for flag, m in (("--model", model), ("--baseline", baseline)):
            if m is None:
                continue
            if isinstance(m, Model):
                p = m.path
                if not p.endswith(".gwb"):
                    p = os.path.join(tmpdir, flag[2:] + ".gwb")
                    m.save(p)
                m = p
            args += [flag, os.fspath(m)]
        for k, v in options.items():
            flag = "--" + k.replace("_", "-")
            if v is True:
                args.append(flag)
            elif v is not False and v is not None:
                args += [flag, str(v)]
        out = os.path.join(tmpdir, "figure." + fmt)
        status, _, err = _figure_command([*args, "--out", out])
        notes = [line.split(": ", 1)[-1] if line.startswith("gwb figure: ") else line
                 for line in err.splitlines() if line.strip()]
        if status != 0:
            problems = [n for n in notes if not n.startswith("note: ")]
            raise ValueError(_python_words("\n".join(problems)) or f"gwb figure failed with status {status}")
        with open(out, "rb") as f:
            data = f.read()
    finally:
        for name in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, name))
        os.rmdir(tmpdir)
    warnings = [n[len("note: "):] if n.startswith("note: ") else n for n in notes]
    return Figure(data, fmt, list(args), [_python_words(w) for w in warnings])


def __getattr__(name):
    # gwb.torch imports PyTorch, which takes a while: only when asked for.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'gwb' has no attribute {name!r}")


from . import features  # noqa: E402 (after Model: gwb.features uses the package helpers)
from .graph import Graph, graph, graph_options  # noqa: E402,F401
from . import lens  # noqa: E402,F401
