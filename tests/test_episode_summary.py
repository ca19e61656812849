"""rewardlab.episode_summary (ReinforcementLearning.jl's episode hooks) against plain loops, on several specs."""

from __future__ import annotations

import datetime as dt
import json

import matplotlib
import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab import plots
from rewardlab.analysis.episode_summary import ENDINGS, describe_episodes, summary_rewards
from rewardlab.cli import main
from rewardlab.core.errors import ColumnNotFoundError, ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, StateColumn, attach, attached

matplotlib.use("Agg")

SPEC = FrameSpec(name="walk", episode=("episode_id",), step="t", terminated="terminated",
                 truncated="truncated", states=(StateColumn("obs", None, "float32", 0.0, final="final_obs"),),
                 columns=("action",), contract="steps", time="clock")


def steps_frame(seed: int, episodes: int = 40, *, cut_last: bool = True) -> pl.DataFrame:
    """Random episodes ending terminated or truncated (the last one maybe cut), dyadic rewards.

    Rewards are multiples of 1/8 of small size, so every sum is exact in any order.
    """
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("episode_id", "t", "obs", "final_obs", "action", "terminated", "truncated", "clock",
                            "reward_recorded", "reward_shaped")}
    clock = 0.0
    for e in range(episodes):
        length = int(rng.integers(1, 9))
        how = rng.choice(["terminated", "truncated"])
        if cut_last and e == episodes - 1:
            how = "cut"
        for t in range(length):
            last = t == length - 1
            rows["episode_id"].append(100 + 3 * e)  # keys that are not the index
            rows["t"].append(t)
            rows["obs"].append(float(rng.normal()))
            # the final state: kept for about two episodes in three, missing (null) for the others
            rows["final_obs"].append(float(rng.normal()) if last and rng.random() < 0.67 else None)
            rows["action"].append(int(rng.integers(0, 2)))
            rows["terminated"].append(bool(last and how == "terminated"))
            rows["truncated"].append(bool(last and how == "truncated"))
            clock += float(rng.integers(1, 5)) / 4
            rows["clock"].append(clock)
            rows["reward_recorded"].append(float(rng.integers(-16, 17)) / 8)
            rows["reward_shaped"].append(float(rng.integers(-40, 41)) / 8)
    return pl.DataFrame(rows, schema_overrides={"obs": pl.Float32, "final_obs": pl.Float32, "reward_shaped": pl.Float32,
                                                "episode_id": pl.Int64, "t": pl.Int64})


def loop_summary(frame: pl.DataFrame, rewards, *, keys=("episode_id",), terminated="terminated",
                 truncated="truncated", time="clock", final="final_obs") -> list[dict]:
    """The same summary, row by row in plain Python."""
    rows = frame.to_dicts()
    out, current = [], None
    for i, row in enumerate(rows):
        if current is None:
            current = {"start": i, "key": tuple(row[k] for k in keys), "rewards": {n: [] for n in rewards},
                       "times": []}
        for n in rewards:
            current["rewards"][n].append(float(row[f"reward_{n}"]))
        if time:
            current["times"].append(row[time])
        flags = [f for f in (terminated, truncated) if f and row[f]]
        key_changes = i + 1 < len(rows) and tuple(rows[i + 1][k] for k in keys) != current["key"]
        if flags or key_changes or i + 1 == len(rows):
            if terminated and row[terminated]:
                ended = "terminated"
            elif truncated and row[truncated]:
                ended = "truncated"
            elif (terminated or truncated) and i + 1 == len(rows):
                ended = "cut"
            else:
                ended = "unflagged"
            times = current["times"]
            deltas = [b - a for a, b in zip(times, times[1:])]
            entry = {"episode": len(out), "start": current["start"], "steps": i - current["start"] + 1,
                     "ended": ended, **dict(zip(keys, current["key"]))}
            if final is not False:
                entry["final_state"] = final is not None and row[final] is not None
            if time:
                entry["time_per_step"] = sum(deltas[1:], deltas[0]) / len(deltas) if deltas else None
            for n in rewards:
                total = 0.0
                for r in current["rewards"][n]:
                    total += r
                entry[f"return_{n}"] = total
                entry[f"rewards_{n}"] = current["rewards"][n]
            out.append(entry)
            current = None
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_summary_equals_a_plain_loop(seed):
    frame = steps_frame(seed)
    summary = rewardlab.episode_summary(frame, spec=SPEC)
    assert summary.columns == ["episode", "episode_id", "start", "steps", "ended", "final_state", "time_per_step",
                               "return_recorded", "rewards_recorded", "return_shaped", "rewards_shaped"]
    expected = loop_summary(frame, ["recorded", "shaped"])
    assert summary.height == len(expected)
    got = summary.to_dicts()
    for g, e in zip(got, expected):
        tps, got_tps = e.pop("time_per_step"), g.pop("time_per_step")
        assert got_tps is None if tps is None else got_tps == pytest.approx(tps, rel=1e-12)
        assert g == e  # dyadic rewards: sums exact in any order
    assert summary["ended"].to_list()[-1] == "cut"
    assert set(summary["ended"].unique().to_list()) <= set(ENDINGS)
    assert summary.schema["rewards_shaped"] == pl.List(pl.Float64)
    assert summary.schema["steps"] == pl.Int64
    assert attached(summary).episode == ("episode_id",)  # plots and compare read its keys


def test_rewards_and_lists_options_and_the_same_returns_as_the_comparison():
    frame = steps_frame(5)
    one = rewardlab.episode_summary(frame, spec=SPEC, rewards="reward_shaped", lists=False)
    assert one.columns == ["episode", "episode_id", "start", "steps", "ended", "final_state", "time_per_step",
                           "return_shaped"]
    table = rewardlab.episode_return_table(frame, ["recorded", "shaped"], spec=SPEC)
    both = rewardlab.episode_summary(frame.lazy(), spec=SPEC)
    np.testing.assert_array_equal(both["return_recorded"].to_numpy(), table["recorded"].to_numpy())
    np.testing.assert_array_equal(one["return_shaped"].to_numpy(), table["shaped"].to_numpy())
    none = rewardlab.episode_summary(frame.drop("reward_recorded", "reward_shaped"), spec=SPEC)
    assert none.columns == ["episode", "episode_id", "start", "steps", "ended", "final_state", "time_per_step"]


def test_random_float_rewards_match_the_loop_closely():
    frame = steps_frame(7).with_columns(reward_recorded=pl.Series(np.random.default_rng(3).normal(size=steps_frame(7).height)))
    summary = rewardlab.episode_summary(frame, rewards=["recorded"], spec=SPEC)
    expected = loop_summary(frame, ["recorded"])
    np.testing.assert_allclose(summary["return_recorded"].to_numpy(), [e["return_recorded"] for e in expected],
                               rtol=1e-12, atol=1e-12)
    assert summary["rewards_recorded"].to_list() == [e["rewards_recorded"] for e in expected]


def test_a_stream_spec_without_keys_ends_episodes_at_its_flags():
    frame = steps_frame(3, episodes=12)
    stream = FrameSpec(name="stream", terminated="terminated", truncated="truncated")
    summary = rewardlab.episode_summary(frame.drop("episode_id"), spec=stream)
    expected = loop_summary(frame.drop("episode_id"), ["recorded", "shaped"], keys=(), time=None, final=False)
    assert summary.drop("episode").to_dicts() == [{k: v for k, v in e.items() if k != "episode"} for e in expected]
    assert attached(summary) is None  # no keys to describe


def test_without_flags_every_ending_is_unflagged_and_a_key_named_episode_is_the_index():
    frame = steps_frame(4, episodes=6).rename({"episode_id": "episode"})
    spec = FrameSpec(name="keys", episode=("episode",))
    summary = rewardlab.episode_summary(frame, spec=spec)
    assert summary.columns[:4] == ["episode", "start", "steps", "ended"]
    assert summary["episode"].to_list() == frame["episode"].unique(maintain_order=True).to_list()
    assert set(summary["ended"]) == {"unflagged"}
    assert "time_per_step" not in summary.columns  # the spec has no time column


def test_a_datetime_time_column_gives_durations():
    frame = steps_frame(6, episodes=5)
    start = dt.datetime(2026, 1, 1)
    frame = frame.with_columns(clock=pl.lit(start) + pl.duration(milliseconds=pl.col("clock") * 1000))
    summary = rewardlab.episode_summary(frame, spec=SPEC)
    expected = loop_summary(frame, [], time="clock")
    assert summary.schema["time_per_step"] == pl.Duration("us")
    got = [None if t is None else t.total_seconds() for t in summary["time_per_step"].to_list()]
    want = [None if e["time_per_step"] is None else e["time_per_step"].total_seconds() for e in expected]
    assert [g is None for g in got] == [w is None for w in want]
    np.testing.assert_allclose([g for g in got if g is not None], [w for w in want if w is not None], atol=2e-6)
    assert describe_episodes(summary)["time_per_step"] > 0


def test_kanachan_frames_summarise_per_player_game(sample_frame):
    summary = rewardlab.episode_summary(sample_frame)  # recognized by its columns
    assert summary.columns == ["episode", "game_id", "seat", "start", "steps", "ended", "final_state"]
    assert not summary["final_state"].any()  # kanachan's files pad the state after a game's end
    counts = sample_frame.group_by("game_id", "seat", maintain_order=True).len()
    assert summary["steps"].to_list() == counts["len"].to_list()
    assert set(summary["ended"]) == {"terminated"}  # every game ends with end_of_game
    assert summary.height == rewardlab.summarize(sample_frame).episodes


def test_a_rewards_table_path_and_its_stored_spec(tmp_path):
    frame = attach(steps_frame(8), SPEC)
    path = tmp_path / "rewards.parquet"
    frame.select("episode_id", "t", "reward_recorded").write_parquet(path)
    summary = rewardlab.episode_summary(path, spec=SPEC)
    full = rewardlab.episode_summary(frame)
    assert summary["return_recorded"].to_list() == full["return_recorded"].to_list()
    assert set(summary["ended"]) == {"unflagged"}  # the flags are not in the rewards table


def test_bad_arguments_are_named():
    frame = steps_frame(9, episodes=3)
    with pytest.raises(ColumnNotFoundError, match="reward_nope"):
        rewardlab.episode_summary(frame, rewards="nope", spec=SPEC)
    with pytest.raises(ParameterError, match="`lists` should be True or False"):
        rewardlab.episode_summary(frame, spec=SPEC, lists="yes")
    with pytest.raises(ParameterError, match="`rewards` should be a reward name"):
        rewardlab.episode_summary(frame, spec=SPEC, rewards=3)
    clash = frame.with_columns(reward_x=pl.lit(1.0)).rename({"episode_id": "return_x"})
    with pytest.raises(ParameterError, match="`rewards` should not make a summary column named like a key"):
        rewardlab.episode_summary(clash, spec=FrameSpec(name="c", episode=("return_x",)))
    with pytest.raises(SpecError, match="episode key is named like a column of the summary") as info:
        rewardlab.episode_summary(frame.rename({"episode_id": "steps"}), spec=FrameSpec(name="k", episode=("steps",)))
    assert info.value.column == "steps"
    text_time = frame.with_columns(pl.col("clock").cast(pl.String))
    with pytest.raises(SpecError, match="the time column should hold numbers or times, found String") as info:
        rewardlab.episode_summary(text_time, spec=SPEC)
    assert info.value.column == "clock"
    with pytest.raises(SpecError, match="the frame has no spec"):
        rewardlab.episode_summary(frame.select("t", "reward_recorded"))


def test_describe_episodes_digests_the_summary():
    frame = steps_frame(10)
    summary = rewardlab.episode_summary(frame, spec=SPEC)
    d = describe_episodes(summary)
    assert d["episodes"] == summary.height
    assert sum(d["ended"].values()) == summary.height
    lengths = summary["steps"].to_numpy()
    assert d["steps"]["mean"] == pytest.approx(lengths.mean()) and d["steps"]["max"] == lengths.max()
    assert d["returns"]["shaped"]["median"] == pytest.approx(np.median(summary["return_shaped"].to_numpy()))
    assert summary_rewards(summary) == ["recorded", "shaped"]
    json.dumps(d)  # plain numbers
    with pytest.raises(ParameterError, match="no 'ended' column"):
        describe_episodes(summary.drop("ended"))


def test_plot_episode_summary_draws_returns_and_lengths():
    frame = steps_frame(11)
    summary = rewardlab.episode_summary(frame, spec=SPEC)
    axes = plots.plot_episode_summary(summary, reward="shaped")
    assert len(axes) == 2
    returns, lengths = axes
    assert returns.get_xlabel() == "episode return (shaped)" and lengths.get_xlabel() == "steps per episode"
    labels = returns.get_legend_handles_labels()[1]
    counts = summary["ended"].value_counts()
    for ended, count in zip(counts["ended"], counts["count"]):
        assert f"{ended} ({count})" in labels
    heights = sum(p.get_height() for p in lengths.patches)
    assert heights == summary.height  # every episode in one bar
    assert plots.plot_episode_summary(summary)[0].get_xlabel() == "episode return (recorded)"
    with pytest.raises(ParameterError, match="`reward` should be one of the summary's rewards"):
        plots.plot_episode_summary(summary, reward="nope")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    assert list(plots.plot_episode_summary(summary, reward="recorded", ax=[a, b])) == [a, b]
    plt.close("all")


def test_cli_info_and_plot_show_the_episode_summary(tmp_path, capsys):
    from rewardlab.sources.storage import write_dataset

    frame = attach(steps_frame(12, cut_last=False), SPEC)
    dataset = tmp_path / "walk.parquet"
    write_dataset(frame, dataset, spec=SPEC)
    assert main(["info", str(dataset)]) == 0
    text = capsys.readouterr().out
    assert "episode length" in text and "return recorded" in text and "return shaped" in text
    assert main(["info", "--json", str(dataset)]) == 0
    info = json.loads(capsys.readouterr().out)
    summary = rewardlab.episode_summary(frame)
    assert info["episode_summary"]["episodes"] == summary.height
    assert info["episode_summary"]["steps"]["max"] == summary["steps"].max()
    out = tmp_path / "episodes.png"
    assert main(["plot", str(dataset), "--kind", "episodes", "--reward", "shaped", "--out", str(out)]) == 0
    assert out.stat().st_size > 0 and "episodes figure of shaped" in capsys.readouterr().out


def test_describe_episodes_leaves_non_finite_returns_out_and_counts_them():
    from rewardlab.analysis.episode_summary import describe_episodes

    s = pl.DataFrame({"steps": [2, 4, 3], "ended": ["terminated"] * 3, "return_a": [1.0, float("nan"), 3.0]})
    d = describe_episodes(s)["returns"]["a"]
    assert (d["min"], d["max"], d["mean"], d["nonfinite"]) == (1.0, 3.0, 2.0, 1)
    with pytest.raises(ParameterError, match="`summary` should be a polars DataFrame"):
        describe_episodes({"steps": [1]})
