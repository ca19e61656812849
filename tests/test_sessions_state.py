"""Issue 12 at the session level: pinned candidates and their comparison, undo / redo, saved state."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rewardlab.core.errors import DataFormatError, FrameError, OutputExistsError, ParameterError, RewardlabWarning
from rewardlab.sessions import (
    ComparisonSession, EpsilonScheduleSession, NormalizationSession, RankingTuningSession, Session,
)
from rewardlab.sessions import base as session_base

ROOT = Path(__file__).resolve().parents[1]
PLACES = ("1st", "2nd", "3rd", "4th")


def loop_mean_by_rank(frame: pl.DataFrame, vector, mean: float, std: float) -> list:
    """Mean normalized reward per final rank, one end-of-game row at a time (kanachan's tie rule)."""
    by_rank: dict[int, list[float]] = {k: [] for k in range(4)}
    for sparse, results in frame.filter(pl.col("end_of_game")).select("sparse", "results").rows():
        seat = sparse[6] - 71
        scores = list(results[4:8])
        score = scores[seat]
        rank = sum(1 for j in range(4) if (j < seat and scores[j] >= score) or (j > seat and scores[j] > score))
        by_rank[rank].append((float(vector[rank]) - mean) / std)
    return [statistics.fmean(v) if v else None for _, v in sorted(by_rank.items())]


def loop_episode_returns(frame: pl.DataFrame, name: str) -> list[float]:
    out, total = [], 0.0
    for reward, end in zip(frame[f"reward_{name}"].to_list(), frame["end_of_game"].to_list()):
        total += reward
        if end:
            out.append(total)
            total = 0.0
    return out


@pytest.fixture(scope="module")
def reward_frame(small_frame):
    from rewardlab.domains.mahjong.families import Points, RoundDelta

    frame = Points.from_preset("raw").with_columns(small_frame, "score")
    return RoundDelta.from_preset("thousands").with_columns(frame, "delta")


def column(table: pl.DataFrame, statistic: str, name: str):
    return table.filter(pl.col("statistic") == statistic)[name].item()


# --------------------------------------------------------------------------
# Pin and compare
# --------------------------------------------------------------------------


def test_pin_unpin_and_messages():
    s = EpsilonScheduleSession(n_steps=1000)
    seen = []
    s.observe(lambda session: seen.append(session.pins_version))
    first = s.pin()
    assert first.label == "pin 1" and s.pin("best").label == "best" and s.pin().label == "pin 2"
    assert [p.label for p in s.pinned] == ["pin 1", "best", "pin 2"] and len(seen) == 3
    assert first.kind == "epsilon" and first.parameters["n_steps"] == 1000 and first.constants is None
    assert first.summary["steps"] == 1000
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.label = "other"
    with pytest.raises(TypeError):
        first.parameters["n_steps"] = 5  # read-only mapping
    s.n_steps = 2000  # the pin keeps what it recorded
    assert s.pinned[0].parameters["n_steps"] == 1000 and s.pinned[0].summary["steps"] == 1000
    for label, text in [
        ("best", "`label` should differ from the pinned candidates' labels (pin 1, best, pin 2). Received 'best'."),
        ("live", "`label` should not be 'live', 'statistic' or '<a pin> - live' (the comparison table's "
                 "columns). Received 'live'."),
        ("  ", "`label` should be a non-empty string. Received '  '."),
    ]:
        with pytest.raises(ParameterError) as err:
            s.pin(label)
        assert str(err.value) == text
    assert s.unpin("best").label == "best" and [p.label for p in s.pinned] == ["pin 1", "pin 2"]
    with pytest.raises(ParameterError) as err:
        s.unpin("best")
    assert str(err.value) == "`label` should be one of the pinned candidates ('pin 1', 'pin 2'). Received 'best'."
    s.unpin("pin 1")
    assert s.pin().label == "pin 1"  # the first free default
    s.clear_pins()
    assert s.pinned == () and s.compare_pinned().columns == ["statistic", "live"]


def test_ranking_comparison_table_matches_a_recomputation(small_frame):
    s = RankingTuningSession(small_frame, preset="tenhou_tokujo_6dan", constants="data")
    pinned_vector, pinned_constants = s.vector, (s.mean, s.std)
    s.pin("tokujo")
    s.update(vector=(100.0, 20.0, -10.0, -200.0), auto_constants=False, mean=1.5, std=40.0)
    table = s.compare_pinned()
    assert table.columns == ["statistic", "live", "tokujo", "tokujo - live"]
    pinned = loop_mean_by_rank(small_frame, pinned_vector, *pinned_constants)
    live = loop_mean_by_rank(small_frame, (100.0, 20.0, -10.0, -200.0), 1.5, 40.0)
    for k, place in enumerate(PLACES):
        name = f"mean reward, {place} place"
        if live[k] is None:  # an absent rank: null everywhere
            assert column(table, name, "live") is None and column(table, name, "tokujo - live") is None
            continue
        assert column(table, name, "live") == pytest.approx(live[k], rel=1e-12)
        assert column(table, name, "tokujo") == pytest.approx(pinned[k], rel=1e-12)
        assert column(table, name, "tokujo - live") == pytest.approx(pinned[k] - live[k], rel=1e-9, abs=1e-12)
    p = s.results.rank_probabilities
    expected_live = sum(p[k] * (live[k] or 0.0) for k in range(4))
    assert column(table, "expected reward", "live") == pytest.approx(expected_live, rel=1e-9, abs=1e-12)
    assert column(table, "constant mean", "tokujo") == pinned_constants[0]
    pin = s.pinned[0]
    assert pin.constants["provenance"]["kind"] == "dataset" and pin.parameters["vector"] == pinned_vector
    assert s.compare_pinned("tokujo").equals(table)
    version, results, family = s.version, s.results, s.family
    again = s.pinned_results("tokujo")  # recomputed for the overlay; the live state is untouched
    assert (s.version, s.results, s.family) == (version, results, family)
    reference = RankingTuningSession(small_frame, preset="tenhou_tokujo_6dan", constants="data").results
    np.testing.assert_array_equal(again.reward, reference.reward)
    assert again.family.params == reference.family.params
    with pytest.raises(ParameterError, match=r"^`labels` should name pinned candidates \('tokujo'\)\. "
                       r"Received 'nope'\.$"):
        s.compare_pinned(["nope"])


def test_normalization_and_comparison_tables_match_a_recomputation(reward_frame):
    s = NormalizationSession(reward_frame, reward="score", scope="end_of_game")
    s.pin("eog")
    s.scope = "all"
    table = s.compare_pinned()
    values = reward_frame["reward_score"].to_numpy()
    eog = values[reward_frame["end_of_game"].to_numpy()]
    assert column(table, "before: mean", "eog") == pytest.approx(float(np.mean(eog)), rel=1e-12)
    assert column(table, "before: std", "eog") == pytest.approx(float(np.std(eog)), rel=1e-12)
    assert column(table, "before: mean", "live") == pytest.approx(float(np.mean(values)), rel=1e-12, abs=1e-12)
    assert column(table, "before: count", "eog - live") == eog.size - values.size
    assert s.pinned[0].constants["provenance"]["scope"] == "end_of_game"

    c = ComparisonSession(reward_frame, k=2)
    c.pin("both")
    c.chosen = ("delta",)
    table = c.compare_pinned()
    score, delta = loop_episode_returns(reward_frame, "score"), loop_episode_returns(reward_frame, "delta")
    assert column(table, "score: return mean", "both") == pytest.approx(statistics.fmean(score), rel=1e-12)
    assert column(table, "score: return mean", "live") is None  # not chosen any more
    assert column(table, "delta: return std", "live") == pytest.approx(statistics.pstdev(delta), rel=1e-12)
    assert column(table, "delta: return max", "both - live") == 0.0
    rho = column(table, "spearman: score vs delta", "both")
    assert rho == pytest.approx(c.pinned[0].summary["spearman: score vs delta"]) and -1.0 <= rho <= 1.0


# --------------------------------------------------------------------------
# Undo / redo
# --------------------------------------------------------------------------


def test_undo_redo_sequence_skips_refused_changes_and_notifies():
    s = EpsilonScheduleSession(n_steps=1000)
    seen = []
    s.observe(lambda session: seen.append(session.n_steps))
    assert not s.can_undo and s.undo() is False and s.redo() is False
    s.n_steps = 2000
    s.n_steps = 3000
    assert s.try_update(n_steps=0) is False  # refused: not recorded
    s.update(kind="exp", decay_steps=100)
    assert s.undo() is True and (s.kind, s.decay_steps, s.n_steps) == ("linear", 500_000, 3000)
    assert s.schedule.kind == "linear"  # the schedule object follows the parameters
    assert s.undo() and s.n_steps == 2000
    assert s.undo() and s.n_steps == 1000 and not s.can_undo and s.undo() is False
    assert s.redo() and s.n_steps == 2000 and s.can_redo
    assert seen[-4:] == [3000, 2000, 1000, 2000]  # observers told as for any change
    s.threshold = 0.5  # a new change clears the redo history
    assert not s.can_redo and s.redo() is False and s.n_steps == 2000
    s.n_steps = 2000  # no change: nothing recorded
    assert s.undo() and s.threshold == 0.1


def test_undo_history_is_bounded(monkeypatch):
    monkeypatch.setattr(session_base, "HISTORY_LIMIT", 3)
    s = EpsilonScheduleSession(n_steps=1)
    for n in range(2, 8):
        s.n_steps = n
    steps = []
    while s.undo():
        steps.append(s.n_steps)
    assert steps == [6, 5, 4]


def test_ranking_undo_restores_constants_and_their_provenance(small_frame):
    s = RankingTuningSession(small_frame, preset="top", constants="none")
    s.set_rank_value(0, 3.0)
    s.constants_from_data()
    fitted = s.provenance
    s.reset_constants()
    assert s.provenance.kind == "default"
    assert s.undo() and s.provenance == fitted and fitted.kind == "dataset"
    assert (s.mean, s.std) == (s.family.params.mean, s.family.params.std) != (0.0, 1.0)
    assert s.undo() and s.provenance.kind == "default" and s.vector[0] == 3.0
    assert s.undo() and s.vector[0] == 1.0 and not s.can_undo
    with pytest.raises(ParameterError):
        s.std = 0.0  # refused: the redo history stays
    assert s.can_redo and s.redo() and s.vector[0] == 3.0


# --------------------------------------------------------------------------
# Saved state
# --------------------------------------------------------------------------


def sessions_for(kind, small_frame, reward_frame, small_path):
    if kind == "ranking":
        s = RankingTuningSession(small_path, preset="mleague", constants="data")
        s.pin("mleague")
        s.update(vector=(9.0, 3.0, -3.0, -9.0), points=False)
        s.seed_constants()
        return s, small_path
    if kind == "epsilon":
        s = EpsilonScheduleSession(kind="exp", decay_steps=100, n_steps=5000)
        s.pin()
        s.threshold = 0.3
        return s, None
    if kind == "normalization":
        s = NormalizationSession(reward_frame, reward="delta", scope="end_of_round")
        s.pin()
        s.update(scope="all", gamma=0.9)
        return s, reward_frame
    s = ComparisonSession(small_frame, [ROOT / "data" / "plugins" / "raw_points.py",
                                        ROOT / "data" / "plugins" / "rank_top.py"])
    s.pin()
    s.update(metric="epic", k=2)
    return s, small_frame


@pytest.fixture(scope="module")
def small_path(small_frame):
    return Path(small_frame["source_file"][0]) if "source_file" in small_frame.columns else None


@pytest.mark.parametrize("kind", ["ranking", "epsilon", "normalization", "comparison"])
def test_save_and_load_round_trip(kind, small_frame, reward_frame, small_path, tmp_path):
    if kind == "ranking" and small_path is None:
        pytest.skip("the small frame does not record its file")
    s, data = sessions_for(kind, small_frame, reward_frame, small_path)
    path = s.save_state(tmp_path / "state.json")
    assert path == tmp_path / "state.json" and s.state_path == path
    saved = json.loads(path.read_text())
    assert saved["kind"] == kind and saved["format"] == 1 and len(saved["pinned"]) == 1
    assert saved["data"]["fingerprint"] == s.data_fingerprint()
    # a comparison runs only the plug-ins the call names (the file's list, passed on purpose here)
    trusted = {"plugins": ComparisonSession.saved_plugins(path)} if kind == "comparison" else {}
    loaded = Session.load_state(path, data if kind != "ranking" else None, **trusted)  # ranking: the recorded path
    assert type(loaded) is type(s) and loaded.parameters == s.parameters
    assert loaded.pinned == s.pinned and loaded.state_path == path and not loaded.can_undo
    assert loaded.live_summary() == s.live_summary()
    assert type(s).load_state(path, data, **trusted).parameters == s.parameters
    if kind == "ranking":
        assert loaded.provenance == s.provenance and loaded.family.params == s.family.params
        assert loaded.data_fingerprint() == s.data_fingerprint()
    # restore: the saved state back into a changed session, as one undoable change
    first = s.parameters
    s.clear_pins()
    if kind == "epsilon":
        s.n_steps = 7
    elif kind == "ranking":
        s.set_rank_value(0, 50.0)
    elif kind == "normalization":
        s.scope = "nonzero"
    else:
        s.k = 5
    s.restore(path)
    assert s.parameters == first and len(s.pinned) == 1
    assert s.undo() and s.parameters != first


def test_loading_against_other_data_says_the_data_differs(small_frame, sample_frame, tmp_path):
    s = RankingTuningSession(small_frame, preset="top")
    path = s.save_state(tmp_path / "top.json")
    with pytest.raises(FrameError) as err:
        RankingTuningSession.load_state(path, sample_frame)
    other = RankingTuningSession(sample_frame, preset="top")
    assert str(err.value) == (
        f"the data differs from the data the state file {path} was saved with: fingerprint expected "
        f"{s.data_fingerprint()} (in memory, {small_frame.height:,} rows), found {other.data_fingerprint()} "
        f"({sample_frame.height:,} rows). Load the state with the data it was saved with, or pass "
        "on_mismatch='warn' to apply its parameters to this data anyway")
    before = other.parameters
    with pytest.raises(FrameError, match="the data differs"):
        other.restore(path)
    assert other.parameters == before  # nothing changed
    with pytest.warns(RewardlabWarning, match="the data differs .* the state is applied anyway"):
        warned = RankingTuningSession.load_state(path, sample_frame, on_mismatch="warn")
    assert warned.vector == s.vector
    frame = small_frame.with_columns(reward_a=pl.lit(1.0), done_a=pl.col("end_of_game"))
    n = NormalizationSession(frame, reward="a", scope="all")
    npath = n.save_state(tmp_path / "n.json")
    NormalizationSession.load_state(npath, frame)  # the same data: fine
    changed = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(2.0).otherwise(pl.col("reward_a")).alias("reward_a"))
    with pytest.raises(FrameError, match="fingerprint expected blake2b-128:"):
        NormalizationSession.load_state(npath, changed)


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_malformed_state_files_name_the_file_and_the_field(tmp_path):
    s = EpsilonScheduleSession(n_steps=100)
    s.pin("a")
    good = json.loads(s.save_state(tmp_path / "good.json").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1,\n "kind": ')
    with pytest.raises(DataFormatError) as err:
        Session.load_state(bad)
    assert str(err.value).startswith(f"{bad}:2: column 10: is not JSON: Expecting value [rule: state_file]")
    cases = [
        ({**good, "format": 2}, f"{bad}: field 'format' is 2; this rewardlab (0.1.0) reads format 1"),
        ({k: v for k, v in good.items() if k != "format"}, f"{bad}: field 'format' is null;"),
        ({**good, "kind": "tuner"}, f"{bad}: field 'kind' is 'tuner', not a session kind ('"),
        ({**good, "parameters": [1]}, f"{bad}: field 'parameters' should be an object, not [1]"),
        ({**good, "parameters": {**good["parameters"], "n_steps": "many"}},
         f"{bad}: field 'parameters.n_steps' is refused: `n_steps` should be an integer. Received 'many'."),
        ({**good, "parameters": {**good["parameters"], "gamma": 0.9}},
         f"{bad}: field 'parameters' is refused: `parameter` should be one of kind,"),
        ({**good, "pinned": [{**good["pinned"][0], "summary": {"steps": "x"}}]},
         f"{bad}: field 'pinned[0].summary.steps' should be a number or null, not \"x\""),
        ({**good, "pinned": [good["pinned"][0], good["pinned"][0]]},
         f"{bad}: field 'pinned' should have distinct labels, not ['a', 'a']"),
        ({**good, "data": {"fingerprint": 3}}, f"{bad}: field 'data.fingerprint' should be a string or null, not 3"),
    ]
    for data, start in cases:
        write_json(bad, data)
        with pytest.raises(DataFormatError) as err:
            Session.load_state(bad)
        assert str(err.value).startswith(start), (str(err.value), start)
        assert "[rule: state_file]" in str(err.value)
    write_json(bad, {**good, "kind": "ranking", "pinned": []})
    with pytest.raises(DataFormatError) as err:
        EpsilonScheduleSession.load_state(bad)
    assert str(err.value).startswith(f"{bad}: field 'kind' is 'ranking'; EpsilonScheduleSession reads 'epsilon' "
                                     "(load it with RankingTuningSession.load_state)")
    before = s.parameters
    write_json(bad, {**good, "parameters": {**good["parameters"], "threshold": 3.0}})
    with pytest.raises(DataFormatError, match=r"field 'parameters\.threshold' is refused"):
        s.restore(bad)
    assert s.parameters == before and [p.label for p in s.pinned] == ["a"]  # nothing changed


def test_a_ranking_state_with_bad_constants_names_the_field(small_frame, tmp_path):
    s = RankingTuningSession(small_frame, preset="top")
    good = json.loads(s.save_state(tmp_path / "good.json").read_text())
    bad = tmp_path / "bad.json"
    for constants, start in [
        ({**good["constants"], "provenance": {"kind": "dataset", "colour": "red"}},
         f"{bad}: field 'constants.provenance' is refused: `provenance` should hold Provenance's fields"),
        ({**good["constants"], "std": 0.0}, f"{bad}: field 'constants.std' is refused: `std` should be > 0"),
        ({**good["constants"], "std": "1"}, f"{bad}: field 'constants.std' should be a number, not \"1\""),
    ]:
        write_json(bad, {**good, "constants": constants})
        with pytest.raises(DataFormatError) as err:
            RankingTuningSession.load_state(bad, small_frame)
        assert str(err.value).startswith(start), (str(err.value), start)


def test_save_state_never_replaces_a_file_unless_asked(tmp_path):
    s = EpsilonScheduleSession(n_steps=100)
    path = s.save_state(tmp_path / "s.json")
    text = path.read_text()
    s.n_steps = 200
    with pytest.raises(OutputExistsError) as err:
        s.save_state(path)
    assert str(err.value) == f"{path} already exists; pass overwrite=True to replace it"
    assert path.read_text() == text
    s.save_state(path, overwrite=True)
    assert json.loads(path.read_text())["parameters"]["n_steps"] == 200
    with pytest.raises(ParameterError, match=r"^`overwrite` should be True or False\. Received 'yes'\.$"):
        s.save_state(path, overwrite="yes")
    with pytest.raises(ParameterError, match=r"^`path` should name a file, not a folder"):
        s.save_state(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # no temporaries left


def test_exported_header_names_the_state_file(small_frame, tmp_path):
    s = RankingTuningSession(small_frame, preset="top")
    plain = s.export(tmp_path / "plain.py", check=False).header
    assert "state:" not in plain
    state = s.save_state(tmp_path / "top.state.json")
    header = s.export(tmp_path / "with_state.py", check=False).header
    assert f"# state:       {state}" in header.splitlines()
    assert header.replace(f"# state:       {state}\n", "").splitlines()[1:] == plain.splitlines()[1:]
    loaded = RankingTuningSession.load_state(state, small_frame)
    assert f"# state:       {state}" in loaded.export(tmp_path / "loaded.py", check=False).header.splitlines()
    loaded.set_rank_value(0, 5.0)
    header = loaded.export(tmp_path / "changed.py", check=False).header.splitlines()
    assert f"# state:       {state} (parameters changed since)" in header
    loaded.undo()  # back to the saved parameters
    assert loaded.state_note == str(state)


# --------------------------------------------------------------------------
# Widgets: wiring only
# --------------------------------------------------------------------------


def test_tuner_buttons_drive_the_session(small_frame, tmp_path):
    from rewardlab.widgets import EpsilonScheduleTuner, RankingTuner

    tuner = EpsilonScheduleTuner(EpsilonScheduleSession(n_steps=1000))
    assert tuner.undo_button.disabled and tuner.pinned.value == ""
    tuner.pin_button.click()
    assert [p.label for p in tuner.session.pinned] == ["pin 1"] and "pin 1 - live" in tuner.pinned.value
    tuner.controls["n_steps"].value = "2000"
    assert not tuner.undo_button.disabled
    tuner.undo_button.click()
    assert tuner.session.n_steps == 1000 and tuner.controls["n_steps"].value == "1000"
    tuner.redo_button.click()
    assert tuner.session.n_steps == 2000
    tuner.state_path.value = str(tmp_path / "eps.json")
    tuner.save_state_button.click()
    assert (tmp_path / "eps.json").exists() and "saved to" in tuner.state_status.value
    tuner.save_state_button.click()  # exists: the session's message, nothing replaced
    assert "already exists" in tuner.error.value
    tuner.controls["n_steps"].value = "3000"
    tuner.restore_button.click()
    assert tuner.session.n_steps == 2000 and tuner.controls["n_steps"].value == "2000"
    tuner.clear_pins_button.click()
    assert tuner.pinned.value == "" and tuner.session.pinned == ()

    ranking = RankingTuner(small_frame, preset="top", background=False)
    plot = ranking.plot.draws
    ranking.pin_button.click()
    assert "mean reward, 1st place" in ranking.pinned.value and ranking.plot.draws == plot + 1
    assert "pinned: pin 1" in [line.get_label() for line in ranking.plot.axes[1].lines]  # overlaid
