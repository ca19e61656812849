"""check_plugin: contract problems collected over every mode, and the batch-invariance check."""

from __future__ import annotations

import textwrap

import pytest

from rewardlab.core.errors import ParameterError
from rewardlab.plugins import CheckReport, Difference, check_plugin, load_plugin

from conftest import PLUGINS_DIR

UNIT = ('torch.where(data["next", "end_of_game"], (data["sparse"][:, 6] % 2).double() * 2 - 1, 0.0)')


@pytest.fixture(scope="module")
def frame(sample_frame):
    """The first 12 games of the sample (whole episodes)."""
    ends = sample_frame["end_of_game"].to_numpy().nonzero()[0]
    return sample_frame.head(int(ends[47]) + 1)


def plugin(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\n\n\ndef get_reward(data, contiguous):\n"
                    + textwrap.indent(textwrap.dedent(body), "    "))
    return load_plugin(path)


def test_shipped_plugin_passes(frame):
    report = check_plugin(frame, PLUGINS_DIR / "round_delta.py", batch_sizes=(16, 700), progress=False)
    assert isinstance(report, CheckReport)
    assert report.ok
    assert [r.label for r in report.runs] == [
        "episodes", "episodes (contiguous=True)", "sequential x16", "sequential x700",
        "dataloader x16 (2 workers)", "dataloader x700 (2 workers)", "fragments x16",
        "fragments x700", "shuffled x16", "shuffled x700", "simulation episodes (contiguous=True)"]
    assert [r.contiguous for r in report.runs] == [False, True] + [False] * 8 + [True]
    assert [r.convention for r in report.runs] == ["offline"] * 10 + ["simulation"]
    assert all(r.calls > 0 and r.error is None for r in report.runs)
    assert report.problems == () and report.differences == ()
    assert report.episodes == 48 and report.transitions == frame.height
    assert not report.scale.far
    text = str(report)
    assert text.startswith(f"check-plugin 'round_delta' ({PLUGINS_DIR / 'round_delta.py'})")
    assert "contract: ok" in text
    assert "batch invariance: ok (every mode and batch size gives the same rewards and dones)" in text
    assert "simulation convention: ok (same rewards and dones as in the offline convention)" in text
    assert "reward dtype: float64" in text
    assert "reward scale: ok: mean " in text
    assert "warning:" not in text
    assert text.endswith("result: PASS")


def test_batch_statistics_are_caught(tmp_path, frame):
    plug = plugin(tmp_path, "batchnorm", """\
        score = data["next", "results"][:, 4].double()
        centered = (score - score.mean()) / 10000.0
        data["next", "reward"] = torch.where(data["next", "end_of_game"], centered, 0.0)
        """)
    report = check_plugin(frame, plug, batch_sizes=(16, 700), progress=False)
    assert not report.ok
    assert report.problems == ()
    by_run = {d.run: d for d in report.differences}
    # fragments of 700 rows hold whole episodes here, so that run agrees with episodes
    assert set(by_run) == {"sequential x16", "sequential x700", "dataloader x16 (2 workers)",
                           "dataloader x700 (2 workers)", "fragments x16", "shuffled x16",
                           "shuffled x700"}
    d = by_run["sequential x16"]
    assert isinstance(d, Difference) and d.reference == "episodes" and not d.allowed
    assert d.rewards > 0 and d.dones == 0 and d.max_abs > 0
    row = d.row
    assert frame["end_of_game"][row]  # only end-of-game rewards can differ
    assert d.where.startswith(f"frame row {row} (game {frame['game_id'][row]}, seat "
                              f"{frame['seat'][row]}, step {frame['step'][row]}; ")
    assert d.where.endswith(f":{frame['source_line'][row]})")
    text = str(report)
    assert "batch invariance: 7 run(s) differ" in text
    assert "hint: the plug-in computes statistics (`mean` on line 6); statistics of the batch " \
           "depend on how the data is cut into batches" in text
    assert f"- sequential x16 differs from episodes: {d.rewards:,} rewards and 0 dones; largest " \
           f"|reward difference| {d.max_abs:.6g}; first at {d.where}: reward " in text
    assert text.endswith("result: FAIL")


def test_contiguous_reader_may_differ_between_modes(tmp_path, frame):
    plug = plugin(tmp_path, "progress", f"""\
        reward = {UNIT}
        if contiguous:  # an episode-aware shaping term, only when whole episodes are given
            reward = reward + torch.linspace(0, 0.1, int(data.batch_size[0]), dtype=torch.float64)
        data["next", "reward"] = reward
        """)
    assert plug.reads_contiguous
    report = check_plugin(frame, plug, batch_sizes=(16, 700), progress=False)
    assert report.ok
    [d] = report.differences
    assert (d.run, d.reference, d.allowed) == ("episodes (contiguous=True)", "episodes", True)
    text = str(report)
    assert "reads `contiguous`: yes" in text
    assert "1 run(s) differ between contiguous=True and contiguous=False, which is allowed because " \
           "the plug-in reads `contiguous`" in text
    assert "(allowed: the plug-in reads `contiguous`)" in text
    assert text.endswith("result: PASS")


def test_contiguous_reader_must_still_agree_across_non_contiguous_modes(tmp_path, frame):
    plug = plugin(tmp_path, "mixed", f"""\
        reward = {UNIT}
        if not contiguous:
            reward = reward * float(data.batch_size[0] % 3 + 1)
        data["next", "reward"] = reward
        """)
    report = check_plugin(frame, plug, batch_sizes=(16, 700), progress=False)
    assert not report.ok
    assert any(not d.allowed and d.reference == "episodes" for d in report.differences)


def test_contract_problems_are_collected_per_rule(tmp_path, frame):
    plug = plugin(tmp_path, "trap", f"""\
        data["next", "reward"] = {UNIT}
        data["next", "done"] = data["next", "end_of_round"].clone()
        """)
    report = check_plugin(frame, plug, batch_sizes=(16, 700), progress=False)
    assert not report.ok
    [(rule, message, count, runs)] = report.problems
    assert rule == "done_last_step"
    assert "This is the `done = end_of_round` trap" in message
    assert message.startswith('data["next", "done"] is False on the last step of an episode')
    assert "in batch 0 of mode 'episodes'" in message
    # every offline run; kanachan's simulator sets end_of_round on a game's last step, so there
    # the trap does not bite, and the report says the two conventions disagree
    assert runs == "episodes, episodes (contiguous=True), sequential x16, sequential x700, " \
                   "dataloader x16 (2 workers), dataloader x700 (2 workers), fragments x16, " \
                   "fragments x700, shuffled x16, shuffled x700"
    assert count >= 48 * 9 - 100  # nearly every batch holding an episode end, in every run
    assert report.differences == ()  # the plug-in's own dones agree across modes
    [d] = report.convention_differences
    assert d.run == "simulation episodes (contiguous=True)" and d.dones == 48 and d.rewards == 0
    assert "simulation convention: WARNING the rewards differ" in str(report)
    assert f"- [done_last_step] in {count:,} batch(es) ({runs}); first: " in str(report)


def test_exceptions_in_some_modes(tmp_path, frame):
    plug = plugin(tmp_path, "big", f"""\
        if int(data.batch_size[0]) > 500:
            raise MemoryError("batch too big")
        data["next", "reward"] = {UNIT}
        """)
    report = check_plugin(frame, plug, batch_sizes=(16, 700), progress=False)
    assert not report.ok
    failed = [r.label for r in report.runs if r.error]
    assert failed == ["sequential x700", "dataloader x700 (2 workers)", "shuffled x700"]
    [run] = [r for r in report.runs if r.label == "sequential x700"]
    assert "get_reward raised MemoryError: batch too big on batch 0 of mode 'sequential'" in run.error
    text = str(report)
    assert "exceptions: 3 run(s) stopped by the plug-in" in text
    # the traceback once, for the three runs that failed the same way
    assert text.count("The plug-in's traceback:") == 1
    assert "- sequential x700, dataloader x700 (2 workers), shuffled x700: the same failure in each" in text
    assert "contract: not fully checked (a run stopped early)" in text and "contract: ok" not in text
    assert report.differences == ()  # the runs that finished agree


def test_in_place_change_found_in_strict_and_fast_checks(tmp_path, frame):
    plug = plugin(tmp_path, "np", f"""\
        data["next", "reward"] = {UNIT}
        data["numeric"].numpy()[:, 1] += 1
        """)
    report = check_plugin(frame, plug, batch_sizes=(700,), progress=False)
    assert [p[0] for p in report.problems] == ["in_changed"]
    fast = check_plugin(frame, plug, batch_sizes=(700,), strict=False, progress=False)
    assert fast.problems == ()  # writes through .numpy() need the strict check (documented)


def test_argument_validation(frame):
    path = PLUGINS_DIR / "rank_top.py"
    for kw, message in [
        (dict(batch_sizes=()), "`batch_sizes` should be a non-empty sequence of integers >= 1. Received ()."),
        (dict(batch_sizes=(8, 8)), "`batch_sizes` should be distinct. Received [8, 8]."),
        (dict(batch_sizes=(0,)), "`batch_sizes` should be an integer from 1 to 1099511627776 (one batch of that size already holds every row). Received 0."),
        (dict(batch_sizes="64"), "`batch_sizes` should be a non-empty sequence of integers >= 1"),
        (dict(seed=1.5), "`seed` should be an integer >= 0. Received 1.5."),
    ]:
        with pytest.raises(ParameterError) as info:
            check_plugin(frame, path, progress=False, **kw)
        assert message in str(info.value), kw
