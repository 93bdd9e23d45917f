#!/usr/bin/env python3
"""The layers, checked: a file of a lower layer never includes one of a higher layer.

  geometry (Eigen) < engine: gwb_trace and the run results (Torch-free) < the engine's runs
  (std-only headers over LibTorch) < views (Qt: figures and widgets) < app (front ends)

The build already refuses Torch headers outside the engine's Torch files (only those get Torch's
include folders) and Qt headers in the engine (it has none). What it cannot refuse, because the
engine's headers share one include folder, is a view, a figure or gwb_trace including a *run
header*: a public engine header that is, or includes, model.h (the run API over LibTorch). So:

1. views/ and the Torch-free engine library (engine/src/trace, engine/src/stats) include no run
   header, directly or through other headers;
2. geometry/ includes nothing of the engine, the views, the app, Qt or Torch;
3. engine/ includes nothing of the views or the app, and no Qt;
4. views/ includes nothing of the app;
5. no file includes both a Qt and a Torch header (directly or through the project's headers).

Run by ctest (Layers.Includes); `--self-test` plants each kind of violation in a scratch tree and
checks that it is reported. Prints each violation as FILE: INCLUDE (why) and exits 1 if any.
"""

import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
TORCH = ("torch/", "ATen/", "c10/", "caffe2/")
SOURCE = (".h", ".hpp", ".cpp", ".cc")
ROOTS = ("engine/include", "engine/src", "geometry/include", "views/include", "views", "app", "python/src")


def is_qt(name):
    return re.match(r"^Q[A-Za-z]*($|/)", name) is not None or name.startswith("Qt")


def is_torch(name):
    return name.startswith(TORCH) or name == "torch/torch.h"


class Tree:
    def __init__(self, root):
        self.root = root
        self.files = {}
        for top in ("geometry", "engine", "views", "app", "python"):
            for folder, _, names in os.walk(os.path.join(root, top)):
                for n in names:
                    if n.endswith(SOURCE):
                        path = os.path.relpath(os.path.join(folder, n), root)
                        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                            self.files[path] = INCLUDE.findall(f.read())
        self.memo = {}

    def resolve(self, path, name):
        """The project file `name` names when `path` includes it, or None (a system header)."""
        here = os.path.normpath(os.path.join(os.path.dirname(path), name))
        if here in self.files:
            return here
        for r in ROOTS:
            candidate = os.path.normpath(os.path.join(r, name))
            if candidate in self.files:
                return candidate
        return None

    def closure(self, path):
        """Every include `path` reaches: (project files, external names)."""
        if path in self.memo:
            return self.memo[path]
        self.memo[path] = (set(), set())  # cycles end here
        files, external = set(), set()
        for name in self.files.get(path, []):
            target = self.resolve(path, name)
            if target is None:
                external.add(name)
            else:
                files.add(target)
                sub_files, sub_external = self.closure(target)
                files |= sub_files
                external |= sub_external
        self.memo[path] = (files, external)
        return files, external


def violations(root):
    t = Tree(root)
    model = "engine/include/gwb/engine/model.h"
    run_headers = {p for p in t.files if p.startswith("engine/include/") and
                   (p == model or model in t.closure(p)[0])}
    out = []
    for path, names in sorted(t.files.items()):
        direct = [(n, t.resolve(path, n)) for n in names]
        files, external = t.closure(path)
        torch_free_engine = path.startswith(("engine/src/trace/", "engine/src/stats/"))
        if path.startswith("views/") or torch_free_engine:
            for n, target in direct:
                if target in run_headers:
                    out.append(f"{path}: {n} (a run header: it includes model.h)")
                elif target is not None:
                    reached = sorted(t.closure(target)[0] & run_headers)
                    if reached:
                        out.append(f"{path}: {n} (reaches the run header {reached[0]})")
        if path.startswith("geometry/"):
            for n, target in direct:
                if (target or "").startswith(("engine/", "views/", "app/", "python/")) or \
                        n.startswith(("gwb/engine/", "gwb/views/")) or is_qt(n) or is_torch(n):
                    out.append(f"{path}: {n} (geometry uses Eigen and the standard library only)")
        if path.startswith("engine/"):
            for n, target in direct:
                if (target or "").startswith(("views/", "app/", "python/")) or n.startswith("gwb/views/") or is_qt(n):
                    out.append(f"{path}: {n} (the engine includes no view, front end or Qt header)")
        if path.startswith("views/"):
            for n, target in direct:
                if (target or "").startswith(("app/", "python/")):
                    out.append(f"{path}: {n} (a view includes no front end)")
        qt = sorted(n for n in external if is_qt(n))
        torch = sorted(n for n in external if is_torch(n))
        if qt and torch:
            out.append(f"{path}: {qt[0]} and {torch[0]} (Qt and Torch headers in one file)")
    return out


def self_test():
    cases = {
        "views/figures/a.cpp": ('#include "gwb/engine/feature_runs.h"\n', "a run header"),
        "views/figures/b.cpp": ('#include "gwb/views/fig.h"\n', "reaches the run header"),
        "engine/src/trace/c.cpp": ('#include "gwb/engine/model.h"\n', "a run header"),
        "geometry/src/d.cpp": ('#include "gwb/engine/array.h"\n', "geometry uses"),
        "engine/src/runs/e.cpp": ("#include <QString>\n", "no view, front end or Qt"),
        "views/src/f.cpp": ('#include "runs/job.h"\n', "a view includes no front end"),
        "app/gui/g.cpp": ('#include <QWidget>\n#include "torchy.h"\n', "Qt and Torch headers in one file"),
    }
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        write("engine/include/gwb/engine/model.h", "#include <string>\n")
        write("engine/include/gwb/engine/feature_runs.h", '#include "gwb/engine/model.h"\n')
        write("views/include/gwb/views/fig.h", '#include "gwb/engine/feature_runs.h"\n')
        write("engine/include/gwb/engine/array.h", "#include <vector>\n")
        write("app/runs/job.h", "#include <string>\n")
        write("app/gui/torchy.h", "#include <torch/torch.h>\n")
        write("views/figures/clean.cpp", '#include "gwb/engine/array.h"\n#include <QPainter>\n')
        for path, (text, _) in cases.items():
            write(path, text)
        found = violations(root)
        missing = [f"{p} ({why})" for p, (_, why) in cases.items()
                   if not any(v.startswith(p + ":") and why in v for v in found)]
        clean = [v for v in found if v.startswith("views/figures/clean.cpp")]
        if missing or clean:
            print("check_layers self-test FAILED: not reported:", missing, "wrongly reported:", clean)
            return 1
    print(f"check_layers self-test: all {len(cases)} planted violations reported, the clean file not")
    return 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    found = violations(root)
    for v in found:
        print(v)
    print(f"check_layers: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
