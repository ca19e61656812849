"""``rewardlab.load`` and ``rewardlab.scan``: open files of any registered format.

The format is detected from the files (their content or dataset metadata
first, then their suffix; :func:`rewardlab.sources.registry.detect_source`)
unless ``format=`` names it.  A folder is detected from the files inside it
(the format that claims them by content wins; a README or a summary beside
the data is passed over), and a pattern (``"runs/*.parquet"``, ``**`` for
any depth) names the files it matches, sorted, read as one table
(:func:`expand_paths`).  Format options go in ``options`` (a dict) and
are checked against what the source declares, so a misspelt option is an
error naming it, never silently ignored.  The frame returned carries its
spec (:func:`rewardlab.core.spec.attached`) and was checked against it
(:meth:`~rewardlab.core.spec.FrameSpec.validate`: a source that hands over
episodes out of order, or flags that do not end them, is an error naming the
column and row).

Examples
--------
>>> import rewardlab
>>> frame = rewardlab.load("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
>>> rewardlab.core.spec.attached(frame).name  # doctest: +SKIP
'kanachan'
>>> lf = rewardlab.scan("sample.parquet")  # doctest: +SKIP
"""

from __future__ import annotations

import glob
from pathlib import Path

import polars as pl

from rewardlab.core.files import as_paths, check_input
from rewardlab.core.spec import FrameSpec, attach, attached, keep_spec
from rewardlab.core.errors import FrameError, ParameterError
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC
from rewardlab.sources.registry import Source, detect_source, get_source

__all__ = ["load", "scan", "resolve_source", "as_lazy", "merge_options", "expand_paths"]

#: Characters that make a path a pattern (when no file has that very name).
_PATTERN = ("*", "?", "[")


def expand_paths(paths) -> list[Path]:
    """``paths`` as a list, each pattern (``*``, ``?``, ``[...]``; ``**`` for any depth) replaced by the files
    and folders it matches, sorted.  A path that exists under its own name is kept as it is.

    A pattern matching nothing is a :class:`~rewardlab.core.errors.ParameterError` naming it.

    Examples
    --------
    >>> [p.name for p in expand_paths("data/mjai/tonpusen_*.json")]
    ['tonpusen_196.json', 'tonpusen_245.json']
    >>> expand_paths(["data/sample.tsv.gz"])
    [PosixPath('data/sample.tsv.gz')]
    """
    out: list[Path] = []
    for p in as_paths(paths):
        text = str(p)
        if not any(c in text for c in _PATTERN) or p.exists():
            out.append(p)
            continue
        found = sorted(glob.glob(text, recursive=True))
        if not found:
            raise ParameterError("paths", "should match at least one file; no file matches this pattern", text,
                                 hint="Check the pattern (quote it on the command line so that rewardlab, not "
                                 "the shell, expands it; ** matches any depth of folders).")
        out += [Path(q) for q in found]
    return out


def resolve_source(paths, *, format: str | None = None) -> tuple[list[Path], Source]:
    """The paths as a list (patterns expanded: :func:`expand_paths`) and the source that reads them
    (``format`` or detected).

    Detection checks each path first (a missing file, a FIFO: a
    :class:`~rewardlab.core.errors.DataFormatError` naming it).

    Examples
    --------
    >>> resolve_source("data/sample.tsv.gz")[1].name  # doctest: +SKIP
    'kanachan'
    """
    files = expand_paths(paths)
    if format is not None:
        if not isinstance(format, str):
            raise ParameterError("format", "should be a format name (a string)", format)
        return files, get_source(format)
    for p in files:
        check_input(p, folder=True)
    return files, detect_source(files)


def merge_options(options: dict | None, format_options: dict) -> dict | None:
    """``options`` and the format options passed as keyword arguments, as one dict (a name given both
    ways is refused).

    Examples
    --------
    >>> merge_options({"on_error": "skip"}, {"episode": "ep"})
    {'on_error': 'skip', 'episode': 'ep'}
    >>> merge_options({"episode": "a"}, {"episode": "b"})
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `episode` should be given once, as a keyword or in options=, not both. Received 'b'.
    """
    if not format_options:
        return options
    if options is not None and not isinstance(options, dict):
        raise ParameterError("options", "should be a dict of option names to values", options)
    for name, value in format_options.items():
        if options and name in options:
            raise ParameterError(name, "should be given once, as a keyword or in options=, not both", value)
    return {**(options or {}), **format_options}


def _call(source: Source, what: str, spec, progress, options) -> dict:
    """The keyword arguments of the source's ``load`` / ``scan``: its options, and progress and spec
    where it declares them."""
    kwargs = source.check_options(options, what)
    if progress is not None and source.takes("progress", what):
        kwargs["progress"] = progress
    if spec is not None and source.takes("spec", what):
        kwargs["spec"] = spec
    return kwargs


def _check_spec(spec) -> None:
    if spec is not None and not isinstance(spec, FrameSpec):
        raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)


def load(paths, *, format: str | None = None, spec: FrameSpec | None = None,
         progress: bool | None = None, options: dict | None = None, **format_options) -> pl.DataFrame:
    """Load trajectory files of any registered format into a frame that carries its spec.

    Parameters
    ----------
    paths : path or list of paths
        Files (or folders of dataset files) of one format.
    format : str, optional
        A registered format name (``"kanachan"``, ``"dataset"``, ...; see
        :func:`rewardlab.sources.registry.registered_sources`).  Default:
        detected from content or metadata, then suffix.
    spec : FrameSpec, optional
        Describe the frame with this spec instead of the source's (for a
        plain table).  The frame is checked against it.
    progress : bool, optional
        Show a progress bar where the source has one (default: when interactive).
    options : dict, optional
        The format's own options (kanachan: ``on_error``, ``skipped_path``,
        ``overwrite``); a name the format does not declare is refused.
    **format_options
        The same options as keyword arguments (``format="steps",
        episode="ep"``), merged with ``options`` and checked alike.

    Returns
    -------
    polars.DataFrame
        With its spec attached (:func:`rewardlab.core.spec.attached`).

    Examples
    --------
    >>> frame = load("data/sample.tsv.gz", progress=False)  # doctest: +SKIP
    >>> frame = load("trips.txt", format="kanachan", options={"on_error": "skip",
    ...              "skipped_path": "trips.skipped.txt"})  # doctest: +SKIP
    >>> frame = load("steps.csv", format="steps", episode="ep", reward="r")  # doctest: +SKIP
    """
    _check_spec(spec)
    options = merge_options(options, format_options)
    files, source = resolve_source(paths, format=format)
    kwargs = _call(source, "load", spec, progress, options)
    frame = source.load(files, **kwargs)
    if not isinstance(frame, pl.DataFrame):
        raise FrameError(f"the {source.name!r} source's load returned {type(frame).__name__}, not a "
                         "polars DataFrame", hint="Fix the source's load function.")
    return _described(frame, source, spec)


def scan(paths, *, format: str | None = None, spec: FrameSpec | None = None,
         progress: bool | None = None, options: dict | None = None, **format_options) -> pl.LazyFrame:
    """Scan trajectory files lazily (a source that cannot is loaded, then made lazy).

    Same parameters as :func:`load` (format options as keywords too); returns a
    LazyFrame with its spec attached.

    Examples
    --------
    >>> lf = scan("sample.parquet")  # doctest: +SKIP
    """
    _check_spec(spec)
    options = merge_options(options, format_options)
    files, source = resolve_source(paths, format=format)
    if source.scan is None:  # the loaded frame's own spec goes with its lazy view
        frame = load(files, format=source.name, spec=spec, progress=progress, options=options)
        return _described(keep_spec(frame, frame.lazy()), source, spec)
    kwargs = _call(source, "scan", spec, progress, options)
    lf = source.scan(files, **kwargs)
    if not isinstance(lf, pl.LazyFrame):
        raise FrameError(f"the {source.name!r} source's scan returned {type(lf).__name__}, not a "
                         "polars LazyFrame", hint="Fix the source's scan function.")
    return _described(lf, source, spec)


def _described(frame, source: Source, spec: FrameSpec | None):
    """``frame`` with its spec attached: ``spec`` (checked), else the one the source attached, else its own."""
    if spec is not None:  # a spec the caller declared: checked whole on an eager frame
        if isinstance(frame, pl.DataFrame):
            spec.validate(frame)
        else:
            spec.check_columns(frame)
        return attach(frame, spec)
    found = attached(frame) or source.spec
    if isinstance(frame, pl.DataFrame) and found != KANACHAN_SPEC and not source.validates:
        # a source's frame is checked whole (episodes contiguous, steps in order, flags at the
        # ends): analyses read episodes through the spec and would silently misread them
        # otherwise.  kanachan's reader (and a source marked `validates`) checks all of it itself,
        # line by line.
        found.validate(frame)
    else:
        found.check_columns(frame)
    return attach(frame, found)


def as_lazy(data) -> pl.LazyFrame:
    """Return a LazyFrame for a frame, a LazyFrame, or path(s) of any registered format (:func:`scan`).

    A frame's attached spec stays attached to its lazy view.

    Examples
    --------
    >>> import polars as pl
    >>> as_lazy(pl.DataFrame({"a": [1]})).collect().height
    1
    """
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return keep_spec(data, data.lazy())
    return scan(data)
