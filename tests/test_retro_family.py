"""The retro contest family on the family core: its exported steps plug-in, round trip, CLI and parameters.

References: the family's own evaluation is checked against the Lua scripts in ``test_retro_contest.py``; here
the exported file (torch, one row at a time, episode values read from columns) is applied through the steps
contract in every batch mode, shuffled rows included, and compared bit for bit with it; an altered file must
fail; the file must hold literals only.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewardlab.families as families
from rewardlab.cli import main
from rewardlab.contracts.steps.arrays import StepsArrays
from rewardlab.core.errors import OutputExistsError, ParameterError
from rewardlab.domains.retro import contest as C
from rewardlab.domains.retro.family import ContestFamily, ContestParams, export_contest_plugin, levels_tuple
from rewardlab.domains.retro.frames import contest_spec, steps_frame
from rewardlab.families.roundtrip import family_roundtrip, plugin_roundtrip

pytest.importorskip("lupa.lua51")
from test_retro_contest import GAMES, SAMPLE, TABLES, _episodes, recording  # noqa: E402

MODES = ("episodes", "sequential", "shuffled", "fragments")


def _frame(seed: int, count: int = 5) -> pl.DataFrame:
    return steps_frame(recording(_episodes(np.random.default_rng(seed), count, "contest")))


@pytest.fixture(scope="module")
def sample_frame():
    if SAMPLE.is_file():
        return steps_frame(pl.read_parquet(SAMPLE))
    return _frame(3, 12)


def test_registered_on_the_core():
    assert families.get_family("contest") is ContestFamily
    assert isinstance(ContestFamily(), families.RewardFamily)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), preset=st.sampled_from(["contest", "ppo2", "rainbow"]),
       scale=st.sampled_from([9000.0, 250.5]), limit=st.sampled_from([18000, 97]),
       std=st.sampled_from([1.0, 3.7]))
def test_export_round_trip_bit_for_bit_in_every_batch_mode(tmp_path_factory, seed, preset, scale, limit, std):
    family = ContestFamily.from_preset(preset, scale=scale, frame_limit=limit).with_constants(0.25, std)
    frame = _frame(seed)
    path = tmp_path_factory.mktemp("contest") / "contest.py"
    result = export_contest_plugin(family, path, data=frame)
    assert result.roundtrip.ok, str(result.roundtrip)
    assert set(result.roundtrip.differing) >= set(MODES)
    reward, done = family.evaluate(frame)
    p = family.params
    raw, contest_done = C.contest_rewards(family.prepare(frame).steps, scale=p.scale, bonus=p.bonus,
                                          frame_limit=p.frame_limit, scaler=p.scaler, backtracking=p.backtracking)
    assert reward.view(np.uint64).tolist() == ((raw - 0.25) / std).view(np.uint64).tolist()
    flags = frame["terminated"].to_numpy() | frame["truncated"].to_numpy()
    assert done.tolist() == (flags | contest_done).tolist()


def test_sample_round_trip(tmp_path, sample_frame):
    family = ContestFamily()
    rt = family_roundtrip(family, _write(tmp_path / "c.py", family), sample_frame, check_rows=3_000)
    assert rt.ok, str(rt)


def _write(path: Path, family: ContestFamily) -> Path:
    path.write_text(family.render())
    return path


def test_the_retro_sources_frame(tmp_path, sample_frame):
    """rewardlab.load(..., format="retro") hands the same columns: the same rewards, and the file round-trips."""
    if not SAMPLE.is_file():
        pytest.skip("no sample yet")
    import rewardlab

    loaded = rewardlab.load(SAMPLE, format="retro")
    family = ContestFamily.from_preset("rainbow")
    ours, theirs = family.evaluate(sample_frame), family.evaluate(loaded)
    assert ours[0].view(np.uint64).tolist() == theirs[0].view(np.uint64).tolist()
    assert ours[1].tolist() == theirs[1].tolist()
    rt = family_roundtrip(family, _write(tmp_path / "c.py", family), loaded, modes=("shuffled", "fragments"),
                          check_rows=2_000)
    assert rt.ok, str(rt)


def test_an_altered_file_fails_the_round_trip(tmp_path, sample_frame):
    family = ContestFamily()
    text = family.render()
    for old, new in (("_RL_SCALE = 9000.0", "_RL_SCALE = 9000.000000001"), ("_RL_FRAME_OFFSET = 0", "_RL_FRAME_OFFSET = -1"),
                     ("finished = p_next >= 1.0", "finished = p_next > 1.0")):
        assert old in text
        path = tmp_path / "altered.py"
        path.write_text(text.replace(old, new))
        rt = plugin_roundtrip(path, sample_frame, family.evaluate(sample_frame), modes=("sequential",), check_rows=500)
        assert not rt.identical, old


def test_the_file_holds_literals_only():
    text = ContestFamily.from_preset("rainbow", levels={GAMES[0]: {"zone=0,act=0": 9000}}).render(
        source="a note\nimport os")
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [a.name for n in imports for a in n.names] == ["torch"]
    for node in tree.body:
        if isinstance(node, ast.Assign):
            assert node.targets[0].id.startswith("_RL_")
            ast.literal_eval(node.value)
        else:
            assert isinstance(node, (ast.Import, ast.FunctionDef)) and getattr(node, "name", "get_reward") == "get_reward"
    assert ast.literal_eval(text.split("_RL_LEVEL_MAX_X = ")[1].split("\n")[0]) in (9000, (9000,))
    assert "rewardlab" not in text.split("\n\n", 1)[1]  # only the header names it


def test_get_reward_is_the_file(sample_frame):
    family = ContestFamily.from_preset("ppo2")
    part = sample_frame.filter(pl.col("episode_id").is_in(sample_frame["episode_id"].unique(maintain_order=True)[:3].implode()))
    arrays = StepsArrays(part, contest_spec())
    td = arrays.tensordict(np.random.default_rng(0).permutation(part.height))  # shuffled rows
    family.get_reward(td, False)
    reward, done = family.evaluate(part)
    order = np.random.default_rng(0).permutation(part.height)
    assert td["next", "reward"].numpy().view(np.uint64).tolist() == reward[order].view(np.uint64).tolist()
    assert td["next", "done"].numpy().tolist() == done[order].tolist()


def test_a_one_level_table_runs(tmp_path):
    rec = recording([(GAMES[0], {"x": [80, 90, 9000], "lives": [3, 3, 3], "zone": [0, 0, 0], "act": [0, 0, 0],
                                 "screen_x": [0, 0, 0], "frame": [0, 4, 6]}, True)])
    family = ContestFamily(ContestParams(levels={GAMES[0]: {"zone=0,act=0": 8000}}))
    result = export_contest_plugin(family, tmp_path / "one.py", data=rec)
    assert result.roundtrip.ok, str(result.roundtrip)


def test_a_level_missing_from_the_plugin_table_is_an_error(tmp_path):
    frame = _frame(11, 2)
    family = ContestFamily(ContestParams(levels={GAMES[2]: {"zone=99,act=0": 100}}))
    from rewardlab.core.errors import FrameError

    with pytest.raises(FrameError, match="is not in the level table"):
        family.evaluate(frame)


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="`scale`"):
        ContestFamily().with_params(scale=0)
    with pytest.raises(ParameterError, match="`frame_limit`"):
        ContestFamily().with_params(frame_limit=2.5)
    with pytest.raises(ParameterError, match="`scaler`"):
        ContestFamily().with_params(scaler="yes")
    with pytest.raises(ParameterError, match="should be a parameter"):
        ContestFamily().with_params(scal=1.0)
    with pytest.raises(ParameterError, match="contest games"):
        ContestFamily().with_params(levels={"Airstriker-Genesis-v0": {"zone=0,act=0": 5}})
    with pytest.raises(ParameterError, match="zone=Z,act=A"):
        ContestFamily().with_params(levels={GAMES[0]: {"zone 0": 5}})
    assert levels_tuple({GAMES[0]: {"zone=0,act=1": 5}}) == ((GAMES[0], "zone=0,act=1", 5),)
    assert ContestParams().level_table() == {g: TABLES[g] for g in GAMES}  # the installed tables, as Lua reads them


def test_export_refuses_an_existing_file(tmp_path):
    path = tmp_path / "c.py"
    path.write_text("x")
    with pytest.raises(OutputExistsError):
        export_contest_plugin(ContestFamily(), path)
    assert path.read_text() == "x"
    export_contest_plugin(ContestFamily(), path, overwrite=True)
    assert "def get_reward" in path.read_text()


def test_cli_export_contest(tmp_path, capsys):
    if not SAMPLE.is_file():
        pytest.skip("no sample yet (the retro source reads only whole recordings with their states)")
    data = SAMPLE
    levels = tmp_path / "levels.json"
    own = dict(TABLES[GAMES[0]])
    own["zone=0,act=0"] = own["zone=0,act=0"] + 100
    levels.write_text(json.dumps({GAMES[0]: {"level_max_x": own, "states": {}}}))
    out = tmp_path / "contest.py"
    argv = ["export", "contest", "--preset", "rainbow", "--scale", "100", "--frame-limit", "900", "--scaler",
            "--levels", str(levels), "--data", str(data), "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "identical to rewardlab's rewards and dones" in printed and "check-plugin: PASS" in printed
    text = out.read_text()
    family = ContestFamily.from_preset("rainbow", scale=100, frame_limit=900, scaler=True,
                                       levels={**{g: TABLES[g] for g in GAMES}, GAMES[0]: own})
    body = lambda s: s.split("\n\n", 1)[1]  # noqa: E731  (the header's time differs)
    assert body(text) == body(family.render())
    assert main(argv) == 2  # exists: refused without --overwrite
    assert main([*argv, "--overwrite"]) == 0


def test_constants_fitted_on_a_recording(sample_frame):
    family = ContestFamily().with_constants_from(sample_frame)
    raw = family.raw_values(family.prepare(sample_frame))
    assert family.params.mean == pytest.approx(raw.mean()) and family.params.std == pytest.approx(raw.std())
    reward, _ = family.evaluate(sample_frame)
    assert abs(reward.mean()) < 1e-9 and reward.std() == pytest.approx(1.0)
    assert not family.constants_stale and family.with_params(scale=10.0).constants_stale
