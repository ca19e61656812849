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

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import polars as pl

from rewardlab.core.spec import DECLARE_HINT, FrameSpec, attached
from rewardlab.errors import ParameterError, SpecError
from rewardlab.schema import KANACHAN_SPEC

__all__ = [
    "Source", "register_source", "get_source", "registered_sources", "detect_source",
    "register_spec", "known_specs", "spec_of", "REWARDS_ONLY",
]


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
        this format; tried before the suffixes.
    description : str
        One line for ``rewardlab info --formats`` and error messages.
    """

    name: str
    spec: FrameSpec
    load: Callable
    scan: Callable | None = None
    suffixes: tuple[str, ...] = ()
    sniff: Callable | None = None
    description: str = ""

    def claims(self, path: Path) -> bool:
        """True when ``path`` is this format, by content first, then by suffix."""
        if self.sniff is not None and path.is_file() and self.sniff(path):
            return True
        name = path.name.lower()
        return any(name.endswith(s) for s in self.suffixes)


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


def registered_sources() -> dict[str, Source]:
    """The registered sources, by name, in registration order."""
    return dict(_SOURCES)


def get_source(name: str) -> Source:
    """The source registered as ``name``."""
    if name not in _SOURCES:
        raise ParameterError("format", "should be one of " + ", ".join(map(repr, _SOURCES)), name)
    return _SOURCES[name]


def detect_source(paths) -> Source:
    """The source that claims every path (content first, then suffix).

    Raises :class:`~rewardlab.errors.ParameterError` naming the path no source
    claims, or the formats when paths disagree.
    """
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not paths:
        raise ParameterError("paths", "should name at least one file", paths)
    found: Source | None = None
    for p in paths:
        claim = next((s for s in _SOURCES.values() if s.claims(p)), None)
        if claim is None:
            raise ParameterError("format", f"could not be detected for {p} (no registered source claims "
                                 "it); pass format= one of " + ", ".join(map(repr, _SOURCES)), None)
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
    Otherwise :class:`~rewardlab.errors.SpecError` saying how to declare one.

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
