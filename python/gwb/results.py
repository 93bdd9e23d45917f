"""Results of the engine's runs as Python sees them: read-only mappings of numpy arrays with the
command line's names, plus meta.json, and the readers of the files the command line writes; and
the package's checks of where it writes.

Errors: a file or folder that cannot be read or written raises an OSError subclass
(FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError, ...; errno set, the
message naming the user's path, never a temporary file); a bad argument raises
ValueError (TypeError for a wrong type). Every call that writes checks its output before the
work, as the command line does, and the engine's own write errors come as the same OSError family."""

import errno as _errno
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping

import numpy as np


# ---------------------------------------------------------------------------------------------
# Where the package writes: checked before the work, in one family of exceptions (OSError).
def _os_error(cls, code, path, message):
    """An OSError subclass with `message` (which names `path`) as its text and errno set. (filename
    stays unset: Python would print it after the message a second time.)"""
    e = cls(message)
    e.errno = code
    return e


def _head(what, path):
    return f"cannot write {what + ' ' if what else ''}{path!r}"


def _check_output(path, what=""):
    """Raises the OSError a write of the file `path` would fail with, before any work: its folder
    missing (FileNotFoundError) or not a folder (NotADirectoryError), not writable
    (PermissionError), or `path` itself a folder (IsADirectoryError). Returns the path as a str."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    head = _head(what, path)
    if not os.path.exists(folder):
        raise _os_error(FileNotFoundError, _errno.ENOENT, path, f"{head}: the folder {folder!r} does not exist")
    if not os.path.isdir(folder):
        raise _os_error(NotADirectoryError, _errno.ENOTDIR, path, f"{head}: {folder!r} is not a folder")
    if os.path.isdir(path):
        raise _os_error(IsADirectoryError, _errno.EISDIR, path, f"{head}: it is a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _os_error(PermissionError, _errno.EACCES, path, f"{head}: the folder {folder!r} is not writable")
    return path


def _check_output_folder(path, what=""):
    """As _check_output for a folder the call makes if missing: an existing path that is not a
    writable folder, or a missing one whose nearest existing parent is not, raises."""
    path = os.fspath(path)
    head = _head(what, path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise _os_error(NotADirectoryError, _errno.ENOTDIR, path, f"{head}: it is a file, not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise _os_error(PermissionError, _errno.EACCES, path, f"{head}: the folder is not writable")
        return path
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise _os_error(NotADirectoryError, _errno.ENOTDIR, path, f"{head}: {parent!r} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _os_error(PermissionError, _errno.EACCES, path, f"{head}: the folder {parent!r} is not writable")
    return path


def _write_atomic(path, write, what=""):
    """Writes the file `path` atomically: write(f) fills a temporary file in its folder (made as any
    new file is, by the umask), which then replaces `path`. Errors name `path`, never the
    temporary file, and no temporary file is left behind."""
    path = _check_output(path, what)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gwb-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            write(f)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise _os_error(type(e), e.errno, path, f"{_head(what, path)}: {e.strerror or e}") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


# ---------------------------------------------------------------------------------------------
# Results: read-only mappings of numpy arrays with the command line's names, plus meta.json.
class Result(Mapping):
    """Named numpy arrays (the members of an NPZ the command line writes) and its meta data."""

    def __init__(self, arrays, meta):
        self._arrays = dict(arrays)
        self.meta = meta

    def __getitem__(self, name):
        try:
            return self._arrays[name]
        except KeyError:
            raise KeyError(f"{name!r} is not in this {type(self).__name__}; its arrays are: "
                           + ", ".join(sorted(self._arrays))) from None

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self):
        return len(self._arrays)

    def __repr__(self):
        names = ", ".join(f"{k}{list(v.shape)}" for k, v in list(self._arrays.items())[:8])
        more = f", ... ({len(self._arrays)} arrays)" if len(self._arrays) > 8 else ""
        return f"<gwb.{type(self).__name__} {names}{more}>"

    def save(self, path):
        """Writes the arrays and meta.json as an NPZ, atomically. A path that cannot be written
        raises the OSError subclass that says why, naming `path`."""
        def write(f):
            with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
                for name, a in self._arrays.items():
                    buf = io.BytesIO()
                    np.save(buf, np.asarray(a), allow_pickle=False)
                    z.writestr(name + ".npy", buf.getvalue())
                z.writestr("meta.json", json.dumps(self.meta, indent=2, ensure_ascii=False))

        _write_atomic(path, write)


class Trace(Result):
    """One forward pass, as `gwb trace` writes it: t["l2_gate"], t["l0_h"], t["logits"], ...

    t.token_ids: the ids traced; t.tokens: one dict per token (id, text, byte_begin, byte_end,
    char_begin, char_end); t.meta: meta.json (model, config, prompt, definitions)."""

    def __init__(self, arrays, meta, warnings=()):
        super().__init__(arrays, meta)
        self.warnings = list(warnings) or list(meta.get("warnings", []))

    @property
    def token_ids(self):
        return self._arrays["token_ids"]

    @property
    def tokens(self):
        return self.meta.get("tokens", [])

    @property
    def definitions(self):
        return self.meta.get("definitions", {})


class PatchResult(Result):
    """A sweep, as `gwb patch` writes it: effect, metric, clean_metric, corrupt_metric, defined, ...
    meta["row_labels"] / meta["column_labels"] name the rows and columns."""


class PathResult(Result):
    """Path patching, as `gwb paths` writes it: metric and effect (senders x receivers);
    meta["sender_labels"] ("offset.5.2", "head.2.1", ...) and meta["receiver_labels"] ("logits", "resid.M")."""


class Stats(Result):
    """Corpus statistics, as `gwb stats` writes them (the NPZ's arrays and meta.json)."""


def _read_npz(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            meta = json.loads(z.read("meta.json").decode("utf-8")) if "meta.json" in names else {}
            arrays = {}
            for n in names:
                if n.endswith(".npy"):
                    arrays[n[:-4]] = np.load(io.BytesIO(z.read(n)), allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, KeyError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not an NPZ written by gwb ({e})") from None
    return arrays, meta


def open_trace(path):
    """Reads an NPZ written by `gwb trace` (or Trace.save) into the same object model.trace() returns."""
    arrays, meta = _read_npz(path)
    if "token_ids" not in arrays:
        raise ValueError(f"{os.fspath(path)}: not a gwb trace (no token_ids array)")
    return Trace(arrays, meta)


def open_patch(path):
    """Reads an NPZ written by `gwb patch`: one pair's sweep, a `--pairs` run, one of its shards or
    their `gwb patch merge` (the same PatchResult model.patch() returns for each)."""
    arrays, meta = _read_npz(path)
    sweep = "defined" in arrays
    pairs = "line" in arrays and ("effect" in arrays or "attribution" in arrays) and "sender_labels" not in meta
    if not (sweep or pairs):
        raise ValueError(f"{os.fspath(path)}: not a file from gwb patch (neither one pair's sweep nor a pairs run)")
    return PatchResult(arrays, meta)


def open_paths(path):
    """Reads an NPZ written by `gwb paths` (one pair, or --pairs; with --linear its direct logit
    attribution too) into the PathResult model.paths() returns."""
    arrays, meta = _read_npz(path)
    if "sender_labels" not in meta or "metric" not in arrays:
        raise ValueError(f"{os.fspath(path)}: not a file from gwb paths (no senders and receivers)")
    return PathResult(arrays, meta)


def open_stats(path):
    """Reads an NPZ written by `gwb stats` (corpus statistics)."""
    arrays, meta = _read_npz(path)
    if not meta:
        raise ValueError(f"{os.fspath(path)}: not gwb corpus statistics (no meta.json)")
    return Stats(arrays, meta)
