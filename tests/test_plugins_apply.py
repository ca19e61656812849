"""Applying plug-ins: what each call receives, and the shipped plug-ins against the wiki's loops."""

from __future__ import annotations

import ast
import importlib.util
import math
import textwrap

import numpy as np
import polars as pl
import pytest
import torch

import rewardlab
from rewardlab.plugins.batch_modes import BATCH_MODES, DEFAULT_BATCH_SIZES, episode_ends, plan_batches
from rewardlab.contracts.kanachan.batching import TENSORDICT_KEYS
from rewardlab.core.errors import RewardScaleWarning
from rewardlab.plugins import apply_plugins, load_plugin

from conftest import PLUGINS_DIR, ROOT, SAMPLE
from reference import wiki_rank

SHIPPED = sorted(p.stem for p in PLUGINS_DIR.glob("*.py"))

RECORDER = """\
import torch

CALLS = []


def get_reward(data, contiguous):
    CALLS.append({
        "grad": torch.is_grad_enabled(),
        "contiguous": contiguous,
        "has_reward": ("next", "reward") in data.keys(include_nested=True),
        "data": data.clone(),
    })
    eog = data["next", "end_of_game"]
    data["next", "reward"] = torch.where(eog, (data["sparse"][:, 6] % 2).double() * 2 - 1, 0.0)
    data["next", "done"][:] = True  # allowed (every step ends a trajectory); must not leak
"""


@pytest.fixture(scope="module")
def frame(sample_frame):
    """The first ~40 games of the sample (whole episodes)."""
    ends = sample_frame["end_of_game"].to_numpy().nonzero()[0]
    return sample_frame.head(int(ends[159]) + 1)


@pytest.mark.parametrize("mode", BATCH_MODES)
def test_each_call_gets_a_fresh_tensordict_as_kanachan_builds_it(tmp_path, small_frame, mode):
    path = tmp_path / "rec.py"
    path.write_text(RECORDER)
    rec = load_plugin(path)
    calls = rec.get_reward.__globals__["CALLS"]
    # in this process, so the recorder's list fills up here
    out = apply_plugins(small_frame, rec, batch_mode=mode, batch_size=6, seed=5, progress=False,
                        isolate=False)
    plan = list(plan_batches(mode, episode_ends(small_frame["end_of_game"].to_numpy()),
                             batch_size=6, seed=5))
    assert len(calls) == len(plan)
    arrays = rewardlab.FrameArrays(small_frame)
    for call, (rows, contiguous) in zip(calls, plan):
        assert call["contiguous"] is contiguous
        assert call["grad"] is False
        assert call["has_reward"] is False
        expected = arrays.tensordict(rows)
        got = call["data"]
        assert got.batch_size == expected.batch_size and got.device == torch.device("cpu")
        # kanachan's key order: state and action first, then the "next" keys
        assert list(got.keys(include_nested=True, leaves_only=True)) == list(TENSORDICT_KEYS)
        assert list(got.keys()) == ["sparse", "numeric", "progression", "candidates", "action", "next"]
        for key in TENSORDICT_KEYS:
            if key == ("next", "done"):  # the recorder overwrote it after cloning: check the clone
                assert torch.equal(got[key], expected["next", "end_of_game"])
            else:
                assert torch.equal(got[key], expected[key]), key
                assert got[key].dtype == expected[key].dtype
    assert out["done_rec"].all()


def test_several_plugins_side_by_side(tmp_path, frame):
    path = tmp_path / "rec.py"
    path.write_text(RECORDER)
    plugins = [load_plugin(path), load_plugin(PLUGINS_DIR / "rank_top.py"),
               load_plugin(PLUGINS_DIR / "round_delta.py")]
    with pytest.warns(RewardScaleWarning) as record:  # rec ends a trajectory at every step
        out = apply_plugins(frame, plugins, batch_mode="sequential", batch_size=500, progress=False)
    assert [str(w.message).split(" (")[0] for w in record] == ["plug-in 'rec'"]
    assert out.columns[: frame.width] == frame.columns
    assert out.columns[frame.width:] == ["reward_rec", "done_rec", "reward_rank_top", "done_rank_top",
                                         "reward_round_delta", "done_round_delta"]
    alone = apply_plugins(frame, plugins[1], batch_mode="episodes", progress=False)
    assert out["reward_rank_top"].equals(alone["reward_rank_top"])
    np.testing.assert_array_equal(out["done_rank_top"].to_numpy(), frame["end_of_game"].to_numpy())
    again = apply_plugins(out, plugins[1], progress=False, replace=True)  # re-applying replaces, when asked
    assert again.columns == out.columns


def test_strict_mode_gives_the_same_results(frame):
    plug = load_plugin(PLUGINS_DIR / "rank_points_mleague.py")
    a = apply_plugins(frame, plug, batch_mode="shuffled", batch_size=300, progress=False)
    b = apply_plugins(frame, plug, batch_mode="shuffled", batch_size=300, strict=True, progress=False)
    assert a.equals(b)


def test_progress_bar(frame, capsys):
    apply_plugins(frame, PLUGINS_DIR / "rank_top.py", batch_mode="sequential", progress=True)
    err = capsys.readouterr().err
    assert "apply_plugins (sequential)" in err and "transition" in err


def test_empty_frame(small_frame):
    out = apply_plugins(small_frame.head(0), PLUGINS_DIR / "rank_top.py", progress=False)
    assert out.height == 0 and out.schema["reward_rank_top"] == pl.Float64


# --- the shipped plug-ins against the wiki's loops -----------------------------------------


def seed_loop(frame: pl.DataFrame, name: str, constants: dict) -> tuple[np.ndarray, np.ndarray]:
    """The wiki's per-row loops (shared/seeds/000), one transition at a time."""
    sparse6 = frame["sparse"].to_numpy()[:, 6].tolist()
    results = frame["results"].to_numpy().tolist()
    eog = frame["end_of_game"].to_list()
    eor = frame["end_of_round"].to_list()
    n = frame.height
    reward = torch.zeros(n, dtype=torch.float64)
    done = list(eog)
    for i in range(n):
        seat = int(sparse6[i]) - 71
        if name == "round_delta":
            if not (eor[i] or eog[i]):
                continue
            delta = results[i][seat]
            reward[i] = (delta - constants["_DELTA_MEAN"]) / constants["_DELTA_STDEV"]
            done[i] = True
            continue
        if not eog[i]:
            continue
        scores = results[i][4:8]
        score = scores[seat]
        ranking = wiki_rank(scores, seat)
        if name == "raw_points":
            reward[i] = (score - constants["_SCORE_MEAN"]) / constants["_SCORE_STDEV"]
        elif name.startswith("rank_points_"):
            by_rank = constants["_REWARD_BY_RANKING"]
            if name == "rank_points_mjsoul_saint3":
                value = by_rank[ranking] + (score - 25000) // 1000
            else:
                value = by_rank[ranking] + (score - 30000) // 100
            reward[i] = (value - constants["_REWARD_MEAN"]) / constants["_REWARD_STDEV"]
        else:
            by_rank = constants["_REWARD_BY_RANKING"]
            table = torch.tensor(by_rank, dtype=torch.float64)
            reward[i] = (by_rank[ranking] - table.mean()) / table.std()
    return reward.numpy(), np.array(done, dtype=bool)


EXPECTED_VECTORS = {
    "rank_top": [1.0, -1.0, -1.0, -1.0],
    "rank_top_two": [1.0, 1.0, -1.0, -1.0],
    "rank_tenhou_6dan": [75.0, 30.0, 0.0, -120.0],
    "rank_mjsoul_celestial": [1.0, 0.4, -0.4, -1.0],
    "rank_points_mjsoul_saint3": [135.0, 65.0, -5.0, -255.0],
    "rank_points_mleague": [500.0, 100.0, -100.0, -300.0],
}


def test_every_seed_reward_is_shipped():
    assert SHIPPED == sorted([*EXPECTED_VECTORS, "raw_points", "round_delta"])


@pytest.fixture(scope="module")
def shipped_results(frame):
    """Every shipped plug-in applied in every mode (default batch sizes and a small one)."""
    plugins = [load_plugin(PLUGINS_DIR / f"{name}.py") for name in SHIPPED]
    runs = {}
    for mode in BATCH_MODES:
        for size in {DEFAULT_BATCH_SIZES[mode], None if mode == "episodes" else 37}:
            runs[mode, size] = apply_plugins(frame, plugins, batch_mode=mode, batch_size=size,
                                             seed=11, progress=False)
    return plugins, runs


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_plugin_matches_the_seed_loop_in_every_mode(frame, shipped_results, name):
    plugins, runs = shipped_results
    [plug] = [p for p in plugins if p.name == name]
    constants = plug.get_reward.__globals__
    if name in EXPECTED_VECTORS:
        assert constants["_REWARD_BY_RANKING"] == EXPECTED_VECTORS[name]
    reward, done = seed_loop(frame, name, constants)
    assert np.count_nonzero(reward) > frame["end_of_game"].sum() // 2  # the reference is not empty
    for (mode, size), out in runs.items():
        np.testing.assert_array_equal(out[f"reward_{name}"].to_numpy(), reward, err_msg=f"{mode} {size}")
        np.testing.assert_array_equal(out[f"done_{name}"].to_numpy(), done, err_msg=f"{mode} {size}")
    assert plug.reads_contiguous is False


def test_round_delta_ends_every_round_and_the_game(frame, shipped_results):
    _, runs = shipped_results
    out = runs["episodes", None]
    eog, eor = frame["end_of_game"].to_numpy(), frame["end_of_round"].to_numpy()
    np.testing.assert_array_equal(out["done_round_delta"].to_numpy(), eog | eor)
    assert not (eog & eor).any()  # offline data: the game's last step is not an end of round
    seat = frame["seat"].to_numpy().astype(np.int64)
    delta = np.take_along_axis(frame["results"].to_numpy()[:, :4], seat[:, None], axis=1)[:, 0]
    paid = out["reward_round_delta"].to_numpy() != 0
    assert (delta[eog] != 0).any()
    np.testing.assert_array_equal(paid[eog], delta[eog] != 0)  # the game's last round is paid too


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_plugin_is_self_contained(name):
    path = PLUGINS_DIR / f"{name}.py"
    tree = ast.parse(path.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module.split(".")[0])
    assert modules <= {"torch", "tensordict"}, modules
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # no rewardlab needed
    assert callable(namespace["get_reward"])
    has_loop = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))]
    assert not has_loop, "shipped plug-ins are vectorized"
    assert path.read_text().startswith("# ")  # a header comment says what it is


def test_readme_lists_every_shipped_plugin():
    text = (PLUGINS_DIR / "README.md").read_text()
    for name in SHIPPED:
        assert f"`{name}.py`" in text, name


def test_embedded_constants_come_from_the_bundled_sample():
    if not SAMPLE.exists():
        pytest.skip("the bundled sample is made by `make sample`")
    spec = importlib.util.spec_from_file_location("constants_tool", PLUGINS_DIR / "tools" / "constants.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    measured = tool.compute_constants(rewardlab.load_kanachan(SAMPLE, progress=False))
    for name, constants in measured.items():
        embedded = load_plugin(PLUGINS_DIR / f"{name}.py").get_reward.__globals__
        for key, value in constants.items():
            assert math.isclose(embedded[key], value, rel_tol=1e-12, abs_tol=1e-9), (
                f"{name}.{key} = {embedded[key]} but the sample gives {value}: regenerate with "
                "`python data/plugins/tools/constants.py data/sample.tsv.gz`")


def test_constants_tool_prints_literals(capsys, small_frame, tmp_path):
    spec = importlib.util.spec_from_file_location("constants_tool", PLUGINS_DIR / "tools" / "constants.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    path = tmp_path / "small.parquet"
    small_frame.write_parquet(path)
    assert tool.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "# data/plugins/raw_points.py\n_SCORE_MEAN = " in out
    scores = small_frame.filter(pl.col("end_of_game")).select(
        pl.col("results").arr.get(4 + pl.col("seat").cast(pl.Int64)))[:, 0].to_numpy()
    assert f"_SCORE_MEAN = {float(scores.mean())!r}" in out
    assert f"_SCORE_STDEV = {float(scores.std(ddof=1))!r}" in out
    assert ROOT.exists()


def test_shipped_ranking_normalization_is_the_wikis():
    plug = load_plugin(PLUGINS_DIR / "rank_tenhou_6dan.py")
    v = np.array([75.0, 30.0, 0.0, -120.0])
    expected = (v - v.mean()) / v.std(ddof=1)
    np.testing.assert_allclose(plug.get_reward.__globals__["_NORMALIZED"].numpy(), expected, rtol=1e-15)
    assert textwrap.dedent("torch's default (sample) std") in plug.source


@pytest.mark.parametrize("mode", BATCH_MODES)
@pytest.mark.parametrize("strict", [False, True])
def test_chunking_does_not_change_results(small_frame, mode, strict):
    from rewardlab.plugins.runner import Locator, run_plugins

    plug = load_plugin(PLUGINS_DIR / "round_delta.py")
    arrays = rewardlab.FrameArrays(small_frame)
    ends = episode_ends(arrays.end_of_game)
    outs = []
    for chunk_rows in (1, 9, 10_000):
        [out] = run_plugins(arrays, Locator(small_frame), [plug],
                            plan_batches(mode, ends, batch_size=4, seed=2), mode=mode,
                            batch_size=4, strict=strict, chunk_rows=chunk_rows)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(out.rewards, outs[0].rewards)
        np.testing.assert_array_equal(out.dones, outs[0].dones)
        assert out.calls == outs[0].calls
    assert not np.isnan(outs[0].rewards).any()


@pytest.mark.parametrize("strict", [False, True])
def test_a_plugin_that_writes_in_fields_does_not_leak_into_the_next(tmp_path, small_frame, strict):
    from rewardlab.plugins.runner import Locator, run_plugins

    vandal = tmp_path / "vandal.py"
    vandal.write_text("import torch\n\ndef get_reward(data, contiguous):\n"
                      "    data['next', 'reward'] = torch.zeros(data.batch_size, dtype=torch.float64)\n"
                      "    data['sparse'].fill_(0)\n    data['next', 'done'].fill_(True)\n")
    rec = tmp_path / "rec.py"
    rec.write_text(RECORDER)
    plugins = [load_plugin(vandal), load_plugin(rec)]
    arrays = rewardlab.FrameArrays(small_frame)
    ends = episode_ends(arrays.end_of_game)
    outs = run_plugins(arrays, Locator(small_frame), plugins,
                       plan_batches("sequential", ends, batch_size=8), mode="sequential",
                       batch_size=8, strict=strict, collect=True, chunk_rows=20)
    [(error, count)] = outs[0].problems.values()
    assert count == 7 and "changed the IN field data[\"sparse\"] in place" in str(error)
    assert outs[1].problems == {}
    calls = plugins[1].get_reward.__globals__["CALLS"]
    for call, (rows, _) in zip(calls, plan_batches("sequential", ends, batch_size=8)):
        expected = arrays.tensordict(rows)
        assert torch.equal(call["data"]["sparse"], expected["sparse"])
        assert torch.equal(call["data"]["next", "done"], expected["next", "end_of_game"])
