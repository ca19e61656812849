"""The potential-shaping test: the least-squares potential, the telescoping check, and the diagnostics.

Data are built so that the truth is known: a random walk on a chain (integer states, some episodes
terminated, some truncated with their final state, a few truncated without), 2-D continuous random
walks with linear and quadratic potentials, and the committed MountainCar recording with plug-ins.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.analysis import shaping
from rewardlab.analysis.scopes import episode_end_expr
from rewardlab.analysis.potential_bases import register_basis, registered_bases, unregister_basis
from rewardlab.analysis.shaping import fit_potential, fit_potential_reference, reward_scale
from rewardlab.analysis.telescoping import telescoping_check, telescoping_check_reference
from rewardlab.contracts import get_contract
from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FrameSpec, StateColumn, attached
from rewardlab.diagnostics.base import Candidate, DiagnosisContext, DiagnosisOptions, registered_diagnostics
from rewardlab.diagnostics.shaping import run_shaping, run_telescoping

ROOT = Path(__file__).resolve().parents[1]
GAMMA = 0.9
N_STATES = 20


# --------------------------------------------------------------------------
# Data whose truth is known
# --------------------------------------------------------------------------


def chain_walks(episodes=200, limit=60, seed=0, n_states=N_STATES):
    """Random walks on a chain: terminate at either end, truncated at ``limit`` steps.

    Returns per-row ``s``, ``s'`` (the real next state, also after a truncation), terminated, truncated,
    and the episode starts ``[E + 1]``."""
    rng = np.random.default_rng(seed)
    s, nxt, term, trunc, starts = [], [], [], [], [0]
    for _ in range(episodes):
        x = int(rng.integers(1, n_states - 1))
        for t in range(limit):
            y = x + int(rng.choice([-1, 1]))
            ended = y in (0, n_states - 1)
            s.append(x), nxt.append(y), term.append(ended), trunc.append(t == limit - 1 and not ended)
            x = y
            if ended or t == limit - 1:
                break
        starts.append(len(s))
    return np.array(s), np.array(nxt), np.array(term), np.array(trunc), np.array(starts)


def shaping_of(phi, s, nxt, term, gamma=GAMMA):
    """``gamma * phi(s') - phi(s)`` with the terminal potential 0 (``phi`` indexed by state)."""
    return gamma * np.where(term, 0.0, phi[nxt]) - phi[s]


def chain_frame(s, nxt, term, trunc, starts, *, drop_final=()):
    """A steps frame of the walks: ``obs`` and ``final_obs`` (held on the last rows, except the episodes in
    ``drop_final``)."""
    e = starts.size - 1
    episode = np.repeat(np.arange(e), np.diff(starts))
    last = np.zeros(s.size, dtype=bool)
    last[starts[1:] - 1] = True
    final = [int(nxt[i]) if last[i] and episode[i] not in drop_final else None for i in range(s.size)]
    frame = pl.DataFrame({"episode": episode, "t": np.arange(s.size) - starts[episode], "obs": s,
                          "final_obs": pl.Series(final, dtype=pl.Int64), "terminated": term, "truncated": trunc})
    spec = FrameSpec(name="chain", episode=("episode",), step="t", terminated="terminated", truncated="truncated",
                     states=(StateColumn("obs", None, "int64", -1, final="final_obs"),), contract="steps")
    return frame, spec


def context(frame, spec, candidates, base, contract="steps", **options):
    """A DiagnosisContext built from the spec (as rewardlab.diagnostics.run will)."""
    end = frame.select(episode_end_expr(frame.columns, spec)).to_series().to_numpy()
    starts = np.r_[0, np.flatnonzero(end) + 1].astype(np.int64)
    episode_of_row = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    term = frame[spec.terminated].to_numpy().astype(bool)
    trunc = frame[spec.truncated].to_numpy().astype(bool)
    term = term | (end & ~trunc)
    return DiagnosisContext(frame, spec, get_contract(contract), tuple(candidates), base,
                            DiagnosisOptions(gamma=options.pop("gamma", GAMMA), **options), episode_of_row, starts,
                            term, trunc)


@pytest.fixture(scope="module")
def chain():
    s, nxt, term, trunc, starts = chain_walks()
    rng = np.random.default_rng(1)
    phi = rng.normal(size=N_STATES)
    base = rng.normal(size=s.size)
    return s, nxt, term, trunc, starts, phi, base


# --------------------------------------------------------------------------
# fit_potential
# --------------------------------------------------------------------------


def test_exact_shaping_is_shaping(chain):
    s, nxt, term, trunc, starts, phi, _ = chain
    assert trunc.any() and term.any()
    fit = fit_potential(shaping_of(phi, s, nxt, term), s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
    assert fit.verdict(1e-9) == "shaping"
    assert fit.max_abs_residual < 1e-13
    assert fit.dof == s.size - fit.rank > 0 and fit.dof_exact
    # the potential is recovered up to nothing (terminal phi = 0 pins it): phi of every visited state
    assert np.allclose(fit.potential, phi[s], atol=1e-12)


def test_bonus_on_one_state_is_not_shaping_though_r2_is_near_one(chain):
    s, nxt, term, trunc, starts, phi, _ = chain
    diff = shaping_of(phi, s, nxt, term) + 0.1 * (s == 3)
    fit = fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
    assert fit.verdict(1e-6) == "not shaping"
    assert fit.r_squared > 0.999  # why R^2 is never judged
    assert 0.03 < fit.max_abs_residual < 0.1
    # located up to shaping: the worst rows are exactly the rows touching state 3 (leaving or entering it)
    touch = np.flatnonzero((s == 3) | ((nxt == 3) & ~term))
    worst = fit.breaking_rows(1e-6)[:touch.size]
    assert set(worst.tolist()) == set(touch.tolist())
    ref = fit_potential_reference(diff, s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
    assert np.allclose(fit.residuals, ref["residuals"], atol=1e-12)


def test_every_state_seen_once_cannot_tell():
    rng = np.random.default_rng(3)
    s = np.arange(0, 200, 2)  # 50 episodes of 2 steps through distinct states
    nxt = s + 1
    term = np.zeros(100, dtype=bool)
    term[1::2] = True
    nxt[0::2] = s[1::2]
    for diff in (rng.normal(size=100), np.zeros(100)):
        fit = fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
        assert fit.dof == 0 and fit.n_testable == 0
        assert fit.verdict(1e-6) == "cannot tell"
        assert fit.max_abs_residual < 1e-10  # anything fits


def continuous_walks(n=3000, seed=4):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, 2))
    nxt = s + 0.3 * rng.normal(size=(n, 2))
    term = rng.random(n) < 0.05
    return s, nxt, term


def test_continuous_linear_and_quadratic_potentials():
    s, nxt, term = continuous_walks()
    lin = lambda x: 2.0 * x[:, 0] - 0.5 * x[:, 1] + 3.0  # noqa: E731
    quad = lambda x: x[:, 0] ** 2 + x[:, 0] * x[:, 1]  # noqa: E731
    for phi, linear_ok in ((lin, True), (quad, False)):
        diff = GAMMA * np.where(term, 0.0, phi(nxt)) - phi(s)
        as_linear = fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA)
        as_quadratic = fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA, basis="quadratic")
        assert as_linear.verdict(1e-6) == ("shaping" if linear_ok else "not shaping")
        assert as_quadratic.verdict(1e-6) == "shaping"
        assert as_quadratic.relative_residual < 1e-10
        assert as_linear.basis == "linear" and as_linear.n_features == 3 and as_quadratic.n_features == 6
    assert fit_potential(np.zeros(3000), s, nxt, terminated=term, gamma=GAMMA, basis="auto").basis == "linear"


@pytest.mark.parametrize("basis", ["tabular", "linear", "quadratic"])
def test_fit_matches_plain_loop(basis):
    rng = np.random.default_rng(5)
    s = rng.integers(0, 6, size=(300, 2))
    nxt = rng.integers(0, 6, size=(300, 2))
    term = rng.random(300) < 0.1
    diff = rng.normal(size=300)
    fit = fit_potential(diff, s, nxt, terminated=term, gamma=0.95, basis=basis)
    ref = fit_potential_reference(diff, s, nxt, terminated=term, gamma=0.95, basis=basis)
    assert np.allclose(fit.residuals, ref["residuals"], atol=1e-9)
    assert fit.rank == ref["rank"] and fit.dof == ref["dof"]
    assert np.allclose(fit.leverage, ref["leverage"], atol=1e-8)
    assert fit.relative_residual == pytest.approx(ref["relative_residual"], rel=1e-9)


def test_iterative_path_matches_plain_loop(chain, monkeypatch):
    """Above DENSE_LIMIT features the fit runs conjugate gradients; rank and leverage are estimated."""
    s, nxt, term, trunc, starts, phi, _ = chain
    monkeypatch.setattr(shaping, "DENSE_LIMIT", 4)
    for diff, want in ((shaping_of(phi, s, nxt, term), "shaping"),
                       (shaping_of(phi, s, nxt, term) + 0.1 * (s == 3), "not shaping")):
        fit = fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
        ref = fit_potential_reference(diff, s, nxt, terminated=term, gamma=GAMMA, basis="tabular")
        assert not fit.dof_exact and fit.converged and fit.iterations > 0
        assert np.allclose(fit.residuals, ref["residuals"], atol=1e-8)
        assert fit.verdict(1e-6) == want
        assert abs(fit.dof - ref["dof"]) < 0.2 * ref["dof"]


def test_user_registered_basis():
    s, nxt, term = continuous_walks(seed=6)
    norm = lambda x: -np.linalg.norm(x, axis=1)  # noqa: E731
    diff = GAMMA * np.where(term, 0.0, norm(nxt)) - norm(s)
    register_basis("norm", lambda x: np.column_stack([np.ones(len(x)), np.linalg.norm(x, axis=1)]))
    try:
        assert "norm" in registered_bases()
        assert fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA, basis="norm").verdict(1e-6) == "shaping"
        assert fit_potential(diff, s, nxt, terminated=term, gamma=GAMMA).verdict(1e-6) == "not shaping"
        with pytest.raises(ParameterError, match="already a registered basis"):
            register_basis("norm", len)
    finally:
        unregister_basis("norm")
    assert "norm" not in registered_bases()


def test_user_basis_of_ids_aggregates_states():
    """A basis may return integer ids: one indicator per id (here: the state's parity)."""
    s, nxt, term, _, _ = chain_walks(episodes=50)
    phi = np.where(np.arange(N_STATES) % 2, 1.5, -0.5)
    register_basis("parity", lambda x: x[:, 0] % 2)
    try:
        fit = fit_potential(shaping_of(phi, s, nxt, term), s, nxt, terminated=term, gamma=GAMMA, basis="parity")
        assert fit.verdict(1e-9) == "shaping" and fit.n_features == 2
    finally:
        unregister_basis("parity")


def test_parameter_errors():
    s = np.arange(4)
    term = np.zeros(4, dtype=bool)
    with pytest.raises(ParameterError, match="next_states"):
        fit_potential(np.zeros(4), s, s[:3], terminated=term, gamma=0.9)
    with pytest.raises(ParameterError, match="basis"):
        fit_potential(np.zeros(4), s, s, terminated=term, gamma=0.9, basis="cubic")
    with pytest.raises(ParameterError, match="gamma"):
        fit_potential(np.zeros(4), s, s, terminated=term, gamma=1.5)
    with pytest.raises(ParameterError, match="finite"):
        fit_potential(np.array([0.0, np.nan, 0.0, 0.0]), s, s, terminated=term, gamma=0.9)
    with pytest.raises(ParameterError, match="terminated"):
        fit_potential(np.zeros(4), s, s, terminated=np.zeros(3, bool), gamma=0.9)
    register_basis("broken", lambda x: np.zeros((2, 2)))
    try:
        with pytest.raises(ParameterError, match="should map states"):
            fit_potential(np.zeros(4), s, s, terminated=term, gamma=0.9, basis="broken")
    finally:
        unregister_basis("broken")
    with pytest.raises(ParameterError, match="'auto'"):
        register_basis("auto", len)
    with pytest.raises(ParameterError, match="registered by the user"):
        unregister_basis("tabular")
    with pytest.raises(ParameterError, match="episode_starts"):
        telescoping_check(np.zeros(4), np.array([0, 2]), gamma=0.9, start_keys=np.zeros(1), tolerance=0.0)
    with pytest.raises(ParameterError, match="start_keys"):
        telescoping_check(np.zeros(4), np.array([0, 2, 4]), gamma=0.9, start_keys=np.zeros(3), tolerance=0.0)
    assert reward_scale(np.zeros(2)) == 1.0


# --------------------------------------------------------------------------
# telescoping_check
# --------------------------------------------------------------------------


def test_telescoping_exact_and_bonus(chain):
    s, nxt, term, trunc, starts, phi, _ = chain
    last = starts[1:] - 1
    keys = dict(start_keys=s[starts[:-1]], end_keys=nxt[last], truncated_last=trunc[last])
    exact = telescoping_check(shaping_of(phi, s, nxt, term), starts, gamma=GAMMA, tolerance=1e-9, **keys)
    assert exact.n_groups > 5 and exact.broken.size == 0 and exact.max_spread < 1e-12
    # the identity itself: -phi(s_0) for a terminated episode
    ended = np.flatnonzero(term[last])
    assert np.allclose(exact.returns[ended], -phi[s[starts[:-1]][ended]], atol=1e-12)
    diff = shaping_of(phi, s, nxt, term) + 0.1 * (s == 3)
    bonus = telescoping_check(diff, starts, gamma=GAMMA, tolerance=1e-6, **keys)
    ref = telescoping_check_reference(diff, starts, gamma=GAMMA, tolerance=1e-6, **keys)
    assert bonus.broken.size > 0
    assert np.allclose(bonus.returns, ref["returns"], atol=1e-12)
    found = {frozenset(np.flatnonzero(bonus.group == g).tolist()) for g in bonus.broken}
    assert found == ref["broken"]
    assert set(bonus.episodes.tolist()) == set().union(*ref["broken"])
    assert bonus.n_groups == sum(len(m) > 1 for m in ref["groups"].values())
    # every episode of a broken group visits state 3 or shares its start with one that does
    visits = {e for e in range(starts.size - 1) if (s[starts[e]:starts[e + 1]] == 3).any()}
    assert all(group & visits for group in ref["broken"])


def test_telescoping_truncated_needs_end_state():
    # two truncated episodes from state 0, with different end states: not comparable
    diff = np.array([1.0, 2.0, 5.0, 7.0])
    starts = np.array([0, 2, 4])
    args = dict(gamma=0.5, start_keys=np.array([0, 0]), truncated_last=np.array([True, True]), tolerance=1e-9)
    assert telescoping_check(diff, starts, end_keys=np.array([1, 2]), **args).n_groups == 0
    same = telescoping_check(diff, starts, end_keys=np.array([1, 1]), **args)
    assert same.n_groups == 1 and same.broken.size == 1
    without = telescoping_check(diff, starts, **args)
    assert (without.group == -1).all() and without.n_groups == 0


# --------------------------------------------------------------------------
# The diagnostics
# --------------------------------------------------------------------------


def test_diagnostic_registered_with_doc():
    found = registered_diagnostics()
    assert found["shaping"].order < found["shaping.telescoping"].order
    assert "Ng, Harada and Russell 1999" in found["shaping"].doc and "R^2" in found["shaping"].doc
    assert "telescopes" in found["shaping.telescoping"].doc


def test_diagnostic_on_chain(chain):
    s, nxt, term, trunc, starts, phi, base_r = chain
    cut = np.flatnonzero(trunc[starts[1:] - 1])
    drop = set(cut[:3].tolist())  # three truncated episodes lose their final state
    frame, spec = chain_frame(s, nxt, term, trunc, starts, drop_final=drop)
    base = Candidate("recorded", base_r)
    shaped = Candidate("shaped", base_r + shaping_of(phi, s, nxt, term))
    bonus = Candidate("bonus", shaped.rewards + 0.1 * (s == 3))
    ctx = context(frame, spec, [base, shaped, bonus], base)
    ok, bad = run_shaping(ctx)
    assert (ok.candidate, ok.other, ok.verdict) == ("shaped", "recorded", "info")
    assert ok.summary.startswith("is potential-based shaping of recorded")
    assert ok.evidence["is_shaping"] == "yes" and ok.evidence["rows_left_out"] == 3 and ok.rows == ()
    assert ok.evidence["basis"] == "tabular" and ok.evidence["relative_residual"] < 1e-12
    assert bad.verdict == "info" and bad.evidence["is_shaping"] == "no"
    assert "may change the optimal policy" in bad.summary and "3 truncated last rows" in bad.summary
    assert bad.evidence["r_squared_not_judged"] > 0.999
    used = np.ones(s.size, dtype=bool)
    used[[starts[e + 1] - 1 for e in drop]] = False
    touch = np.flatnonzero(((s == 3) | ((nxt == 3) & ~term)) & used)
    assert set(bad.rows[:touch.size]) == set(touch.tolist())
    assert bad.episodes == ctx.episodes_of(bad.rows)
    strict = run_shaping(context(frame, spec, [shaped, bonus], base, expect_shaping=True))
    assert [f.verdict for f in strict] == ["pass", "fail"]
    ok_t, bad_t = run_telescoping(ctx)
    assert ok_t.verdict == "info" and ok_t.evidence["broken"] == 0 and ok_t.evidence["groups"] > 5
    assert bad_t.evidence["broken"] > 0 and len(bad_t.episodes) > 0
    assert bad_t.rows == tuple(int(starts[e]) for e in bad_t.episodes)


def test_diagnostic_cannot_tell_and_not_applicable():
    s = np.arange(0, 40, 2)
    nxt = s + 1
    term = np.zeros(20, dtype=bool)
    term[1::2] = True
    nxt[0::2] = s[1::2]
    starts = np.arange(0, 21, 2)
    frame, spec = chain_frame(s, nxt, term, np.zeros(20, dtype=bool), starts)
    base = Candidate("recorded", np.zeros(20))
    other = Candidate("other", np.random.default_rng(0).normal(size=20))
    (f,) = run_shaping(context(frame, spec, [other], base))
    assert f.verdict == "info" and f.evidence["is_shaping"] == "cannot tell" and f.summary.startswith("cannot tell")
    assert run_shaping(context(frame, spec, [other], base, expect_shaping=True))[0].verdict == "warn"
    assert run_telescoping(context(frame, spec, [other], base))[0].verdict == "n/a"
    (none,) = run_shaping(context(frame, spec, [other], None))
    assert none.verdict == "n/a" and "no base reward" in none.summary
    kan = run_shaping(context(frame, spec, [other], base, contract="kanachan"))
    assert kan[0].verdict == "n/a" and "kanachan" in kan[0].summary
    with pytest.raises(ParameterError, match="basis"):
        run_shaping(context(frame, spec, [other], base, basis="cubic"))


LINEAR_PLUGIN = """\
import torch
GAMMA = 0.99
def potential(obs):
    obs = obs.to(torch.float64)
    return 3.0 * obs[:, 0] - 20.0 * obs[:, 1] + 1.0
def get_reward(data, contiguous):
    after = torch.where(data["next", "terminated"], 0.0, potential(data["next", "obs"]))
    data["next", "reward"] = data["reward_recorded"] + GAMMA * after - potential(data["obs"])
"""

BONUS_PLUGIN = """\
import torch
def get_reward(data, contiguous):
    data["next", "reward"] = data["reward_recorded"] + 0.5 * (data["obs"][:, 1] > 0).to(torch.float64)
"""


def _mountaincar_context(frame, names, base, **options):
    spec = attached(frame)
    cands = [Candidate(n, frame[f"reward_{n}"].to_numpy().astype(np.float64)) for n in names]
    return context(frame, spec, cands, base, gamma=0.99, **options)


def test_end_to_end_mountaincar(tmp_path):
    frame = rewardlab.load(ROOT / "data/gym/mountaincar_scripted.parquet")
    (tmp_path / "linear_shaping.py").write_text(LINEAR_PLUGIN)
    (tmp_path / "velocity_bonus.py").write_text(BONUS_PLUGIN)
    applied = rewardlab.apply_plugins(frame, [tmp_path / "linear_shaping.py", tmp_path / "velocity_bonus.py",
                                              ROOT / "data/plugins/steps/potential_shaping.py"])
    recorded = Candidate("recorded", applied["reward_recorded"].to_numpy().astype(np.float64))
    ctx = _mountaincar_context(applied, ["linear_shaping", "velocity_bonus"], recorded)
    lin, bonus = run_shaping(ctx)
    assert lin.verdict == "info" and lin.evidence["is_shaping"] == "yes" and lin.evidence["basis"] == "linear"
    assert bonus.evidence["is_shaping"] == "no" and "in the linear basis" in bonus.summary
    assert len(bonus.rows) > 0 and bonus.episodes
    # the shipped plug-in's potential is -||obs||: not linear, but in a registered basis that holds it
    zero = Candidate("zero", np.zeros(applied.height))
    register_basis("obs_norm", lambda x: np.column_stack([np.ones(len(x)), np.linalg.norm(x, axis=1)]))
    try:
        (norm,) = run_shaping(_mountaincar_context(applied, ["potential_shaping"], zero, basis="obs_norm"))
        (as_linear,) = run_shaping(_mountaincar_context(applied, ["potential_shaping"], zero))
    finally:
        unregister_basis("obs_norm")
    assert norm.evidence["is_shaping"] == "yes", norm.summary
    assert as_linear.evidence["is_shaping"] == "no"
