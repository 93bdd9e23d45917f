"""Every command and Python block of README.md and of the documentation site's pages (docs/) runs
as written, and prints what the page says it prints (docs/contributors/docs.md, "Code blocks are
tests").

One test per page. A page's blocks run in order in a fresh temporary folder (nothing is written into
the source tree), so a later block may use what an earlier one wrote:
- ```sh blocks with bash -e, `gwb` being this build's program (GWB_PROGRAM, as the other tests);
- ```python blocks in one namespace per page, with this build's package;
- a ```text block marked <!-- docs-test: output --> is the output of the block before it: compared
  line by line, a line "..." standing for any lines and "..." inside a line for any text;
- <!-- docs-test: skip because REASON --> before a block leaves it out.
The folder holds `resources` (the checkout's, so commands read as if run from the checkout's root)
and, where ../shared/data exists, `austen/` (Jane Austen's novels); a page that names austen/ is
skipped without them. Blocks that draw figures are skipped in a build without the window (a page
keeps what later blocks need out of them), and pages with commands in a build without a gwb
program.
Not run: docs/performance*.md (records that scripts/bench writes) and the generated references
(docs/reference/cli, docs/reference/python).

The view pages (docs/window/*, not its index) list the definitions their data exports carry: each
definition that the JSON of the page's own `gwb figure ... --data` block holds must be on the page,
word for word."""

import contextlib
import glob
import io
import json
import linecache
import os
import re
import subprocess

import pytest

from conftest import figure_available, gwb_program

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
AUSTEN = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "austen"))
NOT_RUN = re.compile(r"^docs/(performance[-a-z]*\.md|reference/(cli|python)/.*)$")
RUNNABLE = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "py": "python"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```+\s*([\w+-]*)")


def pages():
    found = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in
                                   glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return [p for p in found if not NOT_RUN.match(p)]


class Block:
    def __init__(self, lang, code, line, marker):
        self.lang, self.code, self.line, self.marker = lang, code, line, marker
        self.output = None  # the expected output (a marked ```text block after it)

    def where(self, page):
        return f"{page}:{self.line}"


def parse(page):
    """The page's runnable blocks, each with its marker and expected output."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, marker, last, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            marker = m.group(1)
            if not (marker == "output" or re.match(r"skip because \S", marker)):
                raise AssertionError(f"{page}:{i + 1}: unknown marker <!-- docs-test: {marker} --> "
                                     "(say 'output' or 'skip because REASON')")
            i += 1
            continue
        f = FENCE.match(line)
        if not f:
            if line.strip():
                marker = None  # a marker applies to the block right after it (blank lines between)
            i += 1
            continue
        indent, lang, start = f.group(1), f.group(2).lower(), i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```+\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page}:{start}: a code block that never closes")
        i += 1
        code = "\n".join(body) + "\n"
        if marker == "output":
            if lang != "text" or last is None or last.output is not None:
                raise AssertionError(f"{page}:{start}: an output block must be a ```text block right after "
                                     "the block whose output it is")
            last.output = code
        elif lang in RUNNABLE:
            last = Block(RUNNABLE[lang], code, start, marker)
            blocks.append(last)
        elif marker is not None:
            raise AssertionError(f"{page}:{start}: a docs-test marker before a ```{lang} block, which never runs")
        marker = None
    return blocks


NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")


def output_matches(expected, actual):
    """`actual` has the lines of `expected`, where a line "..." is any lines (none too) and "..."
    inside a line any text. Decimal numbers agree to 1e-4 relative (the last printed digits of a
    float32 sum may differ between LibTorch builds); other text, whole numbers included, is equal.
    Trailing spaces do not count."""
    pattern, numbers = [], []
    for line in expected.rstrip("\n").split("\n"):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
            continue
        parts = []
        pieces = line.rstrip().split("...")
        for i, piece in enumerate(pieces):
            pos = 0
            for m in NUMBER.finditer(piece):
                # A number that touches a "..." is a prefix or suffix of what is printed ("0.000..."): text.
                if (m.end() == len(piece) and i < len(pieces) - 1) or (m.start() == 0 and i > 0):
                    continue
                parts.append(re.escape(piece[pos:m.start()]) + r"(-?[\d.]+(?:e[-+]?\d+)?)")
                numbers.append(float(m.group()))
                pos = m.end()
            parts.append(re.escape(piece[pos:]))
            parts.append(".*?")
        pattern.append("".join(parts[:-1]) + r"\n")
    actual = "\n".join(line.rstrip() for line in actual.rstrip("\n").split("\n")) + "\n"
    m = re.fullmatch("".join(pattern), actual)
    if m is None:
        return False
    for want, got in zip(numbers, m.groups()):
        try:
            value = float(got)
        except ValueError:
            return False
        if abs(value - want) > 1e-4 * max(abs(want), abs(value)) + 1e-9:
            return False
    return True


def draws_figures(block):
    return "gwb figure" in block.code or "gwb.figure(" in block.code


def run_shell(block, page, cwd, env):
    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"{block.where(page)}: the block failed with status {r.returncode}:\n{block.code}\n"
                    f"--- stdout (end)\n{r.stdout[-3000:]}\n--- stderr (end)\n{r.stderr[-3000:]}", pytrace=False)
    return r.stdout


def run_python(block, page, cwd, namespace):
    name = f"<{block.where(page)}>"
    linecache.cache[name] = (len(block.code), None, block.code.splitlines(True), name)  # tracers read it
    out = io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(block.code, name, "exec"), namespace)
    except Exception as e:  # noqa: BLE001 (the page's own code: any failure is the test's failure)
        pytest.fail(f"{block.where(page)}: the block raised {type(e).__name__}: {e}\n{block.code}\n"
                    f"--- printed\n{out.getvalue()[-3000:]}", pytrace=False)
    finally:
        os.chdir(old)
    return out.getvalue()


def check_definitions(page, folder):
    """Each definition the page's exported data carries is on the page, word for word."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = re.sub(r"\\(.)", r"\1", f.read())  # Markdown's escapes are not part of the words
    problems = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError:
                continue
        defs = data.get("definitions_used") if isinstance(data, dict) else None
        for key, words in (defs or {}).items():
            if f"**{key}**: {words}" not in text:
                problems.append(f"  {key}: {words}")
    if problems:
        pytest.fail(f"{page}: its 'Definitions its data carries' list differs from what the data export "
                    f"carries; the export says:\n" + "\n".join(problems), pytrace=False)


@pytest.mark.parametrize("page", pages())
def test_page_runs_as_written(page, tmp_path, tmp_path_factory):
    blocks = parse(page)
    if not blocks:
        return
    if any("austen/" in b.code for b in blocks if not b.marker) and not os.path.isdir(AUSTEN):
        pytest.skip(f"{AUSTEN} is absent (../shared/data is not in a fresh clone); {page} uses austen/")
    os.symlink(os.path.join(ROOT, "resources"), tmp_path / "resources")
    if os.path.isdir(AUSTEN):
        os.symlink(AUSTEN, tmp_path / "austen")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    prog = gwb_program()
    has_gwb = bool(prog) and os.path.exists(prog)
    if not has_gwb and any(b.lang == "sh" and not b.marker for b in blocks):
        pytest.skip(f"no gwb program in this build (engine only): {page}'s commands cannot run")
    if has_gwb:
        bindir = tmp_path_factory.mktemp("bin")
        os.symlink(os.path.abspath(prog), bindir / "gwb")
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    namespace = {"__name__": "__docs__"}
    skipped = []
    for block in blocks:
        if block.marker:
            continue
        if draws_figures(block) and not figure_available():
            skipped.append(f"{block.where(page)} (this build has no figures)")
            continue
        if block.lang == "sh":
            printed = run_shell(block, page, tmp_path, env)
        else:
            if draws_figures(block) and not hasattr(__import__("gwb")._gwb, "figure_command"):
                skipped.append(f"{block.where(page)} (the package has no figure library)")
                continue
            printed = run_python(block, page, tmp_path, namespace)
        if block.output is not None and not output_matches(block.output, printed):
            pytest.fail(f"{block.where(page)}: the block printed\n{printed}\nbut the page says it prints\n"
                        f"{block.output}", pytrace=False)
    if page.startswith("docs/window/") and page != "docs/window/index.md":
        check_definitions(page, tmp_path)
    if skipped:
        print(f"{page}: not run: " + "; ".join(skipped))


def test_output_matching():
    assert output_matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert output_matches("a\n...\nd\n", "a\nd\n")
    assert output_matches("time: ... s\n", "time: 1.75 s\n")
    assert not output_matches("a\nd\n", "a\nb\nd\n")
    assert not output_matches("time: ... s\n", "time: 1.75 ms\n")
    assert output_matches("effect 0.460394814, metric -1.27\n", "effect 0.460394817, metric -1.27\n")
    assert not output_matches("effect 0.460, L5\n", "effect 0.470, L5\n")
    assert not output_matches("L5, D=2\n", "L5, D=3\n")
    assert output_matches("a 3.03e-06 b\n", "a 3.0300001e-06 b\n")
    assert output_matches("is 0.000... logits\n", "is 0.000679 logits\n")
    assert not output_matches("is 0.000... logits\n", "is 0.0013 logits\n")


def _reference_problems(pages):
    problems = []
    for path, text in sorted(pages.items()):
        full = os.path.join(ROOT, "docs", path)
        if not os.path.exists(full):
            problems.append(f"docs/{path} is missing")
            continue
        with open(full, encoding="utf-8") as f:
            if f.read() != text:
                problems.append(f"docs/{path} differs from what the code gives")
    folders = {os.path.dirname(p) for p in pages}
    for folder in folders:
        for path in glob.glob(os.path.join(ROOT, "docs", folder, "*.md")):
            if os.path.relpath(path, os.path.join(ROOT, "docs")) not in pages:
                problems.append(f"{os.path.relpath(path, ROOT)} documents what the code no longer has")
    return problems


def _docs_gen():
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("docs_gen", os.path.join(ROOT, "scripts", "docs_gen.py"))
    module = importlib.util.module_from_spec(spec)
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no scripts/__pycache__
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writes
    return module


def test_the_command_reference_is_this_programs_help():
    """docs/reference/cli is what `gwb --help` and every `gwb COMMAND --help` of this build print:
    a new command, option or help text fails here until `scripts/docs generate` is run."""
    prog = gwb_program()
    if not prog or not os.path.exists(prog):
        pytest.skip("no gwb program in this build")
    if not figure_available():
        pytest.skip("a headless gwb (no window, no figure command): the reference is the full program's")
    problems = _reference_problems(_docs_gen().cli_reference(os.path.abspath(prog)))
    assert not problems, "run scripts/docs generate and commit the pages:\n" + "\n".join(problems)


def test_the_python_reference_is_the_packages_docstrings():
    problems = _reference_problems(_docs_gen().python_reference())
    assert not problems, "run scripts/docs generate and commit the pages:\n" + "\n".join(problems)
