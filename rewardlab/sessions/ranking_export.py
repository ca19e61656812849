"""The ranking tuner's export check: the rendered plug-in file against what the session holds.

:meth:`rewardlab.sessions.ranking.RankingTuningSession.export` renders the
file, then :func:`check_ranking_export` writes it to a temporary folder and
runs the round trip (:mod:`rewardlab.sessions.roundtrip`) on the session's
frame, or part by part on its dataset folder; a file that fails is never
written.  :func:`header_of` is the file's comment header, which the export
result shows.

Examples
--------
>>> header_of("# one\\n# two\\nimport numpy\\n# three")
'# one\\n# two'
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import ExportCancelled, RoundTripError
from rewardlab.domains.mahjong.ranking import RankTable
from rewardlab.sessions.inputs import CancelToken
from rewardlab.sessions.roundtrip import RoundTrip, roundtrip_check, roundtrip_check_dataset
from rewardlab.sources.datasets import PartedDataset

__all__ = ["check_ranking_export", "header_of"]


def header_of(text: str) -> str:
    """The leading comment lines of a plug-in file's ``text`` (its header), joined by newlines."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


def check_ranking_export(family, text: str, shown: str, *, frame: pl.DataFrame | None,
                         dataset: PartedDataset | None, prepared, table: RankTable, reward: np.ndarray,
                         check_rows: int, progress, cancel: CancelToken) -> RoundTrip:
    """The round trip of plug-in ``text`` against ``family`` on the tuner's data; raises when it fails.

    Parameters
    ----------
    family : RewardFamily
        The exported reward, with its constants.
    text : str
        The rendered plug-in file.
    shown : str
        The export's path as typed (for messages).
    frame, dataset : optional
        The session's frame, or its dataset folder (then read part by part:
        :func:`~rewardlab.sessions.roundtrip.roundtrip_check_dataset`).
    prepared, table
        The session's precomputed per-game arrays.
    reward : float array ``[E]``
        The session's reward of each game (at its last step).
    check_rows : int
        Rows of whole games check-plugin runs on.
    progress : callable
        ``progress(fraction, message)``.
    cancel : CancelToken

    Returns
    -------
    RoundTrip
        A passing round trip.

    Raises
    ------
    RoundTripError
        The file does not reproduce the session (nothing should be written).
    ExportCancelled
        Cancelled at a check point (naming ``shown``).

    Examples
    --------
    >>> check_ranking_export(s.family, text, "my_reward.py", frame=s.frame, dataset=s.dataset,  # doctest: +SKIP
    ...                      prepared=s.prepared, table=s.table, reward=s.results.reward, check_rows=2000,
    ...                      progress=say, cancel=token).ok
    True
    """
    if dataset is not None:
        with tempfile.TemporaryDirectory(prefix="rewardlab-export-") as tmp:
            trial = Path(tmp) / "exported.py"
            trial.write_text(text, encoding="utf-8")
            try:
                roundtrip = roundtrip_check_dataset(family, trial, dataset, prepared=prepared,
                                                    game=table.game, check_rows=check_rows,
                                                    progress=progress, cancel=cancel)
            except ExportCancelled as exc:
                raise ExportCancelled(shown, exc.stage) from None
        if not roundtrip.ok:
            raise RoundTripError(shown, roundtrip)
        return roundtrip
    expected = (table.step_rewards(reward), prepared.done(family.scope))
    with tempfile.TemporaryDirectory(prefix="rewardlab-export-") as tmp:
        trial = Path(tmp) / "exported.py"
        trial.write_text(text, encoding="utf-8")
        try:
            roundtrip = roundtrip_check(family, trial, frame, prepared=prepared, expected=expected,
                                        check_rows=check_rows, progress=progress, cancel=cancel)
        except ExportCancelled as exc:
            raise ExportCancelled(shown, exc.stage) from None
    if not roundtrip.ok:
        raise RoundTripError(shown, roundtrip)
    return roundtrip
