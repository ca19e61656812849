"""What a session reads: data (frames, paths, the sample), numbers typed as text, cancel tokens, progress.

:func:`locate` (the sample data from a notebook), :func:`load_frame`,
:func:`source_paths`, :class:`LoadedData`, :func:`base_columns` (a session's data),
:func:`parse_number` and :func:`check_bool` (values typed in a widget),
:class:`CancelToken`, :func:`cancel_token` and :func:`progress_callback`
(long work that reports progress and can stop).

Examples
--------
>>> parse_number("offset", "25000", integer=True)
25000
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from rewardlab.core import columns
from rewardlab.core.errors import ExportCancelled, ParameterError
from rewardlab.core.spec import keep_spec
from rewardlab.sources.dispatch import as_lazy

__all__ = [
    "locate",
    "parse_number",
    "CancelToken",
    "cancel_token",
    "progress_callback",
    "check_bool",
    "load_frame",
    "source_paths",
    "LoadedData",
    "base_columns",
]


# --------------------------------------------------------------------------
# Finding the sample data from a notebook
# --------------------------------------------------------------------------


def locate(path: str | Path, *, start: str | Path | None = None) -> Path:
    """The file or folder a notebook's parameter names: your own absolute path, or a repository file.

    An absolute path (or one starting with ``~``) is the user's own data and
    is returned as it is when something exists there.  A relative path
    (e.g. ``"data/sample.tsv.gz"``) is looked for in ``start`` and its
    parents, then next to the installed ``rewardlab`` package (an editable
    install: the repository): notebooks run with the kernel's working
    directory wherever the notebook is (JupyterLab: ``notebooks/``).

    Parameters
    ----------
    path : str or Path
        An absolute path, or a path relative to ``start`` or one of its
        parents or to the repository.
    start : str or Path, optional
        Where to start looking for a relative path (default: the current
        working directory).

    Returns
    -------
    Path
        The absolute path found (an absolute ``path`` as given, ``~`` expanded).

    Raises
    ------
    ParameterError
        ``path`` is empty or not a path; an absolute path where nothing
        exists (naming the first part that is missing); a relative path found
        in none of those folders.

    Examples
    --------
    >>> import tempfile
    >>> mine = Path(tempfile.mkdtemp()) / "my_data.parquet"
    >>> _ = mine.write_bytes(b"")
    >>> locate(str(mine)) == mine
    True
    >>> locate(mine.parent / "typo.parquet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `path` should name an existing file or folder; nothing is there (its folder '...' exists). Received '.../typo.parquet'. Absolute paths are used as they are: check the spelling.
    >>> locate("data/sample.tsv.gz").name  # doctest: +SKIP
    'sample.tsv.gz'
    """
    if not isinstance(path, (str, Path)):
        raise ParameterError("path", "should be a str or Path naming a file or folder, such as "
                             "'/home/me/games.parquet' or 'data/sample.tsv.gz'", path)
    if not str(path).strip():
        raise ParameterError("path", "should name a file or folder; it is empty", str(path),
                             hint="Type an absolute path such as '/home/me/games.parquet'.")
    given = Path(path).expanduser()
    if given.is_absolute():
        if given.exists():
            return given
        raise ParameterError("path", f"should name an existing file or folder; {_missing_part(given)}", str(path),
                             hint="Absolute paths are used as they are: check the spelling.")
    here = Path.cwd() if start is None else Path(start)
    package_root = Path(__file__).resolve().parents[1]
    searched = []
    for base in (here.resolve(), package_root):
        for folder in (base, *base.parents):
            if folder in searched:
                continue
            searched.append(folder)
            candidate = folder / given
            if candidate.exists():
                return candidate
    raise ParameterError("path", f"should exist under {here} or one of its parents (or next to the "
                         "rewardlab package)", str(path),
                         hint="To use your own data, pass its absolute path, e.g. "
                         "locate('/home/me/games.parquet').")


def _missing_part(path: Path) -> str:
    """Why nothing exists at the absolute ``path``: the first missing folder, or a file where a folder should be.

    Examples
    --------
    >>> _missing_part(Path("/no-such-folder-here/data.parquet"))
    "the folder '/no-such-folder-here' does not exist"
    """
    missing = path
    while missing.parent != missing and not missing.parent.exists():
        missing = missing.parent
    folder = missing.parent  # exists (or is the root)
    if not folder.is_dir():
        return f"{str(folder)!r} is a file, not a folder"
    if missing != path:
        return f"the folder {str(missing)!r} does not exist"
    return f"nothing is there (its folder {str(folder)!r} exists)"


# --------------------------------------------------------------------------
# Reading numbers typed as text; cancelling long work
# --------------------------------------------------------------------------

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_MAX_DIGITS = 309  # float64's largest value has 309 digits (int() would refuse 4,300 with a ValueError)


def parse_number(name: str, value, *, integer: bool = False):
    """A number from what a person typed: ``"25000"``, ``"-1.5"``, ``"1e6"``; numbers pass through.

    Only ASCII decimal notation is read (digits, one dot, an optional
    exponent, surrounding spaces ignored): no thousands separators, no
    decimal comma, no ``inf`` / ``nan``, no digit groups with ``_``.  An
    integer field takes whole numbers only (``"1e6"`` and ``"3.0"`` are
    whole; ``"1.5"`` is refused, never read as 15 or 1).  Range rules are
    the session's.

    Parameters
    ----------
    name : str
        The parameter, for the message.
    value : str, int or float
        Text as typed, or a number (returned unchanged).
    integer : bool
        Whole numbers only; returns an ``int``.

    Returns
    -------
    int or float (or ``value`` unchanged when it is not a string)

    Raises
    ------
    ParameterError
        Naming the parameter and echoing the text.

    Examples
    --------
    >>> parse_number("divisor", " 1e3 ", integer=True), parse_number("std", "0.25")
    (1000, 0.25)
    >>> parse_number("divisor", "1.5", integer=True)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `divisor` should be a whole number such as 1000. Received '1.5'.
    >>> parse_number("std", "1,5")
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `std` should be a number such as 0.5, -3 or 1e-3 (a dot for decimals, no thousands separators). Received '1,5'.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    shown = value if len(value) <= 60 else f"{value[:40]}...{value[-10:]} ({len(value):,} characters)"
    if integer and _INTEGER_TEXT.fullmatch(text):
        digits = text.lstrip("+-").lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS or int(digits) > sys.float_info.max:
            raise ParameterError(name, "should be a finite number (it overflows float64)", shown)
        return -int(digits) if text.startswith("-") else int(digits)
    if not _DECIMAL_TEXT.fullmatch(text):
        rule = ("should be a whole number such as 1000" if integer else
                "should be a number such as 0.5, -3 or 1e-3 (a dot for decimals, no thousands separators)")
        raise ParameterError(name, rule, shown)
    number = float(text)
    if not math.isfinite(number):
        raise ParameterError(name, "should be a finite number (it overflows float64)", shown)
    if integer:
        if not number.is_integer():
            raise ParameterError(name, "should be a whole number such as 1000", shown)
        return int(number)
    return number


class CancelToken:
    """Ask long work (an export and its round-trip check) to stop at its next check point.

    Thread-safe: a UI thread calls :meth:`cancel` while the work runs in
    another thread; the work raises :class:`~rewardlab.core.errors.ExportCancelled`
    at its next check point (between chunks of the comparison, before and
    after check-plugin), having written nothing.

    Examples
    --------
    >>> token = CancelToken()
    >>> token.cancelled
    False
    >>> token.cancel()
    >>> token.check("reward.py", "the comparison")
    Traceback (most recent call last):
    rewardlab.core.errors.ExportCancelled: export of 'reward.py' cancelled during the comparison; nothing was written
    """

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the work to stop."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def check(self, path, stage: str) -> None:
        """Raise :class:`~rewardlab.core.errors.ExportCancelled` when cancelled."""
        if self._event.is_set():
            raise ExportCancelled(path, stage)


def cancel_token(cancel) -> CancelToken:
    """The token long work checks: ``cancel`` itself, or a fresh one when None.

    Examples
    --------
    >>> cancel_token(None).cancelled
    False
    >>> cancel_token("stop")
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `cancel` should be a rewardlab.sessions.CancelToken or None. Received 'stop'.
    """
    if cancel is None:
        return CancelToken()
    if not isinstance(cancel, CancelToken):
        raise ParameterError("cancel", "should be a rewardlab.sessions.CancelToken or None", cancel)
    return cancel


def progress_callback(progress) -> Callable[[float, str], None]:
    """``progress(fraction, message)`` itself, or a callable that does nothing when None.

    Examples
    --------
    >>> progress_callback(None)(0.5, "half way")
    >>> progress_callback(print)(1.0, "done")
    1.0 done
    """
    if progress is None:
        return lambda fraction, message: None
    if not callable(progress):
        raise ParameterError("progress", "should be a callable progress(fraction, message) or None", progress)
    return progress


def check_bool(name: str, value) -> bool:
    """``value`` as a bool when it is one (numpy's included); otherwise a ParameterError naming ``name``.

    Examples
    --------
    >>> check_bool("overwrite", True)
    True
    >>> check_bool("overwrite", "yes")
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `overwrite` should be True or False. Received 'yes'.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(name, "should be True or False", value)
    return bool(value)


@dataclasses.dataclass(frozen=True, eq=False)
class LoadedData:
    """Data already read from files: a session takes it as it takes the paths (same description and paths).

    What :func:`rewardlab.sessions.base.saved_data` hands a session built
    from the paths a state file records, so a path that does not load is
    reported with the state file before the session is built.

    Attributes
    ----------
    frame : polars.DataFrame
    source : str
        The description :func:`load_frame` gives paths (their names, joined).
    paths : tuple of str
        The absolute paths (:func:`source_paths`).

    Examples
    --------
    >>> d = LoadedData(pl.DataFrame({"x": [1]}), "/data/a.tsv", ("/data/a.tsv",))
    >>> load_frame(d)[1], source_paths(d)
    ('/data/a.tsv', ('/data/a.tsv',))
    """

    frame: pl.DataFrame
    source: str
    paths: tuple


def load_frame(data) -> tuple[pl.DataFrame, str | None]:
    """An eager frame and, when ``data`` was a path (or :class:`LoadedData`), its description.

    The spec ``data`` carries (:func:`rewardlab.core.spec.attached`) stays
    attached to the frame returned.

    Examples
    --------
    >>> load_frame(pl.DataFrame({"x": [1]}))[1] is None
    True
    """
    if isinstance(data, pl.DataFrame):
        return data, None
    if isinstance(data, LoadedData):
        return data.frame, data.source
    if isinstance(data, pl.LazyFrame):
        return keep_spec(data, data.collect()), None
    if isinstance(data, (str, Path)) or (isinstance(data, (list, tuple)) and data
                                          and all(isinstance(p, (str, Path)) for p in data)):
        paths = [data] if isinstance(data, (str, Path)) else list(data)
        lazy = as_lazy(data)
        return keep_spec(lazy, lazy.collect()), ", ".join(str(p) for p in paths)
    raise ParameterError("data", "should be a polars DataFrame or LazyFrame, or path(s) to a dataset",
                         type(data).__name__)


def source_paths(data) -> tuple[str, ...] | None:
    """The absolute paths ``data`` names (a path or a list of paths), or None for a frame.

    What a state file records so the data can be read again from any working directory.

    Examples
    --------
    >>> source_paths(pl.DataFrame()) is None
    True
    >>> source_paths("/data/a.tsv")
    ('/data/a.tsv',)
    """
    if isinstance(data, LoadedData):
        return data.paths
    if isinstance(data, (str, Path)):
        data = [data]
    if isinstance(data, (list, tuple)) and data and all(isinstance(p, (str, Path)) for p in data):
        return tuple(str(Path(p).expanduser().resolve()) for p in data)
    return None


def base_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame without reward / done / reward-term columns (so a re-applied plug-in cannot clash).

    Examples
    --------
    >>> base_columns(pl.DataFrame({"x": [1], "reward_a": [0.0], "done_a": [True]})).columns
    ['x']
    """
    keep = [c for c in frame.columns
            if not c.startswith((columns.REWARD_PREFIX, columns.DONE_PREFIX, columns.TERM_PREFIX))]
    return frame.select(keep) if len(keep) != len(frame.columns) else frame
