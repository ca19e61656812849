"""Set-up and paths a new user meets first (issue 23).

- ``make lab`` installs the lab extra only; ``make test`` adds the test extra on top of the lab's venv
  (two stamps keyed on pyproject.toml's checksum), the compile steps run once for both.
- An optional package that is missing is named with the exact command that installs its extra
  (:mod:`rewardlab.core.extras`), at every place that needs one.
- The lab extra holds what the notebooks and the widgets import.
- Saved states go to ``rewardlab-state/`` under the working directory, which git ignores.
- A notebook's parameter cell takes the user's own absolute path (:func:`rewardlab.sessions.locate`).
"""

from __future__ import annotations

import ast
import base64
import importlib.metadata
import importlib.util
import json
import os
import pickle
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from rewardlab.core.errors import ParameterError
from rewardlab.core.extras import EXTRAS, install_command, missing_extra
from rewardlab.sessions import locate
from rewardlab.sessions.state import STATE_FOLDER, default_state_path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


# --------------------------------------------------------------------------
# The Makefile: `make lab` installs the lab, `make test` adds the test extra
# --------------------------------------------------------------------------

COMPILE_STEPS = ("rewardlab.sources.kanachan.tokenizer", "rewardlab.analysis.replay_kernels",
                 "rewardlab.analysis.sums", "rewardlab.sources.mjai.compile")


@pytest.fixture
def make_tree(tmp_path):
    """A copy of the Makefile and pyproject.toml (no venv), where ``make -n`` shows what would run."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sample.tsv.gz").write_bytes(b"")  # the sample exists: not regenerated
    return tmp_path


def dry_run(tree: Path, target: str) -> list[str]:
    out = subprocess.run(["make", "-n", target], cwd=tree, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if re.search(r"\bpip install\b", line)]


def compiles(lines: list[str]) -> list[str]:
    return [m for line in lines for m in COMPILE_STEPS if f"-m {m}" in line]


def stamps(tree: Path) -> list[str]:
    return sorted(p.name for p in (tree / ".venv").glob(".*-*"))


def touch_stamps(tree: Path, lines: list[str]) -> None:
    """Do what the dry run's ``touch`` lines would (the stamps only)."""
    (tree / ".venv").mkdir(exist_ok=True)
    for line in lines:
        if line.startswith("touch "):
            (tree / line.split()[1]).touch()


def test_make_lab_installs_the_lab_extra_only_and_compiles(make_tree):
    lines = dry_run(make_tree, "venv")
    assert len(installs(lines)) == 1 and installs(lines)[0].endswith(" -e '.[lab]'")
    assert compiles(lines) == list(COMPILE_STEPS)
    lab = [line for line in dry_run(make_tree, "lab") if "pip install" in line]
    assert lab == installs(lines)  # `make lab` is that venv, then the server


def test_make_test_adds_the_test_extra_once_and_shares_the_compile_steps(make_tree):
    fresh = dry_run(make_tree, "venv-test")
    assert [line.split("install", 1)[1].split()[-1] for line in installs(fresh)] == [
        "'.[lab]'", ".venv/requirements-test.txt"]
    assert compiles(fresh) == list(COMPILE_STEPS)  # a fresh clone's `make test` compiles too
    test_line = dry_run(make_tree, "test")
    assert installs(test_line) == installs(fresh)

    # After `make lab`: `make test` installs only the test extra's requirements, and compiles nothing again.
    lab = dry_run(make_tree, "venv")
    touch_stamps(make_tree, lab)
    after_lab = dry_run(make_tree, "venv-test")
    assert [line.split()[-1] for line in installs(after_lab)] == [".venv/requirements-test.txt"]
    assert compiles(after_lab) == [] and "-e" not in " ".join(installs(after_lab))
    touch_stamps(make_tree, after_lab)
    assert installs(dry_run(make_tree, "venv-test")) == installs(dry_run(make_tree, "venv")) == []
    assert installs(dry_run(make_tree, "lab")) == []

    # An edit of pyproject.toml (new checksum) installs again, both stamps.
    (make_tree / "pyproject.toml").write_text((make_tree / "pyproject.toml").read_text() + "\n# edited\n")
    assert len(installs(dry_run(make_tree, "venv-test"))) == 2


def test_the_test_requirements_are_the_dependencies_and_the_lab_and_test_extras(make_tree):
    line = next(line for line in dry_run(make_tree, "venv-test") if "requirements-test.txt" in line
                and "tomllib" in line)
    command = line.replace(".venv/bin/python", shlex.quote(sys.executable)).split(" > ")[0]
    out = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    extras = PYPROJECT["optional-dependencies"]
    assert out.splitlines() == [*PYPROJECT["dependencies"], *extras["lab"], *extras["test"]]


# --------------------------------------------------------------------------
# The lab extra holds what the notebooks and widgets import
# --------------------------------------------------------------------------


def imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def requirement_name(requirement: str) -> str:
    return re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_lab_extra_holds_what_the_notebooks_and_widgets_import():
    modules = set()
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                modules |= imported_modules("".join(cell["source"]))
    for path in [*(ROOT / "rewardlab" / "widgets").glob("*.py"), *(ROOT / "rewardlab" / "sessions").glob("*.py")]:
        modules |= imported_modules(path.read_text())
    third_party = {m for m in modules if m not in sys.stdlib_module_names and m != "rewardlab"}
    assert {"ipywidgets", "ipympl", "polars", "numpy"} <= third_party  # the walk found the imports
    lab = {requirement_name(r) for r in PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["lab"]}
    assert {"jupyterlab", "ipykernel"} <= lab  # the server and the kernel the notebooks run in
    installed = closure(lab)  # what `pip install -e '.[lab]'` brings, dependencies of dependencies included
    owners = importlib.metadata.packages_distributions()
    for module in sorted(third_party):
        dists = {requirement_name(d) for d in owners.get(module, [])}
        assert dists & installed, f"{module} ({sorted(dists)}) is not installed by rewardlab's dependencies or lab extra"


def closure(names: set[str]) -> set[str]:
    """``names`` and every distribution they require, transitively (requirements of their own extras left out)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [requirement_name(r) for r in requires if "extra ==" not in r]
    return seen


def test_extras_named_in_code_are_the_pyproject_extras():
    assert set(EXTRAS) == set(PYPROJECT["optional-dependencies"])


# --------------------------------------------------------------------------
# A missing optional package names the command that installs its extra
# --------------------------------------------------------------------------


def test_install_command_in_this_checkout():
    command = install_command("gym")
    if Path(sys.prefix) == ROOT / ".venv":  # the venv `make` sets up
        assert command == f"cd {ROOT} && .venv/bin/pip install -e '.[gym]'"
    assert command.startswith(f"cd {shlex.quote(str(ROOT))} && ") and command.endswith(" install -e '.[gym]'")
    # the command runs, as written, the pip of this Python
    pip = shlex.split(command.split(" && ", 1)[1])[0]
    assert pip == sys.executable or (ROOT / pip).samefile(Path(sys.prefix) / "bin" / "pip")
    with pytest.raises(ParameterError, match=r"`extra` should be one of 'lab', 'gym'"):
        install_command("gymnasium")


def test_install_command_outside_a_checkout_lists_the_pins():
    for extra in ("gym", "minari", "rllib"):
        expected = " ".join(shlex.quote(r) for r in PYPROJECT["optional-dependencies"][extra])
        assert install_command(extra, root=None, pip="pip") == f"pip install {expected}"


def test_no_message_names_a_package_index_install_of_rewardlab():
    # `pip install 'rewardlab[gym]'` would look for rewardlab on a package index: every message says the
    # command for this checkout instead (rewardlab.core.extras).
    wrong = re.compile(r"pip install\s+'?rewardlab\[")
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "rewardlab").rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if wrong.search(line)]
    assert found == []


def hide(monkeypatch, *modules: str) -> None:
    """Make ``import module`` fail as if the package were not installed."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_record_without_gymnasium_names_the_command(monkeypatch):
    import rewardlab

    hide(monkeypatch, "gymnasium")
    with pytest.raises(ImportError) as err:
        rewardlab.record(object(), print, episodes=1, seed=0)
    assert str(err.value) == str(missing_extra("rewardlab.record", "Gymnasium", "gym"))
    assert install_command("gym") in str(err.value)


def test_minari_hdf5_without_h5py_names_the_command(monkeypatch):
    import rewardlab

    hide(monkeypatch, "h5py")
    with pytest.raises(ImportError) as err:
        rewardlab.load(ROOT / "data" / "minari" / "mountaincar-hdf5-v0" / "data")
    assert "needs h5py" in str(err.value) and install_command("minari") in str(err.value)


def test_rllib_compressed_columns_without_lz4_name_the_command(monkeypatch):
    lz4_frame = pytest.importorskip("lz4.frame")
    from rewardlab.sources.rllib.compression import unpack

    text = base64.b64encode(lz4_frame.compress(pickle.dumps(np.arange(3.0), protocol=5))).decode()
    assert unpack(text).tolist() == [0.0, 1.0, 2.0]
    hide(monkeypatch, "lz4", "lz4.frame")
    with pytest.raises(ImportError) as err:
        unpack(text)
    assert "needs lz4" in str(err.value) and install_command("rllib") in str(err.value)


def test_ray_engine_without_ray_names_the_command(monkeypatch):
    from rewardlab.engines import check_engine
    from rewardlab.engines import raydata

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert install_command("ray") in raydata.missing()
    with pytest.raises(ParameterError) as err:
        check_engine("ray")
    assert install_command("ray") in str(err.value)


def test_cli_help_names_the_ray_command():
    out = subprocess.run([sys.executable, "-m", "rewardlab", "apply", "--help"], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "COLUMNS": "400"})
    if "--engine" not in out.stdout:
        pytest.skip("apply takes no --engine")
    assert install_command("ray") in " ".join(out.stdout.split())


# --------------------------------------------------------------------------
# Saved states: rewardlab-state/ under the working directory, ignored by git
# --------------------------------------------------------------------------


def test_default_state_path_and_gitignore():
    assert default_state_path("ranking") == Path(STATE_FOLDER) / "ranking.state.json"
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    for where in (f"{STATE_FOLDER}/ranking.state.json", f"notebooks/{STATE_FOLDER}/comparison.state.json"):
        ignored = subprocess.run(["git", "check-ignore", "--no-index", "-q", where], cwd=ROOT)
        assert ignored.returncode == 0, f"{where} is not ignored by .gitignore"
    kept = subprocess.run(["git", "check-ignore", "--no-index", "-q", "notebooks/01_tour.ipynb"], cwd=ROOT)
    assert kept.returncode == 1


def test_widget_saves_state_under_the_state_folder(tmp_path, monkeypatch):
    from rewardlab.sessions import EpsilonScheduleSession
    from rewardlab.widgets import EpsilonScheduleTuner

    monkeypatch.chdir(tmp_path)
    tuner = EpsilonScheduleTuner(EpsilonScheduleSession(n_steps=1000))
    assert tuner.state_path.value == f"{STATE_FOLDER}/epsilon.state.json"
    assert not (tmp_path / STATE_FOLDER).exists()
    tuner.save_state_button.click()  # the folder is created on save
    saved = tmp_path / STATE_FOLDER / "epsilon.state.json"
    assert saved.is_file() and "saved to" in tuner.state_status.value
    assert json.loads(saved.read_text())["parameters"]["n_steps"] == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == [STATE_FOLDER]  # nothing else in the working dir
    tuner.controls["n_steps"].value = "2000"
    tuner.restore_button.click()
    assert tuner.session.n_steps == 1000

    # A relative name typed by the user is relative to the working directory, as before.
    tuner.state_path.value = "mine.state.json"
    tuner.save_state_button.click()
    assert (tmp_path / "mine.state.json").is_file()
    # Only the state folder is created: any other missing folder is refused, nothing written.
    tuner.state_path.value = "typo/mine.state.json"
    tuner.save_state_button.click()
    assert not (tmp_path / "typo").exists() and tuner.error.value


def test_session_save_state_creates_the_state_folder(tmp_path, monkeypatch):
    from rewardlab.sessions import EpsilonScheduleSession

    monkeypatch.chdir(tmp_path / ".")
    s = EpsilonScheduleSession(n_steps=500)
    path = s.save_state(default_state_path(s.state_kind))
    assert (tmp_path / path).is_file() and path.parent.name == STATE_FOLDER
    assert EpsilonScheduleSession.load_state(tmp_path / path).n_steps == 500
    elsewhere = tmp_path / "project" / STATE_FOLDER / "e.state.json"  # its parent does not exist: refused
    with pytest.raises(ParameterError, match="cannot be written"):
        s.save_state(elsewhere)
    assert not (tmp_path / "project").exists()


# --------------------------------------------------------------------------
# locate: the user's own absolute path, and repository files
# --------------------------------------------------------------------------


def test_locate_returns_an_absolute_path_as_it_is(tmp_path):
    mine = tmp_path / "my data.parquet"
    mine.write_bytes(b"x")
    assert locate(str(mine)) == mine and locate(mine) == mine
    assert locate(str(tmp_path)) == tmp_path  # a folder too
    assert locate(str(mine), start=ROOT / "notebooks") == mine


def test_locate_expands_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "runs").mkdir()
    assert locate("~/runs") == tmp_path / "runs"


def test_locate_names_a_missing_absolute_path(tmp_path):
    missing = tmp_path / "my" / "data.parquet"
    with pytest.raises(ParameterError) as err:
        locate(str(missing))
    text = str(err.value)
    assert text.startswith("`path` should name an existing file or folder; ")
    assert f"the folder '{tmp_path / 'my'}' does not exist" in text and f"Received '{missing}'" in text
    assert "relative path" not in text
    with pytest.raises(ParameterError, match=r"nothing is there \(its folder .* exists\)"):
        locate(str(tmp_path / "typo.parquet"))
    (tmp_path / "file").write_text("")
    with pytest.raises(ParameterError, match=r"is a file, not a folder"):
        locate(str(tmp_path / "file" / "inside"))
    with pytest.raises(ParameterError, match="it is empty"):
        locate("  ")


def test_locate_a_missing_relative_path_says_absolute_paths_work(tmp_path):
    with pytest.raises(ParameterError, match=r"should exist under .* pass its absolute path"):
        locate("no/such/file.txt", start=tmp_path)
    assert locate("data/plugins", start=ROOT / "notebooks") == ROOT / "data" / "plugins"


def parameters_cell(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    cell = next(c for c in cells if c["cell_type"] == "code")
    assert "parameters" in cell.get("metadata", {}).get("tags", [])
    return "".join(cell["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_says_what_to_edit(path):
    source = parameters_cell(path)
    first = source.splitlines()[0]
    assert first.startswith("# Parameters:"), f"{path.name}: the first line should say what to edit"
    if "locate(" in source:
        assert "absolute paths work" in source.splitlines()[0], path.name
        assert source.count("from rewardlab.sessions import locate") == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_runs_and_takes_absolute_paths(path, monkeypatch):
    monkeypatch.chdir(ROOT / "notebooks")  # a notebook's kernel runs in its folder
    source = parameters_cell(path)
    values: dict = {}
    exec(compile(source, path.name, "exec"), values)  # the cell as written: every locate finds its file
    literals = [node.args[0].value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "locate"]  # the code's calls, not the comments' examples
    assert all(not Path(text).is_absolute() for text in literals)
    # The same cell with each path made absolute gives the same values.
    absolute = source
    for text in literals:
        absolute = absolute.replace(f'locate("{text}")', f'locate("{ROOT / text}")')
    again: dict = {}
    exec(compile(absolute, path.name, "exec"), again)
    for name, value in values.items():
        if name.isupper():
            assert again[name] == value, name
