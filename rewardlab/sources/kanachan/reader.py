"""kanachan offline-RL annotation files -> the common frame.

A line is one transition; 8, 10 or 12 TAB-separated columns (see
:mod:`rewardlab.sources.kanachan.schema`, which documents each column).  A file is read
in blocks (a plain file is memory-mapped; a compressed one is decompressed a
block at a time) and the blocks are parsed in threads (one per core by
default, ``workers=``) by the compiled tokenizer of :mod:`rewardlab.sources.kanachan.tokenizer`, which writes the
lists straight into padded fixed-size arrays and checks every line-level
rule.  The next-state columns of a line are not stored: the tokenizer
compares them as bytes with the following line's state columns (pairs that
differ as text are compared again as numbers here), so the frame keeps each
state once.  Rules that need identifiers or whole episodes are checked here
with NumPy on whole columns.

The modules behind it, one concern each: :mod:`~rewardlab.sources.kanachan.blocks`
(reading and parsing blocks, the line rules), :mod:`~rewardlab.sources.kanachan.problems`
(rules and messages), :mod:`~rewardlab.sources.kanachan.episodes` (the episode
rules and the skip mode), :mod:`~rewardlab.sources.kanachan.assembly` (the
frame) and :mod:`~rewardlab.sources.kanachan.stream` (the same, chunk by chunk,
in bounded memory).

Errors name the file, the 1-based line, the 0-based column and the rule.
With ``on_error="skip"`` malformed lines are dropped together with the
episodes they break (only whole episodes are kept, see
:func:`~rewardlab.sources.kanachan.episodes.skip_episodes`), counted by reason, and kept byte for byte (in the
returned report and, if asked, in a side file), so nothing is lost.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.kanachan.assembly import assemble, number_games, skipped_frame
from rewardlab.sources.kanachan.blocks import file_blocks
from rewardlab.sources.kanachan.episodes import episode_checks, skip_episodes
from rewardlab.sources.kanachan.problems import SKIP_REASONS, Problems, other_format
from rewardlab.sources.kanachan.stream import stream_kanachan
from rewardlab.sources.results import SKIPPED_LINES_SCHEMA, LoadResult, write_skipped_lines
from rewardlab.core.files import (as_paths, check_not_input, check_output, open_compressed,
                                  progress_enabled)
from rewardlab.core.spec import attach, attached
from rewardlab.core.errors import (
    ParameterError,
    SkippedLinesWarning,
    check_choice,
    check_int,
)
from rewardlab.core.fronts import Fix, Text

__all__ = [
    "LoadResult",
    "read_kanachan",
    "load_kanachan",
    "scan_kanachan",
    "SKIP_REASONS",
    "DATASET_SUFFIXES",
    "is_dataset",
    "SOURCE",
    "sniff_kanachan",
    "CHUNK_BYTES",
]

#: Bytes of text parsed at a time by :func:`read_kanachan` (bounded parse buffers; 32 MB measured best on
#: 2 cores).
CHUNK_BYTES = 32 << 20


def read_one_file(path: Path, *, skip: bool, bar, offset: int = 0, workers: int | None = None):
    """Parse and validate one file; return (frame, skipped rows frame).

    Blocks are parsed in worker threads (:func:`~rewardlab.sources.kanachan.blocks.file_blocks`); the
    episode rules and the skip mode then run on the whole file.
    """
    spath = str(path)
    parsed = list(file_blocks(path, skip=skip, bar=bar, offset=offset, chunk_bytes=CHUNK_BYTES,
                              workers=workers))
    return whole_file(parsed, spath, skip=skip)


def whole_file(parsed: list, spath: str, *, skip: bool):
    """The file-wide stage: the episode rules (raise mode raises the first), the skip mode's choice of
    whole episodes, the frame and the skipped lines of the parsed blocks (rows numbered from their first
    line)."""
    blocks = [p.block for p in parsed]
    ids_list = [(p.ids, p.grades) for p in parsed]
    first_line = parsed[0].first_line
    row_problem: dict[int, tuple[int | None, str, str]] = {}
    base = 0
    for p in parsed:
        for r, v in p.problems.rows.items():
            row_problem[base + r] = v
        base += p.n
    n_total = base
    bad_all = np.zeros(n_total, dtype=bool)
    if row_problem:
        bad_all[np.fromiter(row_problem, dtype=np.int64)] = True

    # ---- episode structure on the rows that passed the line checks
    keep = ~bad_all
    kind = np.concatenate([b.kind for b in blocks])
    seat = np.concatenate([ids["seat"] for ids, _ in ids_list]).astype(np.int64)
    gid_all = pl.concat([b.game_id for b in blocks]) if len(blocks) > 1 else blocks[0].game_id
    kept_idx = np.flatnonzero(keep)
    codes_all = gid_all.to_physical().to_numpy().astype(np.int64)  # game ids as numbers, once
    ep_problems = Problems(spath, lambda r: int(kept_idx[r]) + first_line, skip)
    episode = episode_checks(codes_all[kept_idx], seat[kept_idx], kind[kept_idx], ep_problems,
                             lambda r: gid_all[int(kept_idx[r])])
    if not skip:
        ep_problems.raise_first()
    else:
        keep, episode = skip_episodes(kind, seat, codes_all, bad_all, row_problem,
                                      {int(kept_idx[r]): v for r, v in ep_problems.rows.items()},
                                      lambda r: gid_all[r], first_line=first_line)
        kept_idx = np.flatnonzero(keep)

    frame = assemble(blocks, ids_list, keep, kept_idx, episode, spath, first_line=first_line)
    skipped = skipped_frame(spath, blocks, row_problem, first_line=first_line)
    return frame, skipped


# ----------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------




# Dataset layouts live in rewardlab.sources.storage; the names are re-exported here.
from rewardlab.sources.storage import DATASET_SUFFIXES, is_dataset, read_dataset, scan_dataset  # noqa: E402
from rewardlab.sources.registry import Source, register_source  # noqa: E402


def read_kanachan(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    workers: int | None = None,
) -> LoadResult:
    """Load kanachan annotation files (plain, ``.gz``, ``.bz2``) and report skipped lines.

    Parameters
    ----------
    paths : path or sequence of paths
        Annotation files, read in the order given; games must not repeat
        across files.  A converted Parquet dataset is accepted too.
    on_error : {"raise", "skip"}
        ``"raise"`` stops at the first malformed line with a
        :class:`~rewardlab.core.errors.DataFormatError` naming file, line, column
        and rule.  ``"skip"`` drops malformed lines and the episodes they
        touch, counts them by reason and keeps them in ``result.skipped``.
    skipped_path : path, optional
        With ``on_error="skip"``, also write the skipped lines verbatim to
        this side file (atomic; refuses to overwrite unless ``overwrite``).
    overwrite : bool
        Replace an existing ``skipped_path``.
    progress : bool, optional
        Show a tqdm bar over the input bytes (default: when interactive).
    workers : int, optional
        Threads that parse blocks of text (default: the cores this process
        may run on, ``os.sched_getaffinity``).

    Returns
    -------
    LoadResult
        ``frame`` (schema :data:`rewardlab.sources.kanachan.schema.FRAME_SCHEMA`), ``skipped``
        and ``skipped_path``.

    Examples
    --------
    >>> from rewardlab import read_kanachan
    >>> result = read_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> result.frame.height, result.skip_counts  # doctest: +SKIP
    (90012, {})
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    if workers is not None:
        workers = check_int("workers", workers, low=1)
    files = as_paths(paths)
    if skipped_path is not None and on_error != "skip":
        raise ParameterError("skipped_path", Text("is only used with ", Fix("on_error", "skip", verb="", option=True)), str(skipped_path))
    for p in files:  # another format's file: say what it looks like, not which TAB column it lacks
        problem = other_format(p) if p.is_file() and not sniff_kanachan(p) else None
        if problem is not None:
            raise problem
    if all(is_dataset(p) for p in files):
        return LoadResult(_kanachan_dataset(read_dataset(files), files), pl.DataFrame(schema=SKIPPED_LINES_SCHEMA))
    if any(is_dataset(p) for p in files):
        raise ParameterError("paths", "should be all annotation files or all Parquet datasets",
                             [str(p) for p in files])
    check_not_input(skipped_path, files, name="skipped_path")  # even with overwrite
    if skipped_path is not None:
        check_output(skipped_path, overwrite=overwrite)  # before any work
    skip = on_error == "skip"
    frames, skipped = [], []
    total = sum(p.stat().st_size for p in files if p.exists())
    from tqdm.auto import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, desc="loading kanachan",
              disable=not progress_enabled(progress), leave=False) as bar:
        for path in files:
            start = bar.n
            frame, skip_df = read_one_file(path, skip=skip, bar=bar, offset=start, workers=workers)
            bar.n = start + (path.stat().st_size if path.exists() else 0)
            bar.refresh()
            frames.append(frame)
            skipped.append(skip_df)
    frame = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    skipped_df = pl.concat(skipped) if skipped else pl.DataFrame(schema=SKIPPED_LINES_SCHEMA)
    frame = attach(number_games(frame, files, skip=skip), S.KANACHAN_SPEC)
    result_path = None
    if skip and skipped_path is not None:
        result_path = write_skipped_lines(skipped_df["raw"].to_list(), skipped_path, overwrite=overwrite)
    result = LoadResult(frame, skipped_df, result_path)
    if skip and skipped_df.height:
        import warnings

        counts = ", ".join(f"{k}: {v}" for k, v in result.skip_counts.items())
        where = f"; kept in {result_path}" if result_path else "; see result.skipped"
        warnings.warn(SkippedLinesWarning(
            f"skipped {skipped_df.height} of {skipped_df.height + frame.height} lines ({counts}){where}"),
            stacklevel=2)
    return result


def _kanachan_dataset(frame, files: list[Path]):
    """``frame`` (a DataFrame or LazyFrame read from a dataset), refused when it is another source's frame."""
    spec = attached(frame)
    if spec is not None and spec.name != S.KANACHAN_SPEC.name:
        raise ParameterError("paths", f"should be kanachan data; {files[0]} holds a {spec.name!r} frame",
                             [str(p) for p in files], hint="Open it with rewardlab.load() or rewardlab.scan().")
    return frame


def load_kanachan(
    paths,
    *,
    on_error: str = "raise",
    skipped_path: str | Path | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
) -> pl.DataFrame:
    """Load kanachan annotation files (or a converted Parquet dataset) into the common frame.

    Same options as :func:`read_kanachan`; with ``on_error="skip"`` a
    ``skipped_path`` is required so the skipped lines are kept somewhere
    (use :func:`read_kanachan` to keep them in memory instead).

    Examples
    --------
    >>> import rewardlab
    >>> frame = rewardlab.load_kanachan("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> frame.select("game_id", "seat", "step", "end_of_game").head(2)  # doctest: +SKIP
    """
    if on_error == "skip" and skipped_path is None:
        raise ParameterError(
            "skipped_path", Text("is required with ", Fix("on_error", "skip", verb="", option=True), " so skipped lines are kept"), None,
            hint="Name a side file, or call read_kanachan() to get them in memory.")
    return read_kanachan(paths, on_error=on_error, skipped_path=skipped_path,
                         overwrite=overwrite, progress=progress).frame


def scan_kanachan(paths) -> pl.LazyFrame:
    """Lazily scan converted datasets (``.parquet`` or ``.arrow``; see ``rewardlab convert``).

    Annotation text files are parsed eagerly (they must be validated whole)
    and returned as a lazy frame; convert them once for lazy scans of data
    larger than memory.

    Examples
    --------
    >>> import rewardlab
    >>> lf = rewardlab.scan_kanachan("data/sample.parquet")  # doctest: +SKIP
    >>> lf.filter(pl.col("end_of_game")).select(pl.len()).collect()  # doctest: +SKIP
    """
    files = as_paths(paths)
    if not all(is_dataset(p) for p in files):
        return load_kanachan(files, progress=False).lazy()
    return _kanachan_dataset(scan_dataset(files), files)


# ----------------------------------------------------------------------------
# The source registry entry
# ----------------------------------------------------------------------------

#: Suffixes claimed without looking inside (the content test recognizes any other name).
KANACHAN_SUFFIXES = (".tsv", ".tsv.gz", ".tsv.bz2")

_GAME_ID_BYTES = re.compile(rb"[0-9a-fA-F]{32}")


def sniff_kanachan(path) -> bool:
    """True when the file's first line looks like a kanachan annotation line (8, 10 or 12
    TAB-separated columns, a 32-hex-digit game id first); reads at most 64 KiB.

    Examples
    --------
    >>> sniff_kanachan("data/sample.tsv.gz")  # doctest: +SKIP
    True
    """
    try:
        with open_compressed(path) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError, ValueError):  # not readable, not gzip / bz2 after all
        return False
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    columns = line.split(b"\t")
    return len(columns) in (8, 10, 12) and _GAME_ID_BYTES.fullmatch(columns[0]) is not None


def _load_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 progress: bool | None = None) -> pl.DataFrame:
    return load_kanachan(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                         progress=progress)


def _scan_source(paths, *, progress: bool | None = None) -> pl.LazyFrame:
    files = as_paths(paths)
    if all(is_dataset(p) for p in files):
        return scan_dataset(files)
    frame = load_kanachan(files, progress=progress)
    return attach(frame.lazy(), S.KANACHAN_SPEC)


def _read_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False,
                 progress: bool | None = None) -> LoadResult:
    return read_kanachan(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite,
                         progress=progress)


#: kanachan annotation files as a source (format ``"kanachan"``).
SOURCE = register_source(Source(
    name="kanachan",
    spec=S.KANACHAN_SPEC,
    load=_load_source,
    scan=_scan_source,
    read=_read_source,
    stream=stream_kanachan,
    suffixes=KANACHAN_SUFFIXES,
    sniff=sniff_kanachan,
    description="kanachan offline-RL annotation files (TAB-separated text, plain, .gz or .bz2)",
))
