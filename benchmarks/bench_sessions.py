"""Sessions and widgets on 1 million transitions: recompute (target under 50 ms), in-place plot update (under 250 ms).

The ranking session reads the dataset once (rank table and prepared frame);
each change of the rank vector, the points term or the constants is then a
gather over episodes plus a few reductions.  The normalization and comparison
sessions recompute their statistics, replays and matrices on each change.
Also reported: the one-off preparation, and for each widget the in-place plot
update a user waits for after committing a value: the figure redrawn in
Python (``FigurePane.draw``: clear, draw, layout) plus its rendering to the
pixels the browser receives (``FigurePane.render``, Agg).
"""

from __future__ import annotations

import gc
import statistics
import time
from pathlib import Path

import numpy as np

import rewardlab
from benchmarks._data import SAMPLE, tiled_frame

ROWS = 1_000_000
REPEATS = 40


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(report) -> None:
    from rewardlab.sessions import RankingTuningSession

    frame = tiled_frame(rewardlab.load_kanachan(SAMPLE, progress=False), ROWS)
    gc.collect()
    t0 = time.perf_counter()
    session = RankingTuningSession(frame, preset="tenhou_tokujo_6dan")
    report(f"ranking session: prepare {frame.height:,} transitions (once)", time.perf_counter() - t0, "s")

    rng = np.random.default_rng(0)
    vectors = [tuple(float(x) for x in rng.normal(0.0, 50.0, 4)) for _ in range(REPEATS)]
    times = [_timed(lambda v=v: session.update(vector=v)) for v in vectors]
    report(f"ranking recompute, new rank vector ({session.table.episodes:,} episodes), median",
           statistics.median(times) * 1e3, "ms", target="< 50 ms")
    report("ranking recompute, new rank vector, worst of 40", max(times) * 1e3, "ms", target="< 50 ms")

    session.update(points=True, offset=25000, divisor=1000)
    times = [_timed(lambda k=k: session.update(divisor=100 + k)) for k in range(REPEATS)]
    report("ranking recompute, points term, median", statistics.median(times) * 1e3, "ms", target="< 50 ms")

    session.update(auto_constants=True)
    times = [_timed(lambda v=v: session.update(vector=v)) for v in vectors]
    report("ranking recompute with constants refitted from data, median", statistics.median(times) * 1e3,
           "ms", target="< 50 ms")

    try:
        from rewardlab.widgets import RankingTuner
    except ImportError:  # the lab extra is not installed
        return
    session.update(auto_constants=False, points=False)
    tuner = RankingTuner(session)
    times = [_timed(lambda v=v: setattr(tuner.rank_inputs[3], "value", v[3])) for v in vectors[:10]]
    report("ranking tuner: whole widget update (recompute, statistics, figure), median",
           statistics.median(times) * 1e3, "ms")
    report("ranking tuner: in-place plot update (draw + render), median",
           _plot_update(tuner.plot, lambda v: setattr(tuner.rank_inputs[3], "value", v[3]), vectors[:10]),
           "ms", target="< 250 ms")

    _normalization_and_comparison(report, frame)
    _folder_session(report, frame)


def _folder_session(report, frame) -> None:
    """The ranking tuner on a dataset folder of FOLDER_ROWS transitions (the 1M frame written again and again).

    The recompute depends on the episodes only; the folder session holds per-game arrays, never the rows.
    ``SESSIONS_FOLDER_ROWS=1e8 python -m benchmarks sessions`` runs the issue's 10^8 (about 11 GB of parts).
    """
    import os
    import shutil
    import tempfile

    from rewardlab.sessions import RankingTuningSession
    from rewardlab.sources.datasets import PartWriter

    rows = int(float(os.environ.get("SESSIONS_FOLDER_ROWS", "1e7")))
    work = Path(tempfile.mkdtemp(prefix="rewardlab-bench-folder-"))
    try:
        folder = work / "corpus"
        from rewardlab.domains.mahjong.families import Points

        frame = Points.from_preset("thousands").with_columns(frame, "points")  # a reward column in the parts
        with PartWriter(folder, spec=rewardlab.spec_of(frame), part_rows=262_144) as writer:
            written = 0
            while written < rows:
                writer.add(frame)
                written += frame.height
        gc.collect()
        t0 = time.perf_counter()
        session = RankingTuningSession(str(folder), preset="tenhou_tokujo_6dan")
        report(f"ranking session on a dataset folder: prepare {written:,} transitions in one pass over "
               f"{len(session.dataset):,} parts (once)", time.perf_counter() - t0, "s")
        held = sum(a.nbytes for a in (session.prepared.game_rows, session.prepared.rank, session.prepared.score,
                                      session.table.rank, session.table.final_score, session.table.row,
                                      session.table.game, session.table.seat))
        report(f"ranking session on a dataset folder: per-game arrays held ({session.table.episodes:,} episodes; "
               "no per-row array)", held / 2**20, "MiB")
        rng = np.random.default_rng(1)
        vectors = [tuple(float(x) for x in rng.normal(0.0, 50.0, 4)) for _ in range(REPEATS)]
        session.update(auto_constants=True)
        times = [_timed(lambda v=v: session.update(vector=v)) for v in vectors]
        report(f"ranking recompute on the folder ({written:,} transitions), new rank vector, constants refitted, "
               "median", statistics.median(times) * 1e3, "ms", target="< 50 ms at 10^8")
        del session
        _folder_normalization_and_returns(report, folder, written)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _folder_normalization_and_returns(report, folder, written: int) -> None:
    """The normalization session and reward_to_go on the same folder: one pass each (state carried part to part)."""
    from rewardlab.analysis.return_tables import reward_to_go
    from rewardlab.sessions import NormalizationSession

    gc.collect()
    t0 = time.perf_counter()
    norm = NormalizationSession(str(folder), reward="points")
    report(f"normalization session on a dataset folder: open ({written:,} transitions, replays carried across "
           "parts)", time.perf_counter() - t0, "s")
    report("normalization session on a dataset folder: a new clip (one pass over the folder)",
           _timed(lambda: norm.update(clip_reward=7.0)), "s")
    del norm
    out = folder.parent / "returns"
    t0 = time.perf_counter()
    reward_to_go(str(folder), "points", gamma=0.99, out=str(out), progress=False)
    report(f"reward_to_go of a dataset folder to a folder of the same parts ({written:,} transitions)",
           written / (time.perf_counter() - t0), "steps/s")


def _plot_update(pane, change, values) -> float:
    """Median of draw + render over the changes (each value committed once); in ms."""
    times = []
    for v in values:
        change(v)
        times.append(pane.last_draw_seconds + pane.render())
    return statistics.median(times) * 1e3


def _normalization_and_comparison(report, frame) -> None:
    from rewardlab.domains.mahjong.families import Points, Ranking, RoundDelta
    from rewardlab.sessions import ComparisonSession, NormalizationSession

    frame = Points.from_preset("thousands").with_columns(frame, "points")
    frame = Ranking.from_preset("top").with_columns(frame, "top")
    frame = RoundDelta.from_preset("thousands").with_columns(frame, "delta")
    norm = NormalizationSession(frame, reward="points")
    changes = [dict(scope=s) for s in ("all", "nonzero", "end_of_round", "end_of_game")] * 3
    times = [_timed(lambda c=c: norm.update(**c)) for c in changes]
    report("normalization recompute, new scope, median", statistics.median(times) * 1e3, "ms", target="< 50 ms")
    times = [_timed(lambda k=k: norm.update(clip_reward=5.0 + k)) for k in range(10)]
    report("normalization recompute, new clip (SB3 replay), median", statistics.median(times) * 1e3, "ms",
           target="< 50 ms")
    board_session = ComparisonSession(frame)
    changes = [dict(metric=m) for m in ("pearson", "spearman", "pearson_distance")] * 3
    times = [_timed(lambda c=c: board_session.update(**c)) for c in changes]
    report("comparison recompute, new matrix metric, median", statistics.median(times) * 1e3, "ms",
           target="< 50 ms")
    pairs = [dict(a="points", b="delta"), dict(a="top", b="points"), dict(a="delta", b="top")] * 3
    times = [_timed(lambda c=c: board_session.update(**c)) for c in pairs]
    report("comparison recompute, new pair, median", statistics.median(times) * 1e3, "ms", target="< 50 ms")

    from rewardlab.widgets import ComparisonBoard, NormalizationPanel

    panel = NormalizationPanel(norm)
    report("normalization panel: in-place plot update (draw + render), median",
           _plot_update(panel.plot, lambda c: norm.update(**c), [dict(scope=s) for s in
                                                                  ("all", "end_of_game") * 5]),
           "ms", target="< 250 ms")
    board = ComparisonBoard(board_session)
    report("comparison board: in-place plot update, new metric (the matrix), median",
           _plot_update(board.matrix_plot, lambda c: board_session.update(**c), changes), "ms", target="< 250 ms")
    report("comparison board: in-place plot update, new pair (the scatter), median",
           _plot_update(board.scatter_plot, lambda c: board_session.update(**c), pairs), "ms", target="< 250 ms")
    chosen = [dict(chosen=c) for c in (("points", "top"), ("points", "top", "delta"))] * 5
    times = []
    for c in chosen:  # the step rewards and the matrix are drawn again
        board_session.update(**c)
        times.append(sum(p.last_draw_seconds + p.render() for p in (board.steps_plot, board.matrix_plot)))
    report("comparison board: in-place plot update, new candidates (two panes), median",
           statistics.median(times) * 1e3, "ms", target="< 250 ms")
