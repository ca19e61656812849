"""Shared fixtures: the bundled sample dataset and small hand-built frames."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

# Property tests: random locally; derandomized (same examples every run) under CI so a
# submission's CI result does not depend on luck.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
os.environ.setdefault("REWARDLAB_PROGRESS", "0")



def pytest_addoption(parser):
    parser.addoption("--long-fuzz", action="store_true", default=False,
                     help="also run the long fuzz runs (tests marked long_fuzz): many more hostile inputs per source")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--long-fuzz"):
        return
    skip = pytest.mark.skip(reason="a long fuzz run: pass --long-fuzz to run it (the CI-sized run is beside it)")
    for item in items:
        if "long_fuzz" in item.keywords:
            item.add_marker(skip)


ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample.tsv.gz"
PLUGINS_DIR = ROOT / "data" / "plugins"
sys.path.insert(0, str(Path(__file__).parent))  # tests/lines.py, tests/reference.py


@pytest.fixture(scope="session")
def sample_path(tmp_path_factory) -> Path:
    """The bundled sample (``make`` creates it); generated into a temp dir if absent."""
    if SAMPLE.exists():
        return SAMPLE
    from rewardlab.domains.mahjong.simulate import write_sample

    path = tmp_path_factory.mktemp("sample") / "sample.tsv.gz"
    write_sample(path, games=60, seed=2024, progress=False)
    return path


@pytest.fixture(scope="session")
def sample_frame(sample_path):
    """The sample loaded once per test session (do not mutate; Polars frames are immutable)."""
    import rewardlab

    return rewardlab.load_kanachan(sample_path, progress=False)


@pytest.fixture(scope="session")
def small_frame(tmp_path_factory):
    """Three hand-built games (tests/lines.py) with uneven rounds, loaded."""
    import rewardlab
    from lines import game_lines, gid, write

    path = tmp_path_factory.mktemp("small") / "small.tsv"
    lines = (game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(1, 4, 2))
             + game_lines(gid(3), rounds=(2,), final_scores=(25000, 25000, 30000, 20000)))
    write(path, lines)
    return rewardlab.load_kanachan(path, progress=False)



@pytest.fixture(scope="session")
def ray_installed():
    """The ``ray`` module, for tests that need Ray importable but not running.

    Skipped with a message when the ``ray`` extra is not installed, unless ``CI``
    is set: then a missing Ray fails the test (CI installs the extra).
    """
    import importlib
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        message = "the ray engine's tests need the ray extra: pip install 'rewardlab[ray]'"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but Ray is not installed; {message}")
        pytest.skip(message)
    return importlib.import_module("ray")


@pytest.fixture(scope="module")
def ray_local(ray_installed):
    """One local Ray (2 CPUs, as CI has) shared by a module's Ray tests; shut down at the module's end.

    Module-scoped so that Ray's own notices (its raylet warns on stderr, for
    example when the disk under /tmp/ray is nearly full) cannot reach the
    later tests that check a command's stderr line for line.

    Skipped or failed as :func:`ray_installed` says.  The workers get ``tests/``
    on their path, so functions defined in a test module run there.
    """
    ray = ray_installed
    started = not ray.is_initialized()
    if started:
        tests = str(Path(__file__).resolve().parent)
        path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=True,
                 runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    if started:
        ray.shutdown()
