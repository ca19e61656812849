"""Pinned candidates and saved session state: the records and the small JSON file they live in.

:class:`Pinned` is an immutable snapshot of a tuner's candidate (parameters,
constants and how they were obtained, a summary of its statistics);
:class:`SavedState` is what :meth:`rewardlab.sessions.Session.save_state`
writes: the session kind, the rewardlab version, the parameters, constants,
pinned candidates, the data's path and its fingerprint.  :func:`write_state`
and :func:`read_state` move it to and from a JSON file (atomic write, no
overwrite unless asked; a malformed file is refused naming the file and the
field); :func:`fingerprint_columns` hashes the columns a session reads.
The session methods that use them are in :mod:`rewardlab.sessions.base`.

Examples
--------
>>> p = Pinned(label="a", kind="epsilon", parameters={"n_steps": 10}, constants=None,
...            summary={"mean epsilon": 0.5})
>>> Pinned.from_json(p.to_json(), path="s.json", where="pinned[0]") == p
True
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
from pathlib import Path
from types import MappingProxyType

import numpy as np
import polars as pl

from rewardlab.core.files import atomic_open, check_input
from rewardlab._version import __version__
from rewardlab.core.errors import DataFormatError, ParameterError
from rewardlab.export import export_target

__all__ = ["STATE_FORMAT", "Pinned", "SavedState", "frozen", "jsonable", "fingerprint_columns", "spec_columns",
           "write_state", "read_state", "state_error"]

#: The state file format this rewardlab writes and reads (the file's ``format`` field).
STATE_FORMAT = 1
_RULE = "state_file"


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


def state_error(path, field: str, problem: str) -> DataFormatError:
    """The error for a state file whose ``field`` is wrong: names the file and the field.

    Examples
    --------
    >>> str(state_error("s.json", "format", "is 7; this rewardlab reads format 1"))
    "s.json: field 'format' is 7; this rewardlab reads format 1 [rule: state_file] Save the state again with this rewardlab, or fix the field."
    """
    return DataFormatError(path, None, None, _RULE, f"field {field!r} {problem}",
                           hint="Save the state again with this rewardlab, or fix the field.")


def _expect(path, field: str, value, types, what: str, *, optional: bool = False):
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise state_error(path, field, f"should be {what}, not {json.dumps(value)[:80]}")
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


def write_state(state: SavedState, path, *, overwrite: bool = False) -> Path:
    """Write ``state`` as a small JSON file (atomic; an existing file is replaced only with ``overwrite``).

    Raises
    ------
    ParameterError, OutputExistsError
        Before anything is written (an empty path, a folder, an existing file).

    Examples
    --------
    >>> write_state(state, "tuner.state.json")  # doctest: +SKIP
    PosixPath('tuner.state.json')
    """
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    target = export_target(path, overwrite=overwrite)
    text = json.dumps(state.to_json(), indent=1, allow_nan=False) + "\n"
    with atomic_open(target, "w", overwrite=overwrite, compress=None) as f:
        f.write(text)
    return target


def read_state(path, *, kinds=None) -> SavedState:
    """Read and check a state file; anything wrong is refused naming the file and the field.

    ``kinds``: the session kinds accepted (default: any string).

    Raises
    ------
    DataFormatError
        Not JSON (with the line and column), an unknown ``format``, or a
        field of the wrong type.

    Examples
    --------
    >>> read_state("tuner.state.json").kind  # doctest: +SKIP
    'ranking'
    """
    if not isinstance(path, (str, Path)):
        raise ParameterError("path", "should be a str or Path", path)
    check_input(path)
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataFormatError(path, None, None, _RULE, f"is not UTF-8 text (byte {exc.start})",
                              hint="Is this a rewardlab state file?") from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, exc.colno, _RULE, f"is not JSON: {exc.msg}",
                              hint="Is this a rewardlab state file?") from None
    _expect(path, "(top level)", data, (dict,), "an object")
    fmt = data.get("format")
    if fmt != STATE_FORMAT or isinstance(fmt, bool):
        raise state_error(path, "format", f"is {json.dumps(fmt)}; this rewardlab ({__version__}) reads "
                          f"format {STATE_FORMAT}")
    kind = _expect(path, "kind", data.get("kind"), (str,), "a session kind")
    if kinds is not None and kind not in kinds:
        raise state_error(path, "kind", f"is {kind!r}, not a session kind (" + ", ".join(map(repr, kinds)) + ")")
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
        raise state_error(path, "pinned", f"should have distinct labels, not {labels}")
    for k, p in enumerate(pinned):
        if p.kind != kind:
            raise state_error(path, f"pinned[{k}].kind", f"should be {kind!r} (the file's kind), not {p.kind!r}")
    where = _expect(path, "data", data.get("data"), (dict,), "an object")
    data_path = _expect(path, "data.path", where.get("path"), (str,), "a string or null", optional=True)
    paths = _expect(path, "data.paths", where.get("paths"), (list,), "a list of paths or null", optional=True)
    for k, p in enumerate(paths or ()):
        _expect(path, f"data.paths[{k}]", p, (str,), "a path")
    fingerprint = _expect(path, "data.fingerprint", where.get("fingerprint"), (str,), "a string or null",
                          optional=True)
    rows = _expect(path, "data.rows", where.get("rows"), (int,), "an integer or null", optional=True)
    options = _expect(path, "options", data.get("options", {}), (dict,), "an object")
    return SavedState(kind=kind, version=version, parameters=frozen(parameters),
                      constants=None if constants is None else frozen(constants), pinned=pinned,
                      data_path=data_path,
                      data_paths=None if paths is None else tuple(paths), fingerprint=fingerprint, rows=rows,
                      options=frozen(options))


def fingerprint_columns(frame: pl.DataFrame, names) -> str:
    """``blake2b-128:`` + hex digest of the named columns (names, types and values), in order.

    Numeric and boolean columns are hashed from their memory (one pass, no
    copy for contiguous data), other columns from their text.  Cheap next to
    what a session computes from the same columns.

    Examples
    --------
    >>> f = pl.DataFrame({"a": [1, 2], "b": ["x", None]})
    >>> fingerprint_columns(f, ["a", "b"]) == fingerprint_columns(f, ["a", "b"])
    True
    >>> fingerprint_columns(f, ["a"]) == fingerprint_columns(f.with_columns(a=pl.lit(3)), ["a"])
    False
    """
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.int64(frame.height).tobytes())
    for name in names:
        series = frame[name]
        digest.update(f"{name}\x00{series.dtype}\x00".encode())
        if series.dtype.is_numeric() or series.dtype == pl.Boolean:
            values = series.to_numpy()
            if series.null_count():
                digest.update(series.is_null().to_numpy().tobytes())
                values = series.fill_null(0).to_numpy()
            digest.update(np.ascontiguousarray(values).tobytes())
        else:
            text = series.cast(pl.String).fill_null("\x01null").str.join("\x00").item()
            digest.update(text.encode("utf-8"))
    return "blake2b-128:" + digest.hexdigest()


def spec_columns(spec, frame: pl.DataFrame) -> list[str]:
    """The columns of ``frame`` a spec reads to find episodes (keys, step, agent, flags, boundaries).

    Examples
    --------
    >>> from rewardlab.core.spec import FrameSpec
    >>> spec_columns(FrameSpec(name="s", episode=("e",), terminated="t"), pl.DataFrame({"e": [0], "t": [True]}))
    ['e', 't']
    """
    names = [*spec.episode, spec.step, spec.agent, spec.terminated, spec.truncated, *spec.boundaries]
    return [n for n in dict.fromkeys(names) if n is not None and n in frame.columns]
