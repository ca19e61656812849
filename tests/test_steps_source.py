"""The generic step-table source (format "steps"): roles, options, detection, errors, skip mode, the contract."""

from __future__ import annotations

import json
import textwrap
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.core.errors import ParameterError, SkippedLinesWarning, StepTableError, OutputExistsError
from rewardlab.core.spec import StateColumn, attached
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.sources.registry import detect_source
from rewardlab.sources.steps import RECORDED, RECORDED_DONE, read_steps

OPTIONS = ("episode, step, agent, terminated, truncated, done, reward, time, final, unfinished, on_error, "
           "skipped_path, overwrite")


def episodes(n: int = 4, seed: int = 0) -> list[dict]:
    """Rows of ``n`` episodes (Gymnasium's default column names), ending terminated or truncated in turn."""
    rng = np.random.default_rng(seed)
    rows = []
    for e in range(n):
        length = int(rng.integers(2, 6))
        for t in range(length):
            last = t == length - 1
            rows.append({"episode_id": e, "t": t, "obs": [round(float(x), 3) for x in rng.random(3)],
                         "action": int(rng.integers(0, 2)), "reward": round(float(rng.random()), 3),
                         "terminated": last and e % 2 == 0, "truncated": last and e % 2 == 1})
    return rows


def write_jsonl(path, rows, *, crlf: bool = False) -> bytes:
    end = "\r\n" if crlf else "\n"
    data = "".join(json.dumps(r) + end for r in rows).encode()
    path.write_bytes(data)
    return data


def write_csv(path, rows) -> bytes:
    """Rows with the observation as three scalar columns ``obs_0..obs_2``."""
    lines = ["episode_id,t,obs_0,obs_1,obs_2,action,reward,terminated,truncated"]
    for r in rows:
        lines.append(",".join(map(str, [r["episode_id"], r["t"], *r["obs"], r["action"], r["reward"],
                                         str(r["terminated"]).lower(), str(r["truncated"]).lower()])))
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def frame_of(rows) -> pl.DataFrame:
    return pl.DataFrame(rows).with_columns(pl.col("obs").list.to_array(3))


# ----------------------------------------------------------------------------
# Roles, spec, the recorded reward
# ----------------------------------------------------------------------------


def test_a_jsonl_table_loads_with_detected_roles_and_the_recorded_reward(tmp_path):
    rows = episodes()
    write_jsonl(tmp_path / "steps.jsonl", rows)
    frame = rewardlab.load(tmp_path / "steps.jsonl")
    spec = attached(frame)
    assert (spec.name, spec.contract, spec.episode, spec.step) == ("steps", "steps", ("episode_id",), "t")
    assert (spec.terminated, spec.truncated) == ("terminated", "truncated")
    assert spec.states == (StateColumn("obs", 3, "float64", 0),)
    assert spec.columns == ("action", RECORDED)
    assert frame[RECORDED].to_list() == [r["reward"] for r in rows]
    ends = [r["terminated"] or r["truncated"] for r in rows]
    assert frame[RECORDED_DONE].to_list() == ends
    assert frame["obs"].to_list() == [r["obs"] for r in rows]


def test_a_table_in_the_recorded_layout_reads_back_as_itself(tmp_path):
    rows = episodes(6, seed=3)
    write_jsonl(tmp_path / "steps.jsonl", rows)
    frame = rewardlab.load(tmp_path / "steps.jsonl")
    pl.DataFrame(frame).write_parquet(tmp_path / "plain.parquet")  # no rewardlab metadata
    again = rewardlab.load(tmp_path / "plain.parquet")
    assert again.equals(frame) and again.schema == frame.schema
    assert attached(again) == attached(frame)
    # without done_recorded it is added; an integer reward_recorded becomes Float64
    pl.DataFrame(frame).drop(RECORDED_DONE).with_columns(pl.col(RECORDED).round().cast(pl.Int64)).write_parquet(
        tmp_path / "no_done.parquet")
    added = rewardlab.load(tmp_path / "no_done.parquet")
    assert added.columns == frame.columns and added.schema[RECORDED] == pl.Float64
    assert added[RECORDED_DONE].to_list() == frame[RECORDED_DONE].to_list()
    # reward=False keeps the table as it is, both columns plain extras
    kept = rewardlab.load(tmp_path / "plain.parquet", format="steps", reward=False)
    assert attached(kept).columns == ("action", RECORDED, RECORDED_DONE)
    # a reward column beside reward_recorded still cannot be renamed onto it
    pl.DataFrame(frame).with_columns(reward=pl.col(RECORDED)).write_parquet(tmp_path / "both.parquet")
    with pytest.raises(ParameterError, match="`reward` cannot be kept as reward_recorded: the table already has"):
        rewardlab.load(tmp_path / "both.parquet")


def test_a_done_recorded_off_the_episode_ends_names_the_row_and_is_skipped_whole(tmp_path):
    rows = episodes(4, seed=5)
    write_jsonl(tmp_path / "steps.jsonl", rows)
    frame = pl.DataFrame(rewardlab.load(tmp_path / "steps.jsonl"))
    first_end = frame[RECORDED_DONE].arg_max()
    bad = frame.with_columns(pl.when(pl.int_range(pl.len()) == first_end).then(False)
                             .otherwise(pl.col(RECORDED_DONE)).alias(RECORDED_DONE))
    lines = [json.dumps(r) for r in bad.with_columns(pl.col("obs").arr.to_list()).to_dicts()]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(StepTableError, match=rf"bad.jsonl:{first_end + 1}: column 'done_recorded': done_recorded "
                       r"is False on step \d+ of episode '?0'?; it should be True exactly on an episode's last "
                       r"step \[rule: done_recorded_mismatch\]"):
        rewardlab.load(path)
    with pytest.warns(SkippedLinesWarning, match="done_recorded_mismatch: 1"):
        result = read_steps(path, on_error="skip")
    assert result.frame["episode_id"].unique().sort().to_list() == [1, 2, 3]
    episode_0 = [line.encode() for line in lines[:first_end + 1]]
    assert result.skipped["raw"].to_list() == episode_0  # the whole episode, line by line as written


def test_csv_and_parquet_give_the_same_table(tmp_path):
    rows = episodes()
    write_csv(tmp_path / "steps.csv", rows)
    frame_of(rows).write_parquet(tmp_path / "steps.parquet")
    csv = rewardlab.load(tmp_path / "steps.csv")
    parquet = rewardlab.load(tmp_path / "steps.parquet")
    assert attached(csv).state_names == ("obs_0", "obs_1", "obs_2")  # obs* names are states
    assert attached(parquet).state_names == ("obs",)
    np.testing.assert_array_equal(np.stack(parquet["obs"].to_numpy()),
                                  csv.select("obs_0", "obs_1", "obs_2").to_numpy())
    for column in (RECORDED, RECORDED_DONE, "terminated", "truncated", "action"):
        assert csv[column].to_list() == parquet[column].to_list()


def test_a_done_flag_alone_is_terminated_and_beside_truncated_is_terminated_unless_truncated(tmp_path):
    path = tmp_path / "done.csv"
    path.write_text("eps_id,step,state,rewards,done\n0,0,1.5,1,false\n0,1,2.5,1,true\n")
    frame = rewardlab.load(path)
    spec = attached(frame)
    assert (spec.episode, spec.step, spec.terminated, spec.truncated) == (("eps_id",), "step", "done", None)
    assert spec.state_names == ("state",)
    path.write_text("eps_id,step,state,done,truncated\n0,0,1.5,false,false\n0,1,2.5,true,false\n"
                    "1,0,1.0,true,true\n")
    frame = rewardlab.load(path)
    spec = attached(frame)
    assert (spec.terminated, spec.truncated) == ("terminated", "truncated")
    assert frame["terminated"].to_list() == [False, True, False]
    assert frame["truncated"].to_list() == [False, False, True]


def test_time_and_agent_roles(tmp_path):
    path = tmp_path / "ma.csv"
    path.write_text("episode,agent_id,t,timestamp,obs,terminated\n0,0,0,0.0,1,false\n0,0,1,0.1,2,true\n"
                    "0,1,0,0.0,3,false\n0,1,1,0.1,4,true\n")
    spec = attached(rewardlab.load(path))
    assert (spec.episode, spec.agent, spec.time) == (("episode", "agent_id"), "agent_id", "timestamp")


# ----------------------------------------------------------------------------
# Options as keywords, detection
# ----------------------------------------------------------------------------


def test_options_are_keywords_of_load_scan_and_convert(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("ep,k,x,r,end\n0,0,1.0,0.5,0\n0,1,2.0,0.25,1\n")
    frame = rewardlab.load(path, format="steps", episode="ep", step="k", reward="r", terminated="end")
    spec = attached(frame)
    assert (spec.episode, spec.step, spec.terminated) == (("ep",), "k", "end")
    assert frame[RECORDED].to_list() == [0.5, 0.25] and frame["end"].to_list() == [False, True]
    same = rewardlab.load(path, episode="ep", options={"step": "k", "reward": "r", "terminated": "end"})
    assert same.equals(frame)
    assert rewardlab.scan(path, episode="ep", step="k", terminated="end").collect().height == 2
    rewardlab.convert(path, tmp_path / "mine.parquet", episode="ep", step="k", reward="r", terminated="end")
    again = rewardlab.load(tmp_path / "mine.parquet")
    assert attached(again) == spec and again.equals(frame)
    with pytest.raises(ParameterError, match=r"`options` should name only options of the 'steps' format "
                       rf"\({OPTIONS}\); 'episod' is not one"):
        rewardlab.load(path, episod="ep")
    with pytest.raises(ParameterError, match=r"`episode` should be given once, as a keyword or in options=, "
                       r"not both"):
        rewardlab.load(path, episode="ep", options={"episode": "ep"})
    with pytest.raises(ParameterError, match=r"`options` should name only options of the 'kanachan' format"):
        rewardlab.load("data/sample.tsv.gz", episode="ep")
    with pytest.raises(ParameterError, match=r"`episode` should name a column of the table \(ep, k, x, r, end\)"
                       r"\. Received 'episode_nr'"):
        rewardlab.load(path, episode="episode_nr")


def test_detection_claims_text_tables_and_plain_parquet_with_default_names_only(tmp_path):
    rows = episodes()
    write_csv(tmp_path / "a.csv", rows)
    write_jsonl(tmp_path / "a.jsonl", rows)
    write_jsonl(tmp_path / "a.ndjson", rows)
    frame_of(rows).write_parquet(tmp_path / "a.parquet")
    for name in ("a.csv", "a.jsonl", "a.ndjson", "a.parquet"):
        assert detect_source(tmp_path / name).name == "steps", name
    # a converted steps table is a dataset (its spec in the metadata) and reopens with its spec
    rewardlab.convert(tmp_path / "a.parquet", tmp_path / "converted.parquet")
    assert detect_source(tmp_path / "converted.parquet").name == "dataset"
    assert attached(rewardlab.load(tmp_path / "converted.parquet")) == attached(rewardlab.load(tmp_path / "a.parquet"))
    # a plain Parquet file of other columns (a kanachan frame written by Polars) stays with "dataset"
    kanachan = rewardlab.load("data/sample.tsv.gz", progress=False).head(200)
    kanachan.write_parquet(tmp_path / "kanachan.parquet")
    assert detect_source(tmp_path / "kanachan.parquet").name == "dataset"
    assert detect_source("data/sample.tsv.gz").name == "kanachan"


def test_info_reports_the_roles(tmp_path, capsys):
    path = tmp_path / "a.csv"
    path.write_text("ep,t,obs_x,action,r,done,truncated,timestamp\n0,0,0.5,1,1.0,false,false,0.0\n"
                    "0,1,0.25,0,0.0,true,false,0.5\n")
    assert main(["info", str(path), "--option", "episode=ep", "--option", "reward=r"]) == 0
    out = capsys.readouterr().out
    assert "episodes                1" in out
    for line in ("  episode    ep", "  step       t", "  truncated  truncated",
                 "  done       done (read as terminated, except where truncated)",
                 "  reward     r -> reward_recorded", "  time       timestamp", "  states     obs_x",
                 "  extras     action"):
        assert line in out.splitlines(), line
    assert main(["info", str(path), "--json", "--option", "episode=ep"]) == 0
    roles = json.loads(capsys.readouterr().out)["roles"]
    assert roles["states"] == ["obs_x"] and roles["extras"] == ["action", "r"]
    assert main(["info", str(path)]) == 2
    assert "no episode column" in capsys.readouterr().err


def test_info_counts_the_agents_and_trials_of_a_joint_table(tmp_path, capsys):
    rows = [(e, t, a) for e in (3, 7) for t in range(4) for a in (0, 1, 5)]  # 2 trials x 3 agents x 4 steps
    pl.DataFrame({"episode_id": [r[0] for r in rows], "t": [r[1] for r in rows], "agent_id": [r[2] for r in rows],
                  "action": [1] * len(rows), "terminated": [r[1] == 3 for r in rows],
                  "truncated": [False] * len(rows)}).write_parquet(tmp_path / "joint.parquet")
    assert main(["info", str(tmp_path / "joint.parquet")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "episodes                6" in out
    assert any(line.startswith("agents                  3  (agent_id, over 2 trials:") for line in out), out
    assert main(["info", str(tmp_path / "joint.parquet"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents"] == {"column": "agent_id", "agents": 3, "trials": 2}
    pl.DataFrame({"episode_id": [0, 0], "t": [0, 1], "x": [0.5, 1.0], "terminated": [False, True]}).write_parquet(
        tmp_path / "one.parquet")
    assert main(["info", str(tmp_path / "one.parquet")]) == 0
    assert not any(line.startswith("agents") for line in capsys.readouterr().out.splitlines())


# ----------------------------------------------------------------------------
# Bad input: each error names file, line or row group, column
# ----------------------------------------------------------------------------


def test_missing_episode_or_step_lists_the_columns_and_the_options(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("ep,t,x,terminated\n0,0,1,true\n")
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path)
    assert str(info.value) == (
        f"{path}: no episode column: none of episode_id, eps_id, episode is in the table (columns: ep, t, x, "
        "terminated) [rule: missing_column] Name it with episode='COLUMN' (the format's options: "
        f"{OPTIONS}).")
    path.write_text("episode,tick,x,terminated\n0,0,1,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv: no step column: none of t, step is in the table "
                       r"\(columns: episode, tick, x, terminated\) \[rule: missing_column\] Name it with step="):
        rewardlab.load(path)


def test_steps_out_of_order_or_repeated_name_the_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,terminated\n0,0,false\n0,2,false\n0,1,true\n")
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path)
    assert str(info.value).startswith(f"{path}:4: column 't': step 1 follows step 2 in episode 0; steps should "
                                      "increase within an episode [rule: step_order]")
    path.write_text("episode,t,terminated\n7,0,false\n7,0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: column 't': step 0 is repeated in episode 7 "
                       r"\[rule: step_repeated\]"):
        rewardlab.load(path)


def test_an_unfinished_episode_is_reported_and_loads_as_truncated_when_asked(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"episode": 0, "t": 0, "terminated": false}\n{"episode": 0, "t": 1, "terminated": true}\n'
                    '\n{"episode": 1, "t": 0, "terminated": false}\n')
    with pytest.raises(StepTableError) as info:
        rewardlab.load(path)
    assert str(info.value) == (
        f"{path}:4: column 'terminated': episode 1 ends at step 0 with neither terminated set "
        "[rule: unfinished_episode] Set terminated (the episode ended) or truncated (it was cut short) on its "
        "last step, or load with unfinished='truncate' to load such episodes as truncated.")
    frame = rewardlab.load(path, unfinished="truncate")
    spec = attached(frame)
    assert spec.truncated == "truncated" and frame["truncated"].to_list() == [False, False, True]
    with pytest.raises(ParameterError, match=r"`unfinished` should be one of 'error', 'truncate'"):
        rewardlab.load(path, unfinished="drop")


def test_ragged_observation_lists_name_the_line_and_column(tmp_path):
    rows = episodes()
    rows[5]["obs"] = [0.5, 0.5]
    write_jsonl(tmp_path / "a.jsonl", rows)
    with pytest.raises(StepTableError) as info:
        rewardlab.load(tmp_path / "a.jsonl")
    assert str(info.value).startswith(f"{tmp_path / 'a.jsonl'}:6: column 'obs': the list has 2 values; the "
                                      "column's lists mostly have 3 [rule: ragged_list]")


def test_a_ragged_list_in_parquet_names_the_row_group(tmp_path):
    rows = episodes(30)
    rows[-1]["obs"] = [1.0]
    pl.DataFrame(rows).write_parquet(tmp_path / "a.parquet", row_group_size=20)
    with pytest.raises(StepTableError) as info:
        rewardlab.load(tmp_path / "a.parquet")
    n = len(rows)
    assert str(info.value).startswith(f"{tmp_path / 'a.parquet'}: row group {(n - 1) // 20} (row {n - 1}): "
                                      "column 'obs': the list has 1 values; the column's lists mostly have 3 "
                                      "[rule: ragged_list]")


def test_mixed_dtypes_across_files_name_the_file_and_column(tmp_path):
    rows = episodes()
    frame_of(rows[:7]).write_parquet(tmp_path / "a.parquet")
    frame_of(rows[7:]).with_columns(pl.col("action").cast(pl.Float32)).write_parquet(tmp_path / "b.parquet")
    with pytest.raises(StepTableError) as info:
        rewardlab.load([tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert str(info.value).startswith(f"{tmp_path / 'b.parquet'}: column 'action': the column is Float32 here "
                                      f"and Int64 in {tmp_path / 'a.parquet'} [rule: mixed_dtypes]")
    frame_of(rows[7:]).drop("action").write_parquet(tmp_path / "c.parquet")
    with pytest.raises(StepTableError, match=r"c\.parquet: column 'action': its columns differ from .*a\.parquet's: "
                       r"missing action \[rule: columns_differ\]"):
        rewardlab.load([tmp_path / "a.parquet", tmp_path / "c.parquet"])
    # text files infer types: an integer column in one and a float one in another are floats
    (tmp_path / "x.csv").write_text("episode,t,reward,terminated\n0,0,1,true\n")
    (tmp_path / "y.csv").write_text("episode,t,reward,terminated\n1,0,0.5,true\n")
    assert rewardlab.load([tmp_path / "x.csv", tmp_path / "y.csv"])[RECORDED].to_list() == [1.0, 0.5]


def test_non_numeric_observation_values_name_the_line_and_column(tmp_path):
    rows = episodes(60)
    data = write_csv(tmp_path / "a.csv", rows).decode().splitlines()
    fields = data[250 // 4].split(",")  # past Polars' type inference of the first rows too
    line = 250 // 4 + 1
    fields[3] = "n/a"
    data[line - 1] = ",".join(fields)
    (tmp_path / "a.csv").write_text("\n".join(data) + "\n")
    with pytest.raises(StepTableError) as info:
        rewardlab.load(tmp_path / "a.csv")
    assert str(info.value).startswith(f"{tmp_path / 'a.csv'}:{line}: column 'obs_1': 'n/a' is not a number "
                                      "[rule: not_numeric]")
    rows = episodes()
    rows[2]["obs"] = [0.1, "high", 0.3]
    write_jsonl(tmp_path / "b.jsonl", rows)
    with pytest.raises(StepTableError, match=r"b\.jsonl:3: column 'obs': 'high' in the list is not a number "
                       r"\[rule: not_numeric\]"):
        rewardlab.load(tmp_path / "b.jsonl")


def test_other_rules_name_line_and_column(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,terminated,truncated\n0,0,maybe,false\n0,1,true,false\n")
    with pytest.raises(StepTableError, match=r"a\.csv:2: column 'terminated': 'maybe' is not a flag "
                       r"\(true/false or 1/0\) \[rule: bad_flag\]"):
        rewardlab.load(path)
    path.write_text("episode,t,terminated,truncated\n0,0,false,false\n0,1,true,false\n1,0,true,false\n"
                    "0,2,true,false\n")
    with pytest.raises(StepTableError, match=r"a\.csv:5: column 'episode': episode 0 comes back after another "
                       r"episode; an episode's rows should be consecutive \[rule: episode_not_contiguous\]"):
        rewardlab.load(path)
    path.write_text("episode,t,terminated,truncated\n0,0,true,false\n0,1,true,false\n")
    with pytest.raises(StepTableError, match=r"a\.csv:2: column 'terminated': terminated is set on step 0 of "
                       r"episode 0, which is not its last step \[rule: flag_mid_episode\]"):
        rewardlab.load(path)
    path.write_text("episode,t,terminated,truncated\n0,0,true,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:2: column 'truncated': terminated and truncated are both "
                       r"set on step 0 of episode 0; an episode ends one way \[rule: both_flags\]"):
        rewardlab.load(path)
    path.write_text("episode,t,terminated\n0,0,false\n,1,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: column 'episode': the episode value is missing \(null\) "
                       r"\[rule: missing_value\]"):
        rewardlab.load(path)
    (tmp_path / "b.jsonl").write_text('{"episode": 0, "t": 0}\n{"episode": 0, "t": 1\n')
    with pytest.raises(StepTableError, match=r"b\.jsonl:2: the line is not JSON .* \[rule: bad_json\]"):
        rewardlab.load(tmp_path / "b.jsonl")
    with pytest.raises(StepTableError, match=r"notes\.txt: a step table is a \.parquet, \.csv, \.jsonl or "
                       r"\.ndjson file \[rule: file_kind\]"):
        (tmp_path / "notes.txt").write_text("episode,t\n")
        rewardlab.load(tmp_path / "notes.txt", format="steps")


# ----------------------------------------------------------------------------
# Skip mode: whole episodes, counted, kept byte for byte
# ----------------------------------------------------------------------------


def _break(rows):
    """Break episodes 1 (a ragged list) and 3 (a repeated step); return the broken episode ids."""
    for r in rows:
        if r["episode_id"] == 1 and r["t"] == 1:
            r["obs"] = [1.0]
        if r["episode_id"] == 3 and r["t"] == 1:
            r["t"] = 0
    return {1, 3}


def test_skip_mode_keeps_jsonl_lines_byte_for_byte(tmp_path):
    rows = episodes(6)
    broken = _break(rows)
    data = write_jsonl(tmp_path / "a.jsonl", rows, crlf=True)
    side = tmp_path / "skipped.jsonl"
    with pytest.warns(SkippedLinesWarning, match=r"skipped 2 episodes, \d+ of \d+ rows \(in_broken_episode: "):
        result = read_steps(tmp_path / "a.jsonl", on_error="skip", skipped_path=side)
    lines = data.split(b"\n")[:-1]
    expected = [line for line, r in zip(lines, rows) if r["episode_id"] in broken]
    assert side.read_bytes() == b"".join(line + b"\n" for line in expected)
    assert result.skipped["raw"].to_list() == expected
    assert set(result.frame["episode_id"].to_list()) == {r["episode_id"] for r in rows} - broken
    assert result.skip_counts["ragged_list"] == 1 and result.skip_counts["step_repeated"] == 1
    assert sum(result.skip_counts.values()) == len(expected)
    assert result.skipped.filter(pl.col("reason") == "ragged_list")["column"].to_list() == ["obs"]
    kept = [r for r in rows if r["episode_id"] not in broken]
    assert result.frame[RECORDED].to_list() == [r["reward"] for r in kept]
    # the side file exists now: refused unless overwrite
    with pytest.raises(OutputExistsError):
        read_steps(tmp_path / "a.jsonl", on_error="skip", skipped_path=side)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedLinesWarning)
        read_steps(tmp_path / "a.jsonl", on_error="skip", skipped_path=side, overwrite=True)
        frame = rewardlab.load(tmp_path / "a.jsonl", on_error="skip", skipped_path=tmp_path / "s2.jsonl")
    assert frame.equals(result.frame)
    with pytest.raises(ParameterError, match=r"`skipped_path` is required with on_error='skip'"):
        rewardlab.load(tmp_path / "a.jsonl", on_error="skip")


def test_skip_mode_keeps_csv_lines_after_the_header(tmp_path):
    rows = episodes(6)
    data = write_csv(tmp_path / "a.csv", rows)
    lines = data.split(b"\n")[:-1]
    bad = next(i for i, r in enumerate(rows) if r["episode_id"] == 2 and r["t"] == 1)
    lines[bad + 1] = lines[bad + 1].replace(b",", b",oops", 1).replace(b"oops", b"", 1)  # unchanged text
    fields = lines[bad + 1].split(b",")
    fields[2] = b"seven"
    lines[bad + 1] = b",".join(fields)
    (tmp_path / "a.csv").write_bytes(b"\n".join(lines) + b"\n")
    side = tmp_path / "skipped.csv"
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(tmp_path / "a.csv", on_error="skip", skipped_path=side)
    expected = [lines[i + 1] for i, r in enumerate(rows) if r["episode_id"] == 2]
    assert side.read_bytes() == b"\n".join([lines[0], *expected]) + b"\n"
    assert result.skip_counts == {"in_broken_episode": len(expected) - 1, "not_numeric": 1}
    row = result.skipped.filter(pl.col("reason") == "not_numeric").row(0, named=True)
    assert (row["line"], row["column"], row["message"]) == (bad + 2, "obs_0", "'seven' is not a number")
    assert 2 not in result.frame["episode_id"].to_list() and result.frame.height == len(rows) - len(expected)
    assert attached(result.frame).state_names == ("obs_0", "obs_1", "obs_2")


def test_skip_mode_writes_parquet_rows_of_whole_episodes(tmp_path):
    rows = episodes(6)
    broken = _break(rows)
    pl.DataFrame(rows).write_parquet(tmp_path / "a.parquet")
    side = tmp_path / "skipped.parquet"
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(tmp_path / "a.parquet", on_error="skip", skipped_path=side)
    original = pl.read_parquet(tmp_path / "a.parquet")
    assert pl.read_parquet(side).equals(original.filter(pl.col("episode_id").is_in(list(broken))))
    assert result.skipped["row_group"].to_list() == [0] * result.skipped.height
    assert result.skipped["line"].null_count() == result.skipped.height
    assert result.frame.height + result.skipped.height == len(rows)


# ----------------------------------------------------------------------------
# The steps contract on a loaded table
# ----------------------------------------------------------------------------

PROGRESS = '''
import torch

def get_reward(data, contiguous):
    moved = (data["next", "obs"] - data["obs"]).sum(-1)
    data["next", "reward"] = torch.where(data["next", "done"], torch.zeros(()), moved.double())
'''

RECORDED_PLUGIN = '''
def get_reward(data, contiguous):
    data["next", "reward"] = data["reward_recorded"].clone()
'''


def test_plugins_run_on_a_loaded_step_table(tmp_path):
    rows = episodes(8)
    write_jsonl(tmp_path / "a.jsonl", rows)
    frame = rewardlab.load(tmp_path / "a.jsonl")
    (tmp_path / "progress.py").write_text(textwrap.dedent(PROGRESS))
    (tmp_path / "recorded_copy.py").write_text(textwrap.dedent(RECORDED_PLUGIN))
    out = rewardlab.apply_plugins(frame, [tmp_path / "progress.py", tmp_path / "recorded_copy.py"],
                                  isolate=False, progress=False)
    expected = []
    for i, r in enumerate(rows):
        ended = r["terminated"] or r["truncated"]
        expected.append(0.0 if ended else sum(rows[i + 1]["obs"]) - sum(r["obs"]))
    np.testing.assert_allclose(out["reward_progress"].to_numpy(), expected, rtol=1e-12, atol=1e-12)
    assert out["reward_recorded_copy"].to_list() == out[RECORDED].to_list()
    for mode in BATCH_MODES:  # the same rewards in every batch mode
        again = rewardlab.apply_plugins(frame, tmp_path / "progress.py", batch_mode=mode, isolate=False,
                                        progress=False)
        np.testing.assert_array_equal(again["reward_progress"].to_numpy(), out["reward_progress"].to_numpy())
    report = rewardlab.check_plugin(frame, tmp_path / "progress.py", progress=False)
    assert report.ok, str(report)
    table = rewardlab.compare_rewards(out, ["recorded", "recorded_copy"])
    assert table.pearson[0, 1] == pytest.approx(1.0)


# ----------------------------------------------------------------------------
# More roles and options
# ----------------------------------------------------------------------------


def test_csv_list_cells_become_arrays_and_reward_false_keeps_the_column(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text('episode,t,obs,reward,terminated\n0,0,"[0.5, 1.5]",1,false\n0,1,"[2.5, 3.5]",0,true\n')
    frame = rewardlab.load(path, reward=False)
    spec = attached(frame)
    assert spec.states == (StateColumn("obs", 2, "float64", 0),)
    assert frame["obs"].to_list() == [[0.5, 1.5], [2.5, 3.5]]
    assert spec.columns == ("reward",) and RECORDED not in frame.columns


def test_unfinished_truncate_sets_an_existing_truncated_column(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,done,truncated\n0,0,false,false\n0,1,true,false\n1,0,false,false\n"
                    "1,1,false,false\n")
    with pytest.raises(StepTableError, match=r"a\.csv:5: column 'done': episode 1 ends at step 1 with neither "
                       r"done nor truncated set \[rule: unfinished_episode\]"):
        rewardlab.load(path)
    frame = rewardlab.load(path, unfinished="truncate")
    assert frame["truncated"].to_list() == [False, False, False, True]
    assert frame["terminated"].to_list() == [False, True, False, False]


def test_skip_mode_drops_the_episodes_beside_a_row_without_episode(tmp_path):
    path = tmp_path / "a.csv"
    text = ("episode,t,terminated\n0,0,false\n0,1,true\n1,0,false\n,1,false\n1,2,true\n2,0,false\n"
            "2,1,true\n3,0,true\n")
    path.write_text(text)
    with pytest.warns(SkippedLinesWarning, match="skipped 1 episodes"):
        result = read_steps(path, on_error="skip", skipped_path=tmp_path / "skipped.csv")
    assert result.frame["episode"].to_list() == [0, 0, 2, 2, 3]
    lines = text.splitlines()
    assert (tmp_path / "skipped.csv").read_text() == "\n".join([lines[0], *lines[3:6]]) + "\n"
    assert result.skip_counts == {"in_broken_episode": 2, "missing_value": 1}


def test_cli_convert_takes_format_options(tmp_path, capsys):
    path = tmp_path / "mine.csv"
    path.write_text("ep,t,x,end\n0,0,1.0,0\n0,1,2.0,1\n")
    out = tmp_path / "mine.parquet"
    assert main(["convert", str(path), "--out", str(out), "--option", "episode=ep",
                 "--option", "terminated=end"]) == 0
    assert attached(rewardlab.load(out)).terminated == "end"
    assert main(["convert", str(path), "--out", str(tmp_path / "x.parquet"), "--option", "episode"]) == 2
    assert "`--option` should be NAME=VALUE" in capsys.readouterr().err


def test_a_plain_frame_with_step_table_names_still_needs_a_spec():
    """Registering the source does not make every frame with an episode_id column a step table."""
    from rewardlab.core.errors import SpecError
    from rewardlab.sources.registry import registered_sources, spec_of

    assert "steps" in registered_sources()
    with pytest.raises(SpecError, match="the frame has no spec"):
        spec_of(pl.DataFrame({"episode_id": [0], "t": [0], "terminated": [True]}))


def test_agents_taking_turns_are_gathered_per_agent_and_errors_name_the_file_line(tmp_path):
    path = tmp_path / "ma.csv"
    text = ("episode,agent_id,t,obs,terminated\n0,0,0,1,false\n0,1,0,2,false\n0,0,1,3,true\n0,1,1,4,false\n"
            "1,0,0,5,true\n1,1,0,6,true\n")
    path.write_text(text)
    with pytest.raises(StepTableError, match=r"ma\.csv:5: column 'terminated': episode \(0, 1\) ends at step 1 "
                       r"with neither terminated set"):
        rewardlab.load(path)
    lines = text.splitlines()
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(path, on_error="skip", skipped_path=tmp_path / "skipped.csv")
    assert (tmp_path / "skipped.csv").read_text() == "\n".join([lines[0], lines[2], lines[4]]) + "\n"
    assert result.frame.select("episode", "agent_id", "t").rows() == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 1, 0)]
    frame = rewardlab.load(path, unfinished="truncate")
    assert frame["obs"].to_list() == [1, 3, 2, 4, 5, 6]
    assert frame["truncated"].to_list() == [False, False, False, True, False, False]


def test_cli_apply_and_check_plugin_on_a_step_table_with_options(tmp_path, capsys):
    rows = episodes(5)
    write_jsonl(tmp_path / "a.jsonl", [{("ep" if k == "episode_id" else k): v for k, v in r.items()} for r in rows])
    (tmp_path / "progress.py").write_text(textwrap.dedent(PROGRESS))
    out = tmp_path / "rewards.parquet"
    assert main(["apply", str(tmp_path / "a.jsonl"), "--option", "episode=ep", "--plugin",
                 str(tmp_path / "progress.py"), "--out", str(out)]) == 0
    assert pl.read_parquet(out).height == len(rows)
    assert main(["check-plugin", str(tmp_path / "progress.py"), "--data", str(tmp_path / "a.jsonl"),
                 "--option", "episode=ep"]) == 0
    capsys.readouterr()
    assert main(["stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert set(stats["rewards"]) == {"recorded", "progress"}  # the table's own reward beside the candidate


def test_skip_mode_keeps_crlf_lines_and_quoted_line_breaks_of_a_csv(tmp_path):
    path = tmp_path / "a.csv"
    data = (b'episode,t,note,terminated\r\n0,0,"two\r\nlines",false\r\n0,1,plain,true\r\n'
            b'1,0,"ok",false\r\n1,0,again,true\r\n2,0,x,true\r\n')
    path.write_bytes(data)
    with pytest.raises(StepTableError, match=r"a\.csv:6: column 't': step 0 is repeated in episode 1"):
        rewardlab.load(path)  # line 6: the quoted line break counts as a line, as in an editor
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(path, on_error="skip", skipped_path=tmp_path / "skipped.csv")
    assert (tmp_path / "skipped.csv").read_bytes() == (b'episode,t,note,terminated\r\n1,0,"ok",false\r\n'
                                                       b"1,0,again,true\r\n")
    assert result.skipped["line"].to_list() == [5, 6]
    assert result.frame["note"].to_list() == ["two\r\nlines", "plain", "x"]


# ----------------------------------------------------------------------------
# Review fixes
# ----------------------------------------------------------------------------


def test_a_declared_spec_refuses_the_format_options_it_would_ignore(tmp_path):
    from rewardlab.core.spec import FrameSpec

    rows = episodes(3)
    write_jsonl(tmp_path / "a.jsonl", rows)
    spec = FrameSpec(name="mine", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated", columns=("obs", "action", "reward"))
    side = tmp_path / "side.jsonl"
    with pytest.raises(ParameterError, match=r"`episode` cannot be used with spec=: a declared spec names the "
                       r"columns' roles itself .*; episode, on_error, skipped_path would be ignored"):
        rewardlab.load(tmp_path / "a.jsonl", format="steps", spec=spec, on_error="skip", skipped_path=side,
                       episode="nope")
    assert not side.exists()
    with pytest.raises(ParameterError, match=r"`unfinished` cannot be used with spec="):
        rewardlab.load(tmp_path / "a.jsonl", format="steps", spec=spec, unfinished="truncate")
    frame = rewardlab.load(tmp_path / "a.jsonl", format="steps", spec=spec)  # no options: checked as read
    assert attached(frame) == spec and frame.height == len(rows)


def test_nan_and_infinite_steps_and_rewards_are_refused_naming_the_line(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,reward,terminated\n0,0,1.0,false\n0,nan,1.0,false\n0,2,1.0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:3: column 't': the step is nan, not a finite number "
                       r"\[rule: not_finite\]"):
        rewardlab.load(path)
    path.write_text("episode,t,reward,terminated\n0,0,1.0,false\n0,1,1.0,true\n1,0,inf,false\n1,1,0.5,true\n"
                    "2,0,NaN,true\n3,0,2.0,true\n")
    with pytest.raises(StepTableError, match=r"a\.csv:4: column 'reward': the reward is inf, not a finite number "
                       r"\[rule: not_finite\]"):
        rewardlab.load(path)
    with pytest.warns(SkippedLinesWarning, match="not_finite: 2"):
        result = read_steps(path, on_error="skip", skipped_path=tmp_path / "skipped.csv")
    assert result.frame["episode"].to_list() == [0, 0, 3]
    assert (tmp_path / "skipped.csv").read_text().splitlines()[1:] == path.read_text().splitlines()[3:6]
    frame = pl.DataFrame({"episode_id": [0, 0], "t": [0.0, float("inf")], "terminated": [False, True]})
    frame.write_parquet(tmp_path / "p.parquet")
    with pytest.raises(StepTableError, match=r"row group 0.* column 't': the step is inf, not a finite number"):
        rewardlab.load(tmp_path / "p.parquet")


def test_a_text_column_named_like_a_state_is_an_extra(tmp_path, capsys):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,obs,state_label,terminated\n0,0,0.5,idle,false\n0,1,0.25,running,true\n")
    frame = rewardlab.load(path)
    spec = attached(frame)
    assert spec.state_names == ("obs",) and "state_label" in spec.columns
    assert frame["state_label"].to_list() == ["idle", "running"]
    assert main(["info", str(path), "--json"]) == 0
    roles = json.loads(capsys.readouterr().out)["roles"]
    assert roles["states"] == ["obs"] and roles["extras"] == ["state_label"]


def test_a_done_column_beside_terminated_is_kept_as_read(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,terminated,done\n0,0,false,maybe\n0,1,true,\n1,0,true,yes\n")
    frame = rewardlab.load(path)
    assert attached(frame).terminated == "terminated"
    assert frame["done"].to_list() == ["maybe", None, "yes"]  # not re-read as flags ("maybe" -> False)


def test_a_blank_csv_line_is_named_not_the_good_line_before_it(tmp_path):
    path = tmp_path / "a.csv"
    text = "episode,t,terminated\n0,0,false\n0,1,true\n\n1,0,false\n1,1,true\n2,0,true\n"
    path.write_text(text)
    with pytest.raises(StepTableError, match=r"a\.csv:4: column 'episode': the episode value is missing \(null\) "
                       r"\[rule: missing_value\]"):
        rewardlab.load(path)
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(path, on_error="skip")
    assert result.skip_counts == {"in_broken_episode": 4, "missing_value": 1}
    assert result.skipped.filter(pl.col("reason") == "missing_value")["line"].to_list() == [4]
    assert result.frame["episode"].to_list() == [2]


def test_a_reward_column_beside_reward_recorded_is_refused_before_the_rows_are_checked(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,reward,reward_recorded,terminated\n0,0,1.0,1.0,maybe\n0,1,1.0,1.0,true\n")
    with pytest.raises(ParameterError, match="`reward` cannot be kept as reward_recorded: the table already has"):
        rewardlab.load(path)  # not the bad flag on line 2: the options are wrong before any row is
    with pytest.raises(ParameterError, match="`reward` cannot be kept as reward_recorded"):
        read_steps(path, on_error="skip")


def test_the_steps_package_leaves_pyarrow_to_storage():
    """DEVELOPERS.md: pyarrow is imported only inside rewardlab.sources.storage's functions."""
    import ast
    from pathlib import Path

    import rewardlab.sources.steps as package

    for path in Path(package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "pyarrow" for n in names), f"{path.name}:{node.lineno}"


def test_blank_and_whitespace_lines_of_json_lines_keep_the_line_numbers(tmp_path):
    rows = episodes(3)
    lines = [json.dumps(r) for r in rows]
    lines[3:3] = ["", "  \t", "\r"]
    rows[4]["t"] = "x"
    lines[7] = json.dumps(rows[4])
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(StepTableError, match=r"a\.jsonl:8: column 't': 'x' is not a number \[rule: not_numeric\]"):
        rewardlab.load(path)
    with pytest.warns(SkippedLinesWarning):
        result = read_steps(path, on_error="skip")
    episode = rows[4]["episode_id"]
    kept = [line.encode() for line, r in zip([x for x in lines if x.strip()], rows) if r["episode_id"] == episode]
    assert result.skipped["raw"].to_list() == kept
