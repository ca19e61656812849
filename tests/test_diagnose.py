"""rewardlab.diagnose: the context it builds (episodes, flags, base, candidates), the registry, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.core.errors import ParameterError
from rewardlab.diagnostics import (Diagnostic, DiagnosisOptions, Finding, register_diagnostic,
                                   registered_diagnostics, unregister_diagnostic)
from rewardlab.diagnostics.docs import render_markdown
from rewardlab.diagnostics.run import build_context, diagnose

ROOT = Path(__file__).resolve().parents[1]
MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
SHAPING = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"


@pytest.fixture(scope="module")
def mountaincar():
    return rewardlab.load(MOUNTAINCAR)


def test_context_episodes_and_flags_match_a_loop(mountaincar):
    ctx = build_context(mountaincar, ["recorded"], base=None, options=DiagnosisOptions(isolate=False))
    ids = mountaincar["episode_id"].to_list()
    term = mountaincar["terminated"].to_list()
    trunc = mountaincar["truncated"].to_list()
    episode, expect_episode, starts = -1, [], []
    for i, e in enumerate(ids):
        if i == 0 or e != ids[i - 1]:
            episode += 1
            starts.append(i)
        expect_episode.append(episode)
    assert ctx.episode_of_row.tolist() == expect_episode
    assert ctx.episode_starts.tolist() == starts + [len(ids)]
    assert ctx.terminated.tolist() == term and ctx.truncated.tolist() == trunc
    # the recorded reward alone is diagnosed on its own: it is the candidate, and there is no base
    assert ctx.base is None and [c.name for c in ctx.candidates] == ["recorded"]
    with pytest.raises(ParameterError, match="at least one candidate besides the base 'recorded'"):
        build_context(mountaincar, ["recorded"], base="recorded", options=DiagnosisOptions(isolate=False))


def test_context_applies_plugins_and_keeps_the_base_apart(mountaincar):
    ctx = build_context(mountaincar, [SHAPING], options=DiagnosisOptions(isolate=False))
    [candidate] = ctx.candidates
    assert candidate.name == "potential_shaping" and candidate.is_plugin
    applied = rewardlab.apply_plugins(mountaincar, SHAPING, isolate=False)
    assert np.array_equal(candidate.rewards, applied["reward_potential_shaping"].cast(pl.Float64).to_numpy())
    assert np.array_equal(ctx.base.rewards, mountaincar["reward_recorded"].to_numpy())
    with_base = build_context(mountaincar, [SHAPING, "recorded"], base="potential_shaping",
                              options=DiagnosisOptions(isolate=False))
    assert with_base.base.name == "potential_shaping"
    assert [c.name for c in with_base.candidates] == ["recorded"]


def test_context_refuses_unknown_names(mountaincar):
    with pytest.raises(ParameterError, match="reward columns of the frame"):
        build_context(mountaincar, ["nonexistent"])
    with pytest.raises(ParameterError, match="base"):
        build_context(mountaincar, ["recorded"], base="nonexistent")
    with pytest.raises(ParameterError, match="at least one"):
        build_context(mountaincar, [])


def test_options_validation_names_the_argument():
    with pytest.raises(ParameterError, match="gamma"):
        DiagnosisOptions(gamma=0.0)
    with pytest.raises(ParameterError, match="epic_states"):
        DiagnosisOptions(epic_states=0)
    with pytest.raises(ParameterError, match="normalizer"):
        DiagnosisOptions(normalizer="vecnorm")


def test_a_registered_diagnostic_runs_and_only_selects(mountaincar):
    seen = []

    def run(ctx):
        seen.append(ctx.n)
        return [Finding("test.flat", c.name, "fail" if np.ptp(c.rewards) == 0 else "pass", "flat?")
                for c in ctx.candidates]

    register_diagnostic(Diagnostic("test.flat", "flat rewards", run, doc="Test only."))
    try:
        result = diagnose(mountaincar, [SHAPING],
                          only=["test."], options=DiagnosisOptions(isolate=False))
        assert seen == [mountaincar.height]
        assert [(f.diagnostic, f.candidate, f.verdict) for f in result.findings] == [
            ("test.flat", "potential_shaping", "pass")]
        assert not result.failed
        with pytest.raises(ParameterError, match="only"):
            diagnose(mountaincar, ["recorded"], only=["no_such_diagnostic"])
    finally:
        unregister_diagnostic("test.flat")
    assert "test.flat" not in registered_diagnostics()


def test_a_diagnostic_that_stops_is_a_failure_not_a_pass(mountaincar):
    from rewardlab.core.errors import PluginRuntimeError

    def run(ctx):
        raise PluginRuntimeError("broken", "broken.py", "it raised on the probes")

    register_diagnostic(Diagnostic("test.stops", "stops", run, doc="Test only."))
    try:
        result = diagnose(mountaincar, [SHAPING], only=["test.stops"], options=DiagnosisOptions(isolate=False))
    finally:
        unregister_diagnostic("test.stops")
    assert result.failed and result.worst == "fail"
    assert [f.verdict for f in result.findings] == ["fail"] and "stopped" in result.findings[0].summary


def test_docs_page_is_the_registered_docs():
    page = (ROOT / "docs" / "diagnostics.md").read_text()
    assert page == render_markdown(), "regenerate: python -m rewardlab.diagnostics.docs > docs/diagnostics.md"
    for name, d in registered_diagnostics().items():
        assert d.doc.strip(), f"diagnostic {name} has no documentation"


def test_cli_diagnose_json_and_exit_status(tmp_path):
    flat = tmp_path / "flat.py"
    flat.write_text("import torch\n\ndef get_reward(data, contiguous):\n"
                    "    data['next', 'reward'] = torch.zeros(data['next', 'done'].shape[0], dtype=torch.float64)\n")
    out = subprocess.run([sys.executable, "-m", "rewardlab", "diagnose", str(flat), "--data", str(MOUNTAINCAR),
                          "--json", "--only", "trap.constant"], capture_output=True, text=True, cwd=ROOT)
    found = json.loads(out.stdout)
    assert any(f["diagnostic"] == "trap.constant" and f["verdict"] == "fail" for f in found), out.stdout
    assert out.returncode == 1, out.stderr
    missing = subprocess.run([sys.executable, "-m", "rewardlab", "diagnose", str(flat)], capture_output=True,
                             text=True, cwd=ROOT)
    assert missing.returncode == 2 and "--data" in missing.stderr


def test_registry_and_finding_errors_name_the_rule():
    with pytest.raises(ParameterError, match="Finding.verdict"):
        Finding("x", "a", "bad", "no such verdict")
    with pytest.raises(ParameterError, match="evidence.*numbers, strings"):
        Finding("x", "a", "pass", "", evidence={"frame": object()})
    with pytest.raises(ParameterError, match="already registered .*replace=True"):
        register_diagnostic(Diagnostic("terms", "again", lambda ctx: []))
    with pytest.raises(ParameterError, match="should be a rewardlab.diagnostics.Diagnostic"):
        register_diagnostic("terms")
    with pytest.raises(ParameterError, match="registered diagnostic"):
        unregister_diagnostic("no_such_diagnostic")
    from rewardlab.diagnostics import get_diagnostic
    with pytest.raises(ParameterError, match="registered diagnostic"):
        get_diagnostic("no_such_diagnostic")


def test_context_refuses_a_base_that_is_not_a_name(mountaincar):
    with pytest.raises(ParameterError, match="base.*candidate's name"):
        build_context(mountaincar, ["recorded"], base=3)
    with pytest.raises(ParameterError, match="options.*DiagnosisOptions"):
        build_context(mountaincar, ["recorded"], options={"gamma": 0.9})


def test_cli_diagnose_without_candidates_and_with_a_bad_flag(tmp_path):
    none = subprocess.run([sys.executable, "-m", "rewardlab", "diagnose", "--data", str(MOUNTAINCAR)],
                          capture_output=True, text=True, cwd=ROOT)
    assert none.returncode == 2 and "CANDIDATE" in none.stderr and "at least one" in none.stderr
    bad = subprocess.run([sys.executable, "-m", "rewardlab", "diagnose", "recorded", "--data", str(MOUNTAINCAR),
                          "--gamma", "1.5"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--gamma" in bad.stderr and "(0, 1]" in bad.stderr
    listed = subprocess.run([sys.executable, "-m", "rewardlab", "diagnose", "--list"], capture_output=True,
                            text=True, cwd=ROOT)
    assert listed.returncode == 0 and "trap.constant" in listed.stdout and "epic" in listed.stdout
