"""Datasets on disk: convert annotation files to Parquet or Arrow, and summarise any dataset.

A converted dataset is the common frame written to a ``.parquet`` or
``.arrow`` file (the file layouts live in :mod:`rewardlab.sources.storage`); every
loader accepts it, and :func:`rewardlab.scan_kanachan` scans it lazily, so
data larger than memory can be filtered and summarised without loading it.

In a converted ``.parquet`` file the array columns (``sparse``,
``progression``, ``results``, ...) are stored as fixed-size binary values
(each row's numbers as little-endian bytes), which load several times faster
than Parquet lists.  A plain ``pl.read_parquet`` of such a file therefore
shows those columns as ``Binary``; :func:`rewardlab.load_kanachan` and
:func:`rewardlab.scan_kanachan` decode them.  Parquet files written by
``frame.write_parquet`` (array columns as lists) load too.

Examples
--------
>>> from rewardlab.dataset import convert, summarize
>>> convert("data/sample.tsv.gz", "/tmp/sample.parquet", overwrite=True, progress=False)  # doctest: +SKIP
>>> print(summarize("/tmp/sample.parquet"))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.core.files import atomic_path, check_not_input
from rewardlab.domains.mahjong.rules import episode_outcomes, place_label
from rewardlab.core.spec import FrameSpec, attach, attached
from rewardlab.core.errors import ParameterError
from rewardlab.sources.dispatch import as_lazy, load, merge_options, resolve_source
from rewardlab.sources.results import LoadResult
from rewardlab.sources.datasets import PartedDataset, is_dataset_folder, read_part_file
from rewardlab.sources.datasets.convert import DEFAULT_MEMORY, convert_to_parts
from rewardlab.sources.datasets.work import map_parts
from rewardlab.sources.storage import DATASET_SUFFIXES, write_dataset

__all__ = ["convert", "write_dataset", "summarize", "summarize_dataset", "DatasetSummary"]


def convert(
    paths,
    out: str | Path,
    *,
    overwrite: bool = False,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    progress: bool | None = None,
    format: str | None = None,
    spec: FrameSpec | None = None,
    options: dict | None = None,
    memory=DEFAULT_MEMORY,
    workers: int | None = None,
    engine: str = "embedded",
    resume: bool = False,
    **format_options,
):
    """Load files of any registered format and write a Parquet or Arrow dataset, or a dataset folder of parts.

    The dataset stores the frame's spec in its metadata
    (:func:`rewardlab.sources.storage.write_dataset`), so :func:`rewardlab.load`
    reopens it with that spec.

    Parameters
    ----------
    paths : path or sequence of paths
        Files of one format (kanachan annotation files: plain, ``.gz`` or ``.bz2``).
    out : path
        A folder name without a suffix: a dataset of episode-aligned Parquet
        parts with a manifest, written in bounded memory (see
        :func:`rewardlab.sources.datasets.convert.convert_to_parts`, which
        returns a :class:`~rewardlab.sources.datasets.convert.PartsResult`).
        Otherwise the dataset file to write (see :func:`rewardlab.sources.storage.write_dataset`):
        ``.parquet`` (lz4; array columns as little-endian fixed-size binary,
        so a plain ``pl.read_parquet`` shows them as ``Binary`` while
        :func:`rewardlab.load_kanachan` / :func:`rewardlab.scan_kanachan`
        decode them) or ``.arrow`` (Arrow IPC, zstd; smaller and about as
        fast to load).
    overwrite : bool
        Replace ``out`` if it exists (otherwise
        :class:`~rewardlab.core.errors.OutputExistsError`).  Neither ``out`` nor
        ``skipped_path`` may name one of ``paths`` (the same file, through
        a hard or symbolic link too), whatever ``overwrite`` says.
    on_error, skipped_path, progress
        As in :func:`rewardlab.read_kanachan` (``on_error`` and
        ``skipped_path`` are options of formats that skip input, such as
        kanachan's; another format refuses them by name).
    format : str, optional
        The input format (default: detected; see :func:`rewardlab.load`).
    spec : FrameSpec, optional
        Describe the frame with this spec instead of the source's.
    options : dict, optional
        The format's own options, as in :func:`rewardlab.load`.
    memory, workers, engine
        For a dataset of parts: the memory to stay near (``"512M"``), the
        files read at once, and the engine (see ``convert_to_parts``).
    resume : bool
        For a dataset of parts: keep the parts a killed or stopped run of
        the same conversion finished (``OUT.partial``) and write the others
        (see ``convert_to_parts``).
    **format_options
        The same as keyword arguments (``format="steps", episode="ep"``).

    Returns
    -------
    LoadResult
        The loaded frame and the skipped-line report.

    Examples
    --------
    >>> result = convert(["a.tsv.gz", "b.tsv.gz"], "ab.parquet")  # doctest: +SKIP
    """
    out = Path(out)
    kind = DATASET_SUFFIXES.get(out.suffix)
    if kind is None and out.suffix:
        raise ParameterError("out", "should end with .parquet or .arrow (one file), or be a folder name "
                             "without a suffix (a dataset of parts)", str(out))
    if kind is None:
        if spec is not None:
            raise ParameterError("spec", "is not taken when writing a dataset of parts (the source's spec is "
                                 "stored)", spec)
        return convert_to_parts(paths, out, format=format, options=merge_options(options, format_options),
                                on_error=on_error, skipped_path=skipped_path, memory=memory, workers=workers,
                                engine=engine, overwrite=overwrite, progress=progress, resume=resume)
    if resume:
        raise ParameterError("resume", "applies to a dataset of parts (an output folder name without a suffix); "
                             "a single-file dataset is written in one go", resume)
    check_not_input(out, paths, name="out")  # even with overwrite
    if skipped_path is not None and Path(skipped_path).resolve() == out.resolve():
        raise ParameterError("skipped_path", "should differ from `out`", str(skipped_path))
    options = dict(merge_options(options, format_options) or {})
    if on_error != "raise":
        options["on_error"] = on_error
    if skipped_path is not None:
        options["skipped_path"] = skipped_path
        options.setdefault("overwrite", overwrite)
    with atomic_path(out, overwrite=overwrite) as tmp:  # refuse early, before parsing
        files, source = resolve_source(paths, format=format)
        if source.read is not None and spec is None:
            options = source.check_options(options, "read")
            if source.takes("progress", "read"):
                options["progress"] = progress
            result = source.read(files, **options)
        else:
            result = LoadResult.nothing_skipped(load(files, format=source.name, spec=spec,
                                                     progress=progress, options=options or None))
        attach(result.frame, spec or attached(result.frame) or source.spec)  # write_dataset stores it
        write_dataset(result.frame, tmp, kind=kind)
    return result



@dataclasses.dataclass(frozen=True)
class DatasetSummary:
    """Counts and final-outcome distributions of a dataset (see :func:`summarize`).

    Examples
    --------
    >>> s = DatasetSummary(1, 4, 40, 2, (1, 1, 1, 1), {"mean": 25000.0})
    >>> s.to_dict()["rank_counts"]
    [1, 1, 1, 1]
    """

    games: int
    episodes: int
    transitions: int
    rounds: int
    rank_counts: tuple[int, int, int, int]
    final_score_quantiles: dict[str, float]

    def to_dict(self) -> dict:
        """A JSON-ready dict (stable keys)."""
        return dataclasses.asdict(self) | {"rank_counts": list(self.rank_counts)}

    def __str__(self) -> str:
        total = max(1, sum(self.rank_counts))
        ranks = ", ".join(f"{place_label(k)}: {c} ({c / total:.1%})" for k, c in enumerate(self.rank_counts))
        q = self.final_score_quantiles
        lines = [
            f"games        {self.games:>12,}",
            f"episodes     {self.episodes:>12,}  (players x games)",
            f"transitions  {self.transitions:>12,}",
            f"rounds       {self.rounds:>12,}",
            f"final places {ranks}",
            "final scores " + "  ".join(f"{k} {v:,.0f}" for k, v in q.items()),
        ]
        return "\n".join(lines)


def _part_counts(item: tuple) -> tuple:
    """One part's games, transitions, episodes, rounds and episode outcomes (a work item of an engine)."""
    path, rows, _ = item
    part = read_part_file(path, rows, columns=[S.GAME_ID, S.GAME, S.SEAT, S.ROUND, S.RESULTS, S.END_OF_GAME])
    counts = part.select(games=pl.col(S.GAME_ID).n_unique(), episodes=pl.col(S.END_OF_GAME).sum())
    pairs = part.select(S.GAME_ID, S.ROUND).unique()
    edges = []  # the first and the last game: one game's seats may lie on both sides of a part boundary
    for game in (part[S.GAME_ID][0], part[S.GAME_ID][-1]) if part.height else ():
        edges.append((str(game), frozenset(pairs.filter(pl.col(S.GAME_ID) == game)[S.ROUND].to_list())))
    return (int(counts["games"].item()), part.height, int(counts["episodes"].item()), pairs.height,
            episode_outcomes(part).select("final_score", "rank"), edges)


def summarize_dataset(dataset, *, engine: str = "embedded", workers: int | None = None,
                      address: str | None = None) -> DatasetSummary:
    """:func:`summarize` of a kanachan dataset folder, part by part in an engine's workers.

    Parts hold whole episodes (one player's game), so episodes and
    transitions add up; a game whose seats lie on both sides of a part
    boundary is counted once (its rounds too), and the per-episode outcomes
    (two numbers an episode) come back whole.

    Examples
    --------
    >>> summarize_dataset("corpus/").games  # doctest: +SKIP
    """
    ds = dataset if isinstance(dataset, PartedDataset) else PartedDataset(dataset)
    games = transitions = episodes = rounds = 0
    outcomes, last = [], None
    for g, t, e, r, o, edges in map_parts(ds, _part_counts, engine=engine, workers=workers, address=address,
                                          desc="summary"):
        games, transitions, episodes, rounds = games + g, transitions + t, episodes + e, rounds + r
        outcomes.append(o)
        if not edges:
            continue
        (first, first_rounds), (final, final_rounds) = edges
        continued = last is not None and first == last[0]  # a game the boundary cuts: counted once
        if continued:
            games -= 1
            rounds -= len(first_rounds & last[1])
        # the last game so far and every round of it seen so far (it may go on in the next part)
        last = (final, final_rounds | last[1]) if continued and final == first else (final, final_rounds)
    outcomes = pl.concat(outcomes, rechunk=True) if outcomes else pl.DataFrame(
        {"final_score": [], "rank": []}, schema={"final_score": pl.Int32, "rank": pl.UInt8})
    return _summary_of(games, transitions, episodes, rounds, outcomes)


def summarize(data) -> DatasetSummary:
    """Games, episodes, transitions, rounds and final rank / score distributions.

    Works on a frame, a LazyFrame or a dataset path; on a Parquet dataset only
    the columns needed are read.  A dataset folder is read part by part
    (:func:`summarize_dataset`).

    Examples
    --------
    >>> s = summarize("data/sample.tsv.gz")  # doctest: +SKIP
    >>> s.episodes == 4 * s.games  # doctest: +SKIP
    True
    """
    if isinstance(data, (str, Path)) and is_dataset_folder(data):
        return summarize_dataset(data)
    lf = as_lazy(data)
    counts = lf.select(
        games=pl.col(S.GAME_ID).n_unique(),
        transitions=pl.len(),
        episodes=pl.col(S.END_OF_GAME).sum(),
    ).collect()
    rounds = (
        lf.select(S.GAME_ID, S.ROUND).unique().select(pl.len()).collect().item()
    )
    return _summary_of(int(counts["games"].item()), int(counts["transitions"].item()),
                       int(counts["episodes"].item()), int(rounds), episode_outcomes(lf))


def _summary_of(games: int, transitions: int, episodes: int, rounds: int, outcomes: pl.DataFrame
                ) -> DatasetSummary:
    rank_counts = np.bincount(outcomes["rank"].to_numpy().astype(np.int64), minlength=4)[:4]
    scores = outcomes["final_score"].cast(pl.Float64)
    quantiles = {"min": scores.min(), "p25": scores.quantile(0.25), "median": scores.median(),
                 "p75": scores.quantile(0.75), "max": scores.max(), "mean": scores.mean()}
    return DatasetSummary(
        games=games,
        episodes=episodes,
        transitions=transitions,
        rounds=rounds,
        rank_counts=tuple(int(c) for c in rank_counts),
        final_score_quantiles={k: float(v) if v is not None else float("nan") for k, v in quantiles.items()},
    )
