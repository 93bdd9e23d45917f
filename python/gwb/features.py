"""Sparse dictionaries (SAEs) on a site of either model, with the command line's names:

    d = gwb.features.train(model, "resid.3", ["austen.txt"], d_sae=1024, k=32, tokens=2_000_000)
    d.save("sae-resid3")                       # SAELens's layout: sae_weights.safetensors + cfg.json
    gwb.features.eval(model, d, ["held-out.txt"])     # explained variance, L0, dead fraction, loss recovered
    gwb.features.top(model, d, ["held-out.txt"], [17, 40])   # top-activating contexts and more
    gwb.features.export(model, d, ["held-out.txt"], "dashboards.json")
    gwb.features.edit(model, d, 17, "She could not help laughing, and", "she", "they", mode="ablate")
    model.run(ids, hooks={"resid.3": gwb.features.hook(d, 17, "steer", 4.0)})

A crosscoder reads the same tokens of two models (the bundled pair shares its tokenizer):

    c = gwb.features.train(g, "resid.3", files, second=t, second_site="resid.3")
    gwb.features.relative_norms(c)   # per feature: 0 = the first model's alone, ~0.5 shared, 1 = the second's

Features are named feature.<site>.<index> ("feature.resid.3.17") everywhere. Activations are read
in raw units: the training scale is folded into the saved weights, as SAELens folds it.
"""

import json
import os

import numpy as np

from . import _gwb
from .results import _check_output, _check_output_folder

Dictionary = _gwb.Dictionary

#: The training options as the engine declares them (`gwb features train --help` prints the same
#: table): key -> {"flag", "help", "kind", "default", "range", ...}. The engine checks every value
#: train() and its kin pass with the command line's sentences; their signatures spell the table's
#: defaults so that the reference pages show them, and a test holds the two equal.
TRAIN_OPTIONS = {o["key"]: o for o in _gwb.features_train_options()}


def _train_options(architecture, d_sae, k, l1, tokens, batch, lr, seed, context=None):
    """The table's options as the engine reads them (a bad value raises its ValueError)."""
    given = dict(architecture=architecture, d_sae=d_sae, k=k, l1=l1, tokens=tokens, batch=batch, lr=lr, seed=seed)
    if context is not None:
        given["context"] = context
    return given


def _options_doc(keys):
    lines = [f"      {key}: {TRAIN_OPTIONS[key]['help']} (default {TRAIN_OPTIONS[key]['default']!r}; "
             f"{TRAIN_OPTIONS[key]['range']})"
             for key in keys]
    return "\n\n    Options (the engine's table, as `gwb features train --help` prints it):\n" + "\n".join(lines)


def _files(files):
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    out = [os.fspath(f) for f in files]
    if not out:
        raise ValueError("no text files given")
    for f in out:
        if not os.path.exists(f):
            raise FileNotFoundError(f"{f}: no such file")
    return out


def _native(model):
    return getattr(model, "_m", model)


def _dictionary(dictionary):
    if isinstance(dictionary, (str, os.PathLike)):
        return load(dictionary)
    return dictionary


def load(path):
    """Opens a dictionary folder (cfg.json + sae_weights.safetensors)."""
    return _gwb.features_load(os.fspath(path))


def train(model, site, files, architecture="topk", d_sae=1024, k=32, l1=1.0, tokens=2_000_000, batch=4096,
          context=128, lr=2e-3, seed=0, device="auto", state_dir=None, progress=True, second=None, second_site=None,
          target_site=None):
    """Trains a dictionary on `site` ("resid.3", "mixer.2", "gate.1", "ffn.0", "offset.4.8", "head.2.1")
    of `model`, with activations streamed from the text files. architecture: "topk" (k active
    features a token; dead features trained back with the AuxK loss) or "relu" (ReLU + L1 with
    coefficient l1; dead features resampled). The same arguments give the same weights.

    Ctrl-C stops after the current step; with state_dir the state is kept there and
    resume(model, state_dir) goes on (ending with the weights of an uninterrupted run).
    With `second` (a model) and `second_site`: a crosscoder over the same tokens of both models.
    With `target_site`: a transcoder that reads `site` and reconstructs `target_site` (e.g.
    site="ffn_in.2", the FFN's input, and target_site="ffn.2", its output).
    Returns the Dictionary; .complete on the result of train_run says whether it finished."""
    return train_run(model, site, files, architecture, d_sae, k, l1, tokens, batch, context, lr, seed, device,
                     state_dir, progress, second, second_site, target_site)["dictionary"]


def train_run(model, site, files, architecture="topk", d_sae=1024, k=32, l1=1.0, tokens=2_000_000, batch=4096,
              context=128, lr=2e-3, seed=0, device="auto", state_dir=None, progress=True, second=None,
              second_site=None, target_site=None):
    """train() with the run's record: {"dictionary", "complete", "steps", "seconds", "tokens_per_second"}."""
    from . import _progress
    if (second is None) != (second_site is None):
        raise ValueError("a crosscoder needs both the second model and its site (second=, second_site=)")
    state = "" if state_dir is None else _check_output_folder(state_dir, "state_dir")  # before the work
    options = _train_options(architecture, d_sae, k, l1, tokens, batch, lr, seed, context)
    callback, close = _progress(progress, f"features {site}")
    try:
        if second is not None:
            return _gwb.features_crosscoder_train(_native(model), _native(second), site, second_site, _files(files),
                                                  options, device, state, callback)
        return _gwb.features_train(_native(model), site, _files(files), options, device, state, callback,
                                   target_site or "")
    finally:
        close()


def train_transcoders(model, files, out, architecture="topk", d_sae=1024, k=32, l1=1.0, tokens=2_000_000,
                      batch=4096, context=128, lr=2e-3, seed=0, device="auto", progress=True):
    """Trains the model's transcoder set, as `gwb features train --transcoders` does: one transcoder
    per block reading the FFN's input ffn_in.L and reconstructing its output ffn.L (layer L drawn
    from seed + L), each saved to out/ffn.L, listed in out/transcoders.json. Ctrl-C stops after the
    current step with the layer's state kept; calling again with the same `out` goes on from there
    (the layers done are kept). Returns the set (load_transcoders(out, model))."""
    from . import _progress
    _check_output_folder(out, "out")  # before the work, as the command line checks --out
    options = _train_options(architecture, d_sae, k, l1, tokens, batch, lr, seed, context)
    callback, close = _progress(progress, "transcoders")
    try:
        _gwb.features_train_transcoders(_native(model), os.fspath(out), _files(files), options, device, callback)
    finally:
        close()
    return load_transcoders(out, model)


def load_transcoders(path, model=None):
    """A transcoder set: from its transcoders.json (train_transcoders, `gwb features train
    --transcoders`), else from circuit-tracer's layout (layer_L.safetensors as its
    TranscoderSet.to_safetensors writes them, hooks mlp.hook_in / mlp.hook_out in its config.yaml),
    else from its per-layer dictionary folders in SAELens's layout. With `model`, each must fit it
    and every block must have one. Returns the Dictionaries, layer L at index L."""
    return _gwb.features_load_transcoders(os.fspath(path), None if model is None else _native(model))


def resume(model, state_dir, progress=True):
    """Goes on with a stopped train(..., state_dir=...) run; returns the run's record."""
    from . import _progress
    callback, close = _progress(progress, "features (resumed)")
    try:
        return _gwb.features_resume(_native(model), os.fspath(state_dir), callback)
    finally:
        close()


def train_on_rows(rows, site="rows", architecture="topk", d_sae=1024, k=32, l1=1.0, tokens=None, batch=4096,
                  lr=2e-3, seed=0, dead_after_tokens=0, aux_coefficient=1 / 32, device="auto", first_width=0):
    """The same trainer on activations you have (rows x d_in, float32), batches taken in order and
    wrapping around; with first_width > 0 each row is a crosscoder's [x_1 (first_width values), x_2].
    Returns {"dictionary", "initial" (before the first step), "steps", ...}."""
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ValueError(f"rows must be a non-empty 2-D array, not shape {list(rows.shape)}")
    tokens = rows.shape[0] if tokens is None else int(tokens)
    return _gwb.features_train_on_rows(rows, site, _train_options(architecture, d_sae, k, l1, tokens, batch, lr, seed),
                                       int(dead_after_tokens), float(aux_coefficient), device, int(first_width))


for _f, _keys in ((train, TRAIN_OPTIONS), (train_run, TRAIN_OPTIONS), (train_transcoders, TRAIN_OPTIONS),
                  (train_on_rows, [k for k in TRAIN_OPTIONS if k not in ("tokens", "context")])):
    if _f.__doc__:  # not under python -OO
        _f.__doc__ += _options_doc(list(_keys))


def relative_norms(crosscoder):
    """Per feature of a crosscoder: ||W_dec,2[f]|| / (||W_dec,1[f]|| + ||W_dec,2[f]||) in the training
    units (each model's part at mean norm sqrt(d_m)); 0 = the first model's alone, about 0.5 =
    shared, 1 = the second's alone; the histogram model-diffing papers show."""
    return np.asarray(_gwb.features_relative_norms(_dictionary(crosscoder)))


def _second(d, second):
    if d.config["crosscoder"] and second is None:
        raise ValueError(f"the dictionary is a crosscoder of {d.config['model_name']!r} and "
                         f"{d.config['second_model_name']!r}: give the second model (second=...)")
    return None if second is None or not d.config["crosscoder"] else _native(second)


def eval(model, dictionary, files, context=None, max_windows=0, second=None):  # noqa: A001 (the command's name)
    """Explained variance, L0, dead fraction and the next-token loss clean / with the reconstruction
    spliced in / with the site zeroed, and the fraction of loss recovered, on held-out text. A
    crosscoder (give `second`) gives a list: the figures for each model."""
    d = _dictionary(dictionary)
    s = _second(d, second)
    ctx = int(context or d.config["context_size"])
    if s is not None:
        return _gwb.features_crosscoder_eval(_native(model), s, d, _files(files), ctx, int(max_windows))
    return _gwb.features_eval(_native(model), d, _files(files), ctx, int(max_windows))


def top(model, dictionary, files, features=None, n=10, before=8, after=4, context=None, max_windows=0, second=None):
    """Per feature: its top-activating contexts (pieces with the feature's activation on each), the
    histogram of its nonzero activations, the pieces its decoder direction promotes and suppresses
    through the unembedding, and for a Grassmann layer's input the share of that direction in the
    layer's reading subspace row(W_red)."""
    d = _dictionary(dictionary)
    if features is None:
        features = []
    elif isinstance(features, (int, np.integer)):
        features = [int(features)]
    return _gwb.features_summaries(_native(model), d, _files(files), [int(f) for f in features], int(n), int(before),
                                   int(after), int(context or d.config["context_size"]), int(max_windows),
                                   _second(d, second))


def export(model, dictionary, files, out, features=None, n=10, context=None, max_windows=0, second=None):
    """Writes the dashboards of every feature (or `features`) as JSON, as `gwb features export` does
    (the engine's one writer: the same file, written atomically)."""
    _check_output(out, "out")  # before the work, as `gwb features export` checks --out
    path = dictionary if isinstance(dictionary, (str, os.PathLike)) else ""
    d = _dictionary(dictionary)
    if features is None:
        features = []
    elif isinstance(features, (int, np.integer)):
        features = [int(features)]
    _gwb.features_export(_native(model), d, _files(files), [int(f) for f in features], int(n),
                         int(context or d.config["context_size"]), int(max_windows), _second(d, second),
                         os.fspath(path), os.fspath(out))
    return os.fspath(out)


def activations(model, site, files, context=128, max_rows=0):
    """A site's rows over the windows of text files: {"rows" (n x d_in), "tokens", "window", "position"}."""
    return _gwb.features_site_activations(_native(model), site, _files(files), int(context), int(max_rows))


def _feature_index(dictionary, feature):
    if isinstance(feature, str):
        site, index = _gwb.features_parse_name(feature)
        if site != dictionary.config["site"]:
            raise ValueError(f"{feature} is a feature of site {site}; the dictionary reads {dictionary.config['site']}")
        return index
    return int(feature)


def hook(dictionary, feature, mode="ablate", value=0.0, position=-1):
    """A hook for model.run(ids, hooks={site: ...}) that edits one feature at the dictionary's site:
    "ablate" (x - z_f W_dec[f]: its part of the reconstruction removed), "clamp" (held at value),
    "steer" (value times W_dec[f] added); at every position or only `position`. A transcoder reads
    one site and writes another: use hooks(), which gives both."""
    d = _dictionary(dictionary)
    if d.config.get("transcoder"):
        raise ValueError(f"a transcoder's feature reads {d.config['site']} and writes {d.config['target_site']}: "
                         "use gwb.features.hooks(...), which gives a hook for each")
    return FeatureHook(d, _feature_index(d, feature), mode, value, position)


class FeatureHook:
    """What hook() returns: a hook for model.run that edits one feature at `site`, so that
    `m.run(ids, hooks={h.site: h})` needs no second spelling of the site."""

    def __init__(self, dictionary, feature, mode, value, position):
        self.dictionary, self.feature, self.mode = dictionary, int(feature), mode
        self.value, self.position = float(value), int(position)
        self.site = dictionary.config["site"]

    def __call__(self, v, name):
        return self.dictionary.edit(v, self.feature, self.mode, self.value, self.position)

    def __repr__(self):
        return (f"<gwb.features.FeatureHook {self.mode} feature {self.feature} at {self.site}"
                f"{'' if self.position < 0 else f' (position {self.position})'}>")


def hooks(dictionary, feature, mode="ablate", value=0.0, position=-1):
    """The hooks for model.run(ids, hooks=...) that edit one feature, by site: {site: hook} for a
    dictionary; for a transcoder {input site: the reading, target site: the edit}, z_f read from
    the FFN's input and the FFN's output moved along W_dec[f] in the same pass."""
    d = _dictionary(dictionary)
    if not d.config.get("transcoder"):
        return {d.config["site"]: hook(d, feature, mode, value, position)}
    f = _feature_index(d, feature)
    seen = {}

    def read(v, name):
        seen["input"] = v
        return None

    def write(v, name):
        if "input" not in seen:
            raise RuntimeError(f"the transcoder's input site {d.config['site']} was not read before {name}")
        return d.edit_transcoder(seen["input"], v, f, mode, float(value), int(position))

    return {d.config["site"]: read, d.config["target_site"]: write}


def edit(model, dictionary, feature, prompt, answer, wrong, mode="ablate", value=0.0, position=-1,
         metric_position=-1, second=None):
    """The feature as a causal test: logit[answer] - logit[wrong] at the last token (or metric_position)
    without and with the edit, the feature's activation at each token, and the next pieces. A
    crosscoder's feature is edited in both models (give `second`): a list, one result per model."""
    from . import _ids, _text
    d = _dictionary(dictionary)
    native = _native(model)
    ids = _ids(native, _text(prompt) if isinstance(prompt, str) else prompt)
    a, w = native.piece_id(answer), native.piece_id(wrong)
    s = _second(d, second)
    if s is not None:
        results = _gwb.features_crosscoder_edit(native, s, d, _feature_index(d, feature), mode, float(value),
                                                int(position), ids, a, w, int(metric_position))
        for r, m in zip(results, (native, s)):
            _with_pieces(r, m)
        return results
    return _with_pieces(_gwb.features_edit(native, d, _feature_index(d, feature), mode, float(value), int(position),
                                           ids, a, w, int(metric_position)), native)


def _with_pieces(result, native):
    """An edit's result with the display text of its top next pieces beside their (id, probability) pairs."""
    for key in ("top_clean", "top_edited"):
        result[key + "_pieces"] = list(native.pieces([int(i) for i, _ in result[key]]))
    return result
