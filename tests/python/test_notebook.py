"""The example notebook (examples/gwb_tour.ipynb) runs from top to bottom and shows its figure inline."""

import os

import nbformat
from nbclient import NotebookClient

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOK = os.path.join(HERE, "..", "..", "examples", "gwb_tour.ipynb")


def test_example_notebook_runs(monkeypatch):
    import gwb
    from conftest import need_figures
    need_figures()  # the notebook shows a figure, which needs the window's gwb program
    # The kernel is another process: it finds the package this test imported (an absolute path).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(gwb.__file__)))
    monkeypatch.setenv("PYTHONPATH", package_root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": HERE}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    svgs = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert svgs, "the figure did not show inline"
    text = "".join(o.get("text", "") for o in outputs)
    assert "sweep raw effect at offset.3.2" in text and "below 0.05" in text
