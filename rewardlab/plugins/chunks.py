"""Group a batch plan into chunks of rows built at once, and copy chunks into reused buffers.

The plug-in runner (:mod:`rewardlab.plugins.runner`) builds one TensorDict
per *chunk* of consecutive batches (one vectorized gather instead of one per
call) and hands each call its batch's rows of it.  This module holds the
grouping (:func:`group_batches`: which batches share a chunk, and where each
lies in it) and the buffers a chunk is copied into when several plug-ins, or
a strict check, need copies of it (:class:`BufferCopies`).

Examples
--------
>>> [c.rows for c in group_batches([(slice(0, 3), False), (slice(3, 5), False), (slice(5, 9), False)], 5)]
[slice(0, 5, None), slice(5, 9, None)]
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator

import numpy as np
import torch

__all__ = ["Chunk", "group_batches", "BufferCopies"]


@dataclasses.dataclass
class Chunk:
    """Consecutive batches of a plan, built into one TensorDict.

    Attributes
    ----------
    rows : slice or int64 array
        The frame rows of the chunk, batch after batch (a slice when the
        batches are consecutive slices).
    batches : list of (int, int, slice or int64 array, bool)
        Per batch: its first and past-the-last position in the chunk, its
        frame rows, and its ``contiguous`` flag.  The batches tile the chunk
        in order.
    """

    rows: slice | np.ndarray
    batches: list


def _as_slice_or_array(rows):
    if isinstance(rows, slice):
        return rows
    return np.asarray(rows, dtype=np.int64)


def _length(rows) -> int:
    return rows.stop - rows.start if isinstance(rows, slice) else len(rows)


def _close(pending: list) -> Chunk:
    bounds, start = [], 0
    for rows, contiguous in pending:
        n = _length(rows)
        bounds.append((start, start + n, rows, contiguous))
        start += n
    slices = all(isinstance(r, slice) for r, _ in pending)
    if slices and all(pending[k][0].stop == pending[k + 1][0].start for k in range(len(pending) - 1)):
        rows = slice(pending[0][0].start, pending[-1][0].stop)
    else:
        rows = np.concatenate([np.arange(r.start, r.stop) if isinstance(r, slice) else r
                               for r, _ in pending]).astype(np.int64, copy=False)
    return Chunk(rows, bounds)


def group_batches(batches: Iterable, limit: int) -> Iterator[Chunk]:
    """Group a plan's batches, in order, into chunks of at most ``limit`` rows (a bigger batch alone).

    Parameters
    ----------
    batches : iterable of (slice or int array, bool)
        The plan (:func:`rewardlab.plugins.batch_modes.plan_batches`); empty batches are dropped.
    limit : int
        Rows per chunk, unless one batch alone has more.

    Examples
    --------
    >>> import numpy as np
    >>> [c.batches for c in group_batches([(slice(0, 2), True), (np.array([5, 3]), False)], 8)]
    [[(0, 2, slice(0, 2, None), True), (2, 4, array([5, 3]), False)]]
    >>> next(group_batches([(slice(0, 2), True), (np.array([5, 3]), False)], 8)).rows
    array([0, 1, 5, 3])
    """
    pending, size = [], 0
    for rows, contiguous in batches:
        rows = _as_slice_or_array(rows)
        n = _length(rows)
        if not n:
            continue
        if pending and size + n > limit:
            yield _close(pending)
            pending, size = [], 0
        pending.append((rows, bool(contiguous)))
        size += n
    if pending:
        yield _close(pending)


class BufferCopies:
    """Copies of chunk tensors into buffers reused from chunk to chunk.

    A fresh ``clone()`` of every chunk costs its page faults each time (most
    of a strict check's time); copying into memory already mapped does not.
    A copy is valid until the next copy under the same name.

    Examples
    --------
    >>> copies = BufferCopies()
    >>> a = copies.copy("x", torch.arange(4))
    >>> b = copies.copy("x", torch.arange(2))
    >>> b.tolist(), a.data_ptr() == b.data_ptr()
    ([0, 1], True)
    """

    def __init__(self):
        self._buffers: dict = {}

    def copy(self, name, src: torch.Tensor) -> torch.Tensor:
        """A copy of ``src`` in the buffer kept under ``name`` (grown when too small)."""
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != src.dtype or buf.shape[1:] != src.shape[1:] or buf.shape[0] < src.shape[0]:
            buf = self._buffers[name] = torch.empty((max(src.shape[0], 1), *src.shape[1:]), dtype=src.dtype)
        out = buf[: src.shape[0]]
        out.copy_(src)
        return out
