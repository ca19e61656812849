"""The trap diagnostics (issue 26): each on data whose truth is known, its verdict, rows and episodes; the pure
functions of rewardlab.analysis.traps against plain loops; the shared padding / convention runs."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from conftest import PLUGINS_DIR
from rewardlab.analysis import traps as T
from rewardlab.analysis.normalizers import RMS_PRIOR_COUNT
from rewardlab.contracts.checks import compare_outputs, float16_precision
from rewardlab.core.spec import FrameSpec, StateColumn, attach
from rewardlab.diagnostics import DiagnosisOptions, get_diagnostic, registered_diagnostics
from rewardlab.diagnostics.run import build_context
from rewardlab.plugins.probes import convention_runs, probe_padding, reward_changes

TRAPS = ("trap.terminal_next_state", "trap.constant", "trap.sparse", "trap.normalizer_clip",
         "trap.discount_horizon", "trap.float16", "trap.offline_simulation")

# episode lengths: long enough that 0.99 ** (T - 1) < 0.01 for all but episode 2 (0.99 ** 449 = 0.011)
LENGTHS = (500, 600, 450, 520)
TRUNCATED = (False, True, False, True)  # episodes 1 and 3 are cut (truncated), 0 and 2 terminated
N = sum(LENGTHS)
STARTS = np.concatenate([[0], np.cumsum(LENGTHS)])
SPIKES = (300, 700, 1300, 1700, 2000)  # rows of the VecNormalize-clipped candidate's large rewards


def steps_frame() -> pl.DataFrame:
    """A steps table without final states (the last step's next state is padding), reward columns of known
    truth, a state ``s`` ~ N(0, 1) (float32)."""
    rng = np.random.default_rng(7)
    ep = np.repeat(np.arange(len(LENGTHS)), LENGTHS)
    t = np.concatenate([np.arange(n) for n in LENGTHS])
    last = np.zeros(N, bool)
    last[STARTS[1:] - 1] = True
    cut = np.repeat(np.array(TRUNCATED), LENGTHS) & last
    s = rng.normal(size=N).astype(np.float32)
    s[s > 2.5] = 2.4  # the float16 plug-in's 3000 go only where we put them
    s[[100, 900, 1500]] = 3.0
    sparse = np.zeros(N)
    sparse[[5, 800, 1999]] = [1.0, -4.0, 2.0]
    clip = rng.normal(scale=0.5, size=N)
    clip[list(SPIKES)] = [40.0, 160.0, 640.0, 2560.0, 10240.0]  # each beyond the clip of the variance before it
    swamp = np.ones(N)
    swamp[[400, 1400]] = 1e5
    terminal = np.where(last, 1.0, 0.0)
    frame = pl.DataFrame({
        "ep": ep, "t": t, "s": pl.Series(s, dtype=pl.Float32), "term": last & ~cut, "trunc": cut,
        "reward_const": np.full(N, 0.5), "reward_sparse": sparse, "reward_clip": clip, "reward_swamp": swamp,
        "reward_terminal": terminal, "reward_dense": rng.normal(size=N),
    })
    spec = FrameSpec(name="toy", episode=("ep",), step="t", terminated="term", truncated="trunc",
                     states=(StateColumn("s", None, "float32", 0.0),), contract="steps")
    return attach(frame, spec)


@pytest.fixture(scope="module")
def frame():
    return steps_frame()


def write(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\n\n\ndef get_reward(data, contiguous):\n" + body)
    return path


READS_PADDING = ('    after = torch.where(data["next", "terminated"], 0.0, data["next", "s"].double())\n'
                 '    data["next", "reward"] = 0.99 * after - data["s"].double()\n')
CLEAN = '    data["next", "reward"] = data["s"].double()\n'
FLOAT16 = ('    r = data["s"].double()\n'
           '    data["next", "reward"] = torch.where(r > 2.5, 3000.0, r).to(torch.float16)\n')


def finding(findings, candidate):
    [f] = [f for f in findings if f.candidate == candidate]
    return f


def run(name, ctx):
    return get_diagnostic(name).run(ctx)


# --- the registry ------------------------------------------------------------------------------------------


def test_the_traps_are_registered_in_order_with_their_docs():
    found = {n: d for n, d in registered_diagnostics().items() if n.startswith("trap.")}
    assert tuple(found) == TRAPS
    assert [d.order for d in found.values()] == list(range(40, 47))
    for d in found.values():
        assert "**Definition.**" in d.doc and "What to do" in d.doc, d.name


# --- the column traps on known data --------------------------------------------------------------------


@pytest.fixture(scope="module")
def columns_ctx(frame):
    names = ["const", "sparse", "clip", "swamp", "terminal", "dense"]
    return build_context(frame, names, options=DiagnosisOptions(gamma=0.99, normalizer="sb3", clip=5.0))


def test_constant(columns_ctx):
    findings = run("trap.constant", columns_ctx)
    f = finding(findings, "const")
    assert f.verdict == "fail" and f.evidence["value"] == 0.5 and "0.5 on every one" in f.summary
    assert f.rows == tuple(STARTS[:-1]) and f.episodes == (0, 1, 2, 3)
    others = [g for g in findings if g.candidate != "const"]
    assert [g.verdict for g in others] == ["pass"] * 5 and all(not g.rows for g in others)


def test_sparse(columns_ctx):
    findings = run("trap.sparse", columns_ctx)
    f = finding(findings, "sparse")
    assert T.sparse_limit(N) == 10
    assert f.verdict == "warn" and f.evidence["nonzero_rows"] == 3
    assert f.rows == (800, 1999, 5)  # largest |r| first
    assert f.episodes == (1, 3, 0)
    term = finding(findings, "terminal")
    assert term.verdict == "warn" and term.rows == tuple(STARTS[1:] - 1)  # 4 non-zero rows, all 1.0
    assert {g.candidate: g.verdict for g in findings if g.verdict == "pass"} == {
        "const": "pass", "clip": "pass", "swamp": "pass", "dense": "pass"}


def sb3_loop(rewards, done, *, gamma, clip, epsilon=1e-8):
    """VecNormalize's reward path, one step at a time: RunningMeanStd of the discounted return."""
    mean, var, count, ret = 0.0, 1.0, RMS_PRIOR_COUNT, 0.0
    scaled, clipped = [], []
    for r, d in zip(np.asarray(rewards, np.float32).astype(np.float64), done):
        ret = ret * gamma + r
        delta, total = ret - mean, count + 1
        mean = mean + delta / total
        var = (var * count + delta * delta * count / total) / total
        count = total
        x = r / math.sqrt(var + epsilon)
        scaled.append(x)
        clipped.append(abs(x) > clip)
        if d:
            ret = 0.0
    return np.array(scaled), np.array(clipped)


def test_normalizer_trap_against_a_plain_loop():
    rng = np.random.default_rng(3)
    r = rng.normal(size=3000)
    r[rng.choice(3000, 12, replace=False)] = 300.0
    done = rng.random(3000) < 0.01
    trap = T.normalizer_trap(r, done, done, normalizer="sb3", gamma=0.97, clip=5.0)
    scaled, clipped = sb3_loop(r, done, gamma=0.97, clip=5.0)
    np.testing.assert_allclose(trap.scaled, scaled, rtol=1e-9)
    np.testing.assert_array_equal(trap.clipped, clipped)
    assert clipped.any()
    nz = r != 0
    assert trap.median_nonzero == pytest.approx(np.median(np.abs(scaled[nz])), rel=1e-9)
    gym = T.normalizer_trap(r, done, done, normalizer="gymnasium", gamma=0.97, clip=5.0)
    np.testing.assert_array_equal(gym.clipped, np.abs(gym.normalized) > 5.0)  # NormalizeReward does not clip


def test_normalizer_clip(columns_ctx):
    findings = run("trap.normalizer_clip", columns_ctx)
    done = np.zeros(N, bool)
    done[STARTS[1:] - 1] = True
    clip = finding(findings, "clip")
    scaled, clipped = sb3_loop(columns_ctx.candidate("clip").rewards, done, gamma=0.99, clip=5.0)
    clipped[:T.CLIP_WARMUP] = False
    truth = np.flatnonzero(clipped)
    assert truth.tolist() == list(SPIKES)
    assert clip.verdict == "warn" and clip.evidence["clipped_steps"] == truth.size
    assert clip.rows[:truth.size] == tuple(truth[np.argsort(-np.abs(scaled[truth]), kind="stable")])
    assert "normalize beyond the clip ±5" in clip.summary
    swamp = finding(findings, "swamp")
    assert swamp.verdict == "warn" and swamp.evidence["swamped"] and "2 large rewards (at least 100 times the median non-zero one) swamp the rest" in swamp.summary
    assert swamp.evidence["median_nonzero_normalized"] < T.SWAMP_LEVEL
    assert set(swamp.rows) == {400, 1400} and swamp.episodes[0] in (0, 2)
    dense = finding(findings, "dense")
    assert dense.verdict == "pass" and not dense.rows and dense.evidence["clipped_steps"] == 0


def test_normalizer_clip_is_not_applicable_without_a_normalizer(frame):
    ctx = build_context(frame, ["dense"])
    [f] = run("trap.normalizer_clip", ctx)
    assert f.verdict == "n/a" and "no normalizer named" in f.summary and "VecNormalize" in f.summary


def test_discount_horizon(columns_ctx):
    findings = run("trap.discount_horizon", columns_ctx)
    f = finding(findings, "terminal")
    assert f.verdict == "warn"
    median = float(np.median(LENGTHS))
    assert f.evidence["median_length"] == median
    assert f.evidence["factor_at_median"] == pytest.approx(0.99 ** (median - 1))
    assert f.evidence["effective_horizon"] == pytest.approx(100.0)
    assert f.episodes == (1, 3, 0)  # longest first; episode 2 keeps 0.99 ** 449 > 0.01
    assert f.rows == (STARTS[1], STARTS[3], STARTS[0])
    assert [g.verdict for g in findings if g.candidate != "terminal"] == ["pass"] * 5
    gentle = build_context(columns_ctx.frame, ["terminal"], options=DiagnosisOptions(gamma=0.999))
    [g] = run("trap.discount_horizon", gentle)
    assert g.verdict == "pass" and g.evidence["factor_at_median"] > T.HORIZON_FACTOR


def test_terminal_only_and_horizon_against_loops():
    rng = np.random.default_rng(1)
    for _ in range(50):
        lengths = rng.integers(1, 30, size=rng.integers(1, 6))
        starts = np.concatenate([[0], np.cumsum(lengths)])
        r = np.where(rng.random(starts[-1]) < 0.3, rng.normal(size=starts[-1]), 0.0)
        if rng.random() < 0.5:  # terminal-only half the time
            keep = np.zeros_like(r)
            keep[starts[1:] - 1] = r[starts[1:] - 1] + 1.0
            r = keep
        loop = any(r[i] != 0 for i in range(r.size)) and all(
            r[i] == 0 or (i + 1) in starts[1:] for i in range(r.size))
        assert T.terminal_only(r, starts) == loop
        gamma = float(rng.uniform(0.5, 1.0))
        h = T.discount_horizon(starts, gamma=gamma)
        np.testing.assert_allclose(h.factors, [gamma ** (n - 1) for n in lengths])
        assert h.median_length == float(np.median(lengths))


def test_sparse_rows_and_constant_against_loops():
    rng = np.random.default_rng(2)
    for _ in range(30):
        r = np.where(rng.random(40) < 0.2, rng.integers(-3, 4, size=40).astype(float), 0.0)
        expected = sorted((i for i in range(40) if r[i] != 0), key=lambda i: (-abs(r[i]), i))
        assert T.nonzero_rows(r).tolist() == expected
    assert T.constant_value(np.full(5, -2.0)) == -2.0 and T.constant_value(np.array([1.0, 1.0, 1.5])) is None
    assert T.sparse_limit(0) == 10 and T.sparse_limit(10_001) == 11


# --- float16 ------------------------------------------------------------------------------------------------


def test_float16_rows_follow_float16_precision():
    rng = np.random.default_rng(4)
    for scale in (1e-3, 1.0, 50.0, 600.0, 3000.0, 1e4):
        for _ in range(10):
            r = np.round(rng.normal(size=50) * scale * rng.random()).astype(np.float16).astype(np.float64)
            rows = T.float16_rows(r)
            assert (rows.size > 0) == (float16_precision(r) is not None)
            if rows.size:  # a plain loop: the same rule row by row
                nz = r[np.isfinite(r) & (r != 0)]
                spread = nz.std() or np.abs(nz).max()
                hit = [i for i in range(r.size) if r[i] != 0
                       and 2.0 ** (max(math.floor(math.log2(abs(r[i]))), -14) - 11) > 1e-3 * spread]
                if not hit:
                    hit = [i for i in range(r.size) if abs(r[i]) >= 2048]
                assert sorted(rows.tolist()) == hit


def test_float16_plugin(frame, tmp_path):
    ctx = build_context(frame, [write(tmp_path, "half", FLOAT16), write(tmp_path, "clean", CLEAN)])
    half, clean = ctx.candidates
    assert half.dtype == "float16" and clean.dtype == "float64"
    findings = run("trap.float16", ctx)
    f = finding(findings, "half")
    assert f.verdict == "warn" and f.summary.startswith("float16 rounds rewards near |r| = 3000")
    assert f.rows == (100, 900, 1500) and f.episodes == (0, 1, 2)  # only the 3000s lose against the spread
    assert finding(findings, "clean").verdict == "pass"


# --- the plug-in traps --------------------------------------------------------------------------------------


def test_terminal_next_state_on_truncated_last_steps_without_final_state(frame, tmp_path):
    reads = write(tmp_path, "shaped", READS_PADDING)
    ctx = build_context(frame, [reads, write(tmp_path, "clean", CLEAN), "dense"])
    findings = run("trap.terminal_next_state", ctx)
    f = finding(findings, "shaped")
    cut = tuple(int(STARTS[e + 1] - 1) for e in range(4) if TRUNCATED[e])
    assert f.verdict == "fail" and f.rows == cut and f.episodes == (1, 3)  # terminated steps use 0
    assert f.evidence["steps_changed"] == 2 and f.evidence["episodes_lacking_final_state"] == 4
    assert 'data["next", "s"]' in f.summary
    assert finding(findings, "clean").verdict == "pass"
    assert finding(findings, "dense").verdict == "n/a"
    # the probe against the in-memory path: rewards on the probed episodes equal the applied plug-in's
    probe = probe_padding(frame, reads, isolate=False)
    assert probe.probed.all()  # every episode lacks its final state
    np.testing.assert_array_equal(probe.rewards, ctx.candidate("shaped").rewards)
    whole = probe_padding(frame, reads, only_lacking=False, isolate=False)
    np.testing.assert_array_equal(whole.changed, probe.changed)


def test_terminal_next_state_passes_when_the_data_keeps_final_states(tmp_path):
    frame = steps_frame()
    spec = FrameSpec(name="toy", episode=("ep",), step="t", terminated="term", truncated="trunc",
                     states=(StateColumn("s", None, "float32", 0.0, final="final_s"),), contract="steps")
    final = pl.when(pl.col("term") | pl.col("trunc")).then(pl.col("s") + 1.0).cast(pl.Float32)
    kept = attach(frame.with_columns(final_s=final), spec)
    ctx = build_context(kept, [write(tmp_path, "shaped", READS_PADDING)])
    [f] = run("trap.terminal_next_state", ctx)
    assert f.verdict == "pass" and "keeps every episode's final state" in f.summary and not f.rows


def test_a_clean_plugin_passes_every_trap(frame, tmp_path):
    ctx = build_context(frame, [write(tmp_path, "clean", CLEAN)],
                        options=DiagnosisOptions(normalizer="gymnasium"))
    verdicts = {name: run(name, ctx)[0].verdict for name in TRAPS}
    assert verdicts == {name: "pass" for name in TRAPS} | {"trap.offline_simulation": "n/a"}


@pytest.fixture(scope="module")
def kanachan(small_frame):
    return small_frame


EOR = '    data["next", "reward"] = data["next", "end_of_round"].double()\n'


def test_offline_simulation_on_kanachan(kanachan, tmp_path):
    eor = write(tmp_path, "eor", EOR)
    ctx = build_context(kanachan, [eor, PLUGINS_DIR / "round_delta.py"])
    findings = run("trap.offline_simulation", ctx)
    f = finding(findings, "eor")
    games_end = np.flatnonzero(kanachan["end_of_game"].to_numpy())
    assert f.verdict == "warn" and f.rows == tuple(games_end.tolist())  # the simulator's end_of_round
    assert f.episodes == tuple(range(ctx.n_episodes)) and f.evidence["rewards_differ"] == games_end.size
    assert f.evidence["dones_differ"] == 0 and f.evidence["max_abs_difference"] == 1.0
    assert finding(findings, "round_delta").verdict == "pass"
    # the same comparison check_plugin's convention warning makes
    runs = convention_runs(kanachan, eor, isolate=False)
    diff = compare_outputs(runs.rewards["simulation"], runs.dones["simulation"], runs.rewards["offline"],
                           runs.dones["offline"])
    assert diff["rewards"] == int(runs.reward_changed.sum()) and diff["first_row"] == games_end[0]
    # kanachan pads by definition: nothing to probe
    [n_a] = [g for g in run("trap.terminal_next_state", ctx) if g.candidate == "eor"]
    assert n_a.verdict == "n/a" and "padding is part of its definition" in n_a.summary


def test_offline_simulation_is_not_applicable_to_steps(frame, tmp_path):
    ctx = build_context(frame, [write(tmp_path, "clean", CLEAN), "dense"])
    assert {f.candidate: f.verdict for f in run("trap.offline_simulation", ctx)} == {"clean": "n/a", "dense": "n/a"}


def test_reward_changes_is_compare_outputs_rule():
    rng = np.random.default_rng(5)
    a = rng.normal(size=200)
    b = a.copy()
    b[rng.choice(200, 20, replace=False)] += rng.choice([1e-12, 1e-3, 1.0], size=20)
    a[3] = b[3] = np.nan
    mask = reward_changes(b, a)
    diff = compare_outputs(b, np.zeros(200, bool), a, np.zeros(200, bool))
    assert int(mask.sum()) == diff["rewards"] and int(np.argmax(mask)) == diff["first_row"]
