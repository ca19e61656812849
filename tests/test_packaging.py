"""The set-up files agree with each other and the package imports cleanly."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from conftest import ROOT


def _pyproject_requirements() -> dict[str, str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for extra in meta["optional-dependencies"].values():
        reqs += extra
    return dict(r.split("==") for r in reqs)


def _environment_requirements() -> dict[str, str]:
    text = (ROOT / "environment.yml").read_text()
    pins = re.findall(r"^\s*-\s*([A-Za-z0-9_.\-]+)==([^\s#]+)\s*$", text, flags=re.M)
    return dict(pins)


def test_environment_yml_lists_the_same_pins_as_pyproject():
    assert _environment_requirements() == _pyproject_requirements()


def test_every_dependency_is_pinned_exactly():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"]) + [r for e in meta["optional-dependencies"].values() for r in e]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][^\s]*", r) for r in reqs), reqs
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
    code = ("import sys, rewardlab, rewardlab.errors\n"
            "assert 'torch' not in sys.modules and 'rewardlab.batching' not in sys.modules\n"
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
            "import rewardlab.dataset, rewardlab.sources.kanachan  # what `info` needs\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('rewardlab'))\n"
            "print('ok')\n")
    run_ok(code)


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
