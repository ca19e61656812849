"""FrameSpec: validation names the column and the first offending row; specs round-trip; frames carry them."""

from __future__ import annotations

import gc
import weakref

import polars as pl
import pytest

from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, StateColumn, attach, attached, keep_spec
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC
from rewardlab.sources.registry import REWARDS_ONLY, spec_of

SPEC = FrameSpec(name="steps", episode=("episode",), step="t", terminated="terminated", truncated="truncated",
                 states=(StateColumn("obs", 2, "float32", 0.0), StateColumn("hp", None, "int16", -1)),
                 columns=("action",), contract="steps")


def frame(**changes) -> pl.DataFrame:
    """Three episodes (lengths 3, 2, 2): terminated, truncated, terminated."""
    data = {
        "episode": [5, 5, 5, 2, 2, 9, 9],
        "t": [0, 1, 2, 0, 1, 0, 1],
        "obs": [[0.0, 1.0]] * 7,
        "hp": [10, 9, 8, 10, 10, 3, 1],
        "action": [0, 1, 0, 1, 1, 0, 0],
        "terminated": [False, False, True, False, False, False, True],
        "truncated": [False, False, False, False, True, False, False],
    }
    data.update(changes)
    return pl.DataFrame(data, schema_overrides={"obs": pl.Array(pl.Float32, 2), "hp": pl.Int16})


def error(f: pl.DataFrame, spec: FrameSpec = SPEC) -> SpecError:
    with pytest.raises(SpecError) as info:
        spec.validate(f)
    return info.value


def test_a_good_frame_passes():
    SPEC.validate(frame())
    SPEC.validate(frame().head(0))


def test_a_missing_column_is_named_with_what_there_is():
    e = error(frame().drop("hp"))
    assert (e.column, e.row) == ("hp", None)
    assert str(e).startswith("column 'hp': the steps spec names this column and the frame lacks it. "
                             "Available: episode, t, obs, action, terminated, truncated")


def test_a_state_of_the_wrong_width_or_shape():
    wide = frame().with_columns(pl.Series("obs", [[0.0, 1.0, 2.0]] * 7, dtype=pl.Array(pl.Float32, 3)))
    assert str(error(wide)) == "column 'obs': the state should have width 2, found 3"
    listed = frame().with_columns(pl.col("obs").cast(pl.List(pl.Float32)))
    assert str(error(listed)).startswith("column 'obs': the state should be Array(_, 2), found List(Float32). "
                                         "Convert a List column")
    listed_hp = frame().with_columns(pl.Series("hp", [[1]] * 7))
    assert str(error(listed_hp)).startswith("column 'hp': the state should be a numeric scalar column")


def test_a_flag_must_be_boolean():
    e = error(frame(truncated=[0, 0, 0, 0, 1, 0, 0]))
    assert str(e).startswith("column 'truncated': a flag column should be Boolean, found Int64")


def test_an_episode_that_is_not_contiguous_names_its_return():
    e = error(frame(episode=[5, 5, 5, 2, 2, 5, 5]))
    assert (e.column, e.row) == ("episode", 5)
    assert "episode 5 is not contiguous: it comes back after another episode" in str(e)
    two_keys = FrameSpec(name="pairs", episode=("game", "seat"))
    e = error(pl.DataFrame({"game": [1, 1, 2, 1], "seat": [0, 0, 0, 0]}), two_keys)
    assert (e.column, e.row) == ("game", 3) and "episode (1, 0) is not contiguous" in str(e)


def test_a_terminal_flag_that_never_fires_at_an_episode_end():
    e = error(frame(terminated=[False, False, False, False, False, False, True]))
    assert (e.column, e.row) == ("terminated", 2)
    assert "no terminal flag fires on the episode's last step" in str(e)
    no_truncated = FrameSpec(name="ends", episode=("episode",), terminated="terminated")
    e = error(frame(terminated=[False, False, True, False, False, False, True]), no_truncated)
    assert e.row == 4 and "needs a truncated column" in str(e)


def test_a_flag_that_fires_mid_episode_and_both_flags_on_one_step():
    e = error(frame(terminated=[True, False, True, False, False, False, True]))
    assert (e.column, e.row) == ("terminated", 0)
    assert "fires before the episode's last step" in str(e)
    e = error(frame(truncated=[False, False, True, False, True, False, False]))
    assert (e.column, e.row) == ("truncated", 2)
    assert "terminated and truncated both fire on one step" in str(e)


def test_steps_must_increase_within_an_episode():
    e = error(frame(t=[0, 2, 1, 0, 1, 0, 1]))
    assert (e.column, e.row) == ("t", 2)
    assert "steps should increase within an episode; 1 follows 2" in str(e)


def test_a_stream_without_episode_keys_ends_episodes_at_its_flags():
    stream = FrameSpec(name="stream", terminated="terminated", truncated="truncated")
    stream.validate(frame())
    e = error(frame(terminated=[False] * 7, truncated=[False] * 7), stream)
    assert (e.column, e.row) == ("terminated", 6) and "the last row ends no episode" in str(e)


def test_spec_arguments_are_checked_naming_the_field():
    with pytest.raises(ParameterError, match=r"`StateColumn\('obs'\).dtype` should be one of 'bool'"):
        StateColumn("obs", 2, "float16")
    with pytest.raises(ParameterError, match=r"`StateColumn\('obs'\).width` should be a positive int or None"):
        StateColumn("obs", 0, "float32")
    with pytest.raises(ParameterError, match=r"`FrameSpec` should name each column once; 't' appears twice"):
        FrameSpec(name="dup", episode=("e",), step="t", columns=("t",))
    with pytest.raises(ParameterError, match=r"`FrameSpec.episode` should be a column name"):
        FrameSpec(name="bad", episode=("",))


def test_json_round_trip_and_unknown_fields():
    for spec in (SPEC, KANACHAN_SPEC, REWARDS_ONLY):
        assert FrameSpec.from_json(spec.to_json()) == spec
    with pytest.raises(ParameterError, match=r"has unknown fields colour \(written by a newer rewardlab\?\)"):
        FrameSpec.from_dict({**SPEC.to_dict(), "colour": "red"})
    with pytest.raises(ParameterError, match="should be JSON written by FrameSpec.to_json"):
        FrameSpec.from_json("{not json")


def test_the_kanachan_spec_describes_the_sample(sample_frame):
    KANACHAN_SPEC.validate(sample_frame)
    assert spec_of(sample_frame) == KANACHAN_SPEC


def test_episode_end_expression_matches_a_loop():
    f = frame()
    got = f.select(SPEC.episode_end())["_episode_end"].to_list()
    episodes = f["episode"].to_list()
    expected = [i == len(episodes) - 1 or episodes[i] != episodes[i + 1] for i in range(len(episodes))]
    assert got == expected


def test_frames_carry_their_spec_weakly():
    f = attach(frame(), SPEC)
    assert attached(f) is SPEC and attached(frame()) is None
    assert attached(keep_spec(f, f.with_columns(x=1))) is SPEC
    assert attached(f.with_columns(x=1)) is None  # a derived frame is a new object
    lazy = attach(f.lazy(), SPEC)
    assert attached(lazy) is SPEC
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is None  # the record does not keep the frame alive


def test_projection_keeps_what_the_data_has():
    projected = SPEC.project(["episode", "t", "terminated", "reward_a"])
    assert projected.truncated is None and projected.states == () and projected.columns == ()
    with pytest.raises(SpecError, match="column 'episode': the steps spec's episode column is missing"):
        SPEC.project(["t", "reward_a"])
    assert projected.episode == ("episode",)


def test_spec_time_column_is_required_projected_and_stored():
    spec = FrameSpec(name="timed", episode=("e",), time="wall")
    assert spec.required == ("e", "wall") and FrameSpec.from_json(spec.to_json()) == spec
    assert spec.project(["e"]).time is None and spec.project(["e", "wall"]).time == "wall"
    with pytest.raises(ParameterError, match="should name each column once; 'e' appears twice"):
        FrameSpec(name="timed", episode=("e",), time="e")
