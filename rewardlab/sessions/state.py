"""Pinned candidates and saved session state: the records and the small JSON file they live in.

:class:`Pinned` is an immutable snapshot of a tuner's candidate (parameters,
constants and how they were obtained, a summary of its statistics);
:class:`SavedState` is what :meth:`rewardlab.sessions.Session.save_state`
writes: the session kind, the rewardlab version, the parameters, constants,
pinned candidates, the data's path and its fingerprint.  :func:`write_state`
and :func:`read_state` move it to and from a JSON file (atomic write, no
overwrite unless asked; a malformed file is refused naming the file and the
field: not JSON, NaN or Infinity, a number beyond 64 bits, nesting deeper than
:data:`MAX_DEPTH`, a file over :data:`MAX_STATE_BYTES`, a field of the wrong
type); :func:`pin_label_rule` is the rule pinned labels follow;
:func:`spec_columns` names the columns a session's fingerprint reads
(:mod:`rewardlab.sessions.fingerprints` hashes them).
The session methods that use them are in :mod:`rewardlab.sessions.base`.

Where state files go: a path is the user's, relative to the working
directory (a notebook's kernel runs in the notebook's folder).  The widgets'
Save state / Restore box starts at :func:`default_state_path`,
``rewardlab-state/<kind>.state.json`` (:data:`STATE_FOLDER`), a folder that
the repository's ``.gitignore`` lists at any depth, so saved states never
show up as changes to commit; :func:`write_state` creates a missing folder of
that name (only that one: any other missing folder is refused, as for every
output).

Examples
--------
>>> p = Pinned(label="a", kind="epsilon", parameters={"n_steps": 10}, constants=None,
...            summary={"mean epsilon": 0.5})
>>> Pinned.from_json(p.to_json(), path="s.json", where="pinned[0]") == p
True
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from pathlib import Path
from types import MappingProxyType

import numpy as np
import polars as pl

from rewardlab.core.files import atomic_open, check_input
from rewardlab._version import __version__
from rewardlab.core.errors import DataFormatError, FileAccessError, ParameterError
from rewardlab.export import export_target

__all__ = ["STATE_FORMAT", "STATE_FOLDER", "default_state_path", "make_state_folder", "MAX_STATE_BYTES", "MAX_DEPTH",
           "Pinned", "SavedState", "frozen", "jsonable", "spec_columns", "write_state",
           "read_state", "state_error", "pin_label_rule", "shown_value"]

#: The state file format this rewardlab writes and reads (the file's ``format`` field).
STATE_FORMAT = 1
#: The folder saved states go to by default, under the working directory (``.gitignore`` lists it); created by
#: :func:`write_state` on the first save.
STATE_FOLDER = "rewardlab-state"
#: The largest state file :func:`read_state` reads (bytes); a saved session is a few kilobytes.
MAX_STATE_BYTES = 32 * 2**20
#: How deeply a state file may nest arrays and objects (a saved session nests about 6 levels).
MAX_DEPTH = 32
_RULE = "state_file"
_INT64 = 2**63


def frozen(value):
    """An immutable copy of JSON-like data: lists become tuples, dicts read-only mappings.

    Examples
    --------
    >>> frozen({"v": [1, 2]})["v"]
    (1, 2)
    """
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    if isinstance(value, (dict, MappingProxyType)):
        return MappingProxyType({str(k): frozen(v) for k, v in value.items()})
    return value


def jsonable(value):
    """Plain JSON data from what sessions hold: tuples as lists, numpy numbers as Python ones, NaN as None.

    Examples
    --------
    >>> jsonable({"v": (np.float64(1.5), float("nan")), "n": np.int64(3)})
    {'v': [1.5, None], 'n': 3}
    """
    if isinstance(value, (dict, MappingProxyType)):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    raise ParameterError("value", "should be JSON data (numbers, text, lists, mappings)", value)


def state_error(path, field: str, problem: str, *, hint: str | None = None) -> DataFormatError:
    """The error for a state file whose ``field`` is wrong: names the file and the field.

    ``hint``: what to do (default: save the state again, or fix the field).

    Examples
    --------
    >>> str(state_error("s.json", "format", "is 7; this rewardlab reads format 1"))
    "s.json: field 'format' is 7; this rewardlab reads format 1 [rule: state_file] Save the state again with this rewardlab, or fix the field."
    """
    if len(field) > 120:
        field = field[:100] + "..." + field[-12:]
    return DataFormatError(path, None, None, _RULE, f"field {field!r} {problem}",
                           hint=hint or "Save the state again with this rewardlab, or fix the field.")


def pin_label_rule(label, others) -> str | None:
    """What is wrong with ``label`` as a pinned candidate's label beside the labels ``others``, or None.

    A label is a non-empty string, differs from the others, and names no
    other column of :meth:`~rewardlab.sessions.Session.compare_pinned`'s
    table (``statistic``, ``live``, and ``<label> - live`` for each pin).

    Examples
    --------
    >>> pin_label_rule("best", ["pin 1"]) is None
    True
    >>> pin_label_rule("a - live", ["a"])
    "should not be 'live', 'statistic' or '<a pin> - live' (the comparison table's columns)"
    >>> pin_label_rule("a", ["a - live"])
    "should not be a pinned candidate's label without its ' - live' ('a - live' is pinned: the comparison table's columns)"
    """
    if not isinstance(label, str) or not label.strip():
        return "should be a non-empty string"
    others = list(others)
    if label in ("live", "statistic") or any(label == f"{p} - live" for p in others):
        return "should not be 'live', 'statistic' or '<a pin> - live' (the comparison table's columns)"
    if f"{label} - live" in others:
        return (f"should not be a pinned candidate's label without its ' - live' ({label + ' - live'!r} is "
                "pinned: the comparison table's columns)")
    if label in others:
        return "should differ from the pinned candidates' labels (" + ", ".join(others) + ")"
    return None


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def shown_value(value) -> str:
    """``value`` as JSON text for a message, cut to 80 characters (what a state file's field held).

    Examples
    --------
    >>> shown_value(frozen({"a": [1, 2]})), shown_value("x" * 100)[-5:]
    ('{"a": [1, 2]}', 'xx...')
    """
    try:
        return _cut(json.dumps(jsonable(value)))
    except (ParameterError, ValueError, TypeError):
        return _cut(repr(value))


def _expect(path, field: str, value, types, what: str, *, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise state_error(path, field, f"should be {what}, not {shown_value(value)}")
    return value


@dataclasses.dataclass(frozen=True)
class Pinned:
    """A pinned candidate: what a tuner showed when it was pinned (immutable).

    Attributes
    ----------
    label : str
        Its name in the pinned list and the comparison table.
    kind : str
        The session kind (``"ranking"``, ``"epsilon"``, ``"normalization"``,
        ``"comparison"``).
    parameters : mapping
        The session's parameters (sequences as tuples).
    constants : mapping or None
        Normalization constants and how they were obtained (``mean``,
        ``std``, ``provenance``), when the tuner has any.
    summary : mapping of str to float or None
        The statistics the comparison table shows (None: undefined, e.g. an
        absent rank).

    Examples
    --------
    >>> p = Pinned(label="a", kind="epsilon", parameters={"n_steps": 10}, constants=None, summary={})
    >>> p.parameters["n_steps"]
    10
    """

    label: str
    kind: str
    parameters: MappingProxyType
    constants: MappingProxyType | None
    summary: MappingProxyType

    def __post_init__(self):
        object.__setattr__(self, "parameters", frozen(jsonable(self.parameters)))
        object.__setattr__(self, "constants", None if self.constants is None else frozen(jsonable(self.constants)))
        object.__setattr__(self, "summary", frozen(jsonable(self.summary)))

    def __eq__(self, other) -> bool:
        return isinstance(other, Pinned) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_json(), sort_keys=True))

    def to_json(self) -> dict:
        """Plain JSON data (what the state file holds)."""
        return {"label": self.label, "kind": self.kind, "parameters": jsonable(self.parameters),
                "constants": jsonable(self.constants), "summary": jsonable(self.summary)}

    @classmethod
    def from_json(cls, data, *, path, where: str) -> "Pinned":
        """Read one pinned record of a state file; a wrong field names the file and ``where.field``."""
        _expect(path, where, data, (dict,), "an object")
        label = _expect(path, f"{where}.label", data.get("label"), (str,), "a non-empty string")
        if not label.strip():
            raise state_error(path, f"{where}.label", "should be a non-empty string, not \"\"")
        kind = _expect(path, f"{where}.kind", data.get("kind"), (str,), "a session kind")
        parameters = _expect(path, f"{where}.parameters", data.get("parameters"), (dict,), "an object")
        constants = _expect(path, f"{where}.constants", data.get("constants"), (dict,), "an object or null",
                            optional=True)
        summary = _expect(path, f"{where}.summary", data.get("summary"), (dict,), "an object")
        for name, value in summary.items():
            _expect(path, f"{where}.summary.{name}", value, (int, float), "a number or null", optional=True)
        return cls(label=label, kind=kind, parameters=parameters, constants=constants, summary=summary)


@dataclasses.dataclass(frozen=True)
class SavedState:
    """The content of a state file (see :meth:`rewardlab.sessions.Session.save_state`).

    Attributes
    ----------
    kind : str
        The session kind.
    version : str
        The rewardlab version that wrote it.
    parameters : mapping
    constants : mapping or None
        ``mean``, ``std`` and ``provenance`` (a mapping), when the tuner has constants.
    pinned : tuple of Pinned
    data_path : str or None
        The data's path(s) as given, when the session read it from files.
    data_paths : tuple of str or None
        The same, absolute: what :meth:`~rewardlab.sessions.Session.load_state` reads by default.
    fingerprint : str or None
        The fingerprint of the columns the session reads (None: no data).
    rows : int or None
        Rows of the data.
    options : mapping
        What the session was built with besides its parameters (e.g. the
        comparison's plug-in files).

    Examples
    --------
    >>> SavedState(kind="epsilon", version="0", parameters={}, constants=None, pinned=(), data_path=None,
    ...            data_paths=None, fingerprint=None, rows=None, options={}).kind
    'epsilon'
    """

    kind: str
    version: str
    parameters: MappingProxyType
    constants: MappingProxyType | None
    pinned: tuple
    data_path: str | None
    data_paths: tuple | None
    fingerprint: str | None
    rows: int | None
    options: MappingProxyType

    def to_json(self) -> dict:
        """Plain JSON data, in the file's field order."""
        return {"format": STATE_FORMAT, "kind": self.kind, "rewardlab_version": self.version,
                "parameters": jsonable(self.parameters), "constants": jsonable(self.constants),
                "pinned": [p.to_json() for p in self.pinned],
                "data": {"path": self.data_path, "paths": jsonable(self.data_paths), "fingerprint": self.fingerprint,
                         "rows": self.rows},
                "options": jsonable(self.options)}


def default_state_path(kind: str | None) -> Path:
    """Where a session of ``kind`` saves its state unless told otherwise: ``rewardlab-state/<kind>.state.json``.

    Relative to the working directory (in a notebook, the notebook's folder);
    :data:`STATE_FOLDER` is listed in ``.gitignore``.

    Examples
    --------
    >>> default_state_path("ranking").as_posix()
    'rewardlab-state/ranking.state.json'
    >>> default_state_path(None).name
    'tuner.state.json'
    """
    if kind is not None and (not isinstance(kind, str) or not kind or "/" in kind or kind.startswith(".")):
        raise ParameterError("kind", "should be a session kind such as 'ranking' (a plain name)", kind)
    return Path(STATE_FOLDER) / f"{kind or 'tuner'}.state.json"


def make_state_folder(path) -> None:
    """Create ``path``'s folder when it is a missing :data:`STATE_FOLDER` in an existing folder; else nothing.

    Any other missing folder is left to :func:`~rewardlab.export.export_target`
    to refuse, naming it.
    """
    if not isinstance(path, (str, Path)) or not str(path).strip():
        return
    folder = Path(os.path.expanduser(str(path).strip())).parent
    if folder.name == STATE_FOLDER and not folder.exists() and folder.parent.is_dir():
        try:
            folder.mkdir(exist_ok=True)
        except OSError:  # not writable: export_target says so, naming the path
            pass


def write_state(state: SavedState, path, *, overwrite: bool = False) -> Path:
    """Write ``state`` as a small JSON file (atomic; an existing file is replaced only with ``overwrite``).

    ``path`` is relative to the working directory; a missing
    :data:`STATE_FOLDER` (``rewardlab-state/``, where the widgets save by
    default, :func:`default_state_path`) is created, any other missing folder
    refused.

    Raises
    ------
    ParameterError, OutputExistsError
        Before anything is written (an empty path, a folder, an existing file).

    Examples
    --------
    >>> write_state(state, "tuner.state.json")  # doctest: +SKIP
    PosixPath('tuner.state.json')
    >>> write_state(state, default_state_path("ranking"))  # doctest: +SKIP
    PosixPath('rewardlab-state/ranking.state.json')
    """
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    make_state_folder(path)
    target = export_target(path, overwrite=overwrite)
    text = json.dumps(state.to_json(), indent=1, allow_nan=False) + "\n"
    with atomic_open(target, "w", overwrite=overwrite, compress=None) as f:
        f.write(text)
    return target


class _Refused:
    """A number the parser met that a state file may not hold (NaN, Infinity, beyond 64 bits): why, for the walk."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why


def _shown_number(text: str) -> str:
    """A number's text for a message: its ends when it is long."""
    return text if len(text) <= 24 else f"{text[:12]}...{text[-6:]}"


def _parse_int(text: str):
    digits = len(text.lstrip("-"))
    if digits > 19 or not -_INT64 <= int(text) < _INT64:
        return _Refused(f"is the integer {_shown_number(text)} ({digits} digits), beyond the 64-bit integers a state file "
                        "holds")
    return int(text)


def _parse_float(text: str):
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"is {_shown_number(text)}, beyond the range of a 64-bit float")
    return value


def _parse_constant(text: str):
    return _Refused(f"is {text}, not a finite number (a missing value is written null)")


def _field_name(parts) -> str:
    name = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)
    return name[1:] if name.startswith(".") else name or "(top level)"


def _walk(path, data) -> None:
    """Refuse, naming the field, a refused number, a lone surrogate or nesting deeper than MAX_DEPTH.

    Iterative and in document order, so the first problem of the file is reported.
    """
    stack = [(data, ())]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, _Refused):
            raise state_error(path, _field_name(parts), value.why)
        if isinstance(value, str):
            if not _is_text(value):
                raise state_error(path, _field_name(parts), "is not valid text (a lone UTF-16 surrogate)")
            continue
        if isinstance(value, (dict, list)):
            if len(parts) >= MAX_DEPTH:
                raise state_error(path, _field_name(parts), f"nests deeper than {MAX_DEPTH} levels; a state "
                                  "file nests about 6")
            if isinstance(value, dict):
                for key in value:
                    if not _is_text(key):
                        raise state_error(path, _field_name(parts), "has a name that is not valid text (a lone "
                                          "UTF-16 surrogate)")
                children = [(v, (*parts, k)) for k, v in value.items()]
            else:
                children = [(v, (*parts, k)) for k, v in enumerate(value)]
            stack.extend(reversed(children))


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _load_json(path):
    """The file's JSON data, read with bounded memory; every problem a DataFormatError naming the file."""
    size = check_input(path).st_size
    too_big = f"is larger than {MAX_STATE_BYTES:,} bytes, the most a state file may be (a saved session is a " \
              "few kilobytes)"
    if size > MAX_STATE_BYTES:
        raise DataFormatError(path, None, None, _RULE, too_big.replace("is larger", f"is {size:,} bytes, larger"),
                              hint="Is this a rewardlab state file?")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_STATE_BYTES + 1)
    except OSError as exc:
        raise FileAccessError(path, f"cannot be read ({exc.strerror or exc})",
                              hint="Check the path and the permissions of its folders") from None
    if len(raw) > MAX_STATE_BYTES:  # grew since it was checked
        raise DataFormatError(path, None, None, _RULE, too_big, hint="Is this a rewardlab state file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, None, _RULE, f"is not UTF-8 text (byte {exc.start})",
                              hint="Is this a rewardlab state file?") from None
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, exc.colno, _RULE, f"is not JSON: {exc.msg}",
                              hint="Is this a rewardlab state file?") from None
    except RecursionError:
        raise DataFormatError(path, None, None, _RULE, f"nests arrays or objects deeper than {MAX_DEPTH} levels "
                              "(a state file nests about 6)", hint="Is this a rewardlab state file?") from None
    except ValueError as exc:  # defensive: any other refusal of the parser
        raise DataFormatError(path, None, None, _RULE, f"is not JSON: {exc}",
                              hint="Is this a rewardlab state file?") from None
    _walk(path, data)
    return data


def read_state(path, *, kinds=None) -> SavedState:
    """Read and check a state file; anything wrong is refused naming the file and the field.

    ``kinds``: the session kinds accepted (default: any string).  What is
    checked here is the file's shape; the session that reads it checks the
    parameters, constants and every pinned candidate with its own rules
    (:meth:`rewardlab.sessions.Session.load_state`).

    Raises
    ------
    DataFormatError
        Not JSON (with the line and column), larger than
        :data:`MAX_STATE_BYTES`, NaN or Infinity, a number beyond 64 bits,
        nesting deeper than :data:`MAX_DEPTH`, an unknown ``format``, a
        field of the wrong type, or pinned labels that clash.

    Examples
    --------
    >>> read_state("tuner.state.json").kind  # doctest: +SKIP
    'ranking'
    """
    if not isinstance(path, (str, Path)):
        raise ParameterError("path", "should be a str or Path", path)
    data = _load_json(path)
    _expect(path, "(top level)", data, (dict,), "an object")
    fmt = data.get("format")
    if fmt != STATE_FORMAT or isinstance(fmt, bool):
        raise state_error(path, "format", f"is {shown_value(fmt)}; this rewardlab ({__version__}) reads "
                          f"format {STATE_FORMAT}")
    kind = _expect(path, "kind", data.get("kind"), (str,), "a session kind")
    if kinds is not None and kind not in kinds:
        raise state_error(path, "kind", f"is {_cut(repr(kind))}, not a session kind ("
                          + ", ".join(map(repr, kinds)) + ")")
    version = _expect(path, "rewardlab_version", data.get("rewardlab_version"), (str,), "a version string")
    parameters = _expect(path, "parameters", data.get("parameters"), (dict,), "an object")
    constants = _expect(path, "constants", data.get("constants"), (dict,), "an object or null", optional=True)
    if constants is not None:
        for name in ("mean", "std"):
            _expect(path, f"constants.{name}", constants.get(name), (int, float), "a number")
        _expect(path, "constants.provenance", constants.get("provenance"), (dict,), "an object")
    pins = _expect(path, "pinned", data.get("pinned"), (list,), "a list")
    pinned = tuple(Pinned.from_json(p, path=path, where=f"pinned[{k}]") for k, p in enumerate(pins))
    labels = [p.label for p in pinned]
    if len(set(labels)) != len(labels):
        raise state_error(path, "pinned", f"should have distinct labels, not {_cut(repr(labels))}")
    for k, p in enumerate(pinned):
        problem = pin_label_rule(p.label, labels[:k] + labels[k + 1:])
        if problem is not None:
            raise state_error(path, f"pinned[{k}].label", f"{problem}, not {_cut(repr(p.label))}")
        if p.kind != kind:
            raise state_error(path, f"pinned[{k}].kind", f"should be {kind!r} (the file's kind), not "
                              f"{_cut(repr(p.kind))}")
    where = _expect(path, "data", data.get("data"), (dict,), "an object")
    data_path = _expect(path, "data.path", where.get("path"), (str,), "a string or null", optional=True)
    paths = _expect(path, "data.paths", where.get("paths"), (list,), "a list of paths or null", optional=True)
    for k, p in enumerate(paths or ()):
        _expect(path, f"data.paths[{k}]", p, (str,), "a path")
        if not p or "\x00" in p:
            raise state_error(path, f"data.paths[{k}]", f"should be a path, not {_cut(repr(p))}")
    fingerprint = _expect(path, "data.fingerprint", where.get("fingerprint"), (str,), "a string or null",
                          optional=True)
    rows = _expect(path, "data.rows", where.get("rows"), (int,), "an integer or null", optional=True)
    if rows is not None and rows < 0:
        raise state_error(path, "data.rows", f"should be a count of rows (>= 0) or null, not {rows}")
    options = _expect(path, "options", data.get("options", {}), (dict,), "an object")
    return SavedState(kind=kind, version=version, parameters=frozen(parameters),
                      constants=None if constants is None else frozen(constants), pinned=pinned,
                      data_path=data_path,
                      data_paths=None if paths is None else tuple(paths), fingerprint=fingerprint, rows=rows,
                      options=frozen(options))


def spec_columns(spec, frame) -> list[str]:
    """The columns of ``frame`` (a frame, or its column names) a spec reads to find episodes (keys, step,
    agent, flags, boundaries).

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec_columns(FrameSpec(name="s", episode=("e",), terminated="t"), pl.DataFrame({"e": [0], "t": [True]}))
    ['e', 't']
    """
    have = set(frame.columns if isinstance(frame, pl.DataFrame) else frame)
    names = [*spec.episode, spec.step, spec.agent, spec.terminated, spec.truncated, *spec.boundaries]
    return [n for n in dict.fromkeys(names) if n is not None and n in have]
