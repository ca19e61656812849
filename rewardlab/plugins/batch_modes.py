"""Plan the mini-batches a reward plug-in is called on, one function per batch mode.

kanachan calls ``get_reward(data, contiguous)`` on batches cut in different
ways; a plug-in must give the same rewards whichever way the data was cut
(unless it reads ``contiguous``).  These pure functions say which frame rows
go into each call, so the runner (:mod:`rewardlab.plugins.runner`) and the tests share
one definition of every mode:

=============  ==========  ==========================================================
mode           contiguous  batches (and the kanachan setting they reproduce)
=============  ==========  ==========================================================
``episodes``   False (*)  one whole episode per call, in order: kanachan's episode
                           replay buffer (``replay_buffer_size > 0``), which passes
                           ``contiguous=contiguous_training_data`` (default False);
                           ``contiguous=True`` reproduces that setting and the
                           simulator
``sequential`` False       ``batch_size`` consecutive rows in file order, crossing
                           episode boundaries: kanachan's offline data loader with
                           ``num_workers=0``
``dataloader`` False       kanachan's offline data loader with ``num_workers=N``
                           (default 2, what ``cql/train.py`` requires on CUDA): worker
                           ``w`` reads lines ``w, w+N, w+2N, ...`` and cuts them into
                           ``batch_size`` rows; PyTorch's DataLoader hands the
                           workers' batches out in turn
``fragments``  False       each episode cut into pieces of ``batch_size`` rows, one
                           piece per call (RLlib's ``truncate_episodes`` episode chunks)
``shuffled``   False       the rows shuffled (seeded) within consecutive windows of
                           ``shuffle_window`` rows, each window cut into ``batch_size``
                           rows (a shuffling data loader with a shuffle buffer)
=============  ==========  ==========================================================

(*) ``contiguous`` is the user's choice in ``episodes`` (``plan_batches(...,
contiguous=True)``); every other mode passes False, as kanachan's data loader does.
The ``dataloader`` and ``sequential`` modes read the frame's rows as the lines
of one training file, in order.

Episodes are described by their *exclusive end positions* ``ends``
(:func:`episode_ends`): episode ``k`` is rows ``ends[k-1]:ends[k]`` (``0`` for
the first), and ``ends[-1]`` is the number of rows.  Every planner yields
``(rows, contiguous)`` pairs where ``rows`` is a ``slice`` (consecutive rows)
or a 1-D int64 array (shuffled rows, in call order); every row appears in
exactly one batch.

Every mode can be planned shard by shard (:mod:`rewardlab.plugins.shards`):
``episodes`` and ``fragments`` never cross an episode, and ``sequential``,
``dataloader`` and ``shuffled`` are cut into *blocks* of consecutive rows
(``batch_size``; ``num_workers * batch_size``; ``shuffle_window``) whose
batches depend only on the block, so a stream carries at most one unfinished
block from one shard to the next.  That is why ``shuffled`` shuffles within
windows of :data:`SHUFFLE_WINDOW` rows instead of over all rows: a global
permutation cannot be streamed.  With at most ``shuffle_window`` rows (the
bundled sample, any frame of up to a million rows) it is one permutation of
all rows.

Examples
--------
>>> import numpy as np
>>> from rewardlab.plugins import batch_modes
>>> ends = batch_modes.episode_ends(np.array([0, 0, 1, 0, 1], dtype=bool))
>>> ends
array([3, 5])
>>> list(batch_modes.plan_episodes(ends))
[(slice(0, 3, None), False), (slice(3, 5, None), False)]
>>> list(batch_modes.plan_fragments(ends, batch_size=2))
[(slice(0, 2, None), False), (slice(2, 3, None), False), (slice(3, 5, None), False)]
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from rewardlab.core.cuts import episode_ends  # noqa: F401 - part of this module's API
from rewardlab.core.errors import ParameterError, check_choice, check_int

__all__ = [
    "BATCH_MODES",
    "CONTIGUOUS",
    "DEFAULT_BATCH_SIZES",
    "DEFAULT_NUM_WORKERS",
    "SHUFFLE_WINDOW",
    "CHECK_BATCH_SIZES",
    "MODE_SETTINGS",
    "episode_ends",
    "plan_episodes",
    "plan_sequential",
    "plan_dataloader",
    "plan_fragments",
    "plan_shuffled",
    "plan_batches",
    "check_contiguous",
    "check_num_workers",
    "check_batch_size",
    "MAX_BATCH_SIZE",
    "MAX_NUM_WORKERS",
    "check_shuffle_window",
    "block_rows",
    "plan_block",
    "mode_setting",
    "check_run_options",
]

#: The batch modes, in the order reports list them.
BATCH_MODES = ("episodes", "sequential", "dataloader", "fragments", "shuffled")

#: The ``contiguous`` flag each mode passes to ``get_reward`` by default (kanachan's
#: defaults; only ``episodes`` may be given ``contiguous=True``).
CONTIGUOUS = {"episodes": False, "sequential": False, "dataloader": False, "fragments": False,
              "shuffled": False}

#: ``batch_size`` when none is given: big mini-batches for the bulk modes (a plug-in's
#: fixed cost per call is then negligible), fragments short enough to cut most episodes.
DEFAULT_BATCH_SIZES = {"episodes": None, "sequential": 8192, "dataloader": 8192, "fragments": 64,
                       "shuffled": 8192}

#: The two batch sizes ``check_plugin`` tries in every mode but ``episodes``.
CHECK_BATCH_SIZES = (64, 2048)

#: ``num_workers`` of the ``dataloader`` mode when none is given: what kanachan's
#: ``cql/train.py`` uses (and requires) on CUDA.
DEFAULT_NUM_WORKERS = 2

#: Rows shuffled together in ``shuffled`` mode (a shuffle buffer): each window of this
#: many consecutive rows is permuted on its own, so a stream of shards holds at most
#: one window.  2**20 rows: the bundled sample and any frame up to that size are one window.
SHUFFLE_WINDOW = 1 << 20

#: The kanachan setting each mode reproduces, in words (for reports and messages).
MODE_SETTINGS = {
    "episodes": "kanachan's episode replay buffer, contiguous_training_data={contiguous}",
    "sequential": "kanachan's offline DataLoader, num_workers=0",
    "dataloader": "kanachan's offline DataLoader, num_workers={num_workers}",
    "fragments": "episode fragments, as RLlib's truncate_episodes",
    "shuffled": "a shuffling data loader (seeded)",
}

def _check_ends(ends) -> np.ndarray:
    ends = np.asarray(ends)
    if ends.ndim != 1 or (ends.size and ends.dtype.kind not in "iu"):
        raise ParameterError("ends", "should be a 1-D integer array of episode end positions",
                             f"array of dtype {ends.dtype} and shape {ends.shape}")
    ends = ends.astype(np.int64, copy=False)
    if ends.size and (ends[0] <= 0 or np.any(np.diff(ends) <= 0)):
        raise ParameterError("ends", "should be strictly increasing positive end positions",
                             ends[:10].tolist())
    return ends


#: The largest batch size any mode takes (far more rows than fit in memory: one batch holds them all).
MAX_BATCH_SIZE = 2**40

#: The most DataLoader workers ``dataloader`` plans for (each worker's share is an array).
MAX_NUM_WORKERS = 1024


def check_batch_size(batch_size, name: str = "batch_size") -> int:
    """Validate a batch size: an integer in ``[1, MAX_BATCH_SIZE]``.

    Examples
    --------
    >>> check_batch_size(64)
    64
    >>> check_batch_size(10**30)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `batch_size` should be an integer from 1 to 1099511627776 (one batch of that size already holds every row). Received 1000000000000000000000000000000.
    """
    return check_int(name, batch_size, low=1, high=MAX_BATCH_SIZE,
                     rule=f"should be an integer from 1 to {MAX_BATCH_SIZE} (one batch of that size already "
                     "holds every row)")


def _check_seed(seed) -> int:
    return check_int("seed", seed, low=0, rule="should be an integer >= 0")


def _check_rows(n_rows) -> int:
    return check_int("n_rows", n_rows, low=0, rule="should be an integer >= 0")


def plan_episodes(ends: np.ndarray, *, contiguous: bool = False) -> Iterator[tuple[slice, bool]]:
    """One batch per episode, in order, as kanachan's episode replay buffer hands them.

    Parameters
    ----------
    ends : int array of shape ``[E]``
        Exclusive episode end positions (:func:`episode_ends`).
    contiguous : bool
        The flag passed with every episode: kanachan's
        ``contiguous_training_data`` (default False); its simulator passes True.

    Yields
    ------
    (slice, contiguous)
        The rows of one whole episode.

    Examples
    --------
    >>> list(plan_episodes(np.array([2, 5]), contiguous=True))
    [(slice(0, 2, None), True), (slice(2, 5, None), True)]
    """
    if not isinstance(contiguous, bool):
        raise ParameterError("contiguous", "should be True or False", contiguous)
    return _episodes(_check_ends(ends), contiguous)


def _episodes(ends: np.ndarray, contiguous: bool) -> Iterator[tuple[slice, bool]]:
    start = 0
    for stop in ends.tolist():
        yield slice(start, stop), contiguous
        start = stop


def plan_sequential(n_rows: int, batch_size: int) -> Iterator[tuple[slice, bool]]:
    """Consecutive batches of ``batch_size`` rows in file order (the last may be shorter).

    Parameters
    ----------
    n_rows : int
        Number of rows ``N``.
    batch_size : int
        Rows per batch, >= 1.

    Yields
    ------
    (slice, False)

    Examples
    --------
    >>> list(plan_sequential(5, 2))
    [(slice(0, 2, None), False), (slice(2, 4, None), False), (slice(4, 5, None), False)]
    """
    batch_size = check_batch_size(batch_size)
    n_rows = _check_rows(n_rows)
    return ((slice(start, min(start + batch_size, n_rows)), False)
            for start in range(0, n_rows, batch_size))


def check_num_workers(num_workers) -> int:
    """Validate ``num_workers`` (an integer >= 0, as PyTorch's DataLoader takes).

    Examples
    --------
    >>> check_num_workers(2)
    2
    """
    return check_int("num_workers", num_workers, low=0, high=MAX_NUM_WORKERS,
                     rule=f"should be an integer from 0 to {MAX_NUM_WORKERS} (PyTorch DataLoader workers)")


def plan_dataloader(n_rows: int, batch_size: int, num_workers: int = DEFAULT_NUM_WORKERS
                    ) -> Iterator[tuple[slice | np.ndarray, bool]]:
    """The mini-batches of kanachan's offline DataLoader with ``num_workers`` workers.

    kanachan's ``DataIterator`` in worker ``w`` of ``N`` skips ``w`` lines and
    then keeps every ``N``-th line, so worker ``w`` reads lines ``w, w + N,
    w + 2N, ...``; each worker cuts its lines into batches of ``batch_size``
    (its last batch may be shorter: kanachan does not drop it), and PyTorch's
    DataLoader hands the workers' batches out in turn, worker 0 first,
    skipping a worker once it has run out.  ``num_workers=0`` (no worker
    processes) is :func:`plan_sequential`.

    Parameters
    ----------
    n_rows : int
        Number of rows ``N``, the lines of the training file in order.
    batch_size : int
        kanachan's ``batch_size`` (per process), >= 1.
    num_workers : int
        DataLoader workers, >= 0.

    Yields
    ------
    (slice or int64 array of shape ``[B]``, False)

    Examples
    --------
    >>> [rows.tolist() for rows, _ in plan_dataloader(7, 2, num_workers=2)]
    [[0, 2], [1, 3], [4, 6], [5]]
    """
    batch_size = check_batch_size(batch_size)
    n_rows = _check_rows(n_rows)
    num_workers = check_num_workers(num_workers)
    if num_workers <= 1:
        return plan_sequential(n_rows, batch_size) if num_workers == 0 else (
            (np.arange(a, min(a + batch_size, n_rows), dtype=np.int64), False)
            for a in range(0, n_rows, batch_size))
    return _dataloader(n_rows, batch_size, num_workers)


def _dataloader(n_rows: int, batch_size: int, workers: int) -> Iterator[tuple[np.ndarray, bool]]:
    lines = [np.arange(w, n_rows, workers, dtype=np.int64) for w in range(workers)]
    rounds = max((-(-x.size // batch_size) for x in lines), default=0)
    for r in range(rounds):
        for x in lines:
            piece = x[r * batch_size:(r + 1) * batch_size]
            if piece.size:
                yield piece, False


def plan_fragments(ends: np.ndarray, batch_size: int) -> Iterator[tuple[slice, bool]]:
    """Each episode cut into pieces of ``batch_size`` rows, one piece per batch.

    An episode of ``L`` rows gives ``ceil(L / batch_size)`` pieces; all but
    its last have exactly ``batch_size`` rows.  Pieces never span two
    episodes.  ``contiguous`` is False even when a piece happens to hold a
    whole episode, as in a sampler that truncates episodes.

    Parameters
    ----------
    ends : int array of shape ``[E]``
        Exclusive episode end positions.
    batch_size : int
        The fragment length, >= 1.

    Yields
    ------
    (slice, False)

    Examples
    --------
    >>> list(plan_fragments(np.array([3, 4]), 2))
    [(slice(0, 2, None), False), (slice(2, 3, None), False), (slice(3, 4, None), False)]
    """
    ends = _check_ends(ends)
    batch_size = check_batch_size(batch_size)
    if not ends.size:
        return iter(())
    starts = np.concatenate(([0], ends[:-1]))
    pieces = -(-(ends - starts) // batch_size)  # ceil
    first = np.repeat(starts, pieces)
    offset = np.arange(first.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_start = first + offset * batch_size
    piece_stop = np.minimum(piece_start + batch_size, np.repeat(ends, pieces))
    return ((slice(a, b), False) for a, b in zip(piece_start.tolist(), piece_stop.tolist()))


def check_shuffle_window(shuffle_window) -> int:
    """Validate ``shuffle_window`` (an integer >= 1: rows shuffled together in ``shuffled`` mode).

    Examples
    --------
    >>> check_shuffle_window(4096)
    4096
    """
    return check_int("shuffle_window", shuffle_window, low=1,
                     rule="should be an integer >= 1 (rows shuffled together)")


def plan_shuffled(n_rows: int, batch_size: int, seed: int, *, window: int = SHUFFLE_WINDOW
                  ) -> Iterator[tuple[np.ndarray, bool]]:
    """The rows shuffled within windows of ``window`` rows, each window cut into ``batch_size`` rows.

    One generator, ``numpy.random.default_rng(seed)``, permutes the windows
    in turn (rows ``0:window``, then ``window:2*window``, ...; the last may be
    shorter), so the same ``seed`` and ``window`` always give the same
    batches, however the rows arrive (one frame or shards).  Each window's
    permutation is cut into batches of ``batch_size``; the last batch of a
    window may be shorter.  With ``n_rows <= window`` this is
    ``default_rng(seed).permutation(n_rows)`` cut into batches.  A window's
    permutation is held in memory (8 bytes per row).

    Parameters
    ----------
    n_rows : int
        Number of rows ``N``.
    batch_size : int
        Rows per batch, >= 1.
    seed : int
        Seed, >= 0.
    window : int
        Rows shuffled together, >= 1 (:data:`SHUFFLE_WINDOW` by default).

    Yields
    ------
    (int64 array of shape ``[B]``, False)
        Row positions in the order the batch holds them.

    Examples
    --------
    >>> batches = [rows for rows, _ in plan_shuffled(5, 2, seed=0)]
    >>> sorted(np.concatenate(batches).tolist())
    [0, 1, 2, 3, 4]
    >>> [sorted(rows.tolist()) for rows, _ in plan_shuffled(5, 2, seed=0, window=2)]
    [[0, 1], [2, 3], [4]]
    """
    batch_size = check_batch_size(batch_size)
    seed = _check_seed(seed)
    n_rows = _check_rows(n_rows)
    window = check_shuffle_window(window)
    return _shuffled(n_rows, batch_size, np.random.default_rng(seed), window)


def _shuffled(n_rows: int, batch_size: int, rng: np.random.Generator, window: int):
    for start in range(0, n_rows, window):
        for rows, contiguous in _shuffled_block(min(window, n_rows - start), batch_size, rng):
            yield rows + start, contiguous


def _shuffled_block(n_rows: int, batch_size: int, rng: np.random.Generator):
    perm = rng.permutation(n_rows).astype(np.int64, copy=False)
    return ((perm[start:start + batch_size], False) for start in range(0, n_rows, batch_size))


def block_rows(mode: str, *, batch_size: int, num_workers: int = DEFAULT_NUM_WORKERS,
               shuffle_window: int = SHUFFLE_WINDOW) -> int | None:
    """Rows of one *block* of ``mode``: consecutive rows whose batches depend on nothing else.

    ``sequential`` cuts the rows into blocks of ``batch_size``, ``dataloader``
    into blocks of ``num_workers * batch_size`` (one batch per worker),
    ``shuffled`` into windows of ``shuffle_window``; the batches of the whole
    data are the batches of each block (:func:`plan_block`) in turn, shifted
    to the block's first row.  ``episodes`` and ``fragments`` never cross an
    episode and have no blocks (None).

    Examples
    --------
    >>> block_rows("dataloader", batch_size=64, num_workers=2), block_rows("episodes", batch_size=1)
    (128, None)
    """
    check_choice("batch_mode", mode, BATCH_MODES)
    batch_size = check_batch_size(batch_size)
    if mode == "sequential":
        return batch_size
    if mode == "dataloader":
        return batch_size * max(check_num_workers(num_workers), 1)
    if mode == "shuffled":
        return check_shuffle_window(shuffle_window)
    return None


def plan_block(mode: str, n_rows: int, *, batch_size: int, num_workers: int = DEFAULT_NUM_WORKERS,
               rng: np.random.Generator | None = None) -> Iterator[tuple[slice | np.ndarray, bool]]:
    """The batches of one block of ``n_rows`` rows (positions ``0:n_rows``) of a blocked mode.

    ``n_rows`` is :func:`block_rows`, or fewer for the data's last block.
    ``shuffled`` draws the block's permutation from ``rng`` (the generator
    :func:`plan_shuffled` seeds once and carries from window to window).

    Examples
    --------
    >>> [rows.tolist() for rows, _ in plan_block("dataloader", 4, batch_size=2, num_workers=2)]
    [[0, 2], [1, 3]]
    """
    check_choice("batch_mode", mode, ("sequential", "dataloader", "shuffled"))
    if mode == "sequential":
        return plan_sequential(n_rows, batch_size)
    if mode == "dataloader":
        return plan_dataloader(n_rows, batch_size, num_workers)
    if not isinstance(rng, np.random.Generator):
        raise ParameterError("rng", "should be a numpy.random.Generator in mode 'shuffled'",
                             type(rng).__name__)
    return _shuffled_block(_check_rows(n_rows), check_batch_size(batch_size), rng)


def check_contiguous(mode: str, contiguous) -> bool:
    """The ``contiguous`` flag of ``mode``: None gives kanachan's default (False).

    Only ``episodes`` (kanachan's episode replay buffer) lets the user choose;
    kanachan's data loader always passes False.

    Examples
    --------
    >>> check_contiguous("episodes", True), check_contiguous("sequential", None)
    (True, False)
    """
    if contiguous is None:
        return CONTIGUOUS[mode]
    if not isinstance(contiguous, bool):
        raise ParameterError("contiguous", "should be True, False or None", contiguous)
    if contiguous and mode != "episodes":
        raise ParameterError("contiguous", f"can be True only with batch_mode 'episodes' (kanachan "
                             f"passes contiguous=False in mode {mode!r})", contiguous)
    return contiguous


def check_run_options(batch_mode: str, *, batch_size, seed, contiguous, num_workers, strict
                      ) -> tuple[int | None, int, bool, int]:
    """Check the options of one run of plug-ins; return ``(batch_size, seed, contiguous, num_workers)`` resolved.

    ``batch_size`` None takes the mode's default
    (:data:`DEFAULT_BATCH_SIZES`), and is None for ``episodes``;
    ``contiguous`` None is kanachan's default (:func:`check_contiguous`).
    What :func:`rewardlab.plugins.apply_plugins` and the dataset-folder apply
    both check, in one place.

    Examples
    --------
    >>> check_run_options("sequential", batch_size=None, seed=0, contiguous=None, num_workers=2, strict=False)
    (8192, 0, False, 2)
    """
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    if batch_size is not None:
        batch_size = check_batch_size(batch_size)
    size = DEFAULT_BATCH_SIZES[batch_mode] if batch_size is None else batch_size
    seed = check_int("seed", seed, low=0, rule="should be an integer >= 0")
    contiguous = check_contiguous(batch_mode, contiguous)
    num_workers = check_num_workers(num_workers)
    if not isinstance(strict, bool):
        raise ParameterError("strict", "should be True or False", strict)
    return (None if batch_mode == "episodes" else size), seed, contiguous, num_workers


def mode_setting(mode: str, *, contiguous: bool = False, num_workers: int = DEFAULT_NUM_WORKERS,
                 settings: dict | None = None) -> str:
    """The trainer setting ``mode`` reproduces, in words (``settings``: a contract's own wording;
    default :data:`MODE_SETTINGS`, kanachan's).

    Examples
    --------
    >>> mode_setting("episodes", contiguous=False)
    "kanachan's episode replay buffer, contiguous_training_data=False"
    >>> mode_setting("dataloader", num_workers=2)
    "kanachan's offline DataLoader, num_workers=2"
    """
    check_choice("batch_mode", mode, BATCH_MODES)
    return (settings or MODE_SETTINGS)[mode].format(contiguous=contiguous, num_workers=num_workers)


def plan_batches(mode: str, ends: np.ndarray, *, batch_size: int, seed: int = 0,
                 contiguous: bool | None = None, num_workers: int = DEFAULT_NUM_WORKERS,
                 shuffle_window: int = SHUFFLE_WINDOW) -> Iterator[tuple[slice | np.ndarray, bool]]:
    """The batches of ``mode`` over the episodes ending at ``ends``.

    Parameters
    ----------
    mode : {"episodes", "sequential", "dataloader", "fragments", "shuffled"}
        The batch mode (see the module docstring).
    ends : int array of shape ``[E]``
        Exclusive episode end positions; ``ends[-1]`` is the number of rows.
    batch_size : int
        Rows per batch (fragment length for ``fragments``); ignored by ``episodes``.
    seed : int
        Seed of ``shuffled``; ignored by the other modes.
    contiguous : bool or None
        The flag of ``episodes`` (None: kanachan's default, False); the other
        modes accept only None or False.
    num_workers : int
        Workers of ``dataloader``; ignored by the other modes.
    shuffle_window : int
        Rows shuffled together in ``shuffled`` (:func:`plan_shuffled`).

    Yields
    ------
    (slice or int64 array, bool)
        Rows of one call and its ``contiguous`` flag.

    Examples
    --------
    >>> [rows for rows, _ in plan_batches("sequential", np.array([2, 5]), batch_size=4)]
    [slice(0, 4, None), slice(4, 5, None)]
    """
    check_choice("batch_mode", mode, BATCH_MODES)
    ends = _check_ends(ends)
    batch_size = check_batch_size(batch_size)
    seed = _check_seed(seed)
    contiguous = check_contiguous(mode, contiguous)
    num_workers = check_num_workers(num_workers)
    shuffle_window = check_shuffle_window(shuffle_window)
    n_rows = int(ends[-1]) if ends.size else 0
    planners = {
        "episodes": lambda: plan_episodes(ends, contiguous=contiguous),
        "sequential": lambda: plan_sequential(n_rows, batch_size),
        "dataloader": lambda: plan_dataloader(n_rows, batch_size, num_workers),
        "fragments": lambda: plan_fragments(ends, batch_size),
        "shuffled": lambda: plan_shuffled(n_rows, batch_size, seed, window=shuffle_window),
    }
    return planners[mode]()
