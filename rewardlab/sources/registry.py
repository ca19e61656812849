"""The registry of sources, and where a frame's spec comes from (:func:`spec_of`).

A *source* turns files of one format into frames that carry a
:class:`~rewardlab.core.spec.FrameSpec`.  Each registers a :class:`Source`
(its name, the suffixes and content it recognizes, how to load and scan it, its
spec); :func:`rewardlab.load` and :func:`rewardlab.scan` dispatch through
:func:`get_source` / :func:`detect_source`.  Nothing else in rewardlab names a
source: adding one is a folder under ``rewardlab/sources/`` (or any module of
your own) and one :func:`register_source` call.

Examples
--------
>>> from rewardlab.sources.registry import registered_sources
>>> "kanachan" in registered_sources()  # doctest: +SKIP
True
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl

from rewardlab.core.spec import DECLARE_HINT, FrameSpec, attached
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC

__all__ = [
    "Source", "register_source", "unregister_source", "get_source", "registered_sources", "detect_source",
    "register_spec", "known_specs", "spec_of", "REWARDS_ONLY", "BUILTIN_SOURCES", "format_names",
]

#: The sources rewardlab ships: format name -> the module that registers it when imported.
#: They are imported on first use of the registry (not at ``import rewardlab``: the command
#: line's start stays fast), in this order, which is also the order detection tries them.
BUILTIN_SOURCES: dict[str, str] = {
    "dataset": "rewardlab.sources.datasets",
    "kanachan": "rewardlab.sources.kanachan.reader",
    "rllib": "rewardlab.sources.rllib",
    "mjai": "rewardlab.sources.mjai.source",
    "minari": "rewardlab.sources.minari.source",
    "steps": "rewardlab.sources.steps",
}

#: Options every ``load`` / ``scan`` may declare, passed by :func:`rewardlab.load` itself.
RESERVED_OPTIONS = ("progress", "spec")


@dataclass(frozen=True)
class Source:
    """One input format.

    Parameters
    ----------
    name : str
        What ``format=`` and ``--format`` call it.
    spec : FrameSpec
        The spec of the frames it produces.
    load : callable
        ``load(paths: list[Path], **options) -> polars.DataFrame``, with the
        spec attached (:func:`rewardlab.core.spec.attach`).
    scan : callable or None
        ``scan(paths, **options) -> polars.LazyFrame``; None when the format
        cannot be read lazily.
    suffixes : tuple of str
        File name endings it claims (``".tsv.gz"``, ``".parquet"``).
    sniff : callable or None
        ``sniff(path) -> bool``: True when the file's content (or metadata) is
        this format; tried (for every source) before the suffixes.  It gets
        existing files only, and should read little (a header, a footer).
    description : str
        One line for ``rewardlab info --formats`` and error messages.
    read : callable or None
        ``read(paths, **options)`` returning an object with ``frame`` and a
        report of what was skipped (``skipped``, ``skip_counts``,
        ``skipped_path``, as :class:`rewardlab.LoadResult`); what
        :func:`rewardlab.convert` uses when given.  None for formats that
        skip nothing.
    roles : callable or None
        ``roles(paths, **options) -> dict``: which column plays which role
        (episode, step, flags, states, ...), for ``rewardlab info`` to show;
        None for formats whose columns are fixed.
    stream : callable or None
        ``stream(paths, *, chunk_bytes, on_error, progress)`` yielding
        :class:`rewardlab.LoadResult` objects whose frames each hold whole
        episodes, in input order, each built from about ``chunk_bytes`` of
        input: what :func:`rewardlab.convert` uses to write a dataset of parts
        in bounded memory.  Concatenated, the frames (and the skipped rows)
        equal what ``read`` returns for the same files.  None: the files are
        read one by one (a file must fit in memory) when per-file reads
        concatenate to the whole read, else all at once.
    per_file : bool
        True when reading the files one at a time and concatenating the
        frames gives what one read of them all gives (no numbering or
        check across files): a source without ``stream`` is then converted
        one file at a time.
    validates : bool
        True when ``load`` itself checks every rule of
        :meth:`FrameSpec.validate <rewardlab.core.spec.FrameSpec.validate>`
        (and names the file and line where one is broken): :func:`rewardlab.load`
        then checks only the columns instead of checking the frame again.

    ``load``, ``scan`` and ``read`` declare their options as keyword
    parameters: :meth:`check_options` refuses any other name (no ``**kwargs``
    swallowing a typo).  ``progress`` and ``spec`` are passed by
    :func:`rewardlab.load` when the callable declares them.

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> def load(paths, *, sep=","): ...
    >>> toy = Source("toy", FrameSpec(name="toy", episode=("e",)), load, suffixes=(".toy",))
    >>> toy.options()
    ('sep',)
    """

    name: str
    spec: FrameSpec
    load: Callable
    scan: Callable | None = None
    suffixes: tuple[str, ...] = ()
    sniff: Callable | None = None
    description: str = ""
    read: Callable | None = None
    roles: Callable | None = None
    stream: Callable | None = None
    per_file: bool = False
    validates: bool = False

    def claims(self, path: Path) -> bool:
        """True when ``path`` is this format, by content first, then by suffix."""
        return self.sniffs(path) or self.suffix_match(path) > 0

    def sniffs(self, path: Path) -> bool:
        """True when :attr:`sniff` recognizes the existing file ``path``."""
        return self.sniff is not None and path.is_file() and bool(self.sniff(path))

    def suffix_match(self, path: Path) -> int:
        """The length of the longest of :attr:`suffixes` ``path`` ends with (0: none)."""
        name = path.name.lower()
        return max((len(s) for s in self.suffixes if name.endswith(s.lower())), default=0)

    def options(self, what: str = "load") -> tuple[str, ...] | None:
        """The options ``load`` (or ``scan``, ``read``) declares; None when it takes ``**kwargs``."""
        function = getattr(self, what)
        if function is None:
            return ()
        params = list(inspect.signature(function).parameters.values())[1:]  # after `paths`
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return None
        return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
                     and p.name not in RESERVED_OPTIONS)

    def takes(self, option: str, what: str = "load") -> bool:
        """True when ``load`` (or ``scan``, ``read``) declares the parameter ``option``."""
        function = getattr(self, what)
        if function is None:
            return False
        params = inspect.signature(function).parameters
        return option in params or any(p.kind is p.VAR_KEYWORD for p in params.values())

    def check_options(self, options: dict | None, what: str = "load") -> dict:
        """``options`` as a dict, refusing a name ``load`` (or ``scan``, ``read``) does not declare.

        Examples
        --------
        >>> from rewardlab.core.spec import FrameSpec
        >>> def load(paths, *, sep=","): ...
        >>> Source("toy", FrameSpec(name="toy", episode=("e",)), load).check_options({"spe": ";"})
        Traceback (most recent call last):
        ...
        rewardlab.core.errors.ParameterError: `options` should name only options of the 'toy' format (sep); 'spe' is not one. Received {'spe': ';'}.
        """
        if options is None:
            return {}
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise ParameterError("options", "should be a dict of option names to values", options)
        known = self.options(what)
        if known is None:
            return dict(options)
        for name in options:
            if name not in known:
                raise ParameterError("options", f"should name only options of the {self.name!r} format "
                                     f"({', '.join(known) or 'it takes none'}); {name!r} is not one",
                                     options)
        return dict(options)


_SOURCES: dict[str, Source] = {}
_SPECS: dict[str, FrameSpec] = {}


def register_source(source: Source, *, replace: bool = False) -> Source:
    """Add ``source`` to the registry (and its spec to :func:`known_specs`); returns it.

    A name already taken is refused unless ``replace=True``.
    """
    if not isinstance(source, Source):
        raise ParameterError("source", "should be a rewardlab.sources.registry.Source", type(source).__name__)
    if source.name in _SOURCES and not replace and _SOURCES[source.name] is not source:
        raise ParameterError("source", f"names a format already registered ({source.name!r}); "
                             "pass replace=True to replace it", source.name)
    _SOURCES[source.name] = source
    register_spec(source.spec, replace=True)
    return source


def unregister_source(name: str) -> Source:
    """Remove the source registered as ``name`` (and its spec from :func:`known_specs`); returns it.

    For tests and notebooks that register a source of their own for a while.

    Examples
    --------
    >>> unregister_source("nope")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `name` should be a registered format. Received 'nope'.
    """
    if name not in _SOURCES:
        raise ParameterError("name", "should be a registered format", name)
    source = _SOURCES.pop(name)
    if _SPECS.get(source.spec.name) is source.spec and source.spec is not KANACHAN_SPEC:
        del _SPECS[source.spec.name]
    return source


def _import_builtins() -> None:
    """Import the built-in source modules (each registers itself); a no-op once done."""
    for module in BUILTIN_SOURCES.values():
        importlib.import_module(module)


def format_names() -> tuple[str, ...]:
    """The format names: built-in ones (without importing them) and every registered one."""
    return tuple(dict.fromkeys([*BUILTIN_SOURCES, *_SOURCES]))


def registered_sources() -> dict[str, Source]:
    """The registered sources by name: built-in ones first (in :data:`BUILTIN_SOURCES` order),
    then the others in registration order."""
    _import_builtins()
    ordered = {name: _SOURCES[name] for name in BUILTIN_SOURCES if name in _SOURCES}
    return ordered | {name: s for name, s in _SOURCES.items() if name not in ordered}


def get_source(name: str) -> Source:
    """The source registered as ``name``."""
    if name not in _SOURCES and name in BUILTIN_SOURCES:
        importlib.import_module(BUILTIN_SOURCES[name])
    if name not in _SOURCES:
        raise ParameterError("format", "should be one of " + ", ".join(map(repr, registered_sources())),
                             name)
    return _SOURCES[name]


def _claim(path: Path) -> Source | None:
    """The source of one file: a source whose sniff recognizes its content, else the longest suffix
    match (the latest registered on a tie, so a source of your own wins over a built-in one)."""
    sources = list(registered_sources().values())
    for s in sources:
        if s.sniffs(path):
            return s
    best, length = None, 0
    for s in sources:
        n = s.suffix_match(path)
        if n and n >= length:
            best, length = s, n
    return best


def _claim_folder(path: Path) -> Source | None:
    """A folder is the format of the first file in it (sorted) that a source claims."""
    try:
        inside = sorted(q for q in path.iterdir() if q.is_file())
    except OSError:
        return None
    return next((c for c in map(_claim, inside) if c is not None), None)


def detect_source(paths) -> Source:
    """The source that claims every path: by content (or metadata) first, then by suffix.

    A folder is the format of the files in it.  Raises
    :class:`~rewardlab.core.errors.ParameterError` naming the path no source
    claims and the registered formats, or the formats when paths disagree.

    Examples
    --------
    >>> detect_source("data/sample.tsv.gz").name
    'kanachan'
    """
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not paths:
        raise ParameterError("paths", "should name at least one file", paths)
    found: Source | None = None
    for p in paths:
        claim = _claim_folder(p) if p.is_dir() else _claim(p)
        if claim is None:
            names = registered_sources()
            raise ParameterError(
                "format", f"could not be detected for {p}: no registered source claims it by content "
                "or suffix; pass format= one of " + ", ".join(map(repr, names)), None,
                hint="Registered formats: " + "; ".join(
                    f"{s.name} ({', '.join(s.suffixes) or 'by content'})" for s in names.values())
                + ". A new format is one register_source() call (rewardlab.sources.registry).")
        if found is not None and claim is not found:
            raise ParameterError("paths", f"should all be one format; {p} is {claim.name!r}, the first "
                                 f"is {found.name!r}", [str(x) for x in paths])
        found = claim
    return found


def register_spec(spec: FrameSpec, *, replace: bool = False) -> FrameSpec:
    """Make ``spec`` recognizable: :func:`spec_of` gives it to a frame holding its episode columns."""
    if not isinstance(spec, FrameSpec):
        raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
    if spec.name in _SPECS and _SPECS[spec.name] != spec and not replace:
        raise ParameterError("spec", f"names a spec already registered ({spec.name!r})", spec.name)
    _SPECS[spec.name] = spec
    return spec


def known_specs() -> dict[str, FrameSpec]:
    """The recognizable specs, by name."""
    return dict(_SPECS)


#: The spec of a table holding nothing but ``reward_<name>`` / ``done_<name>``
#: columns: one stream, trajectories cut at each reward's done flags.
REWARDS_ONLY = FrameSpec(name="rewards", description="reward_* / done_* columns only: one stream")

_REWARD_PREFIXES = ("reward_", "done_")


def _columns(data) -> list[str]:
    if isinstance(data, pl.LazyFrame):
        return data.collect_schema().names()
    return list(data.columns)


def spec_of(data, spec: FrameSpec | None = None) -> FrameSpec:
    """The spec describing ``data`` (a DataFrame or LazyFrame), projected to its columns.

    In order: ``spec`` when given; the spec attached to this frame object
    (:func:`~rewardlab.core.spec.attach`); a registered spec whose episode
    columns the data holds (:func:`register_spec`, the most specific first);
    :data:`REWARDS_ONLY` for a table of reward and done columns alone.
    Otherwise :class:`~rewardlab.core.errors.SpecError` saying how to declare one.

    Examples
    --------
    >>> import polars as pl
    >>> spec_of(pl.DataFrame({"reward_a": [1.0], "done_a": [True]})).name
    'rewards'
    """
    names = _columns(data)
    if spec is not None:
        if not isinstance(spec, FrameSpec):
            raise ParameterError("spec", "should be a rewardlab.FrameSpec", type(spec).__name__)
        return spec.project(names)
    found = attached(data)
    if found is not None:
        return found.project(names)
    candidates = sorted((s for s in _SPECS.values() if s.matches(names)),
                        key=lambda s: -len(s.episode))
    if candidates:
        return candidates[0].project(names)
    if all(c.startswith(_REWARD_PREFIXES) for c in names):
        return REWARDS_ONLY
    raise SpecError("the frame has no spec: rewardlab cannot tell where its episodes begin and end "
                    f"(columns: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})",
                    hint=DECLARE_HINT)


# kanachan frames are recognized by their columns even when the frame object lost its record
# (every with_columns makes a new object).
register_spec(KANACHAN_SPEC)
