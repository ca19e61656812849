"""The example plug-ins of the steps contract (data/plugins/steps/) and the scaling plug-in's export."""

from __future__ import annotations

import dataclasses

import importlib.util
import math

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab import scaling
from rewardlab.cli import main
from rewardlab.core.errors import OutputExistsError, ParameterError, RoundTripError
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.scaling import StepsScaling, export_scaling_plugin

from conftest import PLUGINS_DIR, ROOT

STEPS_DIR = PLUGINS_DIR / "steps"


def _spec(width):
    return FrameSpec(name="toy_steps", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated", states=(StateColumn("obs", width, "float32", 0.0),),
                     columns=("action", "reward_recorded"), contract="steps")


def steps_frame(seed: int = 0, *, width: int | None = 3, episodes: int = 25,
                recorded_dtype=pl.Float64) -> pl.DataFrame:
    """A small step table with its spec, laid out as a step-table source gives it: episodes ending terminated
    or truncated, the recorded reward ``reward_recorded`` (one column: candidate and IN key) and
    ``done_recorded``."""
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("episode_id", "t", "obs", "action", "reward_recorded", "terminated", "truncated")}
    for e in range(episodes):
        length = int(rng.integers(1, 12))
        how = rng.choice(["terminated", "truncated"])
        for t in range(length):
            rows["episode_id"].append(7 * e + 1)
            rows["t"].append(t)
            obs = rng.normal(size=width if width else 1).astype(np.float32)
            rows["obs"].append(obs.tolist() if width else float(obs[0]))
            rows["action"].append(int(rng.integers(0, 4)))
            rows["reward_recorded"].append(float(rng.integers(-5, 6)) if recorded_dtype == pl.Int64
                                           else float(rng.normal()))
            rows["terminated"].append(bool(t == length - 1 and how == "terminated"))
            rows["truncated"].append(bool(t == length - 1 and how == "truncated"))
    obs_dtype = pl.Array(pl.Float32, width) if width else pl.Float32
    frame = pl.DataFrame(rows, schema_overrides={"obs": obs_dtype, "t": pl.Int64, "episode_id": pl.Int64})
    frame = frame.with_columns(pl.col("reward_recorded").cast(recorded_dtype),
                               done_recorded=pl.col("terminated") | pl.col("truncated"))
    return attach(frame, _spec(width))


def run_everywhere(frame, path) -> pl.DataFrame:
    """Apply in every batch mode; every mode's rewards and dones must be equal bit for bit; the first out."""
    outs = [rewardlab.apply_plugins(frame, path, batch_mode=mode, isolate=False, progress=False)
            for mode in BATCH_MODES]
    name = path.stem
    for mode, out in zip(BATCH_MODES, outs):
        assert out[f"reward_{name}"].to_numpy().tobytes() == outs[0][f"reward_{name}"].to_numpy().tobytes(), mode
        assert out[f"done_{name}"].to_list() == outs[0][f"done_{name}"].to_list(), mode
    report = rewardlab.check_plugin(frame, path, progress=False)  # every batch mode, in a child process
    assert report.ok, str(report)
    return outs[0]


def loop_shaping(frame: pl.DataFrame, gamma: float = 0.99) -> np.ndarray:
    obs = frame["obs"].to_list()
    ends = [a or b for a, b in zip(frame["terminated"].to_list(), frame["truncated"].to_list())]

    def phi(x):
        xs = x if isinstance(x, list) else [x]
        return -math.sqrt(sum(float(v) * float(v) for v in xs))

    out = []
    for i in range(frame.height):
        after = 0.0 if ends[i] else phi(obs[i + 1])
        out.append(gamma * after - phi(obs[i]))
    return np.array(out)


@pytest.mark.parametrize("width", [3, None])
def test_potential_shaping_is_gamma_phi_next_minus_phi_with_zero_after_the_end(width):
    frame = steps_frame(1, width=width)
    out = run_everywhere(frame, STEPS_DIR / "potential_shaping.py")
    got = out["reward_potential_shaping"]
    assert got.dtype == pl.Float64
    np.testing.assert_allclose(got.to_numpy(), loop_shaping(frame), rtol=1e-12, atol=1e-15)
    ends = (frame["terminated"] | frame["truncated"]).to_numpy()
    assert out["done_potential_shaping"].to_numpy().tolist() == ends.tolist()


def test_with_gamma_one_an_episodes_shaped_return_telescopes_to_minus_phi_of_its_first_state(tmp_path):
    frame = steps_frame(11)
    text = (STEPS_DIR / "potential_shaping.py").read_text()
    assert "GAMMA = 0.99\n" in text
    undiscounted = tmp_path / "shaping_one.py"
    undiscounted.write_text(text.replace("GAMMA = 0.99\n", "GAMMA = 1.0\n"))
    out = rewardlab.apply_plugins(frame, undiscounted, isolate=False, progress=False)
    returns = rewardlab.episode_return_table(out, "shaping_one")["shaping_one"].to_numpy()
    first = frame.group_by("episode_id", maintain_order=True).first()["obs"].to_numpy().astype(np.float64)
    np.testing.assert_allclose(returns, np.linalg.norm(first, axis=1), rtol=1e-9, atol=1e-12)


def test_the_potential_is_a_plain_function_in_the_file():
    plugin = rewardlab.load_plugin(STEPS_DIR / "potential_shaping.py", contract="steps")
    scope = plugin.get_reward.__globals__
    import torch

    assert scope["potential"](torch.tensor([[3.0, 4.0]])).tolist() == [-5.0]
    assert scope["GAMMA"] == 0.99


@pytest.mark.parametrize("dtype", [pl.Float64, pl.Float32, pl.Int64])
def test_the_recorded_reward_plugin_returns_the_tables_own_reward(dtype):
    frame = steps_frame(2, recorded_dtype=dtype)
    out = run_everywhere(frame, STEPS_DIR / "recorded_reward.py")
    got = out["reward_recorded_reward"]
    assert got.dtype == (pl.Float64 if dtype == pl.Int64 else dtype)  # a float column keeps its dtype
    assert got.cast(pl.Float64).to_list() == frame["reward_recorded"].cast(pl.Float64).to_list()
    # the data's reward_recorded is read, not replaced: the plug-in's column sits beside it
    assert out["reward_recorded"].to_list() == frame["reward_recorded"].to_list()
    assert out["done_recorded_reward"].to_list() == frame["done_recorded"].to_list()
    # the baseline: the comparison of the candidate with the table's recorded reward is exact
    table = rewardlab.episode_return_table(out, ["recorded", "recorded_reward"])
    assert table["recorded"].to_list() == table["recorded_reward"].to_list()
    assert rewardlab.step_difference(out, "recorded", "recorded_reward").fraction_different == 0.0


@pytest.mark.parametrize("layout", ["recording", "steps_source"])
def test_the_recorded_reward_plugin_on_a_real_recording_equals_its_baseline(tmp_path, layout):
    frame = rewardlab.load(ROOT / "data" / "gym" / "mountaincar_scripted.parquet")  # rewardlab.record's table
    if layout == "steps_source":  # the same table as a plain step table, read by the steps source
        plain = tmp_path / "plain.parquet"
        pl.DataFrame(frame).rename({"reward_recorded": "reward"}).drop("done_recorded").write_parquet(plain)
        frame = rewardlab.load(plain, format="steps")
    assert "recorded_reward" not in frame.columns  # one column holds it: candidate and IN key
    out = rewardlab.apply_plugins(frame, STEPS_DIR / "recorded_reward.py", isolate=False, progress=False)
    assert out["reward_recorded_reward"].to_list() == frame["reward_recorded"].to_list()
    table = rewardlab.episode_return_table(out, ["recorded", "recorded_reward"])
    assert table["recorded"].to_list() == table["recorded_reward"].to_list()
    assert table["recorded"].to_list() == frame.group_by("episode_id", maintain_order=True).agg(
        pl.col("reward_recorded").sum())["reward_recorded"].to_list()
    assert rewardlab.step_difference(out, "recorded", "recorded_reward").fraction_different == 0.0


def _example_tool():
    spec = importlib.util.spec_from_file_location("steps_example", PLUGINS_DIR / "tools" / "steps_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_scaling_plugin_is_the_export_of_its_example_table():
    tool = _example_tool()
    table = tool.example_table()
    constants = rewardlab.normalization_constants(table, "recorded")
    shipped = (STEPS_DIR / "scale_recorded.py").read_text()
    again = StepsScaling(constants).render(source=tool.SOURCE)
    # everything but the first line (version and date) is what rewardlab renders from the constants now
    assert shipped.splitlines()[1:] == again.splitlines()[1:]
    assert f"_RL_SHIFT = {constants.mean!r}" in shipped and f"_RL_SCALE = {constants.std!r}" in shipped
    assert constants.fingerprint in shipped
    frame = steps_frame(3)
    out = run_everywhere(frame, STEPS_DIR / "scale_recorded.py")
    expected = (frame["reward_recorded"].to_numpy() - constants.mean) / constants.std
    assert out["reward_scale_recorded"].to_numpy().tobytes() == expected.tobytes()


def test_export_round_trips_bit_for_bit_in_every_batch_mode(tmp_path):
    frame = steps_frame(4, recorded_dtype=pl.Float32)
    constants = rewardlab.normalization_constants(frame, "recorded")
    path = tmp_path / "scaled.py"
    result = export_scaling_plugin(constants, path, data=frame, source="a test\nimport os")
    assert result.path == path and path.read_text() == result.text
    rt = result.roundtrip
    assert rt.ok and rt.identical and set(rt.differing) == set(BATCH_MODES)
    assert all(v == (0, 0) for v in rt.differing.values())
    assert rt.checked_rows == frame.height and rt.episodes == frame["episode_id"].n_unique()
    assert "in every batch mode" in str(rt) and "check-plugin: PASS" in str(rt)
    header = result.header
    assert constants.fingerprint in header and "scope 'all'" in header and "reward 'recorded'" in header
    assert "# source:      a test\\nimport os" in header  # user text stays in one comment line
    assert "import rewardlab" not in result.text
    names = [line.split(" = ")[0] for line in result.text.splitlines() if " = " in line and not line[0].isspace()
             and not line.startswith("#")]
    assert names == ["_RL_KEY", "_RL_SHIFT", "_RL_SCALE"]
    plugin = rewardlab.load_plugin(path, contract="steps", trainer_scope=False)  # stand-alone
    expected, done = StepsScaling(constants).evaluate(frame)
    out = rewardlab.apply_plugins(frame, plugin, batch_mode="shuffled", isolate=False, progress=False)
    assert out["reward_scaled"].to_numpy().tobytes() == expected.tobytes()
    # an existing file is refused before any work, and kept
    before = path.read_bytes()
    with pytest.raises(OutputExistsError):
        export_scaling_plugin(constants, path, data=frame)
    assert path.read_bytes() == before
    assert export_scaling_plugin(constants, path, data=frame, overwrite=True, check=False).roundtrip is None


def test_a_large_frame_checks_whole_episodes_spread_over_it(tmp_path):
    frame = steps_frame(5, episodes=60)
    constants = rewardlab.normalization_constants(frame, "recorded")
    result = export_scaling_plugin(constants, tmp_path / "s.py", data=frame, check_rows=80)
    rt = result.roundtrip
    assert rt.ok and rt.rows == frame.height and 0 < rt.checked_rows < frame.height
    assert 0 < rt.checked_episodes < rt.episodes == 60


def test_return_scopes_scale_without_centering(tmp_path):
    frame = steps_frame(6)
    constants = rewardlab.normalization_constants(frame, "recorded", scope="episode_return")
    with pytest.raises(ParameterError, match="`center` should be False for constants of scope 'episode_return'"):
        StepsScaling(constants)
    result = export_scaling_plugin(constants, tmp_path / "r.py", data=frame, center=False)
    assert result.roundtrip.ok and "_RL_SHIFT = 0.0" in result.text
    out = rewardlab.apply_plugins(frame, tmp_path / "r.py", isolate=False, progress=False)
    np.testing.assert_array_equal(out["reward_r"].to_numpy(), frame["reward_recorded"].to_numpy() / constants.std)


def test_a_file_that_differs_is_not_written(tmp_path, monkeypatch):
    frame = steps_frame(7)
    constants = rewardlab.normalization_constants(frame, "recorded")
    body = StepsScaling.export_body.replace("/ _RL_SCALE", "* (1.0 / _RL_SCALE)")
    monkeypatch.setattr(StepsScaling, "export_body", body)
    path = tmp_path / "bad.py"
    with pytest.raises(RoundTripError, match="was not written: the file failed its round-trip check") as info:
        export_scaling_plugin(constants, path, data=frame)
    assert "DIFFERS from rewardlab" in str(info.value)
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_bad_arguments_are_named(tmp_path):
    frame = steps_frame(8)
    constants = rewardlab.normalization_constants(frame, "recorded")
    with pytest.raises(ParameterError, match=r"`key` should match \[A-Za-z_\]"):
        StepsScaling(constants, key="x'); import os #")
    with pytest.raises(ParameterError, match="`constants` should be rewardlab.NormalizationConstants"):
        StepsScaling({"mean": 0.0, "std": 1.0})
    with pytest.raises(ParameterError, match="`key` should be handed to plug-ins: list it in the toy_steps spec"):
        StepsScaling(constants, key="t").evaluate(frame)
    with pytest.raises(ParameterError, match="`key` should be a column of the frame"):
        StepsScaling(constants, key="missing").evaluate(frame)
    with pytest.raises(ParameterError, match="`data` should be the steps frame"):
        export_scaling_plugin(constants, tmp_path / "x.py", data=None)
    other = frame.with_columns(reward_other=pl.col("reward_recorded") * 2)
    with pytest.raises(ParameterError, match="`constants` should be measured on the reward the key 'reward_recorded' "
                       "holds; reward_other differs from 'reward_recorded' on"):
        export_scaling_plugin(rewardlab.normalization_constants(other, "other"), tmp_path / "x.py", data=other)
    with pytest.raises(ParameterError, match="`center` should be True or False"):
        StepsScaling(constants, center=1)
    tiny = dataclasses.replace(constants, std=1e-120)  # finite, but the scaled rewards leave ±1e100
    with pytest.raises(ParameterError, match=r"`constants` should keep every scaled reward within ±1e\+100, but row"):
        export_scaling_plugin(tiny, tmp_path / "x.py", data=frame)
    assert list(tmp_path.iterdir()) == []


def test_cli_exports_a_scaling_plugin(tmp_path, capsys):
    from rewardlab.sources.storage import write_dataset

    frame = steps_frame(9)
    dataset = tmp_path / "steps.parquet"
    write_dataset(frame, dataset, spec=_spec(3))
    out = tmp_path / "scaled.py"
    assert main(["export", "scaling", "--data", str(dataset), "--out", str(out), "--note", "cli"]) == 0
    printed = capsys.readouterr().out
    assert "check-plugin: PASS" in printed and "in every batch mode" in printed
    constants = rewardlab.normalization_constants(frame, "recorded")
    text = out.read_text()
    assert f"_RL_SHIFT = {constants.mean!r}" in text and f"#   data:        {dataset}" in text
    assert main(["export", "scaling", "--data", str(dataset), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["export", "scaling", "--data", str(dataset), "--out", str(tmp_path / "r.py"),
                 "--scope", "episode_return"]) == 2
    assert "`center` should be False" in capsys.readouterr().err


def test_one_name_for_the_recorded_reward_everywhere():
    from rewardlab.cli import build_parser
    from rewardlab.sources.steps import RECORDED

    assert scaling.RECORDED_KEY == RECORDED == "reward_recorded"
    assert StepsScaling.__dataclass_fields__["key"].default == RECORDED
    parser = build_parser()
    assert parser.parse_args(["export", "scaling", "--data", "x.parquet", "--out", "y.py"]).key == RECORDED
    for path in (STEPS_DIR / "recorded_reward.py", STEPS_DIR / "scale_recorded.py"):
        namespace: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        assert namespace.get("RECORDED_KEY", namespace.get("_RL_KEY")) == RECORDED, path.name
    tool = _example_tool()
    assert "recorded_reward" not in tool.example_table(episodes=2).columns


@pytest.mark.parametrize("path", sorted(STEPS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_each_steps_plugin_is_self_contained_vectorized_and_listed(path):
    import ast

    tree = ast.parse(path.read_text())
    modules = {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert modules == {"torch"}, modules
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))], "vectorized"
    assert path.read_text().startswith("# ")
    assert f"`{path.name}`" in (STEPS_DIR / "README.md").read_text()
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # no rewardlab needed
    assert callable(namespace["get_reward"])
