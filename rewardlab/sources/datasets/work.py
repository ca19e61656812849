"""Work over a dataset folder's parts through an engine: one work item per part, results in part order.

Each work item gets ``(file, rows, index, *args)`` (:meth:`PartedDataset.part_items`)
and reads its part on its own (:func:`~rewardlab.sources.datasets.parts.read_part_file`):
opening the folder again in every item would check every part's footer each
time.  The analyses that read a folder part by part (statistics, per-episode
tables, check-plugin, the ranking tables, ``info``) go through here.

Examples
--------
>>> def rows(item):
...     path, rows, index = item
...     return rows
>>> sum(map_parts("corpus", rows))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Callable, Iterator

from rewardlab.core.errors import check_int
from rewardlab.core.files import progress_enabled
from rewardlab.engines import check_engine
from rewardlab.sources.datasets.parts import PartedDataset

__all__ = ["map_parts"]


def map_parts(dataset, fn: Callable, args: tuple = (), *, engine: str = "embedded", workers: int | None = None,
              address: str | None = None, progress: bool | None = False, desc: str = "parts") -> Iterator:
    """Yield ``fn((file, rows, index, *args))`` for every part of ``dataset``, in part order, through an engine.

    Parameters
    ----------
    dataset : path or PartedDataset
        The dataset folder (opened, its parts checked, once, here).
    fn : callable
        Runs in the engine's workers (module level, for engines that pickle it).
    args : tuple
        Appended to each item (picklable).
    engine, workers, address
        As :mod:`rewardlab.engines` (``workers``: items at once, None for the engine's default).
    progress : bool, optional
        A bar over the parts (None: when interactive).
    desc : str
        The bar's label.

    Examples
    --------
    >>> list(map_parts("corpus", lambda item: item[2]))  # doctest: +SKIP
    [0, 1, 2]
    """
    from tqdm.auto import tqdm

    found = check_engine(engine, address=address)
    if workers is not None:
        workers = check_int("workers", workers, low=1)
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    items = [(*item, *args) for item in ds.part_items()]
    results = found.map(fn, items, workers=workers, address=address)
    with tqdm(total=len(items), unit="part", desc=desc, disable=not progress_enabled(progress),
              leave=False) as bar:
        try:
            for result in results:
                bar.update(1)
                yield result
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()  # stopped early (a failing part): items not started are not started
