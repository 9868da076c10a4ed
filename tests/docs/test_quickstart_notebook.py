"""``examples/quickstart.ipynb`` runs from top to bottom on the bundled sample, and is kept in git
without outputs (a notebook's saved outputs are noise in a diff and go stale)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"


def test_the_notebook_is_stored_without_outputs():
    stored = json.loads(NOTEBOOK.read_text())
    code = [cell for cell in stored["cells"] if cell["cell_type"] == "code"]
    assert code, "the notebook has code cells"
    dirty = [i for i, cell in enumerate(code) if cell.get("outputs") or cell.get("execution_count") is not None]
    assert not dirty, (f"code cells {dirty} of {NOTEBOOK.name} have saved outputs; strip them: "
                       f"jupyter nbconvert --clear-output --inplace {NOTEBOOK.relative_to(REPO)}")


def test_the_notebook_runs_and_shows_tables_and_figures_inline(tmp_path):
    (tmp_path / "data_samples").symlink_to(REPO / "data_samples")
    workdir = tmp_path / "examples"
    workdir.mkdir()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    kinds = [set(o.get("data", {})) for o in outputs]
    # plots inline as PNG with no %matplotlib magic; the result and the tables as HTML
    assert sum("image/png" in k for k in kinds) == 2
    assert sum("text/html" in k for k in kinds) >= 6
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.startswith("<Evaluation 'evaluation': 6 systems, 5,000 queries, 6 metrics") and len(printed.splitlines()) < 20
    assert (workdir / "reports" / "quickstart" / "by_criterion.csv").is_file()
    assert (workdir / "reports" / "quickstart" / "summary.parquet").is_file()
