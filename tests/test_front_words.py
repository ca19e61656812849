"""Mahjong words only on mahjong data, places read the same everywhere, and the reward-scale advice only where
the contract asks for it (issue 23, "Advice in the words of the front you are using")."""

from __future__ import annotations

import html
import warnings

import numpy as np
import polars as pl
import pytest

import rewardlab
from rewardlab.cli import build_parser
from rewardlab.analysis.episodes import episode_detail
from rewardlab.contracts import get_contract
from rewardlab.contracts.advice import scale_advice, warn_outside
from rewardlab.contracts.checks import RewardScale, reward_scale
from rewardlab.core.spec import FrameSpec, attach
from rewardlab.plugins import check_plugin
from rewardlab.sessions.episodes import PLACES, episode_tables, place_label
from rewardlab.sessions.normalization import NormalizationSession, data_scopes

CARTPOLE = "data/gym/cartpole_random.parquet"
SCALE_RECORDED = "data/plugins/steps/scale_recorded.py"
KANACHAN_WORDS = ("kanachan", "end_of_round", "end_of_game", "annotation", "round")


@pytest.fixture(scope="module")
def cartpole():
    return rewardlab.load(CARTPOLE)


@pytest.fixture(scope="module")
def kanachan_rewards(small_frame):
    from rewardlab.domains.mahjong.families import Points

    return Points.from_preset("raw").with_columns(small_frame, "score")


# --------------------------------------------------------------------------
# the normalization panel offers the scopes the data has
# --------------------------------------------------------------------------


def test_a_step_table_is_offered_no_mahjong_scopes(cartpole, kanachan_rewards):
    s = NormalizationSession(cartpole, reward="recorded")
    assert s.scopes == ("all", "nonzero", "episode_end", "episode_return", "trajectory_return")
    assert s.scope == "episode_end"  # the default on data that is not kanachan's
    kanachan = NormalizationSession(kanachan_rewards, reward="score")
    assert kanachan.scopes == ("all", "nonzero", "boundary", "episode_end", "episode_return", "trajectory_return",
                               "end_of_round", "end_of_game")
    assert kanachan.scope == "end_of_game"  # unchanged on kanachan data
    # a spec with boundary flags of its own names: boundary, but no kanachan words
    spec = FrameSpec(name="levels", episode=("e",), terminated="end", boundaries=("level_done",))
    frame = pl.DataFrame({"e": [0, 0, 0], "end": [False, False, True], "level_done": [False, True, False],
                          "reward_a": [1.0, 2.0, 3.0]})
    assert data_scopes(frame, spec) == ("all", "nonzero", "boundary", "episode_end", "episode_return",
                                        "trajectory_return")


def test_kanachan_scope_words_on_a_step_table_select_the_same_steps(cartpole):
    s = NormalizationSession(cartpole, reward="recorded", scope="end_of_game")
    assert s.scope == "episode_end"
    ends = cartpole.filter(pl.col("terminated") | pl.col("truncated"))["reward_recorded"].to_numpy()
    assert s.results.before.count == ends.size == 50
    s.scope = "boundary"  # no sub-episodes: the episode ends
    assert s.scope == "episode_end" and s.results.before.count == ends.size
    s.scope = "end_of_round"
    assert s.scope == "episode_end"


def test_the_panel_shows_only_the_data_scopes(cartpole, kanachan_rewards):
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets import NormalizationPanel

    panel = NormalizationPanel(cartpole, reward="recorded")
    options = tuple(panel.scope.options)
    assert options == panel.session.scopes and not {"end_of_round", "end_of_game", "boundary"} & set(options)
    panel.scope.value = "all"
    assert panel.session.scope == "all" and panel.error.value == ""
    assert "end_of_game" in NormalizationPanel(kanachan_rewards, reward="score").scope.options


# --------------------------------------------------------------------------
# check-plugin in the data's own words
# --------------------------------------------------------------------------


def test_check_plugin_on_a_step_table_speaks_of_its_own_spec(cartpole):
    report = check_plugin(cartpole, SCALE_RECORDED, progress=False, isolate=False)
    text = str(report)
    assert report.ok and report.contract == "steps" and report.data == "gymnasium"
    assert "kanachan" not in text, text
    assert "('gymnasium' data, steps contract)" in text
    assert "what a trainer using the steps contract receives" in text
    # the scale (mean 8.1, std 0: far from 0 / 1) is a fact here, not kanachan's advice
    assert report.scale.far and not report.scale_asked and not report.scale_warning
    assert "reward scale: mean 8.127" in text and "WARNING" not in text


def test_check_plugin_on_kanachan_data_keeps_kanachan_words(small_frame, tmp_path):
    plugin = tmp_path / "doubled.py"
    plugin.write_text("def get_reward(data, contiguous):\n"
                      "    data['next', 'reward'] = data['next', 'done'].to(torch.float64) * 50.0\n")
    report = check_plugin(small_frame, plugin, progress=False, isolate=False, batch_sizes=(64,))
    text = str(report)
    assert report.contract == "kanachan" and report.scale_asked and report.scale_warning
    assert "reward scale: WARNING far from mean 0 / std 1" in text
    assert "what kanachan's trainer receives" in text and "it runs in kanachan's trainer" in text


def test_the_scale_advice_is_the_contract_s():
    far = RewardScale(8.0, 0.0, 3, 8.0, 0.0, 3)
    near = reward_scale(np.array([1.0, -1.0]), np.array([False, True]))
    assert scale_advice(get_contract("kanachan"), far) and not scale_advice(get_contract("kanachan"), near)
    assert not scale_advice(get_contract("steps"), far)
    assert not scale_advice(get_contract("kanachan"), None)


def test_warn_outside_points_at_the_caller_s_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_outside(UserWarning("here"))
    assert caught[0].filename == __file__


def test_cli_help_names_any_format():
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse keeps them there
    for command, option in (("check-plugin", "--data"), ("apply", "dataset")):
        [action] = [a for a in sub[command]._actions if option in (a.dest, *a.option_strings)]  # noqa: SLF001
        assert "annotation" not in action.help, (command, action.help)
    [data] = [a for a in sub["check-plugin"]._actions if "--data" in a.option_strings]  # noqa: SLF001
    assert data.help.startswith("data file or dataset folder")
    assert "replay buffer" not in sub["check-plugin"].description


# --------------------------------------------------------------------------
# the drill-down: rounds only for mahjong, places as the plots say them
# --------------------------------------------------------------------------


def test_an_episode_without_sub_episodes_shows_no_rounds(cartpole):
    from rewardlab.sessions import ComparisonSession

    detail = ComparisonSession(cartpole).episode(3)
    shown = episode_tables(detail)
    assert shown.segments is None and shown.segments_title is None
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets.episodes import EpisodeView

    view = EpisodeView()
    view.show(detail)
    assert "round" not in view.table.value and "sub-episode" not in view.table.value
    spec = FrameSpec(name="levels", episode=("e",), terminated="end", boundaries=("level_done",))
    frame = attach(pl.DataFrame({"e": [0, 0, 0], "end": [False, False, True], "level_done": [False, True, False],
                                 "reward_a": [1.0, 2.0, 3.0]}), spec)
    view.show(episode_detail(frame, 0))
    assert html.escape("sub-episodes (each ends at level_done or the episode's end)") in view.table.value
    assert "round" not in view.table.value


def test_places_read_as_the_by_rank_bars_say(kanachan_rewards):
    from rewardlab.sessions import RankingTuningSession

    assert [place_label(r) for r in range(4)] == ["1st", "2nd", "3rd", "4th"] == list(PLACES)
    s = RankingTuningSession(kanachan_rewards)
    for rank in sorted(set(s.table.rank.tolist())):
        detail = s.episode(s.episode_of_rank(rank))  # a click on that place's bar
        assert detail.outcome["rank"] == rank  # the data stays 0-based
        shown = episode_tables(detail)
        values = dict(zip(shown.summary["what"], shown.summary["value"]))
        assert "rank" not in values and values["place"] == PLACES[rank]
        assert "rank" not in shown.segments.columns
        assert shown.segments["place"].to_list() == [PLACES[r] for r in detail.segments["rank"].to_list()]
        assert shown.segments_title.startswith("rounds")
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets.episodes import EpisodeView

    view = EpisodeView()
    view.show(detail)
    assert PLACES[rank] in view.table.value and "place" in view.table.value


def test_place_label_refuses_what_is_no_rank():
    from rewardlab.core.errors import ParameterError

    with pytest.raises(ParameterError, match="`rank` should be a final rank 0 ... 3"):
        place_label(4)
    with pytest.raises(ParameterError):
        place_label(True)
