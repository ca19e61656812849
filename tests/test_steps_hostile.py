"""Hostile step tables (issue 22, "Nothing bad gets through"): each defect found by fuzzing, then the fuzz.

Every outcome of a step-table load is a clean frame (valid for its spec, writable, and a TensorDict
for the steps contract) or a rewardlab error naming the file and its line or row group; in skip mode
every kept episode is one of the input's, whole, and the side file holds the skipped lines byte for
byte.
"""

from __future__ import annotations

import csv
import io
import json
import random
import textwrap
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.contracts.steps import StepsArrays
from rewardlab.core.errors import RewardlabError, SkippedLinesWarning, SpecError, StepTableError
from rewardlab.core.spec import FrameSpec, StateColumn, attach, attached
from rewardlab.sources.steps import read_steps
from rewardlab.sources.steps.files import read_file
from rewardlab.sources.storage import write_dataset


def skip(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedLinesWarning)
        return read_steps(path, on_error="skip", **options)


def jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def steps(episodes: int = 4, length: int = 3, width: int = 2) -> list[dict]:
    """``episodes`` episodes of ``length`` steps, lists of ``width`` observations, terminated."""
    return [{"episode_id": e, "t": t, "obs": [float(e), float(t)][:width] + [0.5] * (width - 2),
             "reward": 1.0, "terminated": t == length - 1} for e in range(episodes) for t in range(length)]


# ----------------------------------------------------------------------------
# A ragged list in the first row
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_a_ragged_list_in_the_first_row_is_the_row_at_fault(tmp_path, kind):
    rows = steps()
    rows[0]["obs"] = [9.0, 9.0, 9.0]
    path = tmp_path / f"a.{kind}"
    if kind == "jsonl":
        jsonl(path, rows)
    elif kind == "csv":
        path.write_text("episode_id,t,obs,reward,terminated\n" + "".join(
            f'{r["episode_id"]},{r["t"]},"{r["obs"]}",{r["reward"]},{str(r["terminated"]).lower()}\n'
            for r in rows))
    else:
        pl.DataFrame(rows).write_parquet(path, row_group_size=3)
    place = f"{path}: row group 0 (row 0)" if kind == "parquet" else f"{path}:{2 if kind == 'csv' else 1}"
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path)
    assert str(info.value).startswith(f"{place}: column 'obs': the list has 3 values; the column's lists "
                                      "mostly have 2 [rule: ragged_list]")
    result = skip(path, **({"skipped_path": tmp_path / f"side.{kind}"} if kind != "parquet" else {}))
    assert result.frame["episode_id"].unique().sort().to_list() == [1, 2, 3]  # only episode 0 goes
    assert result.frame["obs"].to_list() == [r["obs"] for r in rows[3:]]
    assert result.skip_counts == {"ragged_list": 1, "in_broken_episode": 2}
    if kind == "jsonl":
        assert (tmp_path / "side.jsonl").read_text() == "".join(json.dumps(r) + "\n" for r in rows[:3])


def test_a_ragged_list_elsewhere_still_names_its_own_row(tmp_path):
    rows = steps()
    rows[7]["obs"] = [1.0]
    jsonl(tmp_path / "a.jsonl", rows)
    with pytest.raises(StepTableError, match=r"a\.jsonl:8: column 'obs': the list has 1 values; the column's "
                       r"lists mostly have 2 \[rule: ragged_list\]"):
        rewardlab.load(tmp_path / "a.jsonl")


# ----------------------------------------------------------------------------
# Duplicate CSV header names
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["episode_id,t,t,reward,terminated", "episode_id,t,t,t_duplicated_0,terminated"])
def test_a_csv_header_naming_a_column_twice_is_refused(tmp_path, header):
    path = tmp_path / "a.csv"
    path.write_text(header + "\n0,0,0,1.0,false\n0,1,1,1.0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:1: column 't': the header names the column twice "
                       r"\[rule: duplicate_column\] Give each column its own name\."):
        rewardlab.load(path)
    with pytest.raises(StepTableError, match=r"a\.csv:1: column 't': .*\[rule: duplicate_column\]"):
        skip(path)
    spec = FrameSpec(name="mine", episode=("episode_id",), step="t", terminated="terminated")
    with pytest.raises(StepTableError, match=r"a\.csv:1: column 't': .*\[rule: duplicate_column\]"):
        rewardlab.load(path, format="steps", spec=spec)


# ----------------------------------------------------------------------------
# Integers beyond Int64
# ----------------------------------------------------------------------------

BIG = 99999999999999999999999


def test_an_integer_beyond_int64_names_file_line_and_column(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(f"episode_id,t,reward,terminated\n0,0,1.0,false\n0,{BIG},1.0,true\n")
    with pytest.raises(StepTableError, match=rf"a\.csv:3: column 't': {BIG} is beyond the 64-bit integer range "
                       r"\(-2\*\*63 to 2\*\*63 - 1\) \[rule: integer_out_of_range\]"):
        rewardlab.load(path)
    path.write_text(f"episode_id,t,reward,terminated\n0,0,1.0,true\n{BIG},0,1.0,false\n{BIG},1,1.0,true\n"
                    "2,0,1.0,true\n3,0,1.0,true\n")
    with pytest.raises(StepTableError, match=rf"a\.csv:3: column 'episode_id': {BIG} is beyond the 64-bit "
                       r"integer range"):
        rewardlab.load(path)
    result = skip(path)  # the rows around a key that cannot be read go with it (they may be its episode)
    assert result.frame["episode_id"].to_list() == [3]
    assert result.frame.schema["episode_id"] == pl.Int64
    assert result.skipped["reason"].to_list() == ["in_broken_episode", "integer_out_of_range",
                                                  "integer_out_of_range", "in_broken_episode"]
    (tmp_path / "b.jsonl").write_text(f'{{"episode_id": 0, "t": 0, "action": {BIG}, "terminated": true}}\n')
    with pytest.raises(StepTableError, match=rf"b\.jsonl:1: column 'action': {BIG} is beyond"):
        rewardlab.load(tmp_path / "b.jsonl")
    spec = FrameSpec(name="mine", episode=("episode_id",), step="t", terminated="terminated")
    with pytest.raises(StepTableError, match=rf"a\.csv:3: column 'episode_id': {BIG} is beyond"):
        rewardlab.load(path, format="steps", spec=spec)


def test_wide_integers_that_fit_load_as_int64_and_convert(tmp_path):
    frame = pl.DataFrame({"episode_id": pl.Series([0, 0, 1], dtype=pl.Int128), "t": [0, 1, 0],
                          "action": pl.Series([2 ** 62, -(2 ** 63), 1], dtype=pl.Int128),
                          "terminated": [False, True, True]})
    frame.write_parquet(tmp_path / "a.parquet")
    loaded = rewardlab.load(tmp_path / "a.parquet", format="steps")
    assert loaded.schema["episode_id"] == pl.Int64 and loaded.schema["action"] == pl.Int64
    assert loaded["action"].to_list() == [2 ** 62, -(2 ** 63), 1]
    assert main(["convert", str(tmp_path / "a.parquet"), "--format", "steps", "--out",
                 str(tmp_path / "b.parquet")]) == 0


@pytest.mark.parametrize("command", ["info", "convert", "apply", "check-plugin"])
def test_the_cli_names_the_line_of_an_integer_beyond_int64(tmp_path, capsys, command):
    path = tmp_path / "a.csv"
    path.write_text(f"episode_id,t,reward,terminated\n{BIG},0,1.0,false\n{BIG},1,1.0,true\n")
    (tmp_path / "p.py").write_text(PLUGIN)
    out = str(tmp_path / "out.parquet")
    argv = {"info": ["info", str(path)], "convert": ["convert", str(path), "--out", out],
            "apply": ["apply", str(path), "--plugin", str(tmp_path / "p.py"), "--out", out],
            "check-plugin": ["check-plugin", str(tmp_path / "p.py"), "--data", str(path)]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: column 'episode_id': {BIG} is beyond the 64-bit integer range" in err
    assert "Traceback" not in err


PLUGIN = textwrap.dedent('''
    def get_reward(data, contiguous):
        data["next", "reward"] = data["reward_recorded"].clone()
''')


# ----------------------------------------------------------------------------
# Reserved names: next
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_a_column_named_next_is_refused_when_the_table_is_read(tmp_path, kind):
    rows = [{"episode_id": 0, "t": t, "next": t + 1, "reward": 1.0, "terminated": t == 1} for t in range(2)]
    path = tmp_path / f"a.{kind}"
    if kind == "jsonl":
        jsonl(path, rows)
    else:
        frame = pl.DataFrame(rows)
        frame.write_csv(path) if kind == "csv" else frame.write_parquet(path)
    where = f"{path}:1" if kind == "csv" else str(path)
    message = (rf"{where}: column 'next': the name 'next' is reserved: the steps contract's TensorDict holds the "
               r"next states, the flags and the reward under data\[\"next\"\] .* \[rule: reserved_column\] "
               r"Rename the column \(for example to next_value\) and load again\.")
    with pytest.raises(StepTableError, match=message):
        rewardlab.load(path)
    with pytest.raises(StepTableError, match=message):
        skip(path)


@pytest.mark.parametrize("command", ["apply", "check-plugin"])
def test_apply_and_check_plugin_refuse_a_column_named_next(tmp_path, capsys, command):
    path = tmp_path / "a.csv"
    path.write_text("episode_id,t,next,reward,terminated\n0,0,1,1.0,false\n0,1,2,1.0,true\n")
    (tmp_path / "p.py").write_text(PLUGIN)
    argv = (["apply", str(path), "--plugin", str(tmp_path / "p.py"), "--out", str(tmp_path / "o.parquet")]
            if command == "apply" else ["check-plugin", str(tmp_path / "p.py"), "--data", str(path)])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: column 'next': the name 'next' is reserved" in err and "KeyError" not in err


@pytest.mark.parametrize("name, state", [("next", False), ("next", True), ("done", True), ("reward", True),
                                         ("truncated", True)])
def test_the_steps_contract_refuses_reserved_names_in_a_declared_spec(tmp_path, name, state):
    frame = pl.DataFrame({"ep": [0, 0], name: [1.0, 2.0], "term": [False, True]})
    spec = FrameSpec(name="mine", episode=("ep",), terminated="term", contract="steps",
                     states=(StateColumn(name, None, "float64", 0.0),) if state else (),
                     columns=() if state else (name,))
    key = r'data\["next"\]' if name == "next" else rf'data\["next", "{name}"\]'
    with pytest.raises(SpecError, match=rf"column '{name}': the name '{name}' is reserved by the steps contract: "
                       rf"the plug-in's TensorDict has its own {key} .* Rename the column"):
        StepsArrays(frame, spec)
    path = tmp_path / "p.py"
    path.write_text(PLUGIN.replace('data["reward_recorded"].clone()', 'data["next", "done"].double()'))
    with pytest.raises(SpecError, match=rf"column '{name}': the name '{name}' is reserved"):
        rewardlab.apply_plugins(attach(frame, spec), path, isolate=False, progress=False)


def test_a_text_extra_named_like_a_flag_is_not_refused():
    frame = pl.DataFrame({"ep": [0, 0], "done": ["a", "b"], "obs": [1.0, 2.0], "term": [False, True]})
    spec = FrameSpec(name="mine", episode=("ep",), terminated="term", columns=("done",),
                     states=(StateColumn("obs", None, "float64", 0.0),))
    assert StepsArrays(frame, spec).tensordict()["next", "obs"].tolist() == [2.0, 0.0]


# ----------------------------------------------------------------------------
# JSON lines Polars cannot read: the line and the key
# ----------------------------------------------------------------------------

GOOD = '{"episode_id": 0, "t": 0, "obs": [1.0, 2.0], "reward": 1.0, "terminated": false}\n'


@pytest.mark.parametrize("value, column, text", [
    ("NaN", "reward", r"NaN is not a JSON number \(JSON has no NaN or Infinity\); write null, or a finite number"),
    ("-Infinity", "reward", r"-Infinity is not a JSON number"),
    ("1e400", "reward", r"1e400 is beyond the float64 range"),
    ("[1.0, NaN]", "obs", r"NaN is not a JSON number"),
    ("1" + "0" * 45, "reward", r"10{39}\S* is beyond the range of an integer Polars reads \(128 bits\)"),
])
def test_json_lines_polars_cannot_read_name_the_line_and_key(tmp_path, value, column, text):
    path = tmp_path / "a.jsonl"
    line = GOOD.replace('"t": 0', '"t": 1').replace("false", "true")
    line = line.replace('"reward": 1.0', f'"reward": {value}') if column == "reward" else line.replace(
        '"obs": [1.0, 2.0]', f'"obs": {value}')
    path.write_text(GOOD + "\n" + line)
    with pytest.raises(StepTableError, match=rf"a\.jsonl:3: column '{column}': {text}.* \[rule: bad_json\]"):
        rewardlab.load(path)
    with pytest.raises(StepTableError, match=r"a\.jsonl:3: .*\[rule: bad_json\]"):
        skip(path)


def test_other_json_lines_polars_cannot_read_name_the_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text(GOOD + GOOD.replace('"reward": 1.0', '"reward": 1.0, "action": 1') + GOOD.replace(
        '"reward": 1.0', '"reward": 1.0, "action": true'))
    with pytest.raises(StepTableError, match=r"a\.jsonl:3: column 'action': the value is a JSON boolean here and a "
                       r"number on line 2; a column holds one kind of value \[rule: mixed_json_types\]"):
        rewardlab.load(path)
    path.write_text(GOOD + GOOD.replace('"obs": [1.0, 2.0]', '"obs": {"x": 1.0}'))
    with pytest.raises(StepTableError, match=r"a\.jsonl:2: column 'obs': the value is a JSON object here and a "
                       r"list on line 1; .*\[rule: mixed_json_types\]"):
        rewardlab.load(path)
    path.write_bytes(GOOD.encode() + b'{"episode_id": 0, "t": "\xff"}\n')
    with pytest.raises(StepTableError, match=r"a\.jsonl:2: byte b'\\xff' is not UTF-8 text \[rule: not_utf8\]"):
        rewardlab.load(path)
    path.write_text(GOOD + '{"episode_id": 0, "obs": ' + "[" * 3000 + "]" * 3000 + "}\n")
    with pytest.raises(StepTableError, match=r"a\.jsonl:2: .*\[rule: (bad_json|unreadable)\]"):
        rewardlab.load(path)
    path.write_text("\n  \n")
    with pytest.raises(StepTableError, match=r"a\.jsonl: the file holds no JSON line \[rule: empty_file\]"):
        rewardlab.load(path)


# ----------------------------------------------------------------------------
# Interleaved episodes: contiguity first
# ----------------------------------------------------------------------------


def test_interleaved_episodes_are_reported_where_an_episode_comes_back(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode_id,t,reward,terminated\n0,0,1.0,false\n1,0,1.0,false\n0,1,1.0,true\n1,1,1.0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:4: column 'episode_id': episode 0 comes back after another "
                       r"episode; an episode's rows should be consecutive \[rule: episode_not_contiguous\]"):
        rewardlab.load(path)
    with pytest.raises(StepTableError, match=r"a\.csv:4: .*episode_not_contiguous"):
        rewardlab.load(path, unfinished="truncate")
    path.write_text("episode_id,t,reward_recorded,done_recorded,terminated\n0,0,1.0,false,false\n"
                    "1,0,1.0,true,true\n0,1,1.0,true,true\n")  # done_recorded is right: the order is wrong
    with pytest.raises(StepTableError, match=r"a\.csv:4: .*episode_not_contiguous"):
        rewardlab.load(path)
    result = skip(path)
    assert result.frame["episode_id"].to_list() == [1]
    assert result.skip_counts == {"episode_not_contiguous": 1, "in_broken_episode": 1}


# ----------------------------------------------------------------------------
# The same class elsewhere: a first value does not decide a column; CSV lines Polars cannot read
# ----------------------------------------------------------------------------


def test_a_bad_first_value_of_a_state_column_is_the_value_at_fault(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode_id,t,obs_x,action,reward,terminated\n0,0,oops,1,1.0,false\n0,1,0.5,1,1.0,true\n"
                    "1,0,0.25,x,1.0,false\n1,1,0.75,0,1.0,true\n2,0,0.125,1,1.0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:2: column 'obs_x': 'oops' is not a number "
                       r"\[rule: not_numeric\]"):
        rewardlab.load(path)
    result = skip(path)
    assert attached(result.frame).state_names == ("obs_x",)
    assert result.frame["obs_x"].to_list() == [0.125] and result.frame["action"].to_list() == [1.0]
    path.write_text('episode_id,t,obs,terminated\n0,0,oops,false\n0,1,"[1, 2]",true\n1,0,"[3, 4]",true\n')
    result = skip(path)
    assert result.frame["obs"].to_list() == [[3.0, 4.0]] and result.skip_counts["not_numeric"] == 1


def test_csv_lines_polars_cannot_read_name_the_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode_id,t,terminated\n0,0,false\n0,1,true,extra\n1,0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: the line has 4 fields; the header has 3 "
                       r"\[rule: too_many_fields\]"):
        rewardlab.load(path)
    path.write_bytes(b"episode_id,t,terminated\n0,0,false\n0,1,tr\xffue\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: byte b'\\xff' is not UTF-8 text \[rule: not_utf8\]"):
        rewardlab.load(path)
    path.write_text("")
    with pytest.raises(StepTableError, match=r"a\.csv: the file is empty.*\[rule: empty_file\]"):
        rewardlab.load(path)


def test_a_value_polars_cannot_type_leaves_the_other_columns_typed(tmp_path):
    path = tmp_path / "a.csv"  # a full-width digit: Polars' inference takes it for a number, then fails
    path.write_text("episode_id,t,action,terminated\n0,0,1,false\n0,\uff19,2,true\n1,0,3,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: column 't': '\uff19' is not a number"):
        rewardlab.load(path)
    result = skip(path)
    assert result.frame.schema["episode_id"] == pl.Int64 and result.frame.schema["action"] == pl.Int64
    assert result.frame["episode_id"].to_list() == [1]


def test_steps_far_apart_are_compared_without_overflow(tmp_path):
    frame = pl.DataFrame({"episode_id": [0, 0, 0], "t": [0, 2, -(2 ** 63)], "terminated": [False, False, True]})
    frame.write_parquet(tmp_path / "a.parquet")
    with pytest.raises(StepTableError, match=r"row group 0 \(row 2\): column 't': step -9\.22337e\+18 follows "
                       r"step 2 in episode 0; steps should increase within an episode \[rule: step_order\]"):
        rewardlab.load(tmp_path / "a.parquet", format="steps")


def test_a_final_row_of_another_width_costs_only_its_episode(tmp_path):
    rows = []
    for e in range(3):
        rows += [{"episode_id": e, "t": 0, "obs": [1.0, 2.0, 3.0], "reward": 1.0, "terminated": True, "final": False},
                 {"episode_id": e, "t": None, "obs": [4.0, 5.0] if e == 0 else [4.0, 5.0, 6.0], "reward": None,
                  "terminated": None, "final": True}]
    jsonl(tmp_path / "a.jsonl", rows)
    with pytest.raises(StepTableError, match=r"a\.jsonl:2: column 'obs': the value is a list of 2 values; the state "
                       r"'obs' holds a list of 3 values \[rule: final_state_shape\]"):
        rewardlab.load(tmp_path / "a.jsonl")
    result = skip(tmp_path / "a.jsonl")
    assert result.frame["episode_id"].to_list() == [1, 2]
    assert result.frame["final_obs"].to_list() == [[4.0, 5.0, 6.0]] * 2


def test_the_steps_contract_hands_decimal_and_wide_integer_extras_as_numpy_types():
    frame = pl.DataFrame({"ep": [0, 0], "price": pl.Series([1.5, 2.25]).cast(pl.Decimal(10, 2)),
                          "count": pl.Series([1, 2], dtype=pl.Int128), "term": [False, True]})
    spec = FrameSpec(name="mine", episode=("ep",), terminated="term", columns=("price", "count"), contract="steps")
    td = StepsArrays(frame, spec).tensordict()
    assert td["price"].tolist() == [1.5, 2.25] and td["count"].tolist() == [1, 2]
    wide = frame.with_columns(pl.Series("count", [1, 2 ** 70], dtype=pl.Int128))
    with pytest.raises(SpecError, match=r"column 'count', row 1: the value 1180591620717411303424 does not fit Int64"):
        StepsArrays(wide, spec)


def test_a_broken_parquet_row_group_is_named(tmp_path):
    path = tmp_path / "a.parquet"
    pl.DataFrame(steps(8)).write_parquet(path, row_group_size=6, compression="uncompressed")
    data = bytearray(path.read_bytes())
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata.row_group(2).column(0)
    start = meta.data_page_offset
    data[start:start + 12] = b"\xff" * 12  # the page header of row group 2's first column
    path.write_bytes(bytes(data))
    with pytest.raises(StepTableError, match=r"a\.parquet: row group 2 \(row 12\): Polars cannot read it: "):
        rewardlab.load(path)


# ----------------------------------------------------------------------------
# The fuzz: mutations of valid CSV, JSON-lines and Parquet step tables
# ----------------------------------------------------------------------------

KINDS = ("csv", "jsonl", "parquet")
LAYOUTS = ("plain", "final", "next")
WIDTH = 3

#: Rules a whole file breaks (no one row at fault): these errors name the file (and a CSV header's line 1).
FILE_RULES = {"missing_column", "columns_differ", "mixed_dtypes", "empty_file", "reserved_column", "duplicate_column",
              "unmatched_lines", "file_kind", "bad_column_name"}

#: Cell values for CSV (text as written) and JSON (JSON text as written).
CSV_CELLS = ["", " ", "nan", "NaN", "inf", "-inf", "1e400", "-1e400", "99999999999999999999999", "-1", "0", "1", "2",
             "0.5", "-0.0", "abc", "true", "false", "TRUE", "null", '"[1, 2]"', '"[1, 2, 3]"', '"[1, 2, 3, 4]"',
             '"[1, x, 3]"', '"[]"', '"[1, , 3]"', '"', '""', "1,2", "\t1", "1e5", "0x10", "９", "é", "1_0"]
JSON_CELLS = ["null", "NaN", "Infinity", "-Infinity", "1e400", "99999999999999999999999", str(2 ** 63),
              "-1", "0", "1", "2", "0.5", "-0.0", '"abc"', '"1"', '"[1, 2, 3]"', "true", "false", "[]", "[1, 2]",
              "[1, 2, 3]", "[1, 2, 3, 4]", "[1, null, 3]", '[1, "x", 3]', "[[1], [2], [3]]", "{}", '{"a": 1}',
              "1" + "0" * 45, '"\\ud800"', '"é"', "1E2", "[1e400, 1, 1]"]


def make_rows(rng: random.Random, layout: str) -> list[dict]:
    """A valid step table's rows in file order (final rows of the N+1 layout after their episodes)."""
    rows = []
    for e in range(rng.randint(3, 7)):
        length = rng.randint(1, 4)
        obs = [[round(rng.uniform(-2, 2), 3) for _ in range(WIDTH)] for _ in range(length + 1)]
        ends = rng.choice(["terminated", "truncated"])
        for t in range(length):
            last = t == length - 1
            row = {"episode_id": e, "t": t, "obs": obs[t], "action": rng.randint(0, 3),
                   "reward": round(rng.uniform(-1, 1), 3), "terminated": last and ends == "terminated",
                   "truncated": last and ends == "truncated"}
            if layout == "next":
                row["next_obs"] = obs[t + 1] if not last or rng.random() < 0.7 else None
            if layout == "final":
                row["final"] = False
            rows.append(row)
        if layout == "final" and rng.random() < 0.7:
            rows.append({"episode_id": e, "t": None, "obs": obs[length], "action": None, "reward": None,
                         "terminated": None, "truncated": None, "final": True})
    return rows


def _csv_cell(value, split: bool) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value] if split else ['"[' + ", ".join(map(str, value)) + ']"']
    if value is None:
        return [""]
    return [str(value).lower() if isinstance(value, bool) else str(value)]


def write_table(rng: random.Random, path, rows: list[dict], kind: str) -> list[bytes]:
    """Write ``rows``; return the text file's records (header first for CSV), or [] for Parquet."""
    names = list(rows[0])
    if kind == "parquet":
        schema = {n: (pl.List(pl.Float64) if n in ("obs", "next_obs") else pl.Boolean if n in (
            "terminated", "truncated", "final") else pl.Float64 if n == "reward" else pl.Int64) for n in names}
        pl.DataFrame(rows, schema=schema).write_parquet(path, row_group_size=rng.randint(1, 8))
        return []
    if kind == "jsonl":
        records = [json.dumps(r).encode() for r in rows]
    else:
        split = rng.random() < 0.5
        header = []
        for n in names:
            header += [f"{n}_{i}" for i in range(WIDTH)] if split and n in ("obs", "next_obs") else [n]
        records = [",".join(header).encode()] + [",".join(c for n in names for c in _csv_cell(r[n], split)).encode()
                                                 for r in rows]
    path.write_bytes(b"".join(r + b"\n" for r in records))
    return records


def _csv_fields(record: bytes) -> list[str]:
    return next(csv.reader(io.StringIO(record.decode("utf-8", "replace"))), [])


def mutate_text(rng: random.Random, records: list[bytes], kind: str) -> tuple[bytes, str]:
    """One mutation of a text table: (the new bytes, the kind of mutation; ``local:N`` for one changed cell
    of record N outside the episode column, every other record unchanged)."""
    records = list(records)
    first = 1 if kind == "csv" else 0
    i = rng.randrange(first, len(records))
    op = rng.randrange(12)
    if op <= 3:  # one cell
        if kind == "csv":
            header, fields = _csv_fields(records[0]), _csv_fields(records[i])
            j = rng.randrange(len(fields))
            cell = rng.choice(CSV_CELLS)
            fields = [f if '"' not in f and "," not in f else '"' + f + '"' for f in fields]
            fields[j] = cell
            records[i] = ",".join(fields).encode()
            local = header[j] != "episode_id" and '"' not in cell.strip('"') and "," not in cell.strip('"')
        else:
            row = json.loads(records[i])
            key = rng.choice(list(row))
            token = "@@CELL@@"
            row[key] = token
            records[i] = json.dumps(row).replace(f'"{token}"', rng.choice(JSON_CELLS)).encode()
            local = key != "episode_id"
        tag = f"local:{i}" if local else "cell"
    elif op == 4 and kind == "csv":  # a field too many or too few
        fields = _csv_fields(records[i])
        records[i] = (records[i] + b",1") if rng.random() < 0.5 or len(fields) < 2 else records[i].rsplit(b",", 1)[0]
        tag = "fields"
    elif op == 4:  # a key dropped or added
        row = json.loads(records[i])
        if rng.random() < 0.5 and row:
            del row[rng.choice(list(row))]
        else:
            key = rng.choice(["next", "extra", "obs_extra", "final_obs", "new_obs", ""])
            row[key] = rng.choice([1, [1, 2, 3], None])
        records[i] = json.dumps(row).encode()
        tag = "keys"
    elif op == 5:  # a record duplicated, dropped or moved
        record = records.pop(i)
        choice = rng.randrange(3)
        if choice == 0:
            records.insert(i, record)
            records.insert(i, record)
        elif choice == 1:
            records.insert(rng.randrange(first, len(records) + 1), record)
        tag = "records"
    elif op == 6:  # the header or every line's keys
        if kind == "csv":
            header = _csv_fields(records[0])
            j = rng.randrange(len(header))
            header[j] = rng.choice([rng.choice(header), "next", "", "final", "reward_recorded", "done_recorded", "é",
                                    "obs_9", "episode", "step", '"'])
            records[0] = ",".join(header).encode()
        else:
            old = rng.choice(list(json.loads(records[first])))
            new = rng.choice(["next", "final", "reward_recorded", "episode", "obs_2", "step"])
            records = [r.replace(f'"{old}":'.encode(), f'"{new}":'.encode()) for r in records]
        tag = "header"
    elif op == 7:  # a blank or whitespace line
        records.insert(rng.randrange(first, len(records) + 1), rng.choice([b"", b"  ", b"\r", b"\t"]))
        tag = "blank"
    else:  # bytes: truncated, inserted, replaced
        data = b"".join(r + b"\n" for r in records)
        at = rng.randrange(len(data) + 1)
        choice = rng.randrange(3)
        if choice == 0:
            data = data[:at]
        else:
            noise = bytes(rng.choice(b'\x00\xff\xc3"\n\r,{}[]: 0123456789.-eE\\') for _ in range(rng.randint(1, 4)))
            data = data[:at] + noise + data[at + (len(noise) if choice == 2 else 0):]
        return data, "bytes"
    return b"".join(r + b"\n" for r in records), tag


def mutate_parquet(rng: random.Random, rows: list[dict], path) -> str:
    """Write a mutated Parquet table at ``path``; return the kind of mutation (``local:N`` as for text)."""
    frame = pl.DataFrame(rows, schema={n: (pl.List(pl.Float64) if n in ("obs", "next_obs") else pl.Boolean if n in (
        "terminated", "truncated", "final") else pl.Float64 if n == "reward" else pl.Int64) for n in rows[0]})
    i = rng.randrange(frame.height)
    name = rng.choice(frame.columns)
    op = rng.randrange(10)
    tag = "cell"
    if op <= 3:  # one cell: null, NaN, another value, a ragged or broken list
        value = frame[name].to_list()
        dtype = frame.schema[name]
        if isinstance(dtype, pl.List):
            value[i] = rng.choice([None, [], [1.0], [1.0, 2.0, 3.0, 4.0], [1.0, None, 2.0], [float("nan")] * WIDTH,
                                   [float("inf")] * WIDTH])
        elif dtype == pl.Float64:
            value[i] = rng.choice([None, float("nan"), float("inf"), -1e308, 0.0])
        elif dtype == pl.Boolean:
            value[i] = rng.choice([None, True, False])
        else:
            value[i] = rng.choice([None, -1, 0, 2 ** 62, -(2 ** 63), 7])
        frame = frame.with_columns(pl.Series(name, value, dtype=dtype))
        tag = f"local:{i}" if name != "episode_id" else "cell"
    elif op == 4:  # a column of another type
        dtype = rng.choice([pl.String, pl.Int128, pl.Float32, pl.Int8, pl.UInt64, pl.Decimal(20, 3), pl.Null,
                            pl.Categorical, pl.Boolean, pl.Date, pl.Binary, pl.List(pl.String),
                            pl.Array(pl.Float64, 1)])
        try:
            frame = frame.with_columns(frame[name].cast(dtype, strict=False))
        except pl.exceptions.PolarsError:
            frame = frame.with_columns(pl.lit(None, dtype=dtype).alias(name))
        tag = "type"
    elif op == 5:  # a huge integer that fits Int128
        frame = frame.with_columns(pl.Series(name, [2 ** 70 if r == i else (v if isinstance(v, int) else 0)
                                                    for r, v in enumerate(frame[name].to_list())], dtype=pl.Int128))
        tag = "type"
    elif op == 6:  # a column renamed, dropped or added
        choice = rng.randrange(3)
        new = rng.choice(["next", "final", "episode", "obs_2", "reward_recorded", "é", name + "_", "a\x00b"])
        if choice == 0 and new not in frame.columns:
            frame = frame.rename({name: new})
        elif choice == 1:
            frame = frame.drop(name)
        else:
            frame = frame.with_columns(pl.lit(1).alias(rng.choice(["next", "extra", "obs_extra", "final_obs"])))
        tag = "header"
    elif op == 7:  # rows out of order
        order = list(range(frame.height))
        j = rng.randrange(frame.height)
        order[i], order[j] = order[j], order[i]
        frame = frame[order]
        tag = "records"
    if op <= 7:
        frame.write_parquet(path, row_group_size=rng.randint(1, 8), statistics=rng.random() < 0.5)
        return tag
    frame.write_parquet(path, row_group_size=rng.randint(1, 8))  # bytes: truncated or overwritten
    data = bytearray(path.read_bytes())
    at = rng.randrange(len(data))
    if op == 8:
        data = data[:at]
    else:
        for k in range(rng.randint(1, 8)):
            data[(at + k) % len(data)] = rng.randrange(256)
    path.write_bytes(bytes(data))
    return "bytes"


def check_frame(frame: pl.DataFrame, folder) -> None:
    """A loaded frame is valid for its spec, writable as a dataset, and a TensorDict of the steps contract."""
    spec = attached(frame)
    spec.validate(frame)
    write_dataset(frame, folder / "written.parquet", spec=spec)
    arrays = StepsArrays(frame, spec)
    if frame.height:
        td = arrays.tensordict()
        assert td.batch_size[0] == frame.height


def check_error(exc: BaseException, path, kind: str) -> str:
    """A load's error: a rewardlab error naming the file, and the line (text) or row group (Parquet) of a row
    at fault; returns its rule."""
    assert isinstance(exc, RewardlabError), repr(exc)
    if not isinstance(exc, StepTableError):
        return type(exc).__name__
    assert str(path) in str(exc), str(exc)
    if exc.rule not in FILE_RULES and not (kind == "parquet" and exc.rule == "unreadable"):
        if kind == "parquet":
            assert exc.row is not None, str(exc)
        else:
            assert exc.line is not None, str(exc)
    return exc.rule


def same_values(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """Equal columns and values, numbers compared as Float64 (a CSV column's type follows what it holds)."""
    if a.height != b.height:
        return False
    for one, other in ((a, b), (b, a)):  # a column only one has is empty (its values were all in skipped rows)
        if any(one[c].null_count() != one.height for c in one.columns if c not in other.columns):
            return False
    for name in [c for c in a.columns if c in b.columns]:
        x, y = a[name], b[name]
        if x.dtype != y.dtype:  # a text column beside a number column: a kept text key is still text
            target = pl.String if pl.String in (x.dtype, y.dtype) else pl.List(pl.Float64) if isinstance(
                x.dtype, (pl.Array, pl.List)) else pl.Float64
            try:
                x, y = x.cast(target), y.cast(target)
            except pl.exceptions.PolarsError:
                return False
        if not x.equals(y, check_names=False, check_dtypes=False):
            return False
    return True


def fuzz_steps(seed: int, iterations: int, folder) -> dict:
    """Load ``iterations`` mutated tables in both modes and check every outcome; returns the outcomes' counts."""
    rng = random.Random(seed)
    outcomes: dict = {}

    def count(*key):
        outcomes[key] = outcomes.get(key, 0) + 1

    for n in range(iterations):
        kind, layout = KINDS[n % 3], LAYOUTS[(n // 3) % 3]
        rows = make_rows(rng, layout)
        path, side = folder / f"t.{kind}", folder / f"side.{kind}"
        records = write_table(rng, folder / f"orig.{kind}", rows, kind)
        original = read_steps(folder / f"orig.{kind}").frame
        if kind == "parquet":
            tag = mutate_parquet(rng, rows, path)
        else:
            data, tag = mutate_text(rng, records, kind)
            path.write_bytes(data)
        raised = None
        try:
            loaded = read_steps(path)
        except Exception as exc:  # noqa: BLE001 - checked: a rewardlab error naming the place
            raised = exc
            count(kind, "rule", check_error(exc, path, kind))
        else:
            check_frame(loaded.frame, folder)
        side.unlink(missing_ok=True)
        try:
            result = skip(path, skipped_path=side)
        except Exception as exc:  # noqa: BLE001
            rule = check_error(exc, path, kind)  # only what no row can be skipped for
            assert rule in FILE_RULES or rule in ("unreadable", "bad_json", "mixed_json_types", "not_utf8",
                                                  "too_many_fields", "ParameterError"), (tag, str(exc))
            count(kind, "error")
            continue
        count(kind, "skip" if result.skipped.height else "clean")
        assert (raised is None) == (result.skipped.height == 0), (tag, raised)
        if isinstance(raised, StepTableError):  # the row raise mode names is one skip mode skips
            places = result.skipped["row" if kind == "parquet" else "line"].to_list()
            assert (raised.row if kind == "parquet" else raised.line) in places, (tag, str(raised))
        check_frame(result.frame, folder)
        check_skipped(result, path, side, kind, tag, folder, original, rows)
    return outcomes


def text_records(data: bytes, kind: str) -> list[bytes]:
    """A text file's records as an editor shows them: its lines, but for a line break inside a CSV's quoted
    field; a CSV's header first; JSON lines' blank lines left out (Polars skips them)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    records, open_quote = [], False
    for line in lines:
        if open_quote:
            records[-1] += b"\n" + line
        else:
            records.append(line)
        open_quote ^= kind == "csv" and line.count(b'"') % 2 == 1
    return records if kind == "csv" else [r for r in records if r.strip()]


def check_skipped(result, path, side, kind: str, tag: str, folder, original, rows) -> None:
    """Skip mode: whole runs of an episode's rows kept or skipped, the side file byte for byte, the kept rows
    loading alone to the same frame, and a one-cell mutation costing no other episode."""
    raw = pl.read_parquet(path) if kind == "parquet" else read_file(path).frame  # the rows as read
    skipped = np.sort(result.skipped["row"].to_numpy().astype(np.int64))
    gone = np.zeros(raw.height, dtype=bool)
    gone[skipped] = True
    if "episode_id" in raw.columns:  # an episode's run of rows is kept or skipped whole
        key = raw["episode_id"]
        run_id = np.cumsum((key != key.shift(1)).fill_null(True).to_numpy() | key.is_null().to_numpy())
        for r in np.unique(run_id[gone]):
            assert gone[run_id == r].all(), (tag, r)
    if kind == "parquet":
        if skipped.size:
            assert pl.read_parquet(side).equals(raw[skipped.tolist()])
        alone = folder / "alone.parquet"
        raw.filter(pl.Series(~gone)).write_parquet(alone)
    else:
        data = path.read_bytes()
        lines = data.split(b"\n")
        raws = result.skipped["raw"].to_list()
        for line, got in zip(result.skipped["line"].to_list(), raws):  # the file's bytes, from their line on
            rest = b"\n".join(lines[line - 1:])
            assert rest == got or rest.startswith(got + b"\n"), (tag, line)
        records = text_records(data, kind)
        header = records[:1] if kind == "csv" else []
        body = records[len(header):]
        assert len(body) == raw.height, tag
        if skipped.size:
            assert side.read_bytes() == b"".join(r + b"\n" for r in header + raws)
            assert raws == [body[r] for r in skipped.tolist()], tag
        alone = folder / f"alone.{kind}"
        alone.write_bytes(b"".join(r + b"\n" for r in header + [r for r, g in zip(body, gone) if not g]))
    if not gone.all():  # the kept rows alone load cleanly, to the same frame
        assert same_values(read_steps(alone).frame, result.frame), tag
    if tag.startswith("local:") and "episode_id" in raw.columns:  # one changed cell: its episode at most goes
        changed = int(tag.split(":")[1]) - (1 if kind == "csv" else 0)
        others = {r["episode_id"] for r in rows} - {rows[changed]["episode_id"]}
        kept = result.frame["episode_id"]
        assert others <= set(kept.to_list()), (tag, result.skip_counts)
        for e in others:  # and they are the original episodes
            assert same_values(result.frame.filter(kept == e), original.filter(original["episode_id"] == e)), tag


def test_fuzzed_step_tables_load_cleanly_or_name_the_place(tmp_path):
    outcomes = fuzz_steps(2207, 90, tmp_path)
    for kind in KINDS:  # the generator reaches every outcome for every kind
        assert {(kind, "error"), (kind, "skip"), (kind, "clean")} <= set(outcomes), outcomes


@pytest.mark.long_fuzz
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzzed_step_tables_long_run(seed, tmp_path):
    fuzz_steps(seed, 1500, tmp_path)
