"""Drill-down: one episode's steps, rewards and running returns, rounds (mahjong: scores and ranks), plot, session, widget."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest

from rewardlab.analysis.compare import episode_return_table
from rewardlab.analysis.episodes import episode_detail, episode_keys
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.domains.mahjong.episodes import mahjong_episode_detail
from rewardlab.plots import plot_episode

matplotlib.use("Agg")

SPEC = FrameSpec(name="steps", episode=("episode_id",), step="t", terminated="terminated",
                 truncated="truncated", boundaries=("checkpoint",))


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def steps_frame():
    rng = np.random.default_rng(7)
    rows = []
    for e, (length, how) in enumerate([(5, "terminated"), (7, "truncated"), (4, "terminated")]):
        for t in range(length):
            last = t == length - 1
            rows.append({"episode_id": 10 + e, "t": t, "terminated": last and how == "terminated",
                         "truncated": last and how == "truncated", "checkpoint": t % 3 == 2 and not last,
                         "reward_a": float(rng.normal()), "done_a": bool(rng.random() < 0.3) or last,
                         "reward_b": float(rng.integers(-2, 3))})
    return attach(pl.DataFrame(rows), SPEC)


def loop_detail(frame: pl.DataFrame, episode_id: int, names):
    """The plain loop: running returns, segment returns cut at checkpoints and the last step."""
    rows = [r for r in frame.iter_rows(named=True) if r["episode_id"] == episode_id]
    running = {n: [] for n in names}
    segs, seg = [], {n: 0.0 for n in names}
    total = {n: 0.0 for n in names}
    for i, r in enumerate(rows):
        for n in names:
            total[n] += r[f"reward_{n}"]
            seg[n] += r[f"reward_{n}"]
            running[n].append(total[n])
        if r["checkpoint"] or i == len(rows) - 1:
            segs.append((r["t"], dict(seg)))
            seg = {n: 0.0 for n in names}
    return rows, running, segs


def test_steps_frame_against_a_loop(steps_frame):
    for index, eid in enumerate((10, 11, 12)):
        rows, running, segs = loop_detail(steps_frame, eid, ["a", "b"])
        by_key = episode_detail(steps_frame, {"episode_id": eid})
        by_index = episode_detail(steps_frame, index)
        for d in (by_key, by_index):
            assert d.index == index and d.key == {"episode_id": eid} and d.length == len(rows)
            assert d.steps["t"].to_list() == [r["t"] for r in rows]
            assert d.steps.columns == ["t", "reward_a", "done_a", "return_a", "reward_b", "return_b",
                                       "checkpoint", "terminated", "truncated"]
            np.testing.assert_allclose(d.steps["return_a"].to_numpy(), running["a"], rtol=1e-12)
            np.testing.assert_allclose(d.steps["return_b"].to_numpy(), running["b"], rtol=1e-12)
            assert d.steps["done_a"].to_list() == [r["done_a"] for r in rows]
            assert d.segments["step"].to_list() == [s[0] for s in segs]
            np.testing.assert_allclose(d.segments["return_a"].to_numpy(), [s[1]["a"] for s in segs], rtol=1e-12)
            assert d.segments["length"].sum() == len(rows)
            assert d.ended == ("truncated" if eid == 11 else "terminated")
            assert d.outcome["ended"] == d.ended and d.outcome["length"] == len(rows)
        # the running return ends at the comparison's episode return
        returns = episode_return_table(steps_frame)
        assert by_key.returns["a"] == pytest.approx(returns["a"][index], rel=1e-12)
        assert by_key.returns["b"] == pytest.approx(returns["b"][index], rel=1e-12)


def test_a_stream_without_keys_is_picked_by_index():
    f = pl.DataFrame({"reward_a": [1.0, 2.0, 4.0, 8.0], "done_a": [False, True, False, True],
                      "term": [False, True, False, False]})
    d = episode_detail(f, 1, spec=FrameSpec(name="stream", terminated="term"))
    assert d.key == {} and d.steps["step"].to_list() == [0, 1] and d.steps["return_a"].to_list() == [4.0, 12.0]
    assert d.ended == "unflagged" and d.title == "episode 1"


def test_bad_episodes_are_refused_naming_the_argument(steps_frame):
    with pytest.raises(ParameterError, match=r"`episode` should be an episode index in \[0, 2\] \(the data has "
                       r"3 episodes\)\. Received 3\."):
        episode_detail(steps_frame, 3)
    with pytest.raises(ParameterError, match=r"Received -1\."):
        episode_detail(steps_frame, -1)
    with pytest.raises(ParameterError, match=r"`episode` should give exactly the episode key columns episode_id "
                       r"\(unknown: game_id\) \(missing: episode_id\)"):
        episode_detail(steps_frame, {"game_id": 10})
    with pytest.raises(ParameterError, match=r"`episode` should match an episode of the data; none has these "
                       r"key values\. Received \{'episode_id': 99\}"):
        episode_detail(steps_frame, {"episode_id": 99})
    with pytest.raises(ParameterError, match=r"`episode` should be an episode index \(int\) or a dict"):
        episode_detail(steps_frame, True)
    with pytest.raises(ParameterError, match=r"should be an episode index: the stream spec has no episode key"):
        episode_detail(pl.DataFrame({"reward_a": [1.0], "term": [True]}), {"e": 0},
                       spec=FrameSpec(name="stream", terminated="term"))


@pytest.fixture(scope="module")
def mahjong_frame(sample_frame):
    from rewardlab.domains.mahjong.families import Points, Ranking

    frame = Ranking.from_preset("top").with_columns(sample_frame, "top")
    return Points.from_preset("thousands").with_columns(frame, "points")


def loop_rank(scores, seat):
    own = scores[seat]
    return sum(1 for j in range(4) if (j < seat and scores[j] >= own) or (j > seat and scores[j] > own))


def test_kanachan_rounds_scores_and_ranks_against_a_loop(mahjong_frame):
    returns = episode_return_table(mahjong_frame, ["top", "points"])
    for index in (0, 7, returns.height - 1):
        key = {"game_id": returns["game_id"][index], "seat": returns["seat"][index]}
        d = mahjong_episode_detail(mahjong_frame, key)
        assert d.index == index and d.key == key
        rows = [r for r in mahjong_frame.select("game_id", "seat", "step", "reward_top", "reward_points",
                                                "end_of_round", "end_of_game", "results").iter_rows(named=True)
                if r["game_id"] == key["game_id"] and r["seat"] == key["seat"]]
        assert d.steps["step"].to_list() == [r["step"] for r in rows]
        np.testing.assert_allclose(d.steps["return_points"].to_numpy(),
                                   np.cumsum([r["reward_points"] for r in rows]), rtol=1e-12)
        assert d.returns["top"] == pytest.approx(returns["top"][index])
        assert d.steps["end_of_round"].to_list() == [r["end_of_round"] for r in rows]
        ends = [r for r in rows if r["end_of_round"] or r["end_of_game"]]
        seat = key["seat"]
        assert d.segments["step"].to_list() == [r["step"] for r in ends]
        assert d.segments["scores"].to_list() == [list(r["results"][4:8]) for r in ends]
        assert d.segments["deltas"].to_list() == [list(r["results"][0:4]) for r in ends]
        assert d.segments["score"].to_list() == [r["results"][4 + seat] for r in ends]
        assert d.segments["rank"].to_list() == [loop_rank(list(r["results"][4:8]), seat) for r in ends]
        final = list(rows[-1]["results"][4:8])
        assert rows[-1]["end_of_game"] and d.ended == "terminated"
        assert d.outcome["final_scores"] == final and d.outcome["final_score"] == final[seat]
        assert d.outcome["rank"] == loop_rank(final, seat) and d.outcome["seat"] == seat
        assert "results" not in d.steps.columns  # read for the rounds, not shown unless asked


def test_mahjong_detail_refuses_other_data(steps_frame):
    with pytest.raises(SpecError, match="the scores and ranks per round is a mahjong analysis and needs the "
                       "columns seat, results, end_of_round, end_of_game"):
        mahjong_episode_detail(steps_frame, 0)


def test_plot_episode(steps_frame):
    d = episode_detail(steps_frame, {"episode_id": 11})
    ax = plot_episode(d)
    lines = ax.get_lines()
    labels = [line.get_label() for line in lines]
    assert labels[:2] == [f"a (return {d.returns['a']:.4g})", f"b (return {d.returns['b']:.4g})"]
    np.testing.assert_allclose(lines[0].get_ydata(), d.steps["return_a"].to_numpy())
    checkpoints = int(d.steps["checkpoint"].sum())
    assert labels[2] == "checkpoint" and len(lines) == 2 + checkpoints + 1
    assert labels[-1] == "end (truncated)" and lines[-1].get_xdata()[0] == d.steps["t"][-1]
    assert ax.get_title() == "Return step by step: episode_id 11" and ax.get_xlabel() == "step (t)"
    np.testing.assert_allclose(ax.collections[0].get_offsets()[:, 1], [d.returns["a"], d.returns["b"]])
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().x0 > ax.get_window_extent().x1  # outside the data
    with pytest.raises(ParameterError, match="`detail` should be an EpisodeDetail"):
        plot_episode(d.steps)


def test_session_episode_from_the_disagreements(mahjong_frame):
    from rewardlab.sessions import ComparisonSession, NormalizationSession

    s = ComparisonSession(mahjong_frame, k=4)
    keys = s.disagreement_keys()
    table = s.results.disagreements
    assert len(keys) == 4 and keys == episode_keys(table, ["episode", "game_id", "seat"])
    d = s.episode(keys[0])
    assert d.key == keys[0] and d.rewards == ("top", "points")
    assert d.returns["top"] == pytest.approx(table["return_a"][0])
    assert d.returns["points"] == pytest.approx(table["return_b"][0])
    assert "rank" in d.segments.columns  # mahjong frame: rounds with scores and ranks
    row = s.episode(table.row(1, named=True))  # a row of the table, as shown
    assert row.key == keys[1] and row.index == table["episode"][1]
    assert s.episode(int(table["episode"][2])).key == keys[2]
    with pytest.raises(ParameterError, match="`episode` should be an episode index"):
        s.episode("first")
    # a click on the pair's scatter: the nearest point's episode
    far = table.row(0, named=True)
    assert s.episode_near(far["return_a"], far["return_b"]) == keys[0]
    with pytest.raises(ParameterError, match=r"`x` should be a finite number \(a point of the pair's scatter\)"):
        s.episode_near(float("nan"), 0.0)
    n = NormalizationSession(mahjong_frame, reward="points")
    assert n.episode(keys[0]).rewards == ("points",)


def test_ranking_session_episode(sample_frame):
    from rewardlab.sessions import RankingTuningSession

    s = RankingTuningSession(sample_frame)
    d = s.episode(3)
    returns = s.step_rewards()
    ends = sample_frame["end_of_game"].to_numpy()
    assert d.returns["ranking"] == pytest.approx(float(returns[ends][3]))
    assert d.outcome["rank"] is not None and d.steps["done_ranking"].to_list()[-1]


def test_board_opens_a_disagreeing_episode(mahjong_frame):
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets import ComparisonBoard

    board = ComparisonBoard(mahjong_frame)
    s = board.session
    s.k = 3
    assert [o[1] for o in board.episode.options] == [None, *s.disagreement_keys()]
    view = board.episode_view
    assert view.detail is None and view.table.value == "" and view.layout.display == "none"
    key = board.episode.options[2][1]
    board.episode.value = key
    assert view.plot.png().startswith(b"\x89PNG") and board.error.value == "" and view.layout.display is None
    assert f"game_id {key['game_id']}, seat {key['seat']}" in view.table.value
    assert "final_scores" in view.table.value
    s.k = 2  # another list: the choice and the view go
    assert len(board.episode.options) == 3 and board.episode.value is None
    assert view.detail is None and view.table.value == "" and view.layout.display == "none"
