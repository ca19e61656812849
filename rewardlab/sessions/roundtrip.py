"""An exported plug-in file checked against the library: the round trip a session's export runs before it writes.

The round trip itself is the family core's (:mod:`rewardlab.families.roundtrip`:
the file applied through the frame's contract and spec with
:func:`~rewardlab.families.roundtrip.compare_modes`, compared bit for bit,
check-plugin on whole episodes); this module holds what is the sessions' own:
:func:`roundtrip_check` runs it with a session's progress and cancel (every
row compared in one fast batch mode, :data:`COMPARE_MODE`; check-plugin in
every batch mode on a sample of whole games, :func:`sample_whole_games`),
:func:`roundtrip_check_dataset` part by part on a dataset folder;
:class:`RoundTrip` holds the outcome and :class:`ExportResult` what an
export wrote.  :func:`compare_bits`, :func:`game_spans` and
:data:`CHECK_ROWS` are the core's, re-exported.

Examples
--------
>>> rt = roundtrip_check(family, "reward.py", frame)  # doctest: +SKIP
>>> rt.identical, rt.report.ok  # doctest: +SKIP
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.contracts import contract_for
from rewardlab.core.errors import PluginRunCancelled, check_int
from rewardlab.core.rows import spread_episodes
from rewardlab.families.roundtrip import (
    CHECK_ROWS, collect_warnings, compare_bits, compare_modes, group_spans as game_spans, sample_whole_episodes,
    whole_episodes,
)
from rewardlab.plugins import check_plugin, load_plugin
from rewardlab.sessions.inputs import CancelToken, base_columns, cancel_token, progress_callback
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = [
    "CHECK_ROWS",
    "COMPARE_MODE",
    "COMPARE_BATCH_SIZE",
    "RoundTrip",
    "whole_games",
    "sample_whole_games",
    "roundtrip_check",
    "roundtrip_check_dataset",
    "game_spans",
    "compare_bits",
    "DATASET_PARTS_AT_ONCE",
    "ExportResult",
]


#: How the exported file is applied for the bit-for-bit comparison (one run in a child process,
#: which a cancel stops at once).
COMPARE_MODE = "sequential"
COMPARE_BATCH_SIZE = 8192
#: Cost of a check-plugin row relative to a compared row, for the progress fraction: check-plugin runs
#: the file seven times or more (every mode, small batches, strict IN-field checks), measured at about
#: 60x per row on 10**6 transitions (benchmarks/bench_export.py).
_CHECK_COST = 60


@dataclasses.dataclass(frozen=True, eq=False)
class RoundTrip:
    """An exported plug-in file compared with the in-library family (see :func:`roundtrip_check`).

    Attributes
    ----------
    rows : int
        Transitions compared bit for bit: every row of the data.
    rewards_differing, dones_differing : int
        Transitions whose reward (compared bit for bit) or done differs.
    max_abs_difference : float
        Largest ``|file - library|`` reward difference (0.0 when identical).
    report : CheckReport
        :func:`rewardlab.check_plugin` on the file (every batch mode, two
        batch sizes) over ``checked_rows`` transitions.
    warnings : tuple of str
        The first warning of each kind raised while applying the file (e.g.
        a reward scale far from mean 0 / std 1).
    compare_mode, compare_batch_size : str, int
        The batch mode the comparison applied the file in.
    checked_rows, checked_games, games : int
        Transitions and whole games check-plugin ran on, of ``games`` in
        the data (all of them when the data is small).

    Examples
    --------
    >>> result = session.export("reward.py").roundtrip  # doctest: +SKIP
    >>> result.identical, result.report.ok  # doctest: +SKIP
    (True, True)
    """

    rows: int
    rewards_differing: int
    dones_differing: int
    max_abs_difference: float
    report: object
    warnings: tuple
    compare_mode: str = COMPARE_MODE
    compare_batch_size: int = COMPARE_BATCH_SIZE
    checked_rows: int = 0
    checked_games: int = 0
    games: int = 0

    @property
    def identical(self) -> bool:
        """True when every reward is bit for bit and every done equal to the library's."""
        return self.rewards_differing == 0 and self.dones_differing == 0

    @property
    def ok(self) -> bool:
        """Identical and passing ``check-plugin``."""
        return self.identical and bool(self.report.ok)

    @property
    def checked_all(self) -> bool:
        """True when check-plugin ran on every row (not on a sample of whole games)."""
        return self.checked_rows == self.rows

    def __str__(self) -> str:
        how = f"compared bit for bit, {self.compare_mode} batches of {self.compare_batch_size:,} rows"
        if self.identical:
            same = f"identical to rewardlab's rewards and dones on all {self.rows:,} transitions ({how})"
        else:
            same = (f"DIFFERS from rewardlab on {self.rewards_differing:,} rewards and "
                    f"{self.dones_differing:,} dones of {self.rows:,} transitions (largest |difference| "
                    f"{self.max_abs_difference:.6g}; {how})")
        if self.checked_all:
            where = f"all {self.checked_rows:,} transitions"
        else:
            where = (f"{self.checked_rows:,} transitions: {self.checked_games:,} whole games of "
                     f"{self.games:,}, spread evenly over the data")
        check = ("check-plugin: PASS" if self.report.ok else "check-plugin: FAIL") + \
            f" (contract and batch invariance in every batch mode, on {where})"
        text = f"round trip: {same}; {check}"
        if not self.report.ok:
            text += "\n" + str(self.report)
        for w in self.warnings:
            text += f"\nwarning: {w}"
        return text


def whole_games(frame: pl.DataFrame, prepared) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) rows of every game of a frame, from its episode ends.

    A game is a run of consecutive episodes that share the episode key but
    for the agent (kanachan: the same ``game_id``, every seat); see
    :func:`rewardlab.families.roundtrip.whole_episodes`.

    Returns
    -------
    starts, stops : int64 arrays ``[G]``

    Examples
    --------
    >>> starts, stops = whole_games(frame, prepare_frame(frame))  # doctest: +SKIP
    """
    return whole_episodes(frame, end_rows=prepared.game_rows)


def sample_whole_games(frame: pl.DataFrame, prepared, rows: int) -> tuple[np.ndarray | None, int, int]:
    """A deterministic sample of whole games with about ``rows`` rows, spread evenly over the frame.

    Returns
    -------
    positions : int64 array or None
        The sample's rows in frame order; None when the frame has at most
        ``rows`` rows (check everything).
    games_sampled, games : int

    Examples
    --------
    >>> positions, k, g = sample_whole_games(frame, prepared, 20_000)  # doctest: +SKIP
    """
    return sample_whole_episodes(frame, rows, end_rows=prepared.game_rows)


def _check_sample(plugin, sample, *, path, token, say, at: float, counts: tuple):
    """check-plugin on the round trip's sample (``sample()`` reads it), cancellable; ``counts``: rows of the
    data, rows checked, games sampled, games in the data."""
    token.check(path, "check-plugin")
    n, checked, sampled, games = counts
    what = f"all {n:,} transitions" if checked == n else \
        f"{checked:,} transitions ({sampled:,} whole games of {games:,})"
    say(at, f"check-plugin in every batch mode on {what}")
    try:  # a cancel stops check-plugin's child process at once
        report = check_plugin(sample(), plugin, progress=False, cancel=lambda: token.cancelled)
    except PluginRunCancelled:
        token.check(path, "check-plugin")
        raise
    token.check(path, "check-plugin")
    say(1.0, "round trip checked")
    return report


def roundtrip_check(family, path: str | Path, frame: pl.DataFrame, *, prepared=None, expected=None,
                    check_rows: int = CHECK_ROWS, progress=None, cancel: CancelToken | None = None) -> RoundTrip:
    """Load a plug-in file, compare it with ``family`` bit for bit on every row, and run check-plugin.

    1. The file is applied to **every** row in one fast batch mode
       (:data:`COMPARE_MODE`, in chunks of whole episodes) and each reward
       compared bit for bit, each done exactly, with the library's.
    2. :func:`rewardlab.check_plugin` (contract and batch invariance, in
       every batch mode) runs on a deterministic sample of **whole games**
       spread evenly over the data, about ``check_rows`` rows (all rows
       when the data is no bigger).

    Parameters
    ----------
    family : rewardlab.domains.mahjong.families.RewardFamily
        What the file should reproduce.
    path : str or Path
        The plug-in file (e.g. written by :func:`rewardlab.export_plugin`).
    frame : polars.DataFrame
        The common frame to apply it to.
    prepared : PreparedFrame, optional
        ``family.prepare(frame)``, if already computed.
    expected : (float64 array ``[n_rows]``, bool array ``[n_rows]``), optional
        The library's rewards and dones, if already computed (default:
        ``family.evaluate(prepared)``).
    check_rows : int
        Rows of whole games for check-plugin.
    progress : callable, optional
        ``progress(fraction, message)``, called as the work advances
        (``fraction`` from 0 to 1).
    cancel : CancelToken, optional
        Checked between chunks and around check-plugin; raises
        :class:`~rewardlab.core.errors.ExportCancelled`.

    Returns
    -------
    RoundTrip

    Examples
    --------
    >>> rt = roundtrip_check(fam, "reward.py", frame)  # doctest: +SKIP
    >>> print(rt)  # doctest: +SKIP
    """
    say = progress_callback(progress)
    token = cancel_token(cancel)
    check_rows = check_int("check_rows", check_rows, low=1, rule="should be an integer >= 1")
    frame = base_columns(frame)
    prepared = family.prepare(frame) if prepared is None else prepared
    n = frame.height
    if expected is None:
        expected = family.evaluate(prepared)
    contract, spec = contract_for(frame)  # the frame's contract and spec, never a schema of its own
    plugin = load_plugin(path, name="exported", contract=contract)
    positions, sampled, games = sample_whole_episodes(frame, check_rows, spec=spec, end_rows=prepared.game_rows)
    checked = n if positions is None else int(positions.size)
    total = n + _CHECK_COST * checked or 1

    say(0.0, f"comparing the file with rewardlab bit for bit on {n:,} transitions")
    token.check(path, "the bit-for-bit comparison")
    with collect_warnings() as log:  # one run: warnings cover every row
        try:  # a cancel stops the run's child process at once
            compared = compare_modes(frame, plugin, expected, modes=(COMPARE_MODE,), spec=spec, contract=contract,
                                     batch_size=COMPARE_BATCH_SIZE, cancel=lambda: token.cancelled, progress=False)
        except PluginRunCancelled:
            token.check(path, "the bit-for-bit comparison")
            raise
    say(n / total, f"compared {n:,} transitions bit for bit")
    report = _check_sample(plugin, lambda: frame if positions is None else frame[positions], path=path,
                           token=token, say=say, at=n / total, counts=(n, checked, sampled, games))
    rewards_differing, dones_differing, largest = compared[COMPARE_MODE]
    return RoundTrip(
        rows=int(n), rewards_differing=rewards_differing, dones_differing=dones_differing,
        max_abs_difference=largest, report=report, warnings=log.texts,
        checked_rows=checked, checked_games=sampled, games=games)


#: Parts compared at once by :func:`roundtrip_check_dataset` (each holds one part and runs the file on it).
DATASET_PARTS_AT_ONCE = 4


def _compare_part(item: tuple) -> tuple[int, int, int, float]:
    """One part: the file applied to it and compared with the family, as (rows, rewards differing, dones
    differing, largest difference); (0, 0, 0, 0.0) once cancelled."""
    path, rows, index, family, plugin, cancelled = item
    if cancelled():
        return 0, 0, 0, 0.0
    part = base_columns(read_part_file(path, rows))
    compared = compare_modes(part, plugin, family.evaluate(part), modes=(COMPARE_MODE,),
                             batch_size=COMPARE_BATCH_SIZE, cancel=cancelled, progress=False)
    return (part.height, *compared[COMPARE_MODE])


def roundtrip_check_dataset(family, path: str | Path, dataset, *, prepared, game=None,
                            check_rows: int = CHECK_ROWS, workers: int | None = None, progress=None,
                            cancel: CancelToken | None = None) -> RoundTrip:
    """:func:`roundtrip_check` on a dataset folder, part by part: every row compared, whole games checked.

    1. Each part is read on its own, the file applied to it (in
       :data:`COMPARE_MODE`) and compared bit for bit with ``family``
       evaluated on the same part; :data:`DATASET_PARTS_AT_ONCE` parts at
       once (a part holds whole episodes, and the families' rewards depend
       on the episode only, so this is the comparison of the whole data).
    2. check-plugin runs on about ``check_rows`` rows of whole games spread
       evenly over the dataset, read from the parts that hold them.

    Parameters
    ----------
    family : rewardlab.domains.mahjong.families.RewardFamily
    path : str or Path
        The plug-in file.
    dataset : path or PartedDataset
        The dataset folder.
    prepared : PreparedFrame
        The dataset's (:func:`~rewardlab.domains.mahjong.families.prepared_parts.prepare_dataset`).
    game : int array ``[G]``, optional
        Each episode's game (:attr:`RankTable.game`); None: each episode its own game.
    check_rows : int
    workers : int, optional
        Parts at once (default :data:`DATASET_PARTS_AT_ONCE`).
    progress, cancel
        As :func:`roundtrip_check`.

    Returns
    -------
    RoundTrip

    Examples
    --------
    >>> rt = roundtrip_check_dataset(fam, "reward.py", "corpus/", prepared=prepare_dataset("corpus/"))  # doctest: +SKIP
    """
    say = progress_callback(progress)
    token = cancel_token(cancel)
    check_rows = check_int("check_rows", check_rows, low=1, rule="should be an integer >= 1")
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    n = ds.rows
    plugin = load_plugin(path, name="exported")
    starts, stops = game_spans(prepared.game_rows, game)
    positions, sampled, games = spread_episodes(starts, stops, check_rows)
    checked = n if positions is None else int(positions.size)
    total = n + _CHECK_COST * checked or 1
    say(0.0, f"comparing the file with rewardlab bit for bit on {n:,} transitions in {len(ds):,} parts")
    token.check(path, "the bit-for-bit comparison")
    done = differing_rewards = differing_dones = 0
    largest = 0.0
    with collect_warnings() as log:
        try:
            for rows, rewards, dones, worst in map_parts(
                    ds, _compare_part, (family, plugin, lambda: token.cancelled),
                    workers=DATASET_PARTS_AT_ONCE if workers is None else workers):
                token.check(path, "the bit-for-bit comparison")
                done += rows
                differing_rewards += rewards
                differing_dones += dones
                largest = max(largest, worst) if not math.isnan(worst) else worst
                say(done / total, f"compared {done:,} of {n:,} transitions bit for bit")
        except PluginRunCancelled:
            token.check(path, "the bit-for-bit comparison")
            raise
    report = _check_sample(plugin, lambda: base_columns(ds.load() if positions is None else ds.take(positions)),
                           path=path, token=token, say=say, at=n / total, counts=(n, checked, sampled, games))
    return RoundTrip(rows=int(n), rewards_differing=differing_rewards, dones_differing=differing_dones,
                     max_abs_difference=largest, report=report, warnings=log.texts,
                     checked_rows=checked, checked_games=sampled, games=games)


@dataclasses.dataclass(frozen=True, eq=False)
class ExportResult:
    """What :meth:`RankingTuningSession.export` wrote and how the round trip went.

    Attributes
    ----------
    path : Path
        The file written.
    header : str
        Its header comment (family, parameters, constants, their origin and
        whether they were fitted for exactly these parameters).
    roundtrip : RoundTrip or None
        None when the check was not asked for.
    seconds : float
        Wall time of the export (check included).

    Examples
    --------
    >>> print(session.export("reward.py"))  # doctest: +SKIP
    """

    path: Path
    header: str
    roundtrip: RoundTrip | None
    seconds: float = math.nan

    @property
    def ok(self) -> bool:
        """True when the round trip was checked and passed."""
        return self.roundtrip is not None and self.roundtrip.ok

    def __str__(self) -> str:
        text = f"wrote {self.path}\n{self.header}"
        if self.roundtrip is not None:
            text += "\n" + str(self.roundtrip)
        else:
            text += "\nround trip: not checked (check=False)"
        return text
