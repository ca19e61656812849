"""The set-up files agree with each other and the package imports cleanly."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import ROOT


#: Extras installed only in an environment of their own (their pins clash with the rest's).
OWN_ENVIRONMENT_EXTRAS = ("rllib-data",)


def _pyproject_requirements() -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for name, extra in meta["optional-dependencies"].items():
        if name not in OWN_ENVIRONMENT_EXTRAS:
            reqs += extra
    return dict(r.split("==") for r in reqs)


def _environment_requirements() -> dict[str, str]:
    text = (ROOT / "environment.yml").read_text()
    pins = re.findall(r"^\s*-\s*([A-Za-z0-9_.\-]+(?:\[[A-Za-z0-9_,\-]+\])?)==([^\s#]+)\s*$", text,
                      flags=re.M)
    return dict(pins)


def test_environment_yml_lists_the_same_pins_as_pyproject():
    assert _environment_requirements() == _pyproject_requirements()


def test_every_dependency_is_pinned_exactly():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"]) + [r for e in meta["optional-dependencies"].values() for r in e]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[A-Za-z0-9_,\-]+\])?==[0-9][^\s]*", r) for r in reqs), reqs
    assert "torch==2.13.0" in reqs


def run_ok(code: str) -> None:
    """Run ``code`` in a fresh interpreter (imports start from nothing); it must print ``ok``."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_import_rewardlab_does_not_need_ipywidgets():
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] in ('ipywidgets', 'IPython'):\n"
        "        raise ImportError('blocked ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "import rewardlab, rewardlab.cli\n"
        "[getattr(rewardlab, name) for name in rewardlab.__all__]  # every public name, imported\n"
        "assert 'ipywidgets' not in sys.modules\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
        "print('ok')\n"
    )
    run_ok(code)


def test_import_rewardlab_is_cheap_until_a_name_is_used():
    code = ("import sys, rewardlab, rewardlab.core.errors\n"
            "assert 'torch' not in sys.modules and 'rewardlab.contracts.kanachan.batching' not in sys.modules\n"
            "rewardlab.to_tensordict\n"
            "assert 'torch' in sys.modules\n"
            "assert sorted(dir(rewardlab)) == sorted(set(dir(rewardlab)))\n"
            "print('ok')\n")
    run_ok(code)


def test_the_command_line_parser_does_not_import_torch():
    """`rewardlab --help` and `info` start fast: torch loads only in commands that run plug-ins."""
    code = ("import sys\n"
            "from rewardlab.cli import build_parser\n"
            "build_parser()\n"
            "import rewardlab.dataset, rewardlab.sources.kanachan.reader  # what `info` needs\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rewardlab'))\n"
            "print('ok')\n")
    run_ok(code)


#: What `rewardlab info` on a converted dataset or a kanachan file never needs: torch, pandas (pyarrow's
#: ``Schema.empty_table`` imports it) and the readers of the formats after kanachan in detection order.
NOT_FOR_INFO = ("torch", "pandas", "rewardlab.sources.rllib", "rewardlab.sources.mjai.source",
                "rewardlab.sources.minari.source", "rewardlab.sources.retro.source", "rewardlab.sources.steps")


def _info_imports(path) -> list[str]:
    """The modules of :data:`NOT_FOR_INFO` that `rewardlab info PATH` imports (in a fresh interpreter)."""
    code = ("import contextlib, io, sys\n"
            "from rewardlab.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main(['info', {str(path)!r}]) == 0\n"
            "assert 'transitions' in out.getvalue(), out.getvalue()\n"
            f"print(sorted(m for m in {NOT_FOR_INFO!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return ast.literal_eval(out.stdout.strip())


def test_info_imports_neither_torch_pandas_nor_other_formats_readers(tmp_path):
    """`rewardlab info` starts fast (benchmarks/bench_cli.py): on a converted dataset and on a kanachan
    file it loads no torch, no pandas and no reader of a format detection tries after the file's."""
    from lines import game_lines, gid, write
    from rewardlab.cli import main

    src, dataset = tmp_path / "small.tsv", tmp_path / "small.parquet"
    write(src, game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(1, 4)))
    assert main(["convert", str(src), "--out", str(dataset)]) == 0
    assert _info_imports(dataset) == []
    assert _info_imports(src) == []
    # the check can fail: an mjai log is recognized after the rllib reader was tried
    assert _info_imports(ROOT / "data" / "mjai" / "hanchan_15.json") == ["rewardlab.sources.mjai.source",
                                                                          "rewardlab.sources.rllib"]


def test_python_dash_m_rewardlab_shows_help():
    out = subprocess.run([sys.executable, "-m", "rewardlab", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for command in ("sample", "convert", "info"):
        assert command in out.stdout


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    assert re.search(r"^make test$", ci, flags=re.M)


#: The package's floors, lowest first: a module imports only from its own floor or below
#: (README "Layout"; DEVELOPERS.md "Code layout and habits").
LAYERS = (
    ("rewardlab._version", 0), ("rewardlab.core", 0), ("rewardlab.engines", 0), ("rewardlab.sources", 1), ("rewardlab.contracts", 2),
    ("rewardlab.plugins", 3), ("rewardlab.analysis", 4), ("rewardlab.domains", 5), ("rewardlab.families", 4.5),
    ("rewardlab.dataset", 6),
    ("rewardlab.export", 6), ("rewardlab.scaling", 6), ("rewardlab.normalized_export", 6), ("rewardlab.schedules", 6), ("rewardlab.plots", 6),
    ("rewardlab.diagnostics", 6), ("rewardlab.report", 6),
    ("rewardlab.sessions", 7),
    ("rewardlab.widgets", 8), ("rewardlab.cli", 8), ("rewardlab.__main__", 8),
)


def _floor(module: str) -> int | None:
    found = None
    for prefix, floor in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            found = floor
    return found


def upward_imports(root: Path) -> list[str]:
    """Every import (module level or inside a function) of a higher floor than the importing module's."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        own = _floor(module)
        if own is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rewardlab"):
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("rewardlab")]
            else:
                continue
            for target in targets:
                floor = _floor(target)
                if floor is not None and floor > own:
                    found.append(f"{path}:{node.lineno}: {module} imports {target}")
    return found


def test_imports_point_one_way(tmp_path):
    assert upward_imports(ROOT / "rewardlab") == []
    # the check can fail: a core module that imports the analysis is caught, inside a function too
    bad = tmp_path / "rewardlab" / "core"
    bad.mkdir(parents=True)
    (bad / "spec.py").write_text("def f():\n    from rewardlab.analysis.stats import Moments\n")
    assert upward_imports(tmp_path / "rewardlab") == [
        f"{bad / 'spec.py'}:2: rewardlab.core.spec imports rewardlab.analysis.stats"]
