"""Named reward terms: the contract's checks, the runner's plumbing, apply's columns, the term table, the diagnostic."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

import rewardlab
from rewardlab.analysis.terms import (DOMINATING_SCALE_RATIO, DOMINATING_SHARE, FLAT_RATIO, TERM_TABLE_SCHEMA,
                                      term_table)
from rewardlab.contracts.terms import TERM_RULES, check_terms, find_terms, term_key
from rewardlab.contracts.registry import get_contract
from rewardlab.core import columns
from rewardlab.core.errors import ContractError, ParameterError
from rewardlab.core.spec import FrameSpec
from rewardlab.diagnostics.base import Candidate, DiagnosisContext, DiagnosisOptions
from rewardlab.diagnostics.terms import ROWS_SHOWN, largest_rows, run_terms
from rewardlab.plugins import apply_plugins, check_plugin, load_plugin
from rewardlab.plugins.apply import rewards_table_columns
from rewardlab.plugins.runner import RunOutcome
from rewardlab.plugins.shards import merge_outcomes, run_shards, split_shards
from rewardlab.sources.registry import spec_of

pytestmark = pytest.mark.filterwarnings("ignore::rewardlab.core.errors.RewardScaleWarning")

ROOT = Path(__file__).resolve().parents[1]
MOUNTAINCAR = ROOT / "data" / "gym" / "mountaincar_scripted.parquet"
SHIPPED = ROOT / "data" / "plugins" / "steps" / "mountaincar_terms.py"

# batch-invariant terms of three dtypes and both shapes; the reward is NOT their sum
TERMS = """\
import torch


def get_reward(data, contiguous):
    pos = data["obs"][:, 0]
    vel = data["next", "obs"][:, 1].double()
    data["next", "reward_terms", "pos"] = pos.clone()
    data["next", "reward_terms", "vel"] = vel.reshape(-1, 1)
    data["next", "reward_terms", "half"] = (pos * 3).half()
    data["next", "reward"] = pos.double() + vel + 1.0
"""

NO_TERMS = """\
def get_reward(data, contiguous):
    data["next", "reward"] = data["obs"][:, 0].double()
"""

BAD_SHAPE = """\
import torch


def get_reward(data, contiguous):
    data["next", "reward_terms", "wide"] = data["obs"].double()
    data["next", "reward"] = data["obs"][:, 0].double()
"""

NAN_TERM = """\
import torch


def get_reward(data, contiguous):
    pos = data["obs"][:, 0].double()
    data["next", "reward_terms", "ok"] = pos
    data["next", "reward_terms", "holey"] = torch.where(pos > -0.45, float("nan"), pos)
    data["next", "reward"] = pos
"""

# the term names change after FIRST calls (a module counter, so it works in the child process too)
VARY = """\
import torch

CALLS = [0]
FIRST = {first}


def get_reward(data, contiguous):
    pos = data["obs"][:, 0].double()
    data["next", "reward_terms", "a"] = pos
    if CALLS[0] >= FIRST:
        data["next", "reward_terms", "late"] = pos
    CALLS[0] += 1
    data["next", "reward"] = pos
"""

BAD_NAME = """\
import torch


def get_reward(data, contiguous):
    pos = data["obs"][:, 0].double()
    data["next", "reward_terms", "9lives"] = pos
    data["next", "reward"] = pos
"""

KANACHAN_TERMS = """\
import torch


def get_reward(data, contiguous):
    eog = data["next", "end_of_game"]
    action = data["action"].double()
    data["next", "reward_terms", "act"] = action / 100.0
    data["next", "reward_terms", "end"] = eog.double()
    data["next", "reward"] = (action / 100.0 + eog.double()).float()
"""


@pytest.fixture(scope="module")
def car():
    return rewardlab.load(MOUNTAINCAR)


def _write(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return path


def _direct(car, path):
    """The plug-in called once on the whole frame's TensorDict: the terms it writes, as float64 arrays."""
    contract = get_contract("steps")
    arrays = contract.arrays(car, spec_of(car))
    data = arrays.tensordict(slice(0, arrays.n))
    data["next", "done"] = torch.from_numpy(contract.done_flags(arrays, slice(0, arrays.n))[0].copy())
    plugin = load_plugin(path, contract="steps")
    with torch.no_grad():
        plugin.get_reward(data, False)
    terms = {k[-1]: v.detach().reshape(-1).numpy().astype(np.float64) for k, v in
             find_terms(dict(data.items(include_nested=True, leaves_only=True))).items()}
    return data["next", "reward"].detach().reshape(-1).numpy().astype(np.float64), terms


# --------------------------------------------------------------------------
# the contract's checks
# --------------------------------------------------------------------------

def test_check_terms_rules_name_the_term():
    ok = {term_key("a"): torch.zeros(4), term_key("b"): torch.zeros(4, 1, dtype=torch.float16)}
    assert check_terms(ok, 4) is None
    assert check_terms({}, 4) is None and check_terms({}, 4, names=()) is None
    cases = {
        "term_shape": {term_key("a"): torch.zeros(4, 2)},
        "term_dtype": {term_key("a"): torch.zeros(4, dtype=torch.int64)},
        "term_type": {term_key("a"): torch.nn.Parameter(torch.zeros(4))},
        "term_name": {term_key("a b"): torch.zeros(4)},
        "term_key": {("next", "reward_terms", "a", "deep"): torch.zeros(4)},
    }
    for rule, terms in cases.items():
        v = check_terms(terms, 4)
        assert v is not None and v.rule == rule, (rule, v)
        assert '"reward_terms"' in v.message
    nan = check_terms({term_key("a"): torch.zeros(4), term_key("b"): torch.tensor([0.0, 1.0, math.inf, math.nan])}, 4)
    assert nan.rule == "term_not_finite" and nan.row == 2 and '"b"' in nan.message and "2 non-finite" in nan.message
    vary = check_terms({term_key("a"): torch.zeros(4), term_key("c"): torch.zeros(4)}, 4, names=("a", "b"))
    assert vary.rule == "term_names_vary" and "'b'" in vary.message and "'c'" in vary.message
    assert check_terms({}, 4, names=("a",)).rule == "term_names_vary"
    assert check_terms({term_key("a"): torch.zeros(4)}, 4, names=()).rule == "term_names_vary"
    assert set(TERM_RULES) >= set(cases) | {"term_not_finite", "term_names_vary", "term_device"}


@pytest.mark.parametrize("text, rule, term", [(BAD_SHAPE, "term_shape", "wide"), (NAN_TERM, "term_not_finite", "holey"),
                                             (BAD_NAME, "term_name", "9lives")])
def test_apply_refuses_bad_terms(tmp_path, car, text, rule, term):
    path = _write(tmp_path, "bad", text)
    with pytest.raises(ContractError) as info:
        apply_plugins(car, path, isolate=False, progress=False)
    assert f"[rule: {rule}]" in str(info.value) and term in str(info.value)


def test_term_names_must_not_vary_within_and_across_shards(tmp_path, car):
    path = _write(tmp_path, "vary", VARY.format(first=1))
    with pytest.raises(ContractError, match=r"term_names_vary"):
        apply_plugins(car, path, isolate=False, progress=False)
    # the change happens on the first call of the second shard: only the names carried from shard to
    # shard catch it (each shard runs through a run_plugins of its own)
    shards = split_shards(car, rows_per_shard=800)
    first = int((shards[0]["terminated"] | shards[0]["truncated"]).sum())
    path = _write(tmp_path, "vary_late", VARY.format(first=first))
    contract = get_contract("steps")
    spec = spec_of(car)
    [out] = run_shards([contract.arrays(s, spec) for s in shards], [load_plugin(path, contract="steps")],
                       mode="episodes", batch_size=None, contract=contract, collect=True)
    assert "term_names_vary" in out.problems
    assert out.problems["term_names_vary"][0].first_row == shards[0].height
    report = check_plugin(car, path, isolate=False, progress=False)
    assert not report.ok and "term_names_vary" in str(report) and "'late'" in str(report)


def test_check_plugin_reports_term_problems(tmp_path, car):
    report = check_plugin(car, _write(tmp_path, "nan", NAN_TERM), isolate=False, progress=False)
    assert not report.ok and "term_not_finite" in str(report) and "holey" in str(report)
    good = check_plugin(car, _write(tmp_path, "good", TERMS), isolate=False, progress=False)
    assert good.problems == ()


# --------------------------------------------------------------------------
# the runner: terms collected bit for bit, in every batch mode, shards, child process
# --------------------------------------------------------------------------

@pytest.mark.parametrize("mode, size", [("episodes", None), ("sequential", 7), ("shuffled", 5), ("fragments", 3),
                                        ("dataloader", 4)])
def test_runner_collects_terms_bit_for_bit(tmp_path, car, mode, size):
    path = _write(tmp_path, "terms", TERMS)
    reward, terms = _direct(car, path)
    assert list(terms) == ["pos", "vel", "half"]
    contract = get_contract("steps")
    spec = spec_of(car)
    plugin = load_plugin(path, contract="steps")
    for shards in ([car], split_shards(car, rows_per_shard=500)):
        [out] = run_shards([contract.arrays(s, spec) for s in shards], [plugin], mode=mode, batch_size=size,
                           contract=contract)
        assert out.problems == {} and out.error is None
        assert out.term_names == ("pos", "vel", "half")
        assert list(out.terms) == ["pos", "vel", "half"]
        for name, values in terms.items():
            assert out.terms[name].dtype == np.float64
            np.testing.assert_array_equal(out.terms[name], values)
        np.testing.assert_array_equal(out.rewards, reward)


def test_no_terms_no_cost(tmp_path, car):
    contract = get_contract("steps")
    plugin = load_plugin(_write(tmp_path, "plain", NO_TERMS), contract="steps")
    [out] = run_shards([contract.arrays(car, spec_of(car))],
                       [plugin], mode="sequential", batch_size=64, contract=contract)
    assert out.terms == {} and out.term_names == ()
    applied = apply_plugins(car, plugin, isolate=False, progress=False)
    assert not [c for c in applied.columns if c.startswith(columns.TERM_PREFIX)]


def test_apply_adds_term_columns_isolated_and_in_process_alike(tmp_path, car):
    path = _write(tmp_path, "terms", TERMS)
    _, terms = _direct(car, path)
    inside = apply_plugins(car, path, isolate=False, progress=False, batch_mode="sequential", batch_size=33)
    child = apply_plugins(car, path, isolate=True, progress=False, batch_mode="sequential", batch_size=33)
    assert inside.equals(child)
    found = columns.term_columns(inside, "terms")
    assert found == {t: f"term_terms.{t}" for t in ("pos", "vel", "half")}
    for name, column in found.items():
        assert inside.schema[column] == pl.Float64
        np.testing.assert_array_equal(inside[column].to_numpy(), terms[name])
    # terms are not candidates: only reward_* columns are
    assert columns.reward_names(inside) == ["recorded", "terms"]
    # the rewards table keeps them when given the applied frame's columns
    kept = rewards_table_columns(inside.columns, spec_of(inside), ["terms"])
    assert [c for c in kept if c.startswith("term_")] == list(found.values())
    # shards: the same columns, shard by shard
    shards = split_shards(car, rows_per_shard=900)
    parts = apply_plugins(shards, path, isolate=False, progress=False, batch_mode="sequential", batch_size=33,
                          spec=spec_of(car))
    assert pl.concat(parts).equals(inside)


def test_replace_drops_stale_term_columns(tmp_path, car):
    path = _write(tmp_path, "terms", TERMS)
    applied = apply_plugins(car, path, isolate=False, progress=False)
    (tmp_path / "other").mkdir()
    plain = _write(tmp_path / "other", "terms", NO_TERMS)
    again = apply_plugins(applied, plain, isolate=False, progress=False, replace=True)
    assert columns.term_columns(again, "terms") == {}
    np.testing.assert_array_equal(again["reward_terms"].to_numpy(), car["obs"].arr.get(0).cast(pl.Float64).to_numpy())


def test_merge_outcomes_pads_missing_terms_with_nan():
    a = RunOutcome(None, "episodes", None, np.zeros(2), np.zeros(2, bool), terms={"x": np.ones(2)}, term_names=("x",))
    b = RunOutcome(None, "episodes", None, np.zeros(3), np.zeros(3, bool))
    c = RunOutcome(None, "episodes", None, np.zeros(1), np.zeros(1, bool), terms={"y": np.full(1, 2.0)})
    merged = merge_outcomes([a, b, c])
    assert list(merged.terms) == ["x", "y"] and merged.term_names == ("x",)
    np.testing.assert_array_equal(merged.terms["x"], [1, 1, np.nan, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(merged.terms["y"], [np.nan] * 5 + [2.0])
    assert merge_outcomes([b]).terms == {}


def test_kanachan_contract_accepts_terms(tmp_path, sample_frame):
    ends = sample_frame["end_of_game"].to_numpy().nonzero()[0]
    frame = sample_frame.head(int(ends[7]) + 1)
    path = _write(tmp_path, "kterms", KANACHAN_TERMS)
    out = apply_plugins(frame, path, isolate=False, progress=False, batch_mode="dataloader", batch_size=16)
    found = columns.term_columns(out, "kterms")
    assert list(found) == ["act", "end"]
    action = frame["action"].cast(pl.Float64).to_numpy()
    np.testing.assert_array_equal(out[found["act"]].to_numpy(), action / 100.0)
    np.testing.assert_array_equal(out[found["end"]].to_numpy(), frame["end_of_game"].cast(pl.Float64).to_numpy())


# --------------------------------------------------------------------------
# the term table against a plain loop
# --------------------------------------------------------------------------

def _loop_mean(xs):
    return sum(xs) / len(xs) if xs else math.nan


def _loop_std(xs):
    if not xs:
        return math.nan
    m = _loop_mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def _loop_cov(xs, ys):
    mx, my = _loop_mean(xs), _loop_mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / len(xs)


def _loop_corr(xs, ys):
    if not xs:
        return math.nan
    sx, sy = _loop_std(xs), _loop_std(ys)
    return math.nan if sx == 0 or sy == 0 else _loop_cov(xs, ys) / (sx * sy)


def _loop_table(terms, total, reference, starts):
    """Every column of term_table, one row at a time (flags left to the flag tests)."""
    out = {}
    n = len(total)
    for name, x in terms.items():
        rows = [i for i in range(n) if math.isfinite(x[i]) and math.isfinite(total[i])]
        xs, ts = [float(x[i]) for i in rows], [float(total[i]) for i in rows]
        var = _loop_std(ts) ** 2
        row = {"count": len(rows), "mean": _loop_mean(xs), "min": min(xs), "max": max(xs), "std": _loop_std(xs),
               "max_abs": max(abs(v) for v in xs), "rms": math.sqrt(sum(v * v for v in xs) / len(xs)),
               "nonzero_fraction": sum(1 for v in xs if v != 0) / len(xs),
               "share": _loop_cov(xs, ts) / var if var else math.nan, "corr_total": _loop_corr(xs, ts)}
        both = [i for i in rows if math.isfinite(reference[i])]
        row["corr_reference"] = _loop_corr([float(x[i]) for i in both], [float(reference[i]) for i in both])
        sums, totals = [], []
        for a, b in zip(starts[:-1], starts[1:]):
            sums.append(sum(float(x[i]) for i in range(a, b) if math.isfinite(x[i])))
            totals.append(sum(float(total[i]) for i in range(a, b) if math.isfinite(total[i])))
        var_e = _loop_std(totals) ** 2
        row["episode_share"] = _loop_cov(sums, totals) / var_e if var_e else math.nan
        row["episode_std"] = _loop_std(sums)
        best, where = -1.0, -1
        for i in range(n):
            if math.isfinite(x[i]) and abs(x[i]) > best:
                best, where = abs(x[i]), i
        row["largest_row"] = where
        out[name] = row
    return out


def test_term_table_equals_a_plain_loop():
    rng = np.random.default_rng(3)
    n = 400
    terms = {"a": rng.normal(size=n), "b": np.where(rng.random(n) < 0.9, 0.0, rng.normal(3, 1, n)),
             "c": rng.normal(size=n) * 0.1}
    terms["c"][[5, 77]] = np.nan
    total = terms["a"] + np.nan_to_num(terms["b"]) + np.nan_to_num(terms["c"])
    total[9] = np.nan
    reference = total * 0.5 + rng.normal(size=n)
    reference[11] = np.nan
    starts = np.array([0, 50, 51, 200, 333, n])
    table = term_table(terms, total, reference=reference, episode_starts=starts)
    assert table.frame.schema == pl.Schema(TERM_TABLE_SCHEMA)
    assert table.terms == ["a", "b", "c"]
    expected = _loop_table(terms, total, reference, starts)
    for row in table.frame.iter_rows(named=True):
        for key, value in expected[row["term"]].items():
            assert row[key] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), (row["term"], key)
    # the rows without NaN sum exactly to the total; the shares of summing terms add up to 1
    assert table.sums_to_total is True and table.sum_residual <= 1e-12
    clean = {k: np.nan_to_num(v) for k, v in terms.items()}
    t2 = term_table(clean, total)
    assert sum(t2.frame["share"].to_list()) == pytest.approx(1.0)
    t3 = term_table(clean, total + 0.01)
    assert t3.sums_to_total is False and t3.sum_residual == pytest.approx(0.01)


def test_term_table_flags_on_built_data():
    rng = np.random.default_rng(7)
    n = 1000
    main = rng.normal(size=n)
    starts = np.arange(0, n + 1, 100)
    # a constant term, and one whose wiggle is far under FLAT_RATIO of the total's: flat; a sparse bonus is not
    flat = {"main": main, "const": np.full(n, 0.3), "tiny": main * FLAT_RATIO * 0.1,
            "bonus": np.where(np.arange(n) % 50 == 0, 1.0, 0.0)}
    t = term_table(flat, sum(flat.values()))
    assert dict(zip(t.terms, t.frame["flat"])) == {"main": False, "const": True, "tiny": True, "bonus": False}
    # a term carrying > DOMINATING_SHARE of the variance beside one that matters
    dom = {"big": main, "small": rng.normal(size=n) * 0.2}
    t = term_table(dom, dom["big"] + dom["small"], episode_starts=starts)
    assert t.frame["share"][0] > DOMINATING_SHARE and t.frame["episode_share"][0] > DOMINATING_SHARE
    assert t.frame["dominating"].to_list() == [True, False]
    # by magnitude: a large offset dwarfs the other term's rms (its share of the variance is small)
    mag = {"offset": 50.0 + main * 0.3, "signal": rng.normal(size=n) * 0.5}
    t = term_table(mag, mag["offset"] + mag["signal"])
    assert t.frame["rms"][0] >= DOMINATING_SCALE_RATIO * t.frame["rms"][1]
    assert t.frame["dominating"].to_list() == [True, False]
    # beside a flat term only, nothing dominates; a single term never does
    t = term_table({"main": main, "const": np.full(n, 1.0)}, main + 1.0)
    assert t.frame["dominating"].to_list() == [False, False]
    assert term_table({"main": main}, main).frame["dominating"].to_list() == [False]
    # a -1 per step cost over episodes of varying length: flat per step, not over the returns
    lengths = [10, 200, 60, 120, 30]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    m = int(starts[-1])
    step = {"cost": np.full(m, -1.0), "shaping": rng.normal(size=m)}
    total = step["cost"] + step["shaping"]
    assert term_table(step, total).frame["flat"].to_list() == [True, False]
    with_episodes = term_table(step, total, episode_starts=starts)
    assert with_episodes.frame["flat"].to_list() == [False, False]
    assert with_episodes.frame["episode_share"][0] > 0.5


def test_term_table_refuses_bad_input():
    with pytest.raises(ParameterError, match="terms"):
        term_table({"a b": np.zeros(2)}, np.zeros(2))
    with pytest.raises(ParameterError, match=r"shape \[3\]"):
        term_table({"a": np.zeros(2)}, np.zeros(3))
    with pytest.raises(ParameterError, match="episode_starts"):
        term_table({"a": np.zeros(3)}, np.zeros(3), episode_starts=[0, 2])
    empty = term_table({}, np.zeros(3))
    assert empty.frame.height == 0 and empty.sums_to_total is None


# --------------------------------------------------------------------------
# the diagnostic
# --------------------------------------------------------------------------

def _context(candidates, *, base=None, lengths=(70, 70, 70)):
    n = sum(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    episode_of_row = np.repeat(np.arange(len(lengths)), lengths).astype(np.int64)
    end = np.zeros(n, bool)
    end[starts[1:] - 1] = True
    frame = pl.DataFrame({"e": episode_of_row})
    return DiagnosisContext(frame=frame, spec=FrameSpec(name="t", episode=("e",)), contract=get_contract("steps"),
                            candidates=tuple(candidates), base=base, options=DiagnosisOptions(),
                            episode_of_row=episode_of_row, episode_starts=starts, terminated=end,
                            truncated=np.zeros(n, bool))


def test_largest_rows_matches_a_sort():
    rng = np.random.default_rng(0)
    values = np.round(rng.normal(size=300), 1)
    values[[3, 30]] = np.nan
    got = largest_rows(values, 25)
    order = sorted(range(300), key=lambda i: (-(abs(values[i]) if not math.isnan(values[i]) else -1.0), i))
    assert got.tolist() == order[:25]
    assert largest_rows(values[:3], 10).tolist() == sorted(range(3), key=lambda i: (-abs(values[i]), i))


def test_diagnostic_findings_on_built_data():
    rng = np.random.default_rng(1)
    n = 210  # three episodes of 70 rows: a constant term is flat over the returns too
    main = rng.normal(size=n)
    spike = np.zeros(n)
    spike[[150, 20]] = [9.0, 5.0]  # the noise term's largest values are in episodes 2 and 0
    terms = {"main": main, "const": np.full(n, 0.2), "noise": rng.normal(size=n) * 0.5 + spike}
    total = sum(terms.values())
    composite = Candidate("composite", total, plugin=object(), terms=terms)
    plain = Candidate("plain", main, plugin=object())
    column = Candidate("recorded_copy", main)
    base = Candidate("recorded", main * 2)
    findings = run_terms(_context([composite, plain, column], base=base))
    by = {(f.candidate, f.evidence.get("term")): f for f in findings}
    summary = by[("composite", None)]
    assert summary.verdict == "info" and "sum to the reward" in summary.summary
    assert summary.evidence["sums_to_total"] is True and summary.evidence["flat"] == ["const"]
    const = by[("composite", "const")]
    assert const.verdict == "warn" and "flat" in const.summary and const.evidence["flat"] is True
    noise = by[("composite", "noise")]
    assert noise.verdict == "info" and noise.other == "recorded"
    assert noise.rows[:2] == (150, 20) and noise.episodes[:2] == (2, 0) and len(noise.rows) == ROWS_SHOWN
    main_f = by[("composite", "main")]
    assert main_f.evidence["corr_reference"] == pytest.approx(np.corrcoef(main, main * 2)[0, 1])
    assert by[("plain", None)].verdict == "n/a" and "reward_terms" in by[("plain", None)].summary
    assert by[("recorded_copy", None)].verdict == "n/a" and "column" in by[("recorded_copy", None)].summary
    # a dominating term, and terms that do not sum to the reward (rows where the difference is largest)
    dom = {"big": main * 10, "small": rng.normal(size=n) * 0.3}
    total = dom["big"] + dom["small"]
    total[[7, 190]] += [0.5, -2.0]
    cand = Candidate("dom", total, plugin=object(), terms=dom)
    findings = run_terms(_context([cand]))
    by = {f.evidence.get("term"): f for f in findings}
    assert by["big"].verdict == "warn" and "dominates" in by["big"].summary and by["small"].verdict == "info"
    assert by[None].evidence["sums_to_total"] is False and "do not sum" in by[None].summary
    assert by[None].rows[:2] == (190, 7) and by[None].episodes[:2] == (2, 0)


def test_registered_and_documented():
    from rewardlab.diagnostics import terms as module
    from rewardlab.diagnostics.base import BUILTIN_DIAGNOSTICS

    d = module.DIAGNOSTIC
    assert BUILTIN_DIAGNOSTICS["terms"] == module.__name__
    assert d.name == "terms" and d.order == 10 and d.run is run_terms
    for word in ("share", "nonzero_fraction", "flat", "dominating", str(FLAT_RATIO), "reward_terms"):
        assert word in d.doc


# --------------------------------------------------------------------------
# the shipped plug-in
# --------------------------------------------------------------------------

def test_shipped_plugin_terms_sum_to_its_reward(car):
    out = apply_plugins(car, SHIPPED, isolate=False, progress=False)
    found = columns.term_columns(out, "mountaincar_terms")
    assert list(found) == ["task", "progress", "energy"]
    terms = {k: out[c].to_numpy() for k, c in found.items()}
    reward = out["reward_mountaincar_terms"].to_numpy()
    np.testing.assert_array_equal(terms["task"] + terms["progress"] + terms["energy"], reward)
    np.testing.assert_array_equal(terms["task"], car["reward_recorded"].to_numpy())
    # progress, recomputed in NumPy from the frame: GAMMA * phi(next) * (1 - terminated) - phi(obs)
    obs = np.stack(car["obs"].to_numpy()).astype(np.float64)
    final = car["final_obs"].to_numpy()
    end = (car["terminated"] | car["truncated"]).to_numpy()
    nxt = np.empty_like(obs)
    nxt[:-1] = obs[1:]
    for i in np.flatnonzero(end):
        nxt[i] = np.asarray(final[i], dtype=np.float32).astype(np.float64)
    phi = 10.0 * (obs[:, 0] - 0.5)
    phi_next = np.where(car["terminated"].to_numpy(), 0.0, 10.0 * (nxt[:, 0] - 0.5))
    np.testing.assert_allclose(terms["progress"], 0.99 * phi_next - phi, rtol=0, atol=1e-12)
    np.testing.assert_allclose(terms["energy"], np.abs(nxt[:, 1]), rtol=0, atol=1e-12)
    starts = np.concatenate([[0], np.flatnonzero(end) + 1])
    table = term_table(terms, reward, episode_starts=starts)
    assert table.sums_to_total is True
    # the shaping term carries the step-level variance, not the returns' (it telescopes): nothing dominates
    assert table.frame["share"][1] > DOMINATING_SHARE > table.frame["episode_share"][1]
    assert not any(table.frame["dominating"]) and not any(table.frame["flat"])
