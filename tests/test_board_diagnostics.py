"""The comparison board's EPIC matrix and diagnostics panel (issue 26).

EPIC and the diagnostics are injected (``epic=``, ``diagnose=``) with known
answers, so the tests check what the board does with them: the matrix
permuted to the chosen order, the cache, the labelled fallback and its
reason, the findings' episodes and steps (against a plain loop over the
frame's episodes).  One test runs the real ones through the default path.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import rewardlab
from rewardlab.core.errors import ParameterError, PluginRunCancelled
from rewardlab.diagnostics import DiagnosisContext, DiagnosisOptions, Finding, VERDICTS
from rewardlab.diagnostics.epic import EPIC_METHOD, FALLBACK_METHOD, EpicMatrix
from rewardlab.diagnostics.run import Diagnosis
from rewardlab.plugins import Plugin
from rewardlab.plugins.loading import plugin_name
from rewardlab.sessions import CancelToken, ComparisonSession

ROOT = Path(__file__).resolve().parents[1]
STEPS = ROOT / "data" / "plugins" / "steps"
PLUGINS = [STEPS / "potential_shaping.py", STEPS / "mountaincar_terms.py", STEPS / "recorded_reward.py"]
NAMES = ("potential_shaping", "mountaincar_terms", "recorded_reward")
#: The fake EPIC's distance of each pair (and its stderr: a tenth of it).
DISTANCE = {frozenset(NAMES[:2]): 0.31, frozenset(NAMES[::2]): 0.52, frozenset(NAMES[1:]): 0.07}
SMALL = DiagnosisOptions(epic_states=16, epic_pairs=16, epic_repeats=2, isolate=False)


@pytest.fixture(scope="module")
def car():
    return rewardlab.load(ROOT / "data" / "gym" / "mountaincar_scripted.parquet")


def fake_epic(calls: list, *, unfit=(), method=EPIC_METHOD, during=None):
    """An ``epic_matrix`` with the answers of :data:`DISTANCE`, its names in reverse order (the board must
    permute them), ``unfit`` candidates not evaluable."""
    def epic(frame, plugins, *, spec=None, gamma, n_states, n_pairs, repeats, seed, isolate=None, timeout=None):
        names = tuple(p.name if isinstance(p, Plugin) else plugin_name(p) for p in plugins)[::-1]
        calls.append(dict(frame=frame, plugins=list(plugins)[::-1], spec=spec, gamma=gamma, n_states=n_states,
                          n_pairs=n_pairs, repeats=repeats, seed=seed, isolate=isolate, timeout=timeout))
        if during is not None:
            during()
        k = len(names)
        distance = np.zeros((k, k))
        for i in range(k):
            for j in range(k):
                if i != j:
                    distance[i, j] = DISTANCE[frozenset((names[i], names[j]))]
        return EpicMatrix(names, distance, distance / 10, tuple(n not in unfit for n in names),
                          tuple("it reads 'reward_recorded'" if n in unfit else "" for n in names), method,
                          "the contract cannot recombine" if method == FALLBACK_METHOD else "", gamma,
                          n_states, n_pairs, repeats, 0)
    return epic


def episode_starts(frame) -> list[int]:
    """Row where each episode starts, then N: a plain loop over the episode key."""
    ids = frame["episode_id"].to_list()
    return [0] + [r for r in range(1, len(ids)) if ids[r] != ids[r - 1]] + [len(ids)]


def fake_diagnose(calls: list, findings):
    def diagnose(frame, candidates, *, base=None, options=None, spec=None, only=None, progress=None):
        calls.append(dict(frame=frame, candidates=list(candidates), base=base, options=options, spec=spec,
                          only=only))
        starts = np.array(episode_starts(frame), dtype=np.int64)
        of_row = np.repeat(np.arange(starts.size - 1), np.diff(starts))
        none = np.zeros(frame.height, dtype=bool)
        ctx = DiagnosisContext(frame=frame, spec=spec, contract=None, candidates=(), base=None,
                               options=options, episode_of_row=of_row, episode_starts=starts, terminated=none,
                               truncated=none)
        return Diagnosis(tuple(findings), ctx)
    return diagnose


def test_epic_is_computed_when_asked_kept_per_candidates_and_shown_in_the_chosen_order(car):
    calls = []
    s = ComparisonSession(car, PLUGINS, metric="epic", epic=fake_epic(calls), diagnosis_options=SMALL)
    assert s.candidates == ("recorded", *NAMES) and calls == []  # nothing ran: EPIC runs plug-ins
    r = s.results
    assert r.shown == "pearson_distance" and r.epic_pending and "not computed yet" in r.title
    assert r.matrix.equals(r.comparison.matrix("pearson_distance")) and "epic" not in r.pairs.columns

    s.compute_epic()
    (call,) = calls
    assert [plugin_name(p) for p in call["plugins"]] == list(NAMES[::-1])
    assert (call["gamma"], call["n_states"], call["n_pairs"], call["repeats"], call["seed"], call["isolate"]) == \
        (0.99, 16, 16, 2, 0, False)
    assert not any(c in call["frame"].columns for c in ("reward_potential_shaping", "done_potential_shaping"))
    assert call["frame"].height == car.height
    r = s.results
    assert r.shown == "epic" and r.title == "EPIC distance ± standard error" and not r.epic_pending
    assert r.matrix["reward"].to_list() == list(NAMES) and r.stderr["reward"].to_list() == list(NAMES)
    for i, a in enumerate(NAMES):  # the plain reading of the fake's answers, in the chosen order
        for b in NAMES:
            want = 0.0 if a == b else DISTANCE[frozenset((a, b))]
            assert r.matrix[b][i] == pytest.approx(want) and r.stderr[b][i] == pytest.approx(want / 10)
    assert r.epic_note.startswith("EPIC leaves out recorded: a reward column of the data, not a plug-in")
    for row in r.pairs.iter_rows(named=True):
        if "recorded" in (row["a"], row["b"]):
            assert row["epic"] is None and row["epic_stderr"] is None
        else:
            assert row["epic"] == pytest.approx(DISTANCE[frozenset((row["a"], row["b"]))])
    assert (s.a, s.b) == ("recorded", NAMES[0]) and not any(k.startswith("epic") for k in s.live_summary())

    s.update(chosen=NAMES[1:], a=NAMES[1], b=NAMES[2])  # fewer candidates: taken from the kept run
    assert s.results.shown == "epic" and len(calls) == 1
    assert s.results.matrix[NAMES[2]][0] == pytest.approx(0.07)
    assert s.live_summary()[f"epic: {NAMES[1]} vs {NAMES[2]}"] == pytest.approx(0.07)
    s.update(metric="spearman")
    assert s.results.shown == "spearman" and s.results.epic_note is None
    assert s.results.pairs["epic"].to_list() == [pytest.approx(0.07)]  # beside the correlations all the same
    s.update(chosen=("recorded", NAMES[0]), a="recorded", b=NAMES[0], metric="epic")  # one plug-in: nothing to run
    assert s.results.shown == "pearson_distance" and not s.results.epic_pending
    assert "fallback: not EPIC" in s.results.title and "recorded: a reward column" in s.results.epic_note
    with pytest.raises(ParameterError, match="two or more plug-in candidates for EPIC"):
        s.compute_epic()
    assert len(calls) == 1


def test_epic_shows_why_where_it_cannot_and_falls_back_labelled(car, small_frame):
    calls = []
    s = ComparisonSession(car, PLUGINS, chosen=NAMES[1:], metric="epic", diagnosis_options=SMALL,
                          epic=fake_epic(calls, unfit=("recorded_reward",)))
    s.compute_epic()
    r = s.results  # one of two evaluable: no EPIC, the reason and the labelled fallback
    assert r.shown == "pearson_distance" and r.title == "Pearson distance of episode returns (fallback: not EPIC)"
    assert r.epic_note == "EPIC cannot be shown: recorded_reward: it reads 'reward_recorded'"
    assert r.matrix.equals(r.comparison.matrix("pearson_distance")) and not r.epic_pending
    assert r.pairs["epic"].to_list() == [None]

    def refuse(*args, **kwargs):
        raise AssertionError("EPIC must not run where the contract cannot recombine transitions")

    mahjong = ComparisonSession(small_frame, [ROOT / "data" / "plugins" / "raw_points.py",
                                              ROOT / "data" / "plugins" / "rank_top.py"], metric="epic", epic=refuse)
    r = mahjong.results
    assert r.shown == "pearson_distance" and not r.epic_pending and "fallback: not EPIC" in r.title
    assert r.epic_note == ("EPIC cannot be shown: raw_points, rank_top: kanachan's round results are not functions "
                           "of recombined (state, action, next state) transitions (its frames are game records)")
    with pytest.raises(ParameterError, match="two or more plug-in candidates for EPIC"):
        mahjong.compute_epic()

    other = ComparisonSession(car, PLUGINS[:2], metric="epic", diagnosis_options=SMALL,
                              epic=fake_epic([], method=FALLBACK_METHOD))
    other.compute_epic()  # a fallback matrix is never shown as EPIC
    assert other.results.shown == "pearson_distance" and "the contract cannot recombine" in other.results.epic_note


def test_a_cancelled_epic_keeps_nothing(car):
    token = CancelToken()
    calls = []
    s = ComparisonSession(car, PLUGINS[:2], metric="epic", diagnosis_options=SMALL,
                          epic=fake_epic(calls, during=token.cancel))
    version = s.version
    with pytest.raises(PluginRunCancelled):
        s.compute_epic(cancel=token)
    assert s.version == version and s.results.epic_pending and s._epic_cache == {}
    s._epic_fn = fake_epic(calls)
    seen = []
    s.compute_epic(progress=lambda fraction, message: seen.append(fraction))
    assert s.results.shown == "epic" and seen == [0.0, 1.0] and len(calls) == 2


FINDINGS = (
    Finding("terms", "mountaincar_terms", "pass", "no flat or dominating term"),
    Finding("shaping", "potential_shaping", "warn", "not potential-based on 2 steps", rows=(), episodes=(4,)),
    Finding("epic", "potential_shaping", "info", "EPIC distance 0.3", other="mountaincar_terms"),
)


def findings_on(car):
    """A fail naming rows of episode 2 (and one of episode 5), worst episode first; the fixed ones above."""
    starts = episode_starts(car)
    rows = (starts[2] + 3, starts[2] + 7, starts[5] + 1)
    return (*FINDINGS, Finding("trap.terminal_next_state", "mountaincar_terms", "fail", "reads padding",
                               rows=rows, episodes=(2, 5))), starts


def test_diagnostics_keep_findings_and_open_a_findings_episode_with_its_steps(car):
    findings, starts = findings_on(car)
    calls, seen = [], []
    s = ComparisonSession(car, PLUGINS, diagnose=fake_diagnose(calls, findings), diagnosis_options=SMALL)
    s.observe(lambda session: seen.append(session.diagnosis_version))
    assert s.findings == () and s.diagnosis is None
    with pytest.raises(ParameterError, match="there are none yet"):
        s.open_finding(0)
    options = DiagnosisOptions(gamma=0.9)
    diagnosis = s.run_diagnostics(base="recorded", options=options)
    (call,) = calls
    assert [plugin_name(c) if c.endswith(".py") else c for c in call["candidates"]] == ["recorded", *NAMES]
    assert all(Path(c).is_absolute() for c in call["candidates"][1:])  # the plug-ins themselves, run again
    assert call["base"] == "recorded" and call["options"] is options and call["spec"] is s.spec
    assert s.findings == findings and s.diagnosis is diagnosis and seen == [1]
    assert s.finding_indices() == [3, 1, 0, 2] and s.finding_indices(("warn", "fail")) == [3, 1]
    assert s.finding_indices("info") == [2]
    with pytest.raises(ParameterError, match="`verdicts` should be one of"):
        s.finding_indices(("bad",))

    opened = s.open_finding(3)
    detail = s.episode(2)
    assert opened.episode == 2 and opened.detail.steps.equals(detail.steps) and opened.finding is findings[3]
    assert opened.detail.key == {"episode_id": car["episode_id"][starts[2]]}
    assert opened.positions == (3, 7)  # the row of episode 5 is not in this episode
    assert opened.marks == (car["t"][starts[2] + 3], car["t"][starts[2] + 7]) and s.opened_finding is opened
    assert s.open_finding(1).positions == () and s.open_finding(1).episode == 4
    for index, match in ((2, "names none"), (0, "names none"), (4, r"in \[0, 3\]")):
        with pytest.raises(ParameterError, match=match):
            s.open_finding(index)

    s.update(chosen=NAMES[:2], a=NAMES[0], b=NAMES[1])  # the findings stay until the next run
    assert s.findings == findings
    s.run_diagnostics()
    assert [plugin_name(c) for c in calls[-1]["candidates"]] == list(NAMES[:2])
    assert calls[-1]["options"] is SMALL and calls[-1]["base"] is None and s.opened_finding is None


def test_the_real_epic_and_diagnostics_run_through_the_default_path(car):
    s = ComparisonSession(car, PLUGINS[:2], metric="epic", diagnosis_options=SMALL)
    m = s.compute_epic()
    assert tuple(m.names) == NAMES[:2] and len(s._epic_cache) == 1
    r = s.results
    if r.shown == "epic":
        k = [m.names.index(n) for n in r.matrix["reward"]]
        got = r.matrix.select(r.matrix["reward"].to_list()).to_numpy()
        assert np.array_equal(got, m.distance[np.ix_(k, k)], equal_nan=True)
    else:
        assert r.epic_note.startswith("EPIC cannot be shown")
    diagnosis = s.run_diagnostics()
    assert s.findings == diagnosis.findings and s.findings
    assert {f.candidate for f in s.findings} <= {"recorded", *NAMES[:2]}
    with_episode = [k for k, f in enumerate(s.findings) if f.episodes]
    if with_episode:
        opened = s.open_finding(with_episode[0])
        assert opened.detail.index == opened.finding.episodes[0]


# --------------------------------------------------------------------------
# The board's wiring (plain pytest: set values, click)
# --------------------------------------------------------------------------


def test_board_computes_epic_when_chosen_and_draws_it_with_its_error(car):
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets import ComparisonBoard

    calls = []
    s = ComparisonSession(car, PLUGINS, epic=fake_epic(calls), diagnosis_options=SMALL)
    board = ComparisonBoard(s, background=False)
    assert list(board.metric.options) == ["pearson", "spearman", "pearson_distance", "epic"]
    assert "pearson_distance" in board.pairs.value and "epic" not in board.pairs.value
    board.metric.value = "epic"  # asked: it runs (here in the handler)
    assert len(calls) == 1 and s.results.shown == "epic" and board.epic_result.value == ""
    ax = board.matrix_plot.axes[0]
    assert ax.get_title() == "EPIC distance ± standard error"
    assert f"{0.31:.2f}\n±{0.031:.2f}" in [t.get_text() for t in ax.texts]
    assert "epic_stderr" in board.pairs.value and "EPIC ± stderr" in board.pairs.value
    assert "EPIC leaves out recorded" in board.matrix_note.value and board.epic_button.layout.display == "none"
    assert "± " in board._cell_readout(1.0, 0.0)
    board.chosen.value = NAMES[1:]  # a kept run covers them: nothing runs
    assert len(calls) == 1 and s.results.matrix["reward"].to_list() == list(NAMES[1:])


def test_board_runs_epic_in_the_background(car):
    pytest.importorskip("ipywidgets")
    from rewardlab.widgets import ComparisonBoard

    gate = threading.Event()
    s = ComparisonSession(car, PLUGINS[:2], epic=fake_epic([], during=lambda: gate.wait(30)),
                          diagnosis_options=SMALL)
    board = ComparisonBoard(s)
    board.metric.value = "epic"
    assert board.epic_task.running and board.epic_button.disabled and s.results.shown == "pearson_distance"
    assert "not computed yet" in board.matrix_plot.axes[0].get_title()
    gate.set()
    assert board.wait_for_epic(30)
    assert s.results.shown == "epic" and board.matrix_plot.axes[0].get_title() == "EPIC distance ± standard error"
    assert not board.epic_button.disabled


def test_board_diagnostics_panel_filters_by_verdict_and_opens_a_findings_episode(car):
    pytest.importorskip("ipywidgets")
    from rewardlab.plots.diagnostics import VERDICT_COLORS
    from rewardlab.widgets import ComparisonBoard

    findings, starts = findings_on(car)
    s = ComparisonSession(car, PLUGINS, diagnose=fake_diagnose([], findings), diagnosis_options=SMALL)
    board = ComparisonBoard(s, background=False)
    assert [o[1] for o in board.finding.options] == [None] and board.findings.value == ""
    board.diagnose_button.click()
    assert "<b>1</b> fail" in board.diagnose_result.value and "<b>1</b> warn" in board.diagnose_result.value
    for f in findings:
        assert f.summary in board.findings.value
    assert f"color:{VERDICT_COLORS['fail']}" in board.findings.value
    assert [o[1] for o in board.finding.options] == [None, 3, 1]  # those with an episode, worst first
    board.verdicts.value = ("warn",)
    assert [o[1] for o in board.finding.options] == [None, 1] and "reads padding" not in board.findings.value
    board.verdicts.value = VERDICTS

    board.episode.value = board.episode.options[1][1]  # a disagreement open: the finding takes the view over
    board.finding.value = 3
    assert board.episode.value is None and board.episode_view.detail.index == 2
    assert board.episode_view.layout.display is None and board.error.value == ""
    ax = board.episode_view.plot.axes[0]
    marks = [line for line in ax.lines if line.get_alpha() == 0.45]
    assert [float(line.get_xdata()[0]) for line in marks] == [car["t"][starts[2] + 3], car["t"][starts[2] + 7]]
    assert marks[0].get_label() == "trap.terminal_next_state (fail)"
    assert "its 2 step(s) there are marked" in board.finding_steps.value
    board.finding.value = 1  # a finding with an episode and no rows: opened, nothing marked
    assert board.episode_view.detail.index == 4 and "names no single step" in board.finding_steps.value
