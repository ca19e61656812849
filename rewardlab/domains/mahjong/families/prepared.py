"""What the reward families read of a frame, gathered once: :class:`PreparedFrame`.

The families reward the end-of-game rows (ranks, final scores) or the
end-of-round rows (score deltas), so a frame is read once, at those rows
only: :func:`read_ends` gives one frame's round and game ends
(:class:`FrameEnds`), and :func:`prepare_frame` turns them into the
per-game and per-round arrays the families gather from.  Nothing of size
``n_rows`` is kept: the done flags are rebuilt from the positions when asked
(:meth:`PreparedFrame.done`).  :mod:`~rewardlab.domains.mahjong.families.prepared_parts`
builds the same object from a dataset folder, part by part.

Examples
--------
>>> prepared = prepare_frame("data/sample.tsv.gz")  # doctest: +SKIP
>>> prepared.game_rows.size, prepared.fingerprint  # doctest: +SKIP
(960, 'sha256:...')
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.core.errors import FrameError
from rewardlab.domains.mahjong.rules import ranks_from_scores, require_mahjong
from rewardlab.sources.dispatch import as_lazy
from rewardlab.sources.kanachan import schema as S

__all__ = ["PreparedFrame", "FrameEnds", "read_ends", "prepare_frame", "ENDS_COLUMNS", "SCOPE_GAME",
           "SCOPE_ROUND", "fingerprint_arrays"]

#: Scopes: the rows a family rewards (and computes normalization constants over).
SCOPE_GAME = "end_of_game"
SCOPE_ROUND = "end_of_round"  # end_of_round | end_of_game (as rewardlab.analysis.stats' scope)

#: The columns :func:`read_ends` reads (the wide ones only at round and game ends).
ENDS_COLUMNS = (S.SPARSE, S.RESULTS, S.END_OF_ROUND, S.END_OF_GAME)


@dataclasses.dataclass(frozen=True, eq=False)
class PreparedFrame:
    """Everything the families read from a frame, gathered once.

    Seats are read the way plug-ins read them (``sparse[:, 6] - 71``) and
    ranks follow kanachan's rule (:func:`rewardlab.ranks_from_scores`).

    Attributes
    ----------
    n_rows : int
        Rows (transitions) in the frame.
    game_rows : int64 array ``[G]``
        Positions of the end-of-game rows.
    rank : int64 array ``[G]``
        Final rank (0 = top) at those rows.
    score : int64 array ``[G]``
        The acting player's final score at those rows.
    round_rows : int64 array ``[R]`` or None
        Positions of the end-of-round and end-of-game rows (ascending);
        None when prepared without rounds (a corpus tuned per game only:
        :func:`~rewardlab.domains.mahjong.families.prepared_parts.prepare_dataset`
        with ``rounds=False``).
    delta : int64 array ``[R]`` or None
        The acting player's score delta of that round (``results[seat]``).
    source : str or None
        The dataset's path(s) or source files, when known.
    fingerprint : str
        ``sha256:`` + 16 hex digits over the row count, the positions of the
        round and game ends, and the seat and results at those rows (all the
        families read): the same for a frame and for a dataset folder of the
        same rows.

    Examples
    --------
    >>> prepared = prepare_frame(frame)  # doctest: +SKIP
    >>> prepared.rank[:4]  # doctest: +SKIP
    """

    n_rows: int
    game_rows: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    round_rows: np.ndarray | None
    delta: np.ndarray | None
    source: str | None
    fingerprint: str

    @property
    def has_rounds(self) -> bool:
        """True when the per-round arrays were gathered (the per-round family needs them)."""
        return self.round_rows is not None

    def done(self, scope: str) -> np.ndarray:
        """The done flags a family of ``scope`` sets (a fresh bool array ``[n_rows]``).

        Examples
        --------
        >>> prepared.done("end_of_round").sum() > prepared.done("end_of_game").sum()  # doctest: +SKIP
        True
        """
        flags = np.zeros(self.n_rows, dtype=bool)
        flags[self.rows(scope)] = True
        return flags

    def rows(self, scope: str) -> np.ndarray:
        """Positions of the rows a family of ``scope`` rewards.

        Examples
        --------
        >>> prepared.rows("end_of_game").size == prepared.rank.size  # doctest: +SKIP
        True
        """
        if scope != SCOPE_ROUND:
            return self.game_rows
        return self.round_arrays()[0]

    def round_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``(round_rows, delta)``; a :class:`FrameError` when prepared without rounds.

        Examples
        --------
        >>> rows, delta = prepared.round_arrays()  # doctest: +SKIP
        """
        if self.round_rows is None or self.delta is None:
            raise FrameError("the data was prepared without its round ends (prepare_dataset(..., rounds=False)), "
                             "so a per-round family cannot be evaluated on it",
                             hint="Prepare it again with rounds=True.")
        return self.round_rows, self.delta


@dataclasses.dataclass(frozen=True, eq=False)
class FrameEnds:
    """One frame's round and game ends: what :func:`prepare_frame` reads of it.

    Attributes
    ----------
    n_rows : int
    round_rows : int64 array ``[R]``
        Positions of the end-of-round and end-of-game rows.
    is_game : bool array ``[R]``
        True at the end-of-game rows among them.
    seat : int64 array ``[R]``
        The acting seat (0-3) at those rows.
    results : int64 array ``[R, 11]``
        ``results`` at those rows.
    files : list of str
        The frame's source files, in order (empty when it has no
        ``source_file`` column or was not asked for them).
    """

    n_rows: int
    round_rows: np.ndarray
    is_game: np.ndarray
    seat: np.ndarray
    results: np.ndarray
    files: list

    def game_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(game_rows, rank, score, delta)`` of these ends (ranks by kanachan's rule).

        Examples
        --------
        >>> game_rows, rank, score, delta = read_ends(frame).game_arrays()  # doctest: +SKIP
        """
        seat, results = self.seat, self.results
        delta = np.take_along_axis(results[:, S.RESULTS_DELTAS], seat[:, None], axis=1)[:, 0] \
            if seat.size else np.zeros(0, np.int64)
        game_rows = self.round_rows[self.is_game]
        scores = results[self.is_game][:, S.RESULTS_SCORES]
        game_seat = seat[self.is_game]
        if not game_rows.size:
            return game_rows, np.zeros(0, np.int64), np.zeros(0, np.int64), delta.astype(np.int64)
        rank = ranks_from_scores(scores, game_seat)
        score = np.take_along_axis(scores, game_seat[:, None], axis=1)[:, 0]
        return game_rows, rank.astype(np.int64), score.astype(np.int64), delta.astype(np.int64)

    def fingerprint_parts(self, offset: int = 0) -> tuple[bytes, bytes, bytes, bytes]:
        """The four byte strings the fingerprint hashes, for these ends at row ``offset`` of the data.

        A frame's fingerprint is SHA-256 over its row count and then each of
        the four strings (round rows, is-game flags, seats, results) of all
        its rows in turn, so a dataset's is the same once each string is
        gathered over its parts (:func:`fingerprint_arrays`).
        """
        return ((self.round_rows + offset).astype(np.int64).tobytes(), self.is_game.astype(np.uint8).tobytes(),
                self.seat.astype(np.int8).tobytes(), np.ascontiguousarray(self.results.astype(np.int32)).tobytes())


def fingerprint_arrays(n_rows: int, streams) -> str:
    """``sha256:`` + 16 hex digits over ``n_rows`` and the four byte streams, each read whole in turn.

    Parameters
    ----------
    n_rows : int
    streams : four iterables of bytes
        Round rows, is-game flags, seats and results (see
        :meth:`FrameEnds.fingerprint_parts`), each as one or more chunks.

    Examples
    --------
    >>> fingerprint_arrays(0, ([], [], [], []))
    'sha256:af5570f5a1810b7a'
    """
    digest = hashlib.sha256()
    digest.update(np.int64(n_rows).tobytes())
    for stream in streams:
        for chunk in stream:
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()[:16]


def read_ends(data, *, where: str = "", files: bool = False) -> FrameEnds:
    """Read a frame's round and game ends, checking what the families rely on.

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame (episode order, complete episodes).  Only
        :data:`ENDS_COLUMNS` are read, and the wide ones only at round and
        game ends.
    where : str
        Put before row numbers in messages (a part's file, for a dataset
        folder).
    files : bool
        Also read the source files of the ends (for :attr:`PreparedFrame.source`).

    Raises
    ------
    FrameError
        Null flags, a last row that does not end a game, a seat that is not
        one (``sparse[6]`` not 71-74).

    Examples
    --------
    >>> ends = read_ends(frame)  # doctest: +SKIP
    >>> ends.round_rows.size == frame["end_of_round"].sum() + frame["end_of_game"].sum()  # doctest: +SKIP
    True
    """
    lf = as_lazy(data)
    names = lf.collect_schema().names()
    require_mahjong(names, ENDS_COLUMNS, "a reward family")
    flags = lf.select(S.END_OF_ROUND, S.END_OF_GAME).collect()
    if flags.null_count().sum_horizontal().item():
        raise FrameError(f"{where}the end_of_round / end_of_game columns have null values",
                         hint="Load the data with rewardlab.load_kanachan().")
    eor = flags[S.END_OF_ROUND].to_numpy().astype(bool, copy=False)
    eog = flags[S.END_OF_GAME].to_numpy().astype(bool, copy=False)
    n = eog.shape[0]
    if n and not eog[-1]:
        raise FrameError(f"{where}the frame's last row is not the end of a game, so its episode is incomplete",
                         hint="Pass whole episodes (select rows, do not cut an episode).")
    round_mask = eor | eog
    del flags, eor
    select = [pl.col(S.SPARSE).arr.get(S.SEAT_POSITION).cast(pl.Int64).alias("seat"), pl.col(S.RESULTS)]
    if files and S.SOURCE_FILE in names:
        select.append(pl.col(S.SOURCE_FILE).cast(pl.String))
    ends = (lf.select(*select, round_mask=pl.col(S.END_OF_ROUND) | pl.col(S.END_OF_GAME))
            .filter(pl.col("round_mask")).drop("round_mask").collect())
    round_rows = np.flatnonzero(round_mask).astype(np.int64)
    if ends.height != round_rows.size:  # defensive: the two scans disagree
        raise FrameError(f"{where}the dataset changed while it was read")
    seat = ends["seat"].to_numpy() - S.SEAT_OFFSET
    results = ends[S.RESULTS].to_numpy().reshape(-1, S.RL_NUM_RESULTS).astype(np.int64)
    bad = (seat < 0) | (seat >= S.NUM_SEATS)
    if bad.any():
        r = int(round_rows[np.argmax(bad)])
        raise FrameError(f"{where}row {r}: sparse[6] is {int(seat[np.argmax(bad)]) + S.SEAT_OFFSET}, "
                         "not a seat id (71-74) as plug-ins read it",
                         hint="Load the data with rewardlab.load_kanachan().")
    found = []
    if files and S.SOURCE_FILE in ends.columns:
        found = [f for f in ends[S.SOURCE_FILE].unique(maintain_order=True).to_list() if f is not None]
    return FrameEnds(n_rows=int(n), round_rows=round_rows, is_game=eog[round_rows], seat=seat.astype(np.int64),
                     results=results, files=found)


def describe_files(files: list) -> str | None:
    """Up to five source files and how many there are, or None for none.

    Examples
    --------
    >>> describe_files(["a.tsv"]), describe_files([])
    ('a.tsv', None)
    """
    if not files:
        return None
    return ", ".join(files[:5]) + (f", ... ({len(files)} files)" if len(files) > 5 else "")


def _describe_source(data) -> str | None:
    if isinstance(data, (str, Path)):
        return str(data)
    if isinstance(data, (list, tuple)) and data and all(isinstance(p, (str, Path)) for p in data):
        return ", ".join(str(p) for p in data)
    return None


def prepare_frame(data) -> PreparedFrame:
    """Gather ranks, final scores and round deltas of a dataset once (see :class:`PreparedFrame`).

    Parameters
    ----------
    data : polars.DataFrame, LazyFrame, or path(s)
        The common frame (episode order, complete episodes) or a dataset path
        (annotation files or a converted Parquet dataset).  Only the columns
        ``sparse``, ``results``, ``end_of_round``, ``end_of_game`` are read,
        and the wide ones only at round and game ends.  For a dataset folder
        larger than memory use
        :func:`~rewardlab.domains.mahjong.families.prepared_parts.prepare_dataset`.

    Returns
    -------
    PreparedFrame

    Examples
    --------
    >>> prepared = prepare_frame("data/sample.tsv.gz")  # doctest: +SKIP
    >>> prepared.game_rows.size  # number of episodes  # doctest: +SKIP
    """
    source = _describe_source(data)
    ends = read_ends(data, files=source is None)
    game_rows, rank, score, delta = ends.game_arrays()
    return PreparedFrame(
        n_rows=ends.n_rows, game_rows=game_rows, rank=rank, score=score, round_rows=ends.round_rows, delta=delta,
        source=source if source is not None else describe_files(ends.files),
        fingerprint=fingerprint_arrays(ends.n_rows, ([b] for b in ends.fingerprint_parts())),
    )
