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

import numpy as np
import polars as pl

from rewardlab.core.spec import DECLARE_HINT, FrameSpec, attached
from rewardlab.core.errors import ParameterError, SpecError
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.kanachan.schema import KANACHAN_SPEC

__all__ = [
    "Source", "register_source", "unregister_source", "get_source", "registered_sources", "detect_source",
    "register_spec", "known_specs", "spec_of", "REWARDS_ONLY", "BUILTIN_SOURCES", "format_names",
    "claim", "format_remedy", "looks_like", "describe_file",
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
    "retro": "rewardlab.sources.retro.source",
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
        None for formats whose columns are fixed.  A hook that takes a
        ``frame`` keyword is given the frame ``info`` has already loaded
        (with the same options), so it need not read the files again.
    stream : callable or None
        ``stream(paths, *, chunk_bytes, on_error, progress)`` (and, when it
        declares them, ``workers``: the cores to use, ``spool_in``: a folder
        for what it reads ahead) yielding
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
    sniff_folder : callable or None
        ``sniff_folder(path) -> bool``: True when the existing folder
        ``path`` as a whole is this format (a dataset folder's manifest);
        tried before the files inside are looked at.

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
    sniff_folder: Callable | None = None

    @property
    def what(self) -> str:
        """What the format's files are, in a few words (its description up to the first parenthesis).

        Examples
        --------
        >>> from rewardlab.core.spec import FrameSpec
        >>> Source("toy", FrameSpec(name="toy", episode=("e",)), print, description="toy logs (one a line)").what
        'toy logs'
        """
        return self.description.split(" (")[0].split(";")[0].strip() or f"{self.name} files"

    def claims(self, path: Path) -> bool:
        """True when ``path`` is this format, by content first, then by suffix."""
        return self.sniffs(path) or self.suffix_match(path) > 0

    def sniffs(self, path: Path) -> bool:
        """True when :attr:`sniff` recognizes the existing file ``path`` (a file it cannot read: False)."""
        if self.sniff is None or not path.is_file():
            return False
        try:
            return bool(self.sniff(path))
        except OSError:  # unreadable: not recognized (the reader names it, when a format is chosen)
            return False

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
        raise ParameterError("source", Text(f"names a format already registered ({source.name!r}); ",
                                            Fix("replace", True), " to replace it"), source.name)
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


#: Python's own loader of a built-in format, named beside ``rewardlab.load(..., format=NAME)`` in remedies.
_LOADERS = {"kanachan": "load_kanachan", "mjai": "load_mjai", "rllib": "load_rllib", "minari": "load_minari",
            "retro": "load_retro", "steps": "load_steps"}


def format_remedy(*names: str) -> str:
    """How to name a format on each front: ``--format NAME`` on the command line, ``format="NAME"`` in Python.

    With no name, how to name one at all.

    Examples
    --------
    >>> format_remedy("mjai")
    'pass --format mjai on the command line, format="mjai" in Python (rewardlab.load(PATH, format="mjai"), or rewardlab.load_mjai(PATH))'
    >>> format_remedy("mjai", "steps")
    'pass --format mjai or --format steps on the command line, format="mjai" or format="steps" in Python'
    >>> format_remedy()
    'pass --format NAME on the command line, format="NAME" in Python (`rewardlab info --formats` lists the formats)'
    """
    if not names:
        return ('pass --format NAME on the command line, format="NAME" in Python '
                "(`rewardlab info --formats` lists the formats)")
    cli = " or ".join(f"--format {n}" for n in names)
    python = " or ".join(f'format="{n}"' for n in names)
    text = f"pass {cli} on the command line, {python} in Python"
    if len(names) == 1:
        loader = _LOADERS.get(names[0])
        text += f' (rewardlab.load(PATH, format="{names[0]}")' + (f", or rewardlab.{loader}(PATH))" if loader else ")")
    return text


def claim(path) -> tuple[Source | None, str]:
    """The source of one file and how it was recognized: ``(source, "content")`` for the first source
    (in :func:`registered_sources` order) whose sniff recognizes it, else ``(source, "suffix")`` for
    the longest suffix match (the latest registered on a tie, so a source of your own wins over a
    built-in one), else ``(None, "")``.

    Examples
    --------
    >>> source, how = claim("data/sample.tsv.gz")
    >>> source.name, how
    ('kanachan', 'content')
    >>> claim("data/mjai/README.md")
    (None, '')
    """
    path = Path(path)
    # the built-in sources are imported in turn, each just before its sniff: a file an early one
    # recognizes (a converted dataset, a kanachan log) does not import the later ones' readers (start-up)
    for name, module in BUILTIN_SOURCES.items():
        importlib.import_module(module)
        if name in _SOURCES and _SOURCES[name].sniffs(path):
            return _SOURCES[name], "content"
    sources = list(registered_sources().values())
    for s in sources:
        if s.name not in BUILTIN_SOURCES and s.sniffs(path):
            return s, "content"
    best, length = None, 0
    for s in sources:
        n = s.suffix_match(path)
        if n and n >= length:
            best, length = s, n
    return (best, "suffix") if best is not None else (None, "")


def _claim(path: Path) -> Source | None:
    return claim(path)[0]


def looks_like(path, *, besides: tuple[str, ...] = ()) -> str | None:
    """``"this looks like WHAT (format NAME, recognized by its content)"`` and how to load it, for the
    file a format other than those in ``besides`` claims; None when none does.

    What a reader says when the file it was given is another format's.

    Examples
    --------
    >>> print(looks_like("data/mjai/hanchan_15.json"))
    this looks like MJAI game logs (format 'mjai', recognized by its content): pass --format mjai on the command line, format="mjai" in Python (rewardlab.load(PATH, format="mjai"), or rewardlab.load_mjai(PATH))
    >>> looks_like("data/sample.tsv.gz", besides=("kanachan",)) is None
    True
    """
    source, how = claim(path)
    if source is None or source.name in besides:
        return None
    return f"this looks like {source.what} (format {source.name!r}, recognized by its {how}): " + format_remedy(
        source.name)


def describe_file(path) -> str:
    """What a file no format claims looks like, in a few words: empty, binary (its first bytes), or text
    (its first line).

    Examples
    --------
    >>> describe_file("data/mjai/README.md")
    "text whose first line reads '# MJAI game logs (riichienv)'"
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror or exc})"
    if not head:
        return "an empty file"
    if b"\0" in head or head[:2] in (b"\x1f\x8b", b"BZ") or head[:4] == b"PAR1":
        return "binary data, first bytes " + head[:8].hex(" ")
    first = next((line for line in head.splitlines() if line.strip()), b"").decode("utf-8", "replace").strip()
    return f"text whose first line reads {first[:80] + ('...' if len(first) > 80 else '')!r}"


#: The most files of a folder whose content detection looks at (an even spread over the sorted files,
#: the first and the last among them): a folder of 10^5 game logs is detected in a fraction of a second.
FOLDER_FILES_LOOKED_AT = 256


def _folder_files(folder: Path) -> list[Path]:
    """The files under ``folder`` (recursively, sorted), less hidden ones and those in hidden folders."""
    try:
        return sorted(q for q in folder.rglob("*") if q.is_file()
                      and not any(part.startswith(".") for part in q.relative_to(folder).parts))
    except OSError:
        return []


def _named(files: list[Path], folder: Path, most: int = 4) -> str:
    """Up to ``most`` files, relative to ``folder``, and how many more."""
    names = [str(q.relative_to(folder)) for q in files[:most]]
    return ", ".join(names) + (f" and {len(files) - most} more" if len(files) > most else "")


def _claim_folder(path: Path) -> Source | None:
    """A folder's format: a source whose ``sniff_folder`` recognizes it; else the one format that claims
    files inside it by content (files nobody claims, a README, a summary, are passed over); else the one
    that claims files by suffix.  Past :data:`FOLDER_FILES_LOOKED_AT` files, an even spread of them is
    looked at.  Files of several formats (by content, or by suffix when none claims
    any by content) are refused, naming them and what to pass."""
    sources = list(registered_sources().values())
    for s in sources:
        if s.sniff_folder is not None and s.sniff_folder(path):
            return s
    by_content: dict[str, list[Path]] = {}
    by_suffix: dict[str, list[Path]] = {}
    files = _folder_files(path)
    if len(files) > FOLDER_FILES_LOOKED_AT:  # a corpus of many files: an even spread of them decides
        files = [files[i] for i in np.linspace(0, len(files) - 1, FOLDER_FILES_LOOKED_AT).round().astype(int)]
    for q in files:
        source, how = claim(q)
        if source is not None:
            (by_content if how == "content" else by_suffix).setdefault(source.name, []).append(q)
    for how, found in (("content", by_content), ("suffix", by_suffix)):
        if len(found) == 1:
            return get_source(next(iter(found)))
        if len(found) > 1:
            raise ParameterError(
                "format", f"could not be detected for the folder {path}: it holds files of several formats "
                f"(by {how}): " + "; ".join(f"{name} ({_named(files, path)})" for name, files in found.items()),
                str(path), hint="Name the format: " + format_remedy(*found) + "; or name the files of one format "
                f"(a list, or a pattern such as '{path}/*{_common_suffix(next(iter(found.values())))}').")
    return None


def _common_suffix(files: list[Path]) -> str:
    suffixes = {"".join(q.suffixes[-2:]) if q.suffix in (".gz", ".bz2") else q.suffix for q in files}
    return suffixes.pop() if len(suffixes) == 1 else ""


def _undetected(path: Path) -> ParameterError:
    """The error for a path no format claims: what it looks like, the formats tried and what to pass."""
    names = registered_sources()
    if path.is_dir():
        files = _folder_files(path)
        looks = (f"a folder of {len(files)} file{'s' if len(files) != 1 else ''} no format claims "
                 f"({_named(files, path)})" if files else "an empty folder")
    else:
        looks = describe_file(path)
    tried = "; ".join(f"{s.name} ({' or '.join(x for x in (', '.join(s.suffixes), 'by content' if s.sniff else '') if x)})"
                      for s in names.values())
    return ParameterError(
        "format", f"could not be detected for {path}: no registered source claims it by content or suffix "
        f"(it is {looks}); tried {', '.join(map(repr, names))}", str(path),
        hint="Name the format: " + format_remedy() + ". Registered formats: " + tried
        + ". A new format is one register_source() call (rewardlab.sources.registry).")


def detect_source(paths) -> Source:
    """The source that claims every path: by content (or metadata) first, then by suffix.

    A folder is the format of the files in it (:func:`claim` on each file:
    the one format claiming files by content wins, files nobody claims are
    passed over).  Raises :class:`~rewardlab.core.errors.ParameterError`
    naming the path no source claims, what it looks like, the formats tried
    and what to pass (``--format NAME``, ``format="NAME"``), or the formats
    when paths disagree.

    Examples
    --------
    >>> detect_source("data/sample.tsv.gz").name
    'kanachan'
    >>> detect_source("data/mjai").name  # logs beside a README and a games.meta
    'mjai'
    """
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not paths:
        raise ParameterError("paths", "should name at least one file", paths)
    found: Source | None = None
    first: Path | None = None
    for p in paths:
        claim_ = _claim_folder(p) if p.is_dir() else _claim(p)
        if claim_ is None:
            raise _undetected(p)
        if found is not None and claim_ is not found:
            raise ParameterError("paths", f"should all be one format; {p} is {claim_.name!r} ({claim_.what}), "
                                 f"the first, {first}, is {found.name!r} ({found.what})", [str(x) for x in paths],
                                 hint="Load them separately, or, if they are all one format, name it: "
                                 + format_remedy(found.name, claim_.name) + ".")
        found, first = claim_, first or p
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

_REWARD_PREFIXES = ("reward_", "done_", "term_")


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
