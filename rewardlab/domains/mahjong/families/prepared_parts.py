"""A dataset folder's :class:`PreparedFrame`, part by part, in memory of its games (not its rows).

Each part holds whole episodes, so its round and game ends are read in a
worker (:func:`~rewardlab.domains.mahjong.families.prepared.read_ends` on
the part's four columns), and the driver puts the parts' arrays one after
the other, rows counted across parts.  What the fingerprint hashes goes to
four spool files on disk as the parts come, and is hashed once at the end,
so the fingerprint equals :func:`prepare_frame`'s on the same rows in one
frame (a state saved on a file restores on its converted folder).

Memory: the per-game arrays (24 bytes a game) and, with ``rounds=True``,
the per-round ones (16 bytes a round, about one row in 14 of kanachan
data); never anything per row.

Examples
--------
>>> prepared = prepare_dataset("corpus/", rounds=False)  # doctest: +SKIP
>>> prepared.fingerprint == prepare_frame(rewardlab.load("corpus/")).fingerprint  # doctest: +SKIP
True
"""

from __future__ import annotations

import contextlib
import tempfile

import numpy as np

from rewardlab.core.errors import FrameError
from rewardlab.domains.mahjong.families.prepared import (
    ENDS_COLUMNS, PreparedFrame, fingerprint_arrays, read_ends,
)
from rewardlab.sources.datasets import PartedDataset, read_part_file
from rewardlab.sources.datasets.work import map_parts

__all__ = ["prepare_dataset", "PreparedParts", "ends_of_part"]

#: Bytes read at once when the spooled fingerprint streams are hashed.
_HASH_BLOCK = 8 << 20


def ends_of_part(part, *, where: str, rounds: bool) -> tuple:
    """One part's contribution (a frame holding :data:`ENDS_COLUMNS`; ``where`` names it in messages):
    (rows, fingerprint byte strings at row 0, game rows, rank, score, round rows, delta)."""
    ends = read_ends(part, where=where)
    game_rows, rank, score, delta = ends.game_arrays()
    kept = (ends.round_rows, delta) if rounds else (None, None)
    return ends.n_rows, ends.fingerprint_parts(), game_rows, rank, score, *kept


def _part(item: tuple) -> tuple:
    path, rows, index, rounds = item
    return ends_of_part(read_part_file(path, rows, columns=list(ENDS_COLUMNS)), where=f"{path}: ", rounds=rounds)


def _blocks(handle):
    handle.seek(0)
    while True:
        block = handle.read(_HASH_BLOCK)
        if not block:
            return
        yield block


class PreparedParts:
    """The parts' contributions (:func:`ends_of_part`, in part order) put together into one :class:`PreparedFrame`.

    A context manager: what the fingerprint hashes is spooled to a temporary
    folder, removed on exit.

    Examples
    --------
    >>> with PreparedParts(rounds=False) as acc:  # doctest: +SKIP
    ...     for index in range(len(ds)):
    ...         acc.add(ends_of_part(ds.read(index, list(ENDS_COLUMNS)), where="", rounds=False))
    ...     prepared = acc.finish(source="corpus/")
    """

    def __init__(self, *, rounds: bool):
        self.rounds = bool(rounds)
        self.offset = 0
        self._games: list[tuple] = []
        self._rounds: list[tuple] = []
        self._stack = contextlib.ExitStack()
        self._streams: list = []

    def __enter__(self) -> "PreparedParts":
        spool = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="rewardlab-prepare-"))
        self._streams = [self._stack.enter_context(open(f"{spool}/{name}", "w+b"))
                         for name in ("rows", "games", "seats", "results")]
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()

    def add(self, contribution: tuple) -> None:
        """Put the next part's contribution after the ones before it (rows counted on)."""
        n, parts, game_rows, rank, score, round_rows, delta = contribution
        offset = self.offset
        rows_bytes = (np.frombuffer(parts[0], dtype=np.int64) + offset).tobytes() if offset else parts[0]
        for handle, chunk in zip(self._streams, (rows_bytes, *parts[1:])):
            handle.write(chunk)
        self._games.append((game_rows + offset, rank, score))
        if self.rounds:
            self._rounds.append((round_rows + offset, delta))
        self.offset += n

    def finish(self, *, source: str | None) -> PreparedFrame:
        """The :class:`PreparedFrame` of every part added."""
        def joined(arrays):
            return np.concatenate(arrays).astype(np.int64, copy=False) if arrays else np.zeros(0, np.int64)

        return PreparedFrame(
            n_rows=self.offset, game_rows=joined([g[0] for g in self._games]),
            rank=joined([g[1] for g in self._games]), score=joined([g[2] for g in self._games]),
            round_rows=joined([r[0] for r in self._rounds]) if self.rounds else None,
            delta=joined([r[1] for r in self._rounds]) if self.rounds else None,
            source=source, fingerprint=fingerprint_arrays(self.offset, [_blocks(h) for h in self._streams]),
        )


def prepare_dataset(dataset, *, rounds: bool = True, engine: str = "embedded", workers: int | None = None,
                    address: str | None = None, progress: bool | None = False) -> PreparedFrame:
    """:func:`~rewardlab.domains.mahjong.families.prepared.prepare_frame` of a dataset folder, part by part.

    Parameters
    ----------
    dataset : path or PartedDataset
        A dataset folder (``rewardlab convert ... --out FOLDER``).
    rounds : bool
        Keep the per-round arrays (the per-round family needs them); without
        them a corpus costs memory per game only.
    engine, workers, address
        As :mod:`rewardlab.engines`.
    progress : bool, optional
        A bar over the parts (None: when interactive).

    Returns
    -------
    PreparedFrame
        Equal to ``prepare_frame`` of the whole frame (positions, ranks,
        scores, deltas, fingerprint); ``source`` is the folder.

    Raises
    ------
    FrameError
        What ``prepare_frame`` raises, naming the part's file; a dataset with
        no parts.

    Examples
    --------
    >>> prepare_dataset("corpus/", rounds=False).rank[:4]  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    if not len(ds):
        raise FrameError(f"the dataset {ds.folder} has no parts", hint="Convert the data again.")
    with PreparedParts(rounds=rounds) as acc:
        for contribution in map_parts(ds, _part, (bool(rounds),), engine=engine, workers=workers, address=address,
                                      progress=progress, desc="prepare"):
            acc.add(contribution)
        return acc.finish(source=str(ds.folder))
