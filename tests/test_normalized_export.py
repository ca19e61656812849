"""A normalized version of the user's own steps plug-in (issue 23): the exported file runs the plug-in beside
it, checks its SHA-256, and reproduces the library's normalized rewards bit for bit in every batch mode."""

from __future__ import annotations

import ast
import hashlib
import shutil
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.core.spec import attach, keep_spec
from rewardlab.core.errors import OutputExistsError, ParameterError, PluginLoadError, ScalingBlowUpWarning
from rewardlab.normalized_export import (
    NormalizedPlugin, companion_link, export_normalized_plugin, normalized_roundtrip, plugin_constants,
)
from rewardlab.plugins import apply_plugins, load_plugin
from rewardlab.plugins.batch_modes import BATCH_MODES

ROOT = Path(__file__).resolve().parents[1]
CARTPOLE = ROOT / "data" / "gym" / "cartpole_random.parquet"
SHAPING = ROOT / "data" / "plugins" / "steps" / "potential_shaping.py"


@pytest.fixture(scope="module")
def frame():
    return rewardlab.load(CARTPOLE, progress=False)


@pytest.fixture
def companion(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    return Path(shutil.copy(SHAPING, folder / "shaping.py"))


def _reference(rewards, mean: float, std: float, center: bool = True) -> np.ndarray:
    """A plain loop over Python floats: (r - shift) / scale."""
    shift = mean if center else 0.0
    return np.array([(float(r) - shift) / std for r in rewards], dtype=np.float64)


def _bits(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).view(np.uint64)


def _literals(text: str) -> dict:
    tree = ast.parse(text)
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and node.targets[0].id.startswith("_RL_")
            and node.targets[0].id != "_RL_get_reward"}


@pytest.mark.parametrize("scope,center", [("all", True), ("episode_return", False)])
def test_the_exported_file_reproduces_the_normalized_rewards_in_every_batch_mode(frame, companion, tmp_path,
                                                                                  scope, center):
    applied, constants = plugin_constants(frame, companion, scope=scope, progress=False)
    raw = applied["reward_shaping"].to_numpy()
    if scope == "all":  # the constants are the plug-in's rewards' own (population std)
        assert constants.mean == pytest.approx(float(np.mean(raw)), rel=1e-12)
        assert constants.std == pytest.approx(float(np.std(raw)), rel=1e-12)
    out = tmp_path / "out" / "shaping_normalized.py"
    out.parent.mkdir()
    with warnings.catch_warnings():  # the shaping's returns nearly cancel: a tiny return std blows steps up
        warnings.simplefilter("ignore", ScalingBlowUpWarning)
        result = export_normalized_plugin(companion, constants, out, data=applied, center=center)
    assert (result.blowup is not None) == (scope == "episode_return")
    assert result.roundtrip.ok and set(result.roundtrip.differing) == set(BATCH_MODES)
    assert result.link == ("..", "plugins", "shaping.py")
    literals = _literals(out.read_text())
    assert literals["_RL_SHIFT"] == (constants.mean if center else 0.0) and literals["_RL_SCALE"] == constants.std
    assert literals["_RL_SHA256"] == hashlib.sha256(companion.read_bytes()).hexdigest()
    for mode in BATCH_MODES:  # independently of the round trip: both files, one call, a plain loop
        both = apply_plugins(applied, [str(companion), str(out)], batch_mode=mode, progress=False, replace=True)
        user = both["reward_shaping"].to_numpy()
        expected = _reference(user, constants.mean, constants.std, center)
        assert (_bits(both["reward_shaping_normalized"].to_numpy()) == _bits(expected)).all(), mode
        assert (both["done_shaping_normalized"] == both["done_shaping"]).all(), mode
    assert "identical to rewardlab's rewards" in str(result) and "refuses to run" in str(result)


def test_the_round_trip_catches_a_file_that_differs(frame, companion, tmp_path):
    applied, constants = plugin_constants(frame, companion, progress=False)
    out = tmp_path / "plugins" / "shaping_normalized.py"
    export_normalized_plugin(companion, constants, out, data=applied)
    text = out.read_text()
    shift = _literals(text)["_RL_SHIFT"]
    bad = tmp_path / "plugins" / "tampered.py"
    bad.write_text(text.replace(f"_RL_SHIFT = {shift!r}", f"_RL_SHIFT = {float(np.nextafter(shift, 1.0))!r}"))
    normalized = NormalizedPlugin(companion, _literals(text)["_RL_SHA256"], constants)
    roundtrip, raw = normalized_roundtrip(normalized, bad, applied)
    assert not roundtrip.identical and all(r > 0 for r, _ in roundtrip.differing.values())
    assert (_bits(raw["episodes"]) == _bits(applied["reward_shaping"].to_numpy())).all()


def test_a_changed_or_missing_companion_is_refused_at_run_time(frame, companion, tmp_path):
    applied, constants = plugin_constants(frame, companion, progress=False)
    out = tmp_path / "plugins" / "shaping_normalized.py"
    export_normalized_plugin(companion, constants, out, data=applied)
    # both files moved together, keeping their relative place: still runs, the same rewards
    moved = tmp_path / "elsewhere"
    shutil.copytree(companion.parent, moved)
    again = apply_plugins(applied, str(moved / "shaping_normalized.py"), progress=False)
    first = apply_plugins(applied, str(out), progress=False)
    assert (_bits(again["reward_shaping_normalized"]) == _bits(first["reward_shaping_normalized"])).all()
    # the companion changed (one comment added): refused, naming both files and what to do
    companion.write_text(companion.read_text() + "# tweak\n")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(out, contract="steps")
    text = str(info.value)
    assert f"refusing to run {out}" in text and f"the plug-in it normalizes, {companion}, changed" in text
    assert "Export again" in text and "rewardlab export normalized" in text
    with pytest.raises(PluginLoadError, match="changed since the export"):
        apply_plugins(applied, str(out), progress=False)
    # the exported file moved without its companion
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out, alone / "shaping_normalized.py")
    with pytest.raises(PluginLoadError) as info:
        load_plugin(alone / "shaping_normalized.py", contract="steps")
    text = str(info.value)
    assert f"normalizes the plug-in {alone / 'shaping.py'}, which cannot be read" in text
    assert "move or copy both files together, keeping their relative place, or export again" in text


def test_the_exported_file_holds_no_code_of_the_users_file(frame, companion, tmp_path):
    applied, constants = plugin_constants(frame, companion, progress=False)
    out = tmp_path / "plugins" / "shaping_normalized.py"
    text = export_normalized_plugin(companion, constants, out, data=applied).text
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    for line in companion.read_text().splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped not in ("import torch", '"""', "def get_reward(data, contiguous):"):
            assert not any(stripped in c for c in code), stripped
    for word in ("potential", "GAMMA", "OBS_KEY", "vector_norm", "terminated"):
        assert word not in "\n".join(code)
    tree = ast.parse(text)  # only imports of the standard library and torch, literals, and two functions
    imports = sorted(a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names)
    assert imports == ["hashlib", "os", "sys", "torch", "types"]
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["_RL_load", "get_reward"]
    assert set(_literals(text)) == {"_RL_COMPANION", "_RL_SHA256", "_RL_SHIFT", "_RL_SCALE"}
    # the code is the same for another plug-in: only the literals (and comments) depend on it
    other = tmp_path / "plugins" / "recorded.py"
    other.write_text("import torch\n\n\ndef get_reward(data, contiguous):\n"
                     "    data['next', 'reward'] = data['obs'][:, 0].to(torch.float64)\n")
    applied2, constants2 = plugin_constants(frame, other, progress=False)
    text2 = export_normalized_plugin(other, constants2, tmp_path / "plugins" / "recorded_normalized.py",
                                     data=applied2).text

    def skeleton(t):
        return [line for line in t.splitlines() if not line.startswith(("#", "_RL_COMPANION", "_RL_SHA256",
                                                                          "_RL_SHIFT", "_RL_SCALE"))]
    assert skeleton(text) == skeleton(text2)


def test_overwrite_is_refused_unless_asked_and_bad_inputs_write_nothing(frame, companion, tmp_path):
    applied, constants = plugin_constants(frame, companion, progress=False)
    out = tmp_path / "plugins" / "shaping_normalized.py"
    out.write_text("# mine\n")
    with pytest.raises(OutputExistsError):
        export_normalized_plugin(companion, constants, out, data=applied)
    assert out.read_text() == "# mine\n"
    export_normalized_plugin(companion, constants, out, data=applied, overwrite=True)
    assert "_RL_SHA256" in out.read_text()
    with pytest.raises(ParameterError, match="path"):  # the plug-in itself
        export_normalized_plugin(companion, constants, companion, data=applied, overwrite=True)
    assert "def potential" in companion.read_text()
    # constants of another version of the file: the data's column differs from what the file gives now
    changed = keep_spec(applied, applied.with_columns(pl.col("reward_shaping") * 2.0))
    fresh = tmp_path / "plugins" / "fresh.py"
    with pytest.raises(ParameterError, match="differs from what"):
        export_normalized_plugin(companion, constants, fresh, data=changed)
    # a plug-in that takes torch from kanachan's trainer scope cannot run as a stand-alone module
    borrowed = tmp_path / "plugins" / "borrowed.py"
    borrowed.write_text("def get_reward(data, contiguous):\n    data['next', 'reward'] = torch.zeros(1)\n")
    with pytest.raises(ParameterError, match="reads torch from kanachan's trainer scope"):
        export_normalized_plugin(borrowed, constants, fresh, data=applied)
    assert not fresh.exists() and not list(fresh.parent.glob(".fresh.py.*"))


def test_a_blow_up_warns_before_the_file_is_written(tmp_path):
    rows = {"episode_id": [], "t": [], "obs": [], "reward_recorded": [], "terminated": [], "truncated": []}
    for e, n in enumerate((50, 50, 30, 50)):
        for t in range(n):
            rows["episode_id"].append(e)
            rows["t"].append(t)
            rows["obs"].append([float(t)])
            rows["reward_recorded"].append(0.0 if (t == n - 1 and n < 50) else -1.0)
            rows["terminated"].append(t == n - 1 and n < 50)
            rows["truncated"].append(t == n - 1 and n == 50)
    spec = rewardlab.FrameSpec(name="acro", episode=("episode_id",), step="t", terminated="terminated",
                               truncated="truncated", columns=("reward_recorded",), contract="steps",
                               states=(rewardlab.StateColumn("obs", 1, "float64", 0.0),))
    data = attach(pl.DataFrame(rows, schema_overrides={"obs": pl.Array(pl.Float64, 1)}), spec)
    plugin = tmp_path / "copied.py"
    shutil.copy(ROOT / "data" / "plugins" / "steps" / "recorded_reward.py", plugin)
    applied, constants = plugin_constants(data, plugin, progress=False)
    out = tmp_path / "copied_normalized.py"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScalingBlowUpWarning)
        with pytest.raises(ScalingBlowUpWarning, match="scaling blows up rare values: reward_copied 0 becomes"):
            export_normalized_plugin(plugin, constants, out, data=applied)
    assert not out.exists()
    with pytest.warns(ScalingBlowUpWarning):
        result = export_normalized_plugin(plugin, constants, out, data=applied)
    assert out.exists() and result.blowup.raw == 0.0 and "\nwarning: scaling blows up" in str(result)


def test_the_cli_command_end_to_end(frame, tmp_path, capsys):
    out = tmp_path / "shaping_normalized.py"
    argv = ["export", "normalized", "--plugin", str(SHAPING), "--data", str(CARTPOLE), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "identical to rewardlab's rewards" in printed
    assert "check-plugin: PASS" in printed and f"data:        {CARTPOLE}" in printed
    literals = _literals(out.read_text())
    assert Path(tmp_path, *literals["_RL_COMPANION"]).resolve() == SHAPING.resolve()
    assert literals["_RL_COMPANION"] == companion_link(SHAPING, out)
    both = apply_plugins(frame, [str(SHAPING), str(out)], progress=False)
    user = both["reward_potential_shaping"].to_numpy()
    expected = _reference(user, float(np.mean(user)), float(np.std(user)))  # constants within rounding
    np.testing.assert_allclose(both["reward_shaping_normalized"].to_numpy(), expected, rtol=1e-12, atol=1e-12)
    exact = _reference(user, literals["_RL_SHIFT"], literals["_RL_SCALE"])
    assert (_bits(both["reward_shaping_normalized"].to_numpy()) == _bits(exact)).all()
    # again without --overwrite: refused, the file kept
    before = out.read_text()
    assert main(argv) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == before
    assert main([*argv, "--overwrite", "--scope", "episode_return", "--no-center"]) == 0
    assert "\nwarning: scaling blows up rare values: reward_potential_shaping" in capsys.readouterr().out
    assert _literals(out.read_text())["_RL_SHIFT"] == 0.0
    capsys.readouterr()
    assert main([*argv[:-1], str(SHAPING), "--overwrite"]) == 2  # --out naming the plug-in itself
    assert "def potential" in SHAPING.read_text()


def test_the_normalization_panels_export_button(frame, companion, tmp_path):
    from rewardlab.widgets import NormalizationPanel

    out = tmp_path / "plugins" / "panel_normalized.py"
    panel = NormalizationPanel(frame, plugins=[companion], reward="shaping", scope="all", export_path=str(out),
                               background=False)
    s = panel.session
    assert s.plugin_files == {"shaping": companion.resolve()} and s.export_blocker() is None
    panel.export_button.click()
    shown = panel.export_result.value
    assert "rewardlab-normalized-export-written" in shown and "identical to rewardlab" in shown, shown
    literals = _literals(out.read_text())
    assert (literals["_RL_SHIFT"], literals["_RL_SCALE"]) == (s.results.constants.mean, s.results.constants.std)
    both = apply_plugins(frame, [str(companion), str(out)], progress=False)
    expected = _reference(both["reward_shaping"].to_numpy(), s.results.constants.mean, s.results.constants.std)
    assert (_bits(both["reward_panel_normalized"].to_numpy()) == _bits(expected)).all()
    # again: the file exists; ticking overwrite replaces it (here with a return scope: divided only)
    panel.export_button.click()
    assert "already exists" in panel.export_result.value and not panel.export_button.disabled
    panel.overwrite.value = True
    panel.scope.value = "episode_return"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScalingBlowUpWarning)
        panel.export_button.click()
    assert "scaling blows up rare values" in panel.export_result.value
    assert _literals(out.read_text())["_RL_SHIFT"] == 0.0
    # the data's own reward is not from a plug-in file: a clear message, nothing written
    panel.reward.value = "recorded"
    before = out.read_text()
    panel.export_button.click()
    assert "not exported: reward &#x27;recorded&#x27; is not from a plug-in file" in panel.export_result.value
    assert "plugins=[" in panel.export_result.value and out.read_text() == before
    with pytest.raises(ParameterError, match="not from a plug-in file"):
        s.export(tmp_path / "x.py")
    # in the background, with a frame that already holds the plug-in's rewards (as a board's frame does)
    applied = apply_plugins(frame, str(companion), progress=False)
    threaded = NormalizationPanel(applied, plugins=[str(companion)], reward="shaping", scope="all",
                                  export_path=str(tmp_path / "plugins" / "threaded.py"))
    threaded.export_button.click()
    assert threaded.wait_for_export(60)
    assert "identical to rewardlab" in threaded.export_result.value
    assert (tmp_path / "plugins" / "threaded.py").exists()


def test_the_cli_exports_show_progress_on_an_interactive_terminal(tmp_path, capsys, monkeypatch):
    """The round trips of `export scaling` and `export normalized` draw bars where bars are shown
    (REWARDLAB_PROGRESS=1 stands for an interactive terminal); silence otherwise."""
    from rewardlab.cli import main

    scaling = ["export", "scaling", "--data", "data/gym/mountaincar_scripted.parquet", "--scope", "episode_return",
               "--no-center", "--out", str(tmp_path / "s.py")]
    normalized = ["export", "normalized", "--plugin", "data/plugins/steps/potential_shaping.py", "--data",
                  "data/gym/cartpole_random.parquet", "--out", str(tmp_path / "n.py")]
    monkeypatch.setenv("REWARDLAB_PROGRESS", "0")
    assert main(scaling) == 0 and "%|" not in capsys.readouterr().err
    monkeypatch.setenv("REWARDLAB_PROGRESS", "1")
    assert main([*scaling, "--overwrite"]) == 0
    err = capsys.readouterr().err
    assert "apply_plugins (shuffled)" in err and "check_plugin exported" in err
    assert main(normalized) == 0
    assert "round trip: 100%" in capsys.readouterr().err.replace("\r", "\n")
