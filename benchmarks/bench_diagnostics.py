"""Reward diagnostics: every diagnostic on two candidates over 10^6 steps (target < 10 s), the HTML report
of five candidates (target < 30 s), on the MountainCar recording tiled to 10^6 steps."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import rewardlab
from rewardlab.core.spec import attach, attached
from benchmarks._data import ROOT

STEPS = 1_000_000
RECORDING = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
TERMS = ROOT / "data" / "plugins" / "steps" / "mountaincar_terms.py"

#: A potential-shaping plug-in whose potential is linear in the observation (the shaping test's linear basis
#: holds it exactly), and three more candidates for the report.
PLUGINS = {
    "linear_shaping": (
        "import torch\n\nGAMMA = 0.99\n\n"
        "def phi(obs):\n    return obs.to(torch.float64) @ torch.tensor([3.0, 40.0], dtype=torch.float64)\n\n"
        "def get_reward(data, contiguous):\n"
        "    after = torch.where(data['next', 'terminated'], 0.0, phi(data['next', 'obs']))\n"
        "    data['next', 'reward'] = data['reward_recorded'] + GAMMA * after - phi(data['obs'])\n"),
    "velocity_bonus": (
        "import torch\n\n"
        "def get_reward(data, contiguous):\n"
        "    data['next', 'reward'] = data['reward_recorded'] + 10.0 * data['next', 'obs'][:, 1].abs().double()\n"),
    "position": (
        "import torch\n\n"
        "def get_reward(data, contiguous):\n"
        "    data['next', 'reward'] = data['next', 'obs'][:, 0].double()\n"),
    "goal_only": (
        "import torch\n\n"
        "def get_reward(data, contiguous):\n"
        "    data['next', 'reward'] = data['next', 'terminated'].double()\n"),
}


def tiled_recording(n: int) -> pl.DataFrame:
    """The MountainCar recording repeated (episodes renumbered) to at least ``n`` steps, whole episodes."""
    frame = rewardlab.load(RECORDING)
    spec = attached(frame)
    copies = -(-n // frame.height)
    episodes = int(frame["episode_id"].max()) + 1
    tiled = pl.concat([frame.with_columns(pl.col("episode_id") + k * episodes) for k in range(copies)])
    return attach(tiled, spec)


def _time(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(report) -> None:
    from rewardlab.diagnostics import DiagnosisOptions
    from rewardlab.diagnostics.run import diagnose

    frame = tiled_recording(STEPS)
    report(f"steps diagnosed (MountainCar recording tiled, {frame['episode_id'].n_unique():,} episodes)",
           frame.height, "steps")
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, text in PLUGINS.items():
            paths[name] = Path(tmp) / f"{name}.py"
            paths[name].write_text(text)
        options = DiagnosisOptions(normalizer="sb3")
        two = [paths["linear_shaping"], TERMS]
        t, result = _time(lambda: diagnose(frame, two, options=options, progress=False))
        report("diagnose: 2 candidates, every diagnostic, 10^6 steps", t, "s", "target < 10 s")
        report("  findings", len(result.findings), "")
        t_apply, _ = _time(lambda: rewardlab.apply_plugins(frame, two, progress=False, replace=True))
        report("  of which applying the 2 plug-ins (apply_plugins)", t_apply, "s")
        try:
            from rewardlab.report import build_report  # noqa: F401  (the report package)
        except ImportError:
            report("report: rewardlab.report not available", 0, "")
            return
        from rewardlab.cli import main

        five = [str(paths[n]) for n in PLUGINS] + [str(TERMS)]
        data = Path(tmp) / "tiled.parquet"
        from rewardlab.sources.storage import write_table

        write_table(frame, data, spec=attached(frame))
        out = Path(tmp) / "report.html"
        t, code = _time(lambda: main(["report", *five, "--data", str(data), "--out", str(out)]))
        report("report: 5 candidates, 10^6 steps, CLI end to end (load, diagnose, HTML)", t, "s", "target < 30 s")
        report("  report size", out.stat().st_size / 1e6 if out.exists() else float("nan"), "MB")
