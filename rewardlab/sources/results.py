"""What a source's ``read`` returns: the frame, and what it skipped (:class:`LoadResult`).

Every source with a skip mode (kanachan text, step tables, RLlib output)
returns a :class:`LoadResult`; :data:`SKIPPED_LINES_SCHEMA` is the table of
skipped input lines the text formats keep (a format may add columns, such as
a Parquet row group).

Examples
--------
>>> import polars as pl
>>> LoadResult.nothing_skipped(pl.DataFrame({"x": [1]})).skip_counts
{}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterable

import polars as pl

from rewardlab.core.files import atomic_open

__all__ = ["LoadResult", "PartLeftOut", "SKIPPED_LINES_SCHEMA", "write_skipped_lines"]

#: One row per skipped input line: where, why, and the line as read (``raw``: its bytes, no ``\\n``).
SKIPPED_LINES_SCHEMA = {
    "file": pl.String,
    "line": pl.UInt32,
    "column": pl.Int16,
    "reason": pl.String,
    "message": pl.String,
    "text": pl.String,
    "raw": pl.Binary,
}


@dataclasses.dataclass(frozen=True)
class PartLeftOut:
    """A part of a dataset folder that ``on_error="skip"`` left out (a part holds whole episodes, so the whole
    part goes; its file stays where it is).

    Attributes
    ----------
    index : int or None
        The part's index in the manifest (None: a part file the manifest does not list).
    file : Path
        The part's file, left in place (nothing is deleted).
    reason : str
        The rule it broke: ``missing_part``, ``part_size`` (truncated or replaced), ``foreign_part``,
        ``duplicated_part``, ``stray_part`` (not listed), ``base_part_left_out`` / ``rewards_part_left_out``
        (a rewards folder and its base leave out the same parts), ``written_without`` (a base part the
        rewards or returns folder was written without, listed in its manifest, so not checked again).
    message : str
        What was found, in words.
    rows, episodes : int
        What the manifest lists for it (0 for a file it does not list).

    Examples
    --------
    >>> PartLeftOut(1, Path("corpus/part-000001.parquet"), "missing_part", "the part is missing", 100, 4).describe()
    'part 1 (corpus/part-000001.parquet: missing_part, the part is missing; 100 rows, 4 episodes)'
    """

    index: int | None
    file: Path
    reason: str
    message: str
    rows: int
    episodes: int

    def describe(self) -> str:
        """One phrase: which part, its file, why, and what it held."""
        what = "a file not in the manifest" if self.index is None else f"part {self.index}"
        held = "" if self.index is None else f"; {self.rows:,} rows, {self.episodes:,} episodes"
        return f"{what} ({self.file}: {self.reason}, {self.message}{held})"


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """What a source's ``read`` returns (:func:`rewardlab.read_kanachan`, :func:`rewardlab.read_steps`, ...).

    Attributes
    ----------
    frame : polars.DataFrame
        The loaded transitions, with their spec attached.
    skipped : polars.DataFrame
        One row per skipped input line (or row): ``file``, ``line``,
        ``column``, ``reason``, ``message``, and the input as read (``text``,
        ``raw``: its bytes as in the file, without the ``\\n``; a CR of a
        CRLF line end stays); see each source for its columns.  Empty unless
        ``on_error="skip"``.
    skipped_path : Path or None
        The side file the skipped input was written to, if any.
    parts_left_out : tuple of PartLeftOut
        A dataset folder's parts left out whole (``on_error="skip"``; empty otherwise).

    Examples
    --------
    >>> result = rewardlab.read_kanachan("data/sample.tsv.gz", on_error="skip")  # doctest: +SKIP
    >>> result.skip_counts  # doctest: +SKIP
    {}
    """

    frame: pl.DataFrame
    skipped: pl.DataFrame
    skipped_path: Path | None = None
    parts_left_out: tuple[PartLeftOut, ...] = ()

    @property
    def parts_left_out_counts(self) -> dict[str, int]:
        """Parts left out per reason, most frequent first.

        Examples
        --------
        >>> LoadResult.nothing_skipped(pl.DataFrame()).parts_left_out_counts
        {}
        """
        counts: dict[str, int] = {}
        for part in self.parts_left_out:
            counts[part.reason] = counts.get(part.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def skip_counts(self) -> dict[str, int]:
        """Skipped lines per reason, most frequent first."""
        if self.skipped.height == 0:
            return {}
        counts = self.skipped.group_by("reason").len().sort(["len", "reason"], descending=[True, False])
        return dict(zip(counts["reason"].to_list(), counts["len"].to_list()))

    @classmethod
    def nothing_skipped(cls, frame: pl.DataFrame) -> "LoadResult":
        """The result of a load that skipped nothing (what formats without a skip mode give)."""
        return cls(frame, pl.DataFrame(schema=SKIPPED_LINES_SCHEMA))


def write_skipped_lines(lines: Iterable[bytes], path: str | Path, *, overwrite: bool = False) -> Path:
    """Write skipped input lines (a ``raw`` column's bytes, no ``\\n``) to the side file ``path``, byte for
    byte, one per line, atomically; refuses an existing file unless ``overwrite``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = write_skipped_lines([b"a\\r", b"b"], Path(d) / "skipped.txt")
    ...     out.read_bytes()
    b'a\\r\\nb\\n'
    """
    path = Path(path)
    with atomic_open(path, "wb", overwrite=overwrite) as f:
        for line in lines:  # CRs and undecodable bytes included
            f.write(line + b"\n")
    return path
