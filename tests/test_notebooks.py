"""The notebooks: committed clean, and every one runs headless against the sample data.

Each notebook is executed with nbclient in the ``python3`` kernel, which
jupyter_client starts with the interpreter running the tests (this venv:
checked below), with the kernel's working directory a temporary folder so
whatever a notebook writes stays out of the repository.  Paths inside the
notebooks resolve through :func:`rewardlab.sessions.locate`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NAMES = ["01_tour", "02_tuning_ranking", "03_normalization", "04_epsilon_schedules", "05_comparing_plugins",
         "06_step_tables", "07_mjai_logs", "08_retro_contest", "09_multi_agent"]
CELL_TIMEOUT_S = 300
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: Notebooks whose widget must be displayed (as a widget view, not only its text repr).
WIDGETS = {"01_tour": 1, "02_tuning_ranking": 1, "03_normalization": 1, "04_epsilon_schedules": 1,
           "05_comparing_plugins": 1, "06_step_tables": 2, "07_mjai_logs": 2, "08_retro_contest": 1,
           "09_multi_agent": 1}


def test_the_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == NAMES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_first(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), f"{path.name}: the first code cell is the parameters cell"
    assert all("parameters" not in c.metadata.get("tags", []) for c in code[1:])


def _run(nb, cwd: Path) -> None:
    env_before = os.environ.get("REWARDLAB_PROGRESS")
    os.environ["REWARDLAB_PROGRESS"] = "0"  # the kernel inherits it: no progress widgets in outputs
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        if env_before is None:
            os.environ.pop("REWARDLAB_PROGRESS", None)
        else:
            os.environ["REWARDLAB_PROGRESS"] = env_before


def test_kernel_is_this_interpreter(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import sys; print(sys.executable)")])
    _run(nb, tmp_path)
    printed = nb.cells[0].outputs[0]["text"].strip()
    assert Path(printed).resolve() == Path(sys.executable).resolve()


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, sample_path):
    nb = nbformat.read(path, as_version=4)
    if sample_path != ROOT / "data" / "sample.tsv.gz":  # no bundled sample yet: use the fixture's
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        if "DATA =" in params.source:
            params.source += f"\nDATA = {str(sample_path)!r}\n"
    _run(nb, tmp_path)  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr" and "Traceback" in o.text]
    views = [o for o in outputs if o.output_type in ("display_data", "execute_result") and WIDGET_MIME in o.data]
    assert len(views) >= WIDGETS.get(path.stem, 0)
