"""The analysis modules read episodes and terminal flags through the frame's spec, so they work on any source.

A generic steps frame (episode column ``episode_id``, step ``t``,
``terminated`` / ``truncated`` flags, plug-in columns ``reward_a`` /
``done_a``) goes through the stats scopes, returns, comparisons, normalizer
replays and a plot, each checked against a plain loop; kanachan frames give
the same results as before (their old scope names are the generic scopes).
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import polars as pl
import pytest

from analysis_data import rewards_table, with_rewards
from rewardlab.analysis.compare import (
    compare_rewards, episode_key_columns, episode_return_table, most_disagreeing_episodes, step_difference,
)
from rewardlab.core.spec import SPEC_KEY, FrameSpec, attach
from rewardlab.core.errors import FrameError, ParameterError, SpecError
from rewardlab.analysis.normalizers import normalized_rewards
from rewardlab.analysis.return_tables import episode_returns, gae, reward_to_go
from rewardlab.analysis.returns import discounted_reward_to_go
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC
from rewardlab.analysis.scopes import SCOPES, scope_values
from rewardlab.analysis.stats import (
    Moments, describe_rewards, normalization_constants, reward_moments, reward_stats,
)

matplotlib.use("Agg")

SPEC = FrameSpec(name="toy_steps", episode=("episode_id",), step="t", terminated="terminated",
                 truncated="truncated", columns=("obs",))

#: (length, how it ends) of each episode, in data order
EPISODES = [(5, "terminated"), (3, "truncated"), (1, "terminated"), (4, "truncated"), (6, "terminated"),
            (2, "truncated")]


def steps_frame(seed: int = 0) -> pl.DataFrame:
    """A steps table: rewards a and b, a plug-in done that also cuts mid-episode, values V(s), V(s')."""
    rng = np.random.default_rng(seed)
    rows = []
    for e, (length, end) in enumerate(EPISODES):
        for t in range(length):
            last = t == length - 1
            rows.append({
                "episode_id": 100 + e, "t": t, "obs": float(rng.normal()),
                "terminated": last and end == "terminated", "truncated": last and end == "truncated",
            })
    f = pl.DataFrame(rows)
    n = f.height
    last = (f["terminated"] | f["truncated"]).to_numpy()
    mid = np.zeros(n, dtype=bool)
    mid[2] = True  # a plug-in done inside episode 100
    return f.with_columns(
        reward_a=pl.Series(np.where(rng.random(n) < 0.6, rng.normal(size=n), 0.0)),
        done_a=pl.Series(last | mid),
        reward_b=pl.Series(rng.normal(size=n)),
        done_b=pl.Series(last),
        v=pl.Series(rng.normal(size=n)),
        next_v=pl.Series(rng.normal(size=n)),
    )


@pytest.fixture(scope="module")
def steps():
    return steps_frame()


# --------------------------------------------------------------------------
# plain-loop references over the rows
# --------------------------------------------------------------------------


def episode_end_loop(f: pl.DataFrame) -> list[bool]:
    return [a or b for a, b in zip(f["terminated"].to_list(), f["truncated"].to_list())]


def trajectory_end_loop(f: pl.DataFrame, name: str) -> list[bool]:
    """done_<name>, a change of episode, a terminal flag, or the last row."""
    ep = f["episode_id"].to_list()
    done = f[f"done_{name}"].to_list()
    ends = episode_end_loop(f)
    return [done[i] or ends[i] or i == len(ep) - 1 or ep[i] != ep[i + 1] for i in range(len(ep))]


def trajectory_sums_loop(r, ends) -> list[float]:
    out, acc = [], 0.0
    for x, end in zip(r, ends):
        acc += x
        if end:
            out.append(acc)
            acc = 0.0
    return out


def reward_to_go_loop(r, ends, truncated, gamma, nv=None):
    """G[t] = r[t] + gamma * G[t+1] within a trajectory; at a truncated end, + gamma * nv[t] if given."""
    out = [0.0] * len(r)
    acc = 0.0
    for t in range(len(r) - 1, -1, -1):
        if ends[t]:
            acc = gamma * nv[t] if (truncated[t] and nv is not None) else 0.0
        else:
            acc = gamma * acc
        acc = r[t] + acc
        out[t] = acc
    return np.array(out)


def gae_loop(r, v, nv, done, terminated, gamma, lmbda):
    """TorchRL's functional GAE, one step at a time: terminated zeroes the bootstrap, done cuts the sum."""
    adv = [0.0] * len(r)
    carry = 0.0
    for t in range(len(r) - 1, -1, -1):
        delta = r[t] + gamma * (0.0 if terminated[t] else nv[t]) - v[t]
        carry = delta + (0.0 if done[t] else gamma * lmbda * carry)
        adv[t] = carry
    return np.array(adv)


class RunningMeanStdLoop:
    def __init__(self):
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: float):
        delta = x - self.mean
        total = self.count + 1
        m2 = self.var * self.count + delta * delta * self.count / total
        self.mean += delta / total
        self.var = m2 / total
        self.count = total


def gymnasium_loop(r, terminated, gamma, eps):
    rms, g, out = RunningMeanStdLoop(), 0.0, []
    for x, term in zip(r, terminated):
        g = g * gamma * (1 - term) + x
        rms.update(g)
        out.append(x / math.sqrt(rms.var + eps))
    return np.array(out)


def sb3_loop(r, done, gamma, eps, clip):
    rms, g, out = RunningMeanStdLoop(), 0.0, []
    for x, d in zip(r, done):
        g = g * gamma + x
        rms.update(g)
        out.append(np.float32(min(max(x / math.sqrt(rms.var + eps), -clip), clip)))  # SB3 hands float32 over
        if d:
            g = 0.0
    return np.array(out)


# --------------------------------------------------------------------------
# where the spec comes from
# --------------------------------------------------------------------------


def test_a_frame_without_spec_says_how_to_declare_one(steps):
    for call in (lambda: reward_stats(steps, "a", scope="episode_end"),
                 lambda: episode_returns(steps, "a"),
                 lambda: reward_to_go(steps, "a", gamma=0.9),
                 lambda: episode_return_table(steps),
                 lambda: normalized_rewards(steps, "a")):
        with pytest.raises(SpecError, match=r"the frame has no spec: rewardlab cannot tell where its episodes "
                           r"begin and end \(columns: episode_id, t, obs.*Declare one and pass it as spec=, "
                           r"for example spec=rewardlab\.FrameSpec\(name='steps', episode=\('episode_id',\)"):
            call()
    # scopes that need no episodes need no spec
    assert reward_stats(steps, "a", scope="nonzero").count == int((steps["reward_a"] != 0).sum())


def test_explicit_spec_and_attached_spec_are_accepted(steps):
    explicit = episode_returns(steps, "a", spec=SPEC)
    carried = episode_returns(attach(steps.clone(), SPEC), "a")
    assert explicit.equals(carried)
    # the lazy view of a frame keeps its spec, an explicit spec wins over it
    lazy = attach(steps.lazy(), SPEC)
    assert scope_values(lazy, "a", scope="episode_end").tolist() == \
        scope_values(steps, "a", scope="episode_end", spec=SPEC).tolist()
    one_stream = FrameSpec(name="stream", terminated="terminated", truncated="truncated")
    assert episode_returns(lazy, "b", spec=one_stream)["return"].to_list() == \
        pytest.approx(episode_returns(steps, "b", spec=SPEC)["return"].to_list())


def test_a_spec_stored_in_parquet_metadata_is_read(steps, tmp_path):
    import pyarrow.parquet as pq

    path = tmp_path / "steps.parquet"
    table = steps.to_arrow()
    pq.write_table(table.replace_schema_metadata({SPEC_KEY: SPEC.to_json()}), path)
    assert scope_values(path, "a", scope="episode_end").tolist() == \
        scope_values(steps, "a", scope="episode_end", spec=SPEC).tolist()


# --------------------------------------------------------------------------
# stats scopes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("name", ["a", "b"])
def test_scopes_match_loop_on_a_steps_frame(steps, name, scope):
    r = steps[f"reward_{name}"].to_list()
    ends = episode_end_loop(steps)
    if scope == "all":
        expected = r
    elif scope == "nonzero":
        expected = [x for x in r if x != 0]
    elif scope in ("episode_end", "end_of_game", "boundary", "end_of_round"):  # no boundary flags here
        expected = [x for x, end in zip(r, ends) if end]
    elif scope == "episode_return":  # whole episodes, whatever done_<name> says
        expected = trajectory_sums_loop(r, ends)
    else:
        expected = trajectory_sums_loop(r, trajectory_end_loop(steps, name))
    got = scope_values(steps, name, scope=scope, spec=SPEC)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    m = reward_moments(steps, name, scope=scope, spec=SPEC)
    ref = Moments.of(expected)
    assert m.count == ref.count and m.mean == pytest.approx(ref.mean, abs=1e-12)
    assert m.m2 == pytest.approx(ref.m2, abs=1e-9)


def test_boundary_scope_reads_the_specs_boundary_flags(steps):
    f = steps.with_columns(checkpoint=pl.Series([i % 4 == 1 for i in range(steps.height)]))
    spec = FrameSpec(name="toy_cp", episode=("episode_id",), step="t", terminated="terminated",
                     truncated="truncated", boundaries=("checkpoint",))
    keep = [c or e for c, e in zip(f["checkpoint"].to_list(), episode_end_loop(f))]
    expected = [x for x, k in zip(f["reward_b"].to_list(), keep) if k]
    np.testing.assert_allclose(scope_values(f, "b", scope="boundary", spec=spec), expected, atol=1e-12)
    np.testing.assert_allclose(scope_values(f, "b", scope="end_of_round", spec=spec), expected, atol=1e-12)
    d = describe_rewards(f, "b", scopes=("boundary", "episode_end"), quantiles=(), spec=spec)
    assert d["count"].to_list() == [len(expected), len(EPISODES)]
    c = normalization_constants(f, "b", scope="episode_end", spec=spec)
    assert (c.count, c.scope) == (len(EPISODES), "episode_end")


def test_scope_needing_a_flag_the_data_lacks_names_it(steps):
    without = steps.drop("truncated")
    with pytest.raises(FrameError, match=r"scope 'episode_end' needs the column 'truncated', which the data "
                       r"lacks\. Pass the full frame .*join the rewards table to the dataset on episode_id, t"):
        reward_stats(without, "a", scope="episode_end", spec=SPEC)
    cp = FrameSpec(name="toy_cp", episode=("episode_id",), terminated="terminated", boundaries=("checkpoint",))
    with pytest.raises(FrameError, match=r"scope 'boundary' needs the column 'checkpoint'"):
        reward_stats(steps, "a", scope="boundary", spec=cp)
    rewards_only = steps.select("reward_a", "done_a")
    with pytest.raises(SpecError, match=r"scope 'episode_end' needs episodes, and the rewards spec has no "
                       r"episode column and no terminal flag\. Pass the full frame, or declare"):
        reward_stats(rewards_only, "a", scope="episode_end")
    # a rewards-only table is one stream cut at done_<name>
    assert scope_values(rewards_only, "a", scope="trajectory_return").tolist() == pytest.approx(
        trajectory_sums_loop(steps["reward_a"].to_list(), steps["done_a"].to_list()))


def test_kanachan_old_scope_names_are_the_generic_scopes(sample_frame):
    frame = with_rewards(sample_frame)
    for old, new in (("end_of_game", "episode_end"), ("end_of_round", "boundary")):
        for name in ("top", "delta"):
            a = scope_values(frame, name, scope=old)
            assert a.tolist() == scope_values(frame, name, scope=new).tolist()
            assert a.tolist() == scope_values(frame, name, scope=old, spec=KANACHAN_SPEC).tolist()
    eog = frame["end_of_game"].to_numpy()
    assert scope_values(frame, "top", scope="episode_end").tolist() == frame["reward_top"].to_numpy()[eog].tolist()
    # kanachan's outputs keep their columns
    assert episode_returns(frame, "delta").columns == ["episode", "game_id", "seat", "start", "length", "return"]
    table = rewards_table(frame)
    assert episode_return_table(table).columns[:3] == ["episode", "game_id", "seat"]


# --------------------------------------------------------------------------
# returns
# --------------------------------------------------------------------------


def test_episode_returns_report_how_each_trajectory_ended(steps):
    out = episode_returns(steps, "a", spec=SPEC)
    assert out.columns == ["episode", "episode_id", "start", "length", "return", "terminated", "truncated"]
    ends = trajectory_end_loop(steps, "a")
    np.testing.assert_allclose(out["return"].to_numpy(), trajectory_sums_loop(steps["reward_a"].to_list(), ends),
                               atol=1e-12)
    last_rows = [i for i, e in enumerate(ends) if e]
    assert out["terminated"].to_list() == [steps["terminated"][i] for i in last_rows]
    assert out["truncated"].to_list() == [steps["truncated"][i] for i in last_rows]
    # the plug-in's mid-episode done ends a trajectory that neither terminated nor was truncated
    assert out.row(0, named=True) | {"return": None} == {
        "episode": 0, "episode_id": 100, "start": 0, "length": 3, "return": None, "terminated": False,
        "truncated": False}
    assert out["episode_id"].to_list() == [100, 100, 101, 102, 103, 104, 105]


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.99, 1.0])
def test_reward_to_go_truncation_bootstraps_termination_zeroes(steps, gamma):
    r = steps["reward_a"].to_numpy()
    ends = trajectory_end_loop(steps, "a")
    trunc = steps["truncated"].to_list()
    nv = steps["next_v"].to_numpy()
    recorded = reward_to_go(steps, "a", gamma=gamma, spec=SPEC)
    np.testing.assert_allclose(recorded.to_numpy(), reward_to_go_loop(r, ends, trunc, gamma), atol=1e-12)
    boot = reward_to_go(steps, "a", gamma=gamma, next_value="next_v", spec=SPEC)
    np.testing.assert_allclose(boot.to_numpy(), reward_to_go_loop(r, ends, trunc, gamma, nv), atol=1e-12)
    # flagged: the steps whose value is a recorded part's return
    flagged = reward_to_go(steps, "a", gamma=gamma, spec=SPEC, flag_truncated=True)
    assert flagged.columns == ["return_to_go_a", "truncated"]
    ep = steps["episode_id"].to_list()
    truncated_episodes = {ep[i] for i, x in enumerate(trunc) if x}
    assert flagged["truncated"].to_list() == [e in truncated_episodes for e in ep]
    assert not reward_to_go(steps, "a", gamma=gamma, next_value="next_v", spec=SPEC,
                            flag_truncated=True)["truncated"].any()


def test_discounted_reward_to_go_bootstrap_matches_loop():
    rng = np.random.default_rng(5)
    for n in (1, 7, 200):
        r = rng.normal(size=n)
        done = rng.random(n) < 0.2
        done[-1] = True
        trunc = done & (rng.random(n) < 0.5)
        nv = np.where(trunc, rng.normal(size=n), np.nan)  # NaN where it is never read
        for gamma in (0.0, 0.9, 1.0):
            got = discounted_reward_to_go(r, done, gamma=gamma, terminated=done & ~trunc, next_value=nv)
            np.testing.assert_allclose(got, reward_to_go_loop(r, done, trunc, gamma, nv), atol=1e-12)
    with pytest.raises(ParameterError, match=r"`next_value` should be given: 1 trajectories end done but not "
                       r"terminated \(first at step 1\)"):
        discounted_reward_to_go(np.ones(2), np.array([False, True]), gamma=0.5, terminated=np.zeros(2, bool))


@pytest.mark.parametrize("gamma, lmbda", [(0.99, 0.95), (1.0, 1.0), (0.5, 0.0)])
def test_gae_truncation_uses_next_value_termination_zero(steps, gamma, lmbda):
    out = gae(steps, "a", value="v", next_value="next_v", gamma=gamma, lmbda=lmbda, spec=SPEC)
    r, v, nv = (steps[c].to_numpy() for c in ("reward_a", "v", "next_v"))
    done = trajectory_end_loop(steps, "a")
    trunc = steps["truncated"].to_list()
    terminated = [d and not t for d, t in zip(done, trunc)]  # the plug-in's done, episode ends; never truncation
    ref = gae_loop(r, v, nv, done, terminated, gamma, lmbda)
    np.testing.assert_allclose(out["advantage"].to_numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(out["value_target"].to_numpy(), ref + v, atol=1e-10)
    # V(s') matters at a truncated step and nowhere a trajectory terminates
    i_trunc = trunc.index(True)
    i_term = steps["terminated"].to_list().index(True)
    for i, changes in ((i_trunc, gamma > 0), (i_term, False)):
        bumped = steps.with_columns(next_v=pl.Series([x + (1.0 if j == i else 0.0) for j, x in enumerate(nv)]))
        again = gae(bumped, "a", value="v", next_value="next_v", gamma=gamma, lmbda=lmbda, spec=SPEC)
        assert (again["advantage"][i] != out["advantage"][i]) == changes


def test_gae_without_next_value_refuses_truncated_steps(steps):
    first = steps["truncated"].to_list().index(True)
    with pytest.raises(ParameterError, match=rf"`next_value` should name a column holding V\(s\[t\+1\]\): 3 steps "
                       rf"are truncated \(first at row {first}\), and there the following row is another "
                       r"episode's first state\. Received None\. A truncated episode bootstraps"):
        gae(steps, "a", value="v", gamma=0.9, lmbda=0.9, spec=SPEC)
    # with termination only, the following row's value is the next state's, as before
    only_term = steps.filter(~pl.col("episode_id").is_in([101, 103, 105]))
    out = gae(only_term, "a", value="v", gamma=0.9, lmbda=0.8, spec=SPEC)
    v = only_term["v"].to_numpy()
    done = trajectory_end_loop(only_term, "a")
    ref = gae_loop(only_term["reward_a"].to_numpy(), v, np.append(v[1:], 0.0), done, done, 0.9, 0.8)
    np.testing.assert_allclose(out["advantage"].to_numpy(), ref, atol=1e-10)


# --------------------------------------------------------------------------
# comparisons
# --------------------------------------------------------------------------


def test_compare_on_a_steps_frame(steps):
    table = episode_return_table(steps, spec=SPEC)
    assert table.columns == ["episode", "episode_id", "a", "b"]
    ends = episode_end_loop(steps)
    for name in ("a", "b"):
        np.testing.assert_allclose(table[name].to_numpy(),
                                   trajectory_sums_loop(steps[f"reward_{name}"].to_list(), ends), atol=1e-12)
    assert table["episode_id"].to_list() == [100 + e for e in range(len(EPISODES))]
    cmp = compare_rewards(steps, spec=SPEC)
    assert cmp.names == ("a", "b") and cmp.episodes == len(EPISODES)
    assert cmp.pearson[0, 1] == pytest.approx(np.corrcoef(table["a"], table["b"])[0, 1], abs=1e-12)
    # the table carries its spec; a copy that lost it needs spec= to tell keys from candidates
    assert compare_rewards(table).names == ("a", "b")
    copy = table.select(pl.all())
    assert episode_key_columns(copy) == ["episode"]
    assert compare_rewards(copy, spec=SPEC).names == ("a", "b")
    worst = most_disagreeing_episodes(steps, "a", "b", k=3, spec=SPEC)
    assert worst.columns == ["episode", "episode_id", "return_a", "return_b", "z_a", "z_b", "gap"]
    za = (table["a"] - table["a"].mean()) / table["a"].std(ddof=0)
    zb = (table["b"] - table["b"].mean()) / table["b"].std(ddof=0)
    assert worst["gap"].to_list() == pytest.approx(sorted((za - zb).abs().to_list(), reverse=True)[:3])
    assert most_disagreeing_episodes(table, "a", "b", k=3).equals(worst)
    d = step_difference(steps, "a", "b")  # per step: needs no episodes
    diff = steps["reward_a"].to_numpy() - steps["reward_b"].to_numpy()
    assert d.count == steps.height and d.mean == pytest.approx(diff.mean(), abs=1e-12)


# --------------------------------------------------------------------------
# normalizer replays
# --------------------------------------------------------------------------


def test_normalizer_replays_take_terminal_flags_from_the_spec(steps):
    c = normalization_constants(steps, "a", scope="episode_end", spec=SPEC)
    out = normalized_rewards(steps, "a", constants=c, spec=SPEC, gamma=0.9, clip_reward=1.5)
    r = steps["reward_a"].to_numpy()
    done = trajectory_end_loop(steps, "a")
    trunc = steps["truncated"].to_list()
    gym_terminated = [d and not t for d, t in zip(done, trunc)]  # Gymnasium: truncation never resets
    np.testing.assert_allclose(out["gymnasium"].to_numpy(), gymnasium_loop(r, gym_terminated, 0.9, 1e-8),
                               rtol=1e-9)
    np.testing.assert_allclose(out["sb3"].to_numpy(), sb3_loop(r, done, 0.9, 1e-8, 1.5), rtol=1e-9)
    ends = np.array(episode_end_loop(steps))
    np.testing.assert_allclose(out["constants"].to_numpy(), np.where(ends, (r - c.mean) / c.std, r), atol=1e-12)


# --------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------


def test_return_distribution_plot_skips_the_specs_key_columns(steps):
    import matplotlib.pyplot as plt

    from rewardlab.plots import plot_return_distribution

    table = episode_return_table(steps, spec=SPEC)
    ax = plot_return_distribution(table)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"a ({len(EPISODES)} episodes)", f"b ({len(EPISODES)} episodes)"]
    plt.close(ax.figure)
    ax = plot_return_distribution(table.select(pl.all()), spec=SPEC)  # lost its spec: pass it
    assert len(ax.get_legend().get_texts()) == 2
    plt.close(ax.figure)


def test_an_episode_key_called_episode(steps):
    spec = FrameSpec(name="toy_episode", episode=("episode",), terminated="terminated", truncated="truncated")
    f = steps.rename({"episode_id": "episode"})
    table = episode_return_table(f, spec=spec)
    assert table.columns == ["episode", "a", "b"]
    assert table["episode"].to_list() == [100 + e for e in range(len(EPISODES))]
    assert compare_rewards(table).names == ("a", "b")
    assert episode_returns(f, "a", spec=spec).columns[:3] == ["trajectory", "episode", "start"]


# --------------------------------------------------------------------------
# sessions read the spec too
# --------------------------------------------------------------------------


def test_normalization_and_comparison_sessions_work_on_a_steps_frame():
    """The sessions take the frame's spec (explicit, or attached) and key their tables by its episodes."""
    from rewardlab.sessions import ComparisonSession, NormalizationSession

    frame = steps_frame().with_columns(reward_b=pl.col("reward_a") * 2 + 1, done_b=pl.col("done_a"))
    with pytest.raises(SpecError, match="the frame has no spec"):
        NormalizationSession(frame, reward="a", scope="episode_end")
    for session_frame, spec in ((frame, SPEC), (attach(frame.clone(), SPEC), None)):
        norm = NormalizationSession(session_frame, reward="a", scope="episode_end", spec=spec)
        ends = frame.filter(pl.col("terminated") | pl.col("truncated"))["reward_a"].to_numpy()
        assert norm.results.before.count == ends.size
        assert math.isclose(norm.results.before.mean, ends.mean(), rel_tol=1e-12)
        norm.scope = "trajectory_return"
        assert norm.results.before.count == frame["done_a"].sum()  # trajectories end at done_a
        cmp = ComparisonSession(session_frame, spec=spec)
        assert cmp.candidates == ("a", "b")
        assert cmp.results.returns.columns[:2] == ["episode", "episode_id"]
        returns = frame.group_by("episode_id", maintain_order=True).agg(pl.col("reward_a", "reward_b").sum())
        shown = cmp.results.returns
        assert shown["episode_id"].to_list() == returns["episode_id"].to_list()  # one row per episode
        np.testing.assert_allclose(shown["b"].to_numpy(), returns["reward_b"].to_numpy(), rtol=1e-12)
        expected = np.corrcoef(returns["reward_a"].to_numpy(), returns["reward_b"].to_numpy())[0, 1]
        assert cmp.results.comparison.pearson[0, 1] == pytest.approx(expected, rel=1e-12)
