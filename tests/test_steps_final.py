"""Final states in step tables (format "steps"): N+1 rows, next-state columns, final-state columns."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import main
from rewardlab.contracts.steps import StepsArrays
from rewardlab.core.errors import SkippedLinesWarning, StepTableError
from rewardlab.core.spec import StateColumn, attached
from rewardlab.sources.steps import RECORDED, read_steps
from rewardlab.sources.steps.checks import SKIP_REASONS

KINDS = ("csv", "jsonl", "parquet")


def episodes(n: int = 5, seed: int = 0, agents: int = 0) -> list[dict]:
    """``n`` episodes (per agent with ``agents``): steps and a final observation (None for every third)."""
    rng = np.random.default_rng(seed)
    out = []
    for e in range(n):
        for a in range(max(agents, 1)):
            length = int(rng.integers(1, 5))
            obs = [[round(float(x), 3) for x in rng.random(3)] for _ in range(length + 1)]
            steps = []
            for t in range(length):
                last = t == length - 1
                steps.append({"episode_id": e, **({"agent_id": a} if agents else {}), "t": t, "obs": obs[t],
                              "action": int(rng.integers(0, 2)), "reward": round(float(rng.random()), 3),
                              "terminated": last and e % 2 == 0, "truncated": last and e % 2 == 1})
            out.append({"steps": steps, "final": None if (e + a) % 3 == 2 else obs[length]})
    return out


def n1_rows(eps: list[dict]) -> list[dict]:
    """The N+1 layout: a ``final`` row after each episode's last step where the final state is known."""
    rows = []
    for ep in eps:
        rows += [{**s, "final": False} for s in ep["steps"]]
        if ep["final"] is not None:
            last = ep["steps"][-1]
            rows.append({**{k: v for k, v in last.items() if k in ("episode_id", "agent_id")}, "t": last["t"] + 1,
                         "obs": ep["final"], "action": None, "reward": None, "terminated": None,
                         "truncated": None, "final": True})
    return rows


def next_rows(eps: list[dict], name: str = "next_obs") -> list[dict]:
    """The next-state layout: ``next_obs`` beside ``obs`` on every row (null where the final state is unknown)."""
    rows = []
    for ep in eps:
        steps = ep["steps"]
        for i, s in enumerate(steps):
            following = steps[i + 1]["obs"] if i + 1 < len(steps) else ep["final"]
            rows.append({**s, name: following})
    return rows


def interleave(rows: list[dict]) -> list[dict]:
    """Agents taking turns: each episode's agents' rows alternate."""
    out = []
    for e in sorted({r["episode_id"] for r in rows}):
        per_agent = [[r for r in rows if r["episode_id"] == e and r["agent_id"] == a]
                     for a in sorted({r["agent_id"] for r in rows if r["episode_id"] == e})]
        for k in range(max(map(len, per_agent))):
            out += [rs[k] for rs in per_agent if k < len(rs)]
    return out


def _cell(value) -> str:
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def write(path, rows: list[dict], *, crlf: bool = False) -> bytes:
    """Rows as CSV (list columns as ``name_0..name_2``), JSON lines or Parquet (lists as Array) at ``path``."""
    kind = path.suffix[1:]
    if kind == "parquet":
        frame = pl.DataFrame(rows)
        lists = [c for c, d in frame.schema.items() if isinstance(d, pl.List)]
        frame.with_columns(pl.col(c).list.to_array(3) for c in lists).write_parquet(path, row_group_size=8)
        return path.read_bytes()
    end = "\r\n" if crlf else "\n"
    if kind == "jsonl":
        data = "".join(json.dumps(r) + end for r in rows)
    else:
        names = []
        for k, v in rows[0].items():
            names += [f"{k}_{i}" for i in range(3)] if isinstance(v, list) or k in ("obs", "next_obs") else [k]
        lines = [",".join(names)]
        for r in rows:
            cells = []
            for k, v in r.items():
                if isinstance(v, list) or (v is None and k in ("obs", "next_obs")):
                    cells += [_cell(x) for x in (v or [None] * 3)]
                else:
                    cells.append(_cell(v))
            lines.append(",".join(cells))
        data = end.join(lines) + end
    path.write_bytes(data.encode())
    return data.encode()


def state_names(kind: str) -> list[str]:
    return [f"obs_{i}" for i in range(3)] if kind == "csv" else ["obs"]


def expected_finals(eps: list[dict]) -> list:
    """Per step row: the episode's final observation on its last step, None elsewhere."""
    out = []
    for ep in eps:
        out += [None] * (len(ep["steps"]) - 1) + [ep["final"]]
    return out


# ----------------------------------------------------------------------------
# The layouts give one frame
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_n1_rows_and_next_columns_give_the_same_frame_with_final_states(tmp_path, kind):
    eps = episodes(6)
    write(tmp_path / f"n1.{kind}", n1_rows(eps))
    write(tmp_path / f"next.{kind}", next_rows(eps))
    write(tmp_path / f"new.{kind}", next_rows(eps, "new_obs"))
    n1 = rewardlab.load(tmp_path / f"n1.{kind}")
    nxt = rewardlab.load(tmp_path / f"next.{kind}")
    new = rewardlab.load(tmp_path / f"new.{kind}")
    assert n1.equals(nxt) and n1.schema == nxt.schema and attached(n1) == attached(nxt)
    assert n1.equals(new) and attached(n1) == attached(new)
    spec = attached(n1)
    names = state_names(kind)
    assert [(s.name, s.final) for s in spec.states] == [(s, "final_" + s) for s in names]
    assert "final" not in n1.columns and "next_obs" not in n1.columns and "next_obs_0" not in n1.columns
    steps = [s for ep in eps for s in ep["steps"]]
    assert n1.height == len(steps)
    assert n1[RECORDED].to_list() == [s["reward"] for s in steps]
    finals = expected_finals(eps)
    if kind == "csv":
        for i, name in enumerate(names):
            assert n1["final_" + name].to_list() == [None if f is None else f[i] for f in finals]
        assert n1.columns[2:8] == ["obs_0", "final_obs_0", "obs_1", "final_obs_1", "obs_2", "final_obs_2"]
    else:
        assert n1["final_obs"].to_list() == finals
        assert n1.columns[2:4] == ["obs", "final_obs"] and n1.schema["final_obs"] == n1.schema["obs"]
    spec.validate(n1)  # the frame keeps the spec's rules (final states only on last rows)


@pytest.mark.parametrize("kind", KINDS)
def test_the_contract_hands_the_final_state_as_the_next_state_of_each_last_step(tmp_path, kind):
    eps = episodes(7, seed=1)
    write(tmp_path / f"n1.{kind}", n1_rows(eps))
    frame = rewardlab.load(tmp_path / f"n1.{kind}")
    td = StepsArrays(frame, attached(frame)).tensordict()
    steps = [s for ep in eps for s in ep["steps"]]
    following = []
    for ep in eps:
        following += [s["obs"] for s in ep["steps"][1:]] + [ep["final"] or [0.0, 0.0, 0.0]]  # pad 0 where lacking
    if kind == "csv":
        got = np.stack([td["next", name].numpy() for name in state_names(kind)], axis=1)
    else:
        got = td["next", "obs"].numpy()
    np.testing.assert_array_equal(got, np.array(following))
    last = td["next", "done"].numpy()
    assert last.sum() == len(eps) and len(steps) == last.size
    known = np.array([ep["final"] is not None for ep in eps])
    assert (~known).any() and known.any()  # the sample has both kinds of last step
    np.testing.assert_array_equal(got[last], np.array([ep["final"] or [0.0] * 3 for ep in eps]))


def test_a_table_written_by_rewardlab_reads_back_as_itself(tmp_path):
    eps = episodes(6, seed=2)
    write(tmp_path / "n1.jsonl", n1_rows(eps))
    frame = rewardlab.load(tmp_path / "n1.jsonl")
    pl.DataFrame(frame).write_parquet(tmp_path / "plain.parquet")  # no rewardlab metadata: the steps source
    again = rewardlab.load(tmp_path / "plain.parquet")
    assert again.equals(frame) and again.schema == frame.schema and attached(again) == attached(frame)
    # a final column placed elsewhere stays where it is
    moved = pl.DataFrame(frame).select(pl.exclude("final_obs"), pl.col("final_obs"))
    moved.write_parquet(tmp_path / "moved.parquet")
    read = rewardlab.load(tmp_path / "moved.parquet")
    assert read.columns == moved.columns and read.equals(moved)
    assert attached(read).states == (StateColumn("obs", 3, "float64", 0, final="final_obs"),)
    # as a converted dataset too (the spec in the metadata)
    rewardlab.convert(tmp_path / "n1.jsonl", tmp_path / "converted.parquet")
    assert attached(rewardlab.load(tmp_path / "converted.parquet")) == attached(frame)


def test_layouts_combine_when_they_agree(tmp_path):
    eps = episodes(5, seed=3)
    rows = n1_rows(eps)
    nexts = iter(next_rows(eps))
    for r in rows:  # N+1 rows and a next_obs column on the step rows
        r["next_obs"] = None if r["final"] else next(nexts)["next_obs"]
    write(tmp_path / "both.jsonl", rows)
    frame = rewardlab.load(tmp_path / "both.jsonl")
    assert frame["final_obs"].to_list() == expected_finals(eps) and "next_obs" not in frame.columns


def test_final_states_widen_an_integer_state_and_a_next_column_is_compared_in_its_dtype(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("episode,t,obs,next_obs,terminated\n0,0,1,2,false\n0,1,2,2.5,true\n")
    frame = rewardlab.load(path)
    assert frame.schema["obs"] == pl.Float64 and frame["final_obs"].to_list() == [None, 2.5]
    frame = pl.DataFrame({"episode_id": [0, 0], "t": [0, 1], "obs": [0.1, 0.2], "next_obs": [0.2, 0.3],
                          "terminated": [False, True]},
                         schema_overrides={"obs": pl.Float32, "next_obs": pl.Float32})
    frame.write_parquet(tmp_path / "f32.parquet")
    loaded = rewardlab.load(tmp_path / "f32.parquet")  # 0.2 as float32 equals 0.2 as float32
    assert loaded.schema["final_obs"] == pl.Float32 and attached(loaded).states[0].dtype == "float32"


def test_final_false_reads_the_final_column_as_a_plain_column(tmp_path):
    eps = episodes(3, seed=4)
    rows = [{**s, "final": False} for ep in eps for s in ep["steps"]]
    write(tmp_path / "a.jsonl", rows)
    frame = rewardlab.load(tmp_path / "a.jsonl", final=False)
    assert "final" in attached(frame).columns and frame.height == len(rows)
    plain = rewardlab.load(tmp_path / "a.jsonl")  # every row a step: the column is dropped, no final state
    assert "final" not in plain.columns and plain["final_obs"].null_count() == plain.height
    renamed = [{("is_final" if k == "final" else k): v for k, v in r.items()} for r in n1_rows(eps)]
    write(tmp_path / "b.jsonl", renamed)
    assert rewardlab.load(tmp_path / "b.jsonl", final="is_final")["final_obs"].to_list() == expected_finals(eps)


# ----------------------------------------------------------------------------
# Errors name file, line (row group) and column
# ----------------------------------------------------------------------------

HEADER = "episode,t,obs,reward,terminated,final\n"


def _raises(tmp_path, body: str, pattern: str, **options):
    path = tmp_path / "a.csv"
    path.write_text(HEADER + body if not body.startswith("episode") else body)
    with pytest.raises(StepTableError, match=pattern) as info:
        rewardlab.load(path, **options)
    return info.value


@pytest.mark.parametrize("body, line, column, rule, text", [
    ("0,0,1,1,false,false\n0,1,2,,,true\n0,2,3,1,true,false\n", 3, "final", "final_row_not_last",
     "a final row is followed by step 2 of episode 0; a final row comes after its episode's last step"),
    ("0,0,1,1,true,false\n0,1,2,,,true\n0,2,3,,,true\n", 4, "final", "final_row_twice",
     "a second final row after episode 0's last step; an episode has one final row"),
    ("0,0,1,1,true,false\n1,0,2,,,true\n", 3, "final", "final_row_alone",
     "a final row of episode 1 follows no step of its episode"),
    ("0,0,1,1,true,false\n0,1,2,0.5,,true\n", 3, "reward", "final_row_reward",
     "a final row has a reward (0.5); a final row holds the states after the episode's last step"),
    ("0,0,1,1,false,false\n0,1,2,,true,true\n", 3, "terminated", "final_row_flag",
     "terminated is True on a final row; the terminal flags belong on the episode's last step"),
    ("0,0,1,1,false,\n0,1,2,1,true,false\n", 2, "final", "final_flag_missing",
     "the final value is missing (null)"),
    ("0,0,1,1,false,maybe\n0,1,2,1,true,false\n", 2, "final", "bad_flag", "'maybe' is not a flag"),
])
def test_each_final_row_rule_names_the_file_line_and_column(tmp_path, body, line, column, rule, text):
    error = _raises(tmp_path, body, None)
    assert (error.line, error.column, error.rule) == (line, column, rule)
    assert str(error).startswith(f"{tmp_path / 'a.csv'}:{line}: column {column!r}: {text}"), str(error)
    assert rule in SKIP_REASONS
    if rule.startswith("final_"):
        assert "A final row (final = true) holds the states after its episode's last step" in str(error)


def test_a_flag_on_the_final_row_is_named_before_the_unfinished_episode_it_leaves(tmp_path):
    error = _raises(tmp_path, "0,0,1,1,false,false\n0,1,2,1,false,false\n0,2,3,,true,true\n", "final_row_flag")
    assert error.line == 4


def test_next_and_final_state_columns_name_the_row(tmp_path):
    body = "episode,t,obs,next_obs,terminated\n0,0,1,2,false\n0,1,2,3,false\n0,2,4,5,true\n"
    error = _raises(tmp_path, body, "next_state_mismatch")
    assert str(error).startswith(f"{tmp_path / 'a.csv'}:3: column 'next_obs': next_obs 3 on step 1 of "
                                 "episode 0 differs from the obs 4 of the following step 2 "
                                 "[rule: next_state_mismatch]")
    body = "episode,t,obs,new_obs,terminated\n0,0,1,,false\n0,1,2,3,true\n"
    _raises(tmp_path, body, r"a\.csv:2: column 'new_obs': new_obs is missing \(null\) on step 0 of episode 0, "
            r"which goes on; it should hold the following step's obs \[rule: next_state_mismatch\]")
    body = "episode,t,obs,final_obs,terminated\n0,0,1,7,false\n0,1,2,3,true\n"
    _raises(tmp_path, body, r"a\.csv:2: column 'final_obs': final_obs holds a value on step 0 of episode 0, which "
            r"is not its last step; .* \[rule: final_state_mid_episode\]")
    body = "episode,t,obs,next_obs,terminated,final\n0,0,1,2,false,false\n0,1,2,3,true,false\n0,2,4,,,true\n"
    _raises(tmp_path, body, r"a\.csv:3: column 'next_obs': next_obs gives 3 as the final state after step 1 of "
            r"episode 0; the final row gives 4 \[rule: final_state_mismatch\]")


def test_a_next_state_of_another_shape_and_a_parquet_error_name_the_row_group(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"episode": 0, "t": 0, "obs": [1, 2], "next_obs": [3], "terminated": true}\n')
    with pytest.raises(StepTableError, match=r"a\.jsonl:1: column 'next_obs': the value is a list of 1 values; "
                       r"the state 'obs' holds a list of 2 values \[rule: final_state_shape\]"):
        rewardlab.load(path)
    eps = episodes(8, seed=5)
    rows = n1_rows(eps)
    bad = max(i for i, r in enumerate(rows) if r["final"])
    rows[bad]["reward"] = 1.0
    write(tmp_path / "a.parquet", rows)
    with pytest.raises(StepTableError) as info:
        rewardlab.load(tmp_path / "a.parquet")
    assert str(info.value).startswith(f"{tmp_path / 'a.parquet'}: row group {bad // 8} (row {bad}): column "
                                      "'reward': a final row has a reward (1.0)")
    frame = pl.DataFrame({"episode_id": [0, 0], "t": [0, 1], "obs": [1.0, 2.0], "final": [0.0, float("nan")],
                          "terminated": [True, None]})
    frame.write_parquet(tmp_path / "nan.parquet")
    with pytest.raises(StepTableError, match=r"row group 0 \(row 1\): column 'final': the final value is missing "
                       r"\(NaN\)"):
        rewardlab.load(tmp_path / "nan.parquet")


# ----------------------------------------------------------------------------
# Skip mode: whole episodes with their final rows, byte for byte
# ----------------------------------------------------------------------------


def _break(rows: list[dict]) -> set:
    """Break three episodes that have a final row: a reward on its final row, a step after its final row, a
    repeated step.  Return their ids."""
    with_final = [r["episode_id"] for r in rows if r["final"]]
    lengths = Counter(r["episode_id"] for r in rows if not r["final"])
    a, b = with_final[:2]
    c = next(e for e in with_final[2:] if lengths[e] >= 2)
    i = next(i for i, r in enumerate(rows) if r["final"] and r["episode_id"] == a)
    rows[i]["reward"] = 2.0
    i = next(i for i, r in enumerate(rows) if r["final"] and r["episode_id"] == b)
    rows.insert(i + 1, {**rows[i - 1], "t": 99})
    i = next(i for i, r in enumerate(rows) if r["episode_id"] == c)
    rows[i + 1]["t"] = rows[i]["t"]
    return {a, b, c}


@pytest.mark.parametrize("kind", KINDS)
def test_skip_mode_drops_whole_episodes_with_their_final_rows_byte_for_byte(tmp_path, kind):
    rows = n1_rows(episodes(9, seed=6))
    broken = _break(rows)
    assert len(broken) == 3
    data = write(tmp_path / f"a.{kind}", rows, crlf=kind == "jsonl")
    side = tmp_path / f"skipped.{kind}"
    with pytest.warns(SkippedLinesWarning, match="skipped 3 episodes"):
        result = read_steps(tmp_path / f"a.{kind}", on_error="skip", skipped_path=side)
    good = [r for r in rows if r["episode_id"] not in broken]
    bad = [r for r in rows if r["episode_id"] in broken]
    write(tmp_path / f"good.{kind}", good, crlf=kind == "jsonl")
    expected = rewardlab.load(tmp_path / f"good.{kind}")
    assert result.frame.equals(expected) and attached(result.frame) == attached(expected)  # no partial episode
    assert result.skipped.height == len(bad)
    assert {"final_row_reward", "final_row_not_last"} <= set(result.skip_counts)
    assert result.skip_counts.get("step_repeated", 0) + result.skip_counts.get("step_order", 0) == 1
    if kind == "parquet":
        kept = pl.read_parquet(side)
        original = pl.read_parquet(tmp_path / f"a.{kind}")
        assert kept.equals(original.filter(pl.col("episode_id").is_in(list(broken))))
        assert kept["final"].sum() == sum(r["final"] for r in bad)
        return
    lines = data.split(b"\r\n" if kind == "jsonl" else b"\n")
    header = [lines.pop(0)] if kind == "csv" else []
    keep = [line for line, r in zip(lines, rows) if r["episode_id"] in broken]
    end = b"\r\n" if kind == "jsonl" else b"\n"
    # the side file: the original lines in file order, each final row beside its episode (a CR stays in the line)
    assert side.read_bytes() == b"".join(line + (b"\r" if kind == "jsonl" else b"") + b"\n"
                                         for line in header + keep)
    assert end in data
    assert result.skipped["line"].to_list() == [i + 1 + len(header) for i, r in enumerate(rows)
                                                if r["episode_id"] in broken]


def test_skip_mode_keeps_episodes_whose_final_rows_are_good(tmp_path):
    path = tmp_path / "a.csv"
    text = (HEADER + "0,0,1,1,true,false\n0,1,2,,,true\n1,0,3,1,false,false\n1,1,4,1,true,\n1,2,5,,,true\n"
            "2,0,6,1,true,false\n")
    path.write_text(text)
    with pytest.warns(SkippedLinesWarning, match="skipped 1 episodes, 3 of 6 rows"):
        result = read_steps(path, on_error="skip", skipped_path=tmp_path / "side.csv")
    assert result.frame["episode"].to_list() == [0, 2] and result.frame["final_obs"].to_list() == [2, None]
    lines = text.splitlines()
    assert (tmp_path / "side.csv").read_text() == "\n".join([lines[0], *lines[3:6]]) + "\n"
    assert result.skip_counts == {"in_broken_episode": 2, "final_flag_missing": 1}


# ----------------------------------------------------------------------------
# Multi-agent tables, rewardlab info
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ("csv", "parquet"))
def test_agents_taking_turns_keep_their_own_final_rows_and_next_states(tmp_path, kind):
    eps = episodes(4, seed=7, agents=2)
    write(tmp_path / f"n1.{kind}", interleave(n1_rows(eps)))
    write(tmp_path / f"next.{kind}", interleave(next_rows(eps)))
    n1 = rewardlab.load(tmp_path / f"n1.{kind}")
    nxt = rewardlab.load(tmp_path / f"next.{kind}")
    assert n1.equals(nxt) and attached(n1).agent == "agent_id"
    assert n1.select("episode_id", "agent_id").unique(maintain_order=True).rows() == [
        (ep["steps"][0]["episode_id"], ep["steps"][0]["agent_id"]) for ep in eps]
    finals = expected_finals(eps)
    if kind == "csv":
        got = [None if v is None else [v, w, x] for v, w, x in zip(*(n1[f"final_obs_{i}"] for i in range(3)))]
    else:
        got = n1["final_obs"].to_list()
    assert got == finals
    rows = interleave(n1_rows(eps))
    bad = next(i for i, r in enumerate(rows) if r["final"] and r["agent_id"] == 1)
    rows[bad]["terminated"] = True
    write(tmp_path / f"bad.{kind}", rows)
    with pytest.raises(StepTableError, match="final_row_flag") as info:
        rewardlab.load(tmp_path / f"bad.{kind}")
    if kind == "csv":
        assert info.value.line == bad + 2
    else:
        assert info.value.row == bad


def test_info_shows_the_final_state_layouts(tmp_path, capsys):
    eps = episodes(6, seed=8)
    write(tmp_path / "n1.jsonl", n1_rows(eps))
    write(tmp_path / "next.jsonl", next_rows(eps, "new_obs"))
    assert main(["info", str(tmp_path / "n1.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  final      final (rows after an episode's last step: removed, their states -> final states)" in out
    assert "  finals     final_obs (from final rows)" in out
    assert main(["info", str(tmp_path / "next.jsonl"), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["roles"]["next"] == ["new_obs (the next obs: checked against the following step's, then dropped)"]
    assert info["roles"]["finals"] == ["final_obs (from new_obs)"]
    assert "new_obs" not in info["roles"]["extras"] and "final_obs" in info["columns"]
    frame = rewardlab.load(tmp_path / "next.jsonl")
    kept = sum(ep["final"] is not None for ep in eps)
    assert frame["final_obs"].is_not_null().sum() == kept and 0 < kept < len(eps)
    assert main(["info", str(tmp_path / "next.jsonl")]) == 0
    text = capsys.readouterr().out
    assert f"{kept} of {len(eps)}" in text  # the episode digest counts the episodes that keep a final state


def test_an_unnamed_final_row_says_how_to_name_it(tmp_path):
    """An N+1 table whose flag column is not called ``final``: the flag before the reward-less row points at
    the option."""
    path = tmp_path / "steps.csv"
    path.write_text("ep,t,obs,action,reward,terminated,after\n0,0,0.5,1,1.0,false,false\n0,1,0.25,0,0.0,true,false\n"
                    "0,2,0.75,,,false,true\n")
    with pytest.raises(StepTableError, match=r"flag_mid_episode.*The next row has no reward.*flags such rows: "
                       r"final='COLUMN'"):  # Python's words; the CLI says --option final=COLUMN (test_fronts)
        read_steps(path, episode="ep")
    frame = read_steps(path, episode="ep", final="after").frame
    assert frame["final_obs"].to_list() == [None, 0.75]
