"""Error messages of the core layer: frame -> TensorDict, datasets, ranks, argument checks."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.sources.kanachan import schema as S
from rewardlab.core import columns
from rewardlab.contracts.kanachan.batching import FrameArrays
from rewardlab.dataset import write_dataset
from rewardlab.core.errors import ColumnNotFoundError, DataFormatError, FrameError, ParameterError, check_int
from lines import game_lines, gid, write


def test_frame_cut_mid_episode_is_refused(small_frame):
    with pytest.raises(FrameError, match="the frame's last row is not the end of a game.*select rows "
                       "with `rows=`"):
        FrameArrays(small_frame.head(3))


def test_rows_out_of_range_and_of_the_wrong_type(small_frame):
    arrays = FrameArrays(small_frame)
    n = small_frame.height
    with pytest.raises(ParameterError, match=rf"`rows` should be positions in \[0, {n}\)\. Received "
                       rf"'min 0, max {n}'"):
        arrays.tensordict(np.array([0, n]))
    with pytest.raises(ParameterError, match="`rows` should be a 1-D integer array or a slice"):
        arrays.tensordict(np.array([0.5, 1.5]))


def test_missing_column_and_wrong_array_width(small_frame):
    with pytest.raises(ColumnNotFoundError, match="column 'action' not found; available: game_id"):
        FrameArrays(small_frame.drop(S.ACTION))
    narrow = small_frame.with_columns(pl.col(S.SPARSE).arr.slice(0, 28).list.to_array(28))
    with pytest.raises(FrameError, match=r"column 'sparse' should be Array\(_, 29\), found Array\(Int16"):
        FrameArrays(narrow)


def test_null_values_are_refused(small_frame):
    holes = small_frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(None).otherwise(pl.col(S.ACTION)).alias(S.ACTION))
    with pytest.raises(FrameError, match="column 'action' has 1 null values"):
        FrameArrays(holes)


def test_datasets_of_two_kinds_and_unknown_kind(tmp_path, small_frame):
    write_dataset(small_frame, tmp_path / "a.parquet")
    write_dataset(small_frame, tmp_path / "b.arrow", kind="ipc")
    with pytest.raises(ParameterError, match=r"`paths` should be datasets of one kind \(all Parquet or "
                       r"all Arrow\)"):
        rewardlab.scan_kanachan([tmp_path / "a.parquet", tmp_path / "b.arrow"])
    with pytest.raises(ParameterError, match="`kind` should be 'parquet' or 'ipc'. Received 'csv'."):
        write_dataset(small_frame, tmp_path / "c.csv", kind="csv")


def test_a_parquet_file_that_is_not_a_dataset(tmp_path):
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "other.parquet")
    with pytest.raises(DataFormatError, match="the Parquet file lacks columns.*--format steps --option episode=COLUMN"):
        rewardlab.scan_kanachan(tmp_path / "other.parquet")


def test_recordings_of_different_environments_name_what_differs():
    with pytest.raises(DataFormatError, match=r"spec \(gymnasium\) differs from that of .*cartpole_random.parquet "
                       r"\(gymnasium\) in states.*different environments are different datasets"):
        rewardlab.load(["data/gym/cartpole_random.parquet", "data/gym/mountaincar_scripted.parquet"])


def test_mixing_text_files_and_datasets(tmp_path, small_frame):
    text = write(tmp_path / "g.tsv", game_lines(gid(1)))
    write_dataset(small_frame, tmp_path / "d.parquet")
    with pytest.raises(ParameterError, match="`paths` should be all annotation files or all Parquet"):
        rewardlab.read_kanachan([text, tmp_path / "d.parquet"])
    with pytest.raises(ParameterError, match="`paths` should name at least one file. Received"):
        rewardlab.read_kanachan([])
    with pytest.raises(ParameterError, match="`skipped_path` is only used with on_error='skip'"):
        rewardlab.read_kanachan(text, skipped_path=tmp_path / "side.txt")


def test_ranks_validate_shapes_and_seats():
    with pytest.raises(ParameterError, match=r"`scores` should have shape \[N, 4\]. Received \(2, 3\)."):
        rewardlab.ranks_from_scores(np.zeros((2, 3)), np.zeros(2, dtype=int))
    with pytest.raises(ParameterError, match=r"`seat` should be in \[0, 3\]. Received 4."):
        rewardlab.ranks_from_scores(np.zeros((1, 4)), np.array([4]))


def test_reward_names_are_identifiers():
    with pytest.raises(ParameterError, match=r"`name` should match \[A-Za-z_\]\[A-Za-z0-9_\]\*"):
        columns.reward_column("top; import os")


# --- check_int: the one integer-argument check -------------------------------------------------


@pytest.mark.parametrize("value", [7, np.int8(7), np.int64(7), np.uint32(7)])
def test_check_int_accepts_python_and_numpy_integers(value):
    out = check_int("k", value, low=1, high=10)
    assert out == 7 and type(out) is int


@pytest.mark.parametrize("value", [True, False, np.True_, np.bool_(False), 2.0, np.float64(3.0), 2.5, "3",
                                   None, [1]])
def test_check_int_refuses_bools_and_non_integers_echoing_the_value(value):
    with pytest.raises(ParameterError) as err:
        check_int("k", value)
    assert str(err.value) == f"`k` should be an integer. Received {value!r}."
    assert err.value.name == "k" and err.value.value is value


def test_check_int_bounds_messages_echo_the_value_as_given():
    with pytest.raises(ParameterError) as err:
        check_int("seed", np.int64(-1), low=0)
    assert str(err.value) == f"`seed` should be >= 0. Received {np.int64(-1)!r}."
    with pytest.raises(ParameterError, match=r"^`rank` should be <= 3\. Received 4\.$"):
        check_int("rank", 4, low=0, high=3)
    assert check_int("rank", 0, low=0, high=3) == 0 and check_int("rank", 3, low=0, high=3) == 3


def test_check_int_rule_replaces_every_message():
    rule = "should be an integer 0-3 (0 = first place)"
    for bad in (-1, 4, True, 1.0, "0"):
        with pytest.raises(ParameterError) as err:
            check_int("rank", bad, low=0, high=3, rule=rule)
        assert str(err.value) == f"`rank` {rule}. Received {bad!r}."


def test_check_int_integral_floats_only_when_asked():
    assert check_int("divisor", 100.0, low=1, integral_float=True) == 100
    assert type(check_int("divisor", np.float32(4.0), integral_float=True)) is int
    for bad in (2.5, float("nan"), float("inf"), True):
        with pytest.raises(ParameterError, match=r"`divisor` should be an integer\. Received "):
            check_int("divisor", bad, integral_float=True)
    with pytest.raises(ParameterError, match=r"`divisor` should be >= 1\. Received 0\.0\."):
        check_int("divisor", 0.0, low=1, integral_float=True)
