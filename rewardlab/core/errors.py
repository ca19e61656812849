"""The one family of exceptions and warnings rewardlab raises.

Every domain error subclasses :class:`RewardlabError` and one of the built-in
exceptions users already catch (``ValueError``, ``KeyError``,
``FileExistsError``), so ``except ValueError`` keeps working.  Each message
says *where* (file, line, column, plug-in, parameter), *what rule* was broken,
echoes the offending value, and, where there is one, *what to do*.

Examples
--------
>>> from rewardlab.core.errors import ParameterError
>>> err = ParameterError("gamma", "should be in [0, 1]", 1.5)
>>> str(err)
'`gamma` should be in [0, 1]. Received 1.5.'
>>> isinstance(err, ValueError)
True
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

from rewardlab.core.fronts import Arg, Fix, Text

__all__ = [
    "RewardlabError",
    "rebuild_error",
    "RewardlabWarning",
    "ParameterError",
    "DataFormatError",
    "FrameError",
    "ColumnNotFoundError",
    "OutputExistsError",
    "PluginError",
    "PluginLoadError",
    "PluginRuntimeError",
    "ContractError",
    "PluginTimeoutError",
    "PluginRunCancelled",
    "SkippedLinesWarning",
    "RewardScaleWarning",
    "ScalingBlowUpWarning",
    "check_finite",
    "check_in_range",
    "check_positive",
    "check_choice",
    "check_int",
    "ExportCancelled",
    "ExportWriteError",
    "RoundTripError",
]


def _hint(hint, sep: str = " ") -> str:
    """``sep + hint`` (a :class:`~rewardlab.core.fronts.Text` hint keeps its terms), or "" without one."""
    return sep + hint if hint else ""


def rebuild_error(cls, args: tuple, state: dict):
    """Rebuild a pickled :class:`RewardlabError` (its message and attributes) without its ``__init__``."""
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class RewardlabError(Exception):
    """Base class of every error rewardlab raises on purpose.

    A message built from a :class:`~rewardlab.core.fronts.Text` keeps its
    remedy terms (:func:`rewardlab.core.fronts.render` words them for the CLI or
    a widget); ``str(error)`` is the Python wording.  Errors pickle with their message and attributes, so an error raised in a
    child process (see :mod:`rewardlab.plugins.isolation`) reaches the parent intact.

    Examples
    --------
    >>> issubclass(ParameterError, RewardlabError)
    True
    >>> import pickle
    >>> str(pickle.loads(pickle.dumps(ParameterError("gamma", "should be in [0, 1]", 2))))
    '`gamma` should be in [0, 1]. Received 2.'
    """

    def __reduce__(self):
        return (rebuild_error, (type(self), self.args, self.__dict__))


class RewardlabWarning(UserWarning):
    """Base class of every warning rewardlab issues.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", RewardlabWarning)  # silence them all
    """


class SkippedLinesWarning(RewardlabWarning):
    """Some input lines were skipped (``on_error="skip"``); the message counts them by reason.

    Examples
    --------
    >>> str(SkippedLinesWarning("skipped 2 of 90 lines (bad_action: 2)"))
    'skipped 2 of 90 lines (bad_action: 2)'
    """


class RewardScaleWarning(RewardlabWarning):
    """Rewards are far from mean 0 / std 1, which the plug-in contract asks for (kanachan's: see
    :func:`rewardlab.contracts.advice.scale_advice`).

    Examples
    --------
    >>> issubclass(RewardScaleWarning, UserWarning)
    True
    """


class ScalingBlowUpWarning(RewardlabWarning):
    """Scaling turns some of the data's rewards into values far beyond ``±rewardlab.scaling.BLOWUP_LIMIT``
    (a tiny std: a near-constant reward's rare values).

    Examples
    --------
    >>> issubclass(ScalingBlowUpWarning, RewardlabWarning)
    True
    """


class ParameterError(RewardlabError, ValueError):
    """An argument or parameter broke a rule.

    Parameters
    ----------
    name : str
        The argument's name, as the user typed it (a front may name it its own
        way: the CLI's flag, a widget's label; :class:`~rewardlab.core.fronts.Arg`).
    rule : str
        The rule, phrased to follow the name ("should be in [0, 1]").
    value : object
        The value received; it is echoed with ``repr``.
    hint : str, optional
        What to do instead (a :class:`~rewardlab.core.fronts.Text` to word its
        remedy for each front).

    Examples
    --------
    >>> str(ParameterError("std", "should be > 0", 0.0, hint="Compute it from data."))
    '`std` should be > 0. Received 0.0. Compute it from data.'
    >>> from rewardlab.core.fronts import WIDGET, render
    >>> render(ParameterError("vector[3]", "should be a number", "x"), WIDGET)
    "box '4th' should be a number. Received 'x'."
    """

    def __init__(self, name: str, rule: str, value: object, *, hint: str | None = None):
        self.name = name
        self.rule = rule
        self.value = value
        self.hint = hint
        super().__init__(Text(Arg(name), " ", rule, f". Received {value!r}.", _hint(hint)))


class DataFormatError(RewardlabError, ValueError):
    """An input file broke its format; names the file, line, column and rule.

    Parameters
    ----------
    path : str or Path
        The file.
    line : int or None
        1-based line number, or None for a whole-file problem.
    column : int or None
        0-based column (TAB-separated field) index, or None.
    rule : str
        A short machine-readable reason, e.g. ``"column_count"``.
    message : str
        The human explanation, including the offending value.

    Examples
    --------
    >>> e = DataFormatError("a.tsv", 3, 5, "bad_action", "action 7 is not an index into 4 candidates")
    >>> str(e)
    'a.tsv:3: column 5: action 7 is not an index into 4 candidates [rule: bad_action]'
    """

    def __init__(
        self,
        path: str | Path,
        line: int | None,
        column: int | None,
        rule: str,
        message: str,
        *,
        hint: str | None = None,
    ):
        self.path = str(path)
        self.line = line
        self.column = column
        self.rule = rule
        self.message = message
        self.hint = hint
        where = self.path if line is None else f"{self.path}:{line}"
        if column is not None:
            where += f": column {column}"
        super().__init__(Text(f"{where}: ", message, f" [rule: {rule}]", _hint(hint)))


class FrameError(RewardlabError, ValueError):
    """A Polars frame does not have the shape or invariants rewardlab needs.

    Examples
    --------
    >>> str(FrameError("the frame has no rows", hint="Load a dataset first."))
    'the frame has no rows. Load a dataset first.'
    """

    def __init__(self, message: str, *, hint: str | None = None):
        self.hint = hint
        super().__init__(Text(message, _hint(hint, ". ")))


class ColumnNotFoundError(RewardlabError, KeyError):
    """A column the caller named is not in the frame.

    Examples
    --------
    >>> str(ColumnNotFoundError("reward_x", ["reward_a", "reward_b"]))
    "column 'reward_x' not found; available: reward_a, reward_b"
    """

    def __init__(self, column: str, available: list[str] | tuple[str, ...]):
        self.column = column
        self.available = list(available)
        super().__init__(column)

    def __str__(self) -> str:  # KeyError would quote the whole message otherwise
        shown = ", ".join(self.available[:20])
        if len(self.available) > 20:
            shown += ", ..."
        return f"column {self.column!r} not found; available: {shown}"


class OutputExistsError(RewardlabError, FileExistsError):
    """An output file exists and the caller did not ask to overwrite it.

    Examples
    --------
    >>> str(OutputExistsError("out.py"))
    'out.py already exists; pass overwrite=True to replace it'
    >>> from rewardlab.core.fronts import WIDGET, render
    >>> render(OutputExistsError("out.py"), WIDGET)
    "out.py already exists; tick 'overwrite if it exists' to replace it"
    """

    def __init__(self, path: str | Path):
        self.path = str(path)
        super().__init__(Text(f"{self.path} already exists; ", Fix("overwrite", True), " to replace it"))


class PluginError(RewardlabError, ValueError):
    """A reward plug-in could not be loaded, failed, or broke the contract.

    Parameters
    ----------
    plugin : str
        The plug-in's name.
    path : str or Path or None
        Its source file.
    message : str
        What went wrong.
    line : int, optional
        The line in the plug-in file, where known.
    plugin_traceback : str, optional
        The plug-in's own formatted traceback, kept verbatim.

    Examples
    --------
    >>> str(PluginError("rank", "rank.py", "no function `get_reward`", line=None))
    "plug-in 'rank' (rank.py): no function `get_reward`"
    """

    def __init__(
        self,
        plugin: str,
        path: str | Path | None,
        message: str,
        *,
        line: int | None = None,
        plugin_traceback: str | None = None,
    ):
        self.plugin = plugin
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        self.plugin_traceback = plugin_traceback
        where = f"plug-in {plugin!r}"
        if self.path:
            where += f" ({self.path}" + (f", line {line}" if line else "") + ")"
        text = f"{where}: {message}"
        if plugin_traceback:
            text += "\n\nThe plug-in's traceback:\n" + plugin_traceback.rstrip()
        super().__init__(text)


class PluginLoadError(PluginError):
    """The plug-in file does not parse, raises on import, or lacks a valid ``get_reward``.

    Examples
    --------
    >>> str(PluginLoadError("r", "r.py", "invalid syntax", line=3))
    "plug-in 'r' (r.py, line 3): invalid syntax"
    """


class PluginRuntimeError(PluginError):
    """``get_reward`` raised while rewardlab called it; ``plugin_traceback`` keeps the plug-in's frames.

    Examples
    --------
    >>> err = PluginRuntimeError("r", "r.py", "raised ZeroDivisionError", plugin_traceback="...")
    >>> err.plugin_traceback
    '...'
    """


class ContractError(PluginError):
    """``get_reward`` returned but broke the plug-in contract.

    Examples
    --------
    >>> isinstance(ContractError("r", None, "no reward"), ValueError)
    True
    """


class PluginRunCancelled(RewardlabError):
    """Applying or checking a plug-in was cancelled (``cancel=``); its child process was stopped.

    Examples
    --------
    >>> str(PluginRunCancelled("rank_top"))
    "running plug-in 'rank_top' was cancelled; no result was kept"
    """

    def __init__(self, plugin: str):
        self.plugin = plugin
        super().__init__(f"running plug-in {plugin!r} was cancelled; no result was kept")


class PluginTimeoutError(PluginRuntimeError):
    """A plug-in did not finish within the time limit (``timeout=`` / ``--timeout``) and was stopped.

    Examples
    --------
    >>> isinstance(PluginTimeoutError("r", "r.py", "did not finish within 5 s"), PluginRuntimeError)
    True
    """


# --------------------------------------------------------------------------
# Validation helpers: one rule each, messages in the house style.
# --------------------------------------------------------------------------


def check_finite(name: str, value: float) -> float:
    """Return ``float(value)`` or raise :class:`ParameterError` if it is NaN or infinite.

    Examples
    --------
    >>> check_finite("mean", 2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(name, "should be a real number", value)
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(name, "should be a finite number", value)
    return value


def check_positive(name: str, value: float) -> float:
    """Return ``float(value)`` or raise if it is not a finite number > 0.

    Examples
    --------
    >>> check_positive("std", 0.5)
    0.5
    """
    value = check_finite(name, value)
    if value <= 0:
        raise ParameterError(name, "should be > 0", value)
    return value


def check_in_range(name: str, value: float, low: float, high: float) -> float:
    """Return ``float(value)`` or raise if it is outside ``[low, high]``.

    Examples
    --------
    >>> check_in_range("gamma", 0.99, 0, 1)
    0.99
    """
    value = check_finite(name, value)
    if not low <= value <= high:
        raise ParameterError(name, f"should be in [{low:g}, {high:g}]", value)
    return value


def check_choice(name: str, value: object, choices) -> object:
    """Return ``value`` or raise if it is not one of ``choices``.

    Examples
    --------
    >>> check_choice("on_error", "skip", ("raise", "skip"))
    'skip'
    """
    choices = tuple(choices)
    if value not in choices:
        raise ParameterError(name, "should be one of " + ", ".join(map(repr, choices)), value)
    return value


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None,
              rule: str | None = None, integral_float: bool = False) -> int:
    """Return ``int(value)`` or raise :class:`ParameterError` if it is not an integer in ``[low, high]``.

    The one check for an integer argument.  Python and numpy integers are
    accepted; ``bool`` and ``numpy.bool_`` are refused (``True`` is not a
    count), and so are strings and floats, unless ``integral_float=True``:
    then a finite float with no fractional part (``100.0``) is accepted, for
    values that arrive as floats (a number typed in a tuner's text box, a
    JSON state file).

    Parameters
    ----------
    name : str
        The argument's name, as the user typed it.
    value : object
        The value to check; the error echoes it as given.
    low, high : int, optional
        Inclusive bounds; ``None`` leaves that side open.
    rule : str, optional
        The whole rule to state on any failure (type or range), for a caller
        whose wording says more ("should be an int >= 0 (Gymnasium's seeds are
        non-negative)").  Without it the messages are ``should be an integer``,
        ``should be >= {low}`` and ``should be <= {high}``.
    integral_float : bool, default False
        Accept a finite float with no fractional part.

    Returns
    -------
    int

    Examples
    --------
    >>> check_int("k", 5, low=1)
    5
    >>> check_int("divisor", 100.0, low=1, integral_float=True)
    100
    >>> check_int("k", 0, low=1)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `k` should be >= 1. Received 0.
    >>> check_int("bins", True, rule="should be a positive integer")
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `bins` should be a positive integer. Received True.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy.bool_ is not Real
        out = None
    elif isinstance(value, numbers.Integral):
        out = int(value)
    elif integral_float and math.isfinite(float(value)) and float(value).is_integer():
        out = int(value)
    else:
        out = None
    if out is None:
        raise ParameterError(name, rule or "should be an integer", value)
    if low is not None and out < low:
        raise ParameterError(name, rule or f"should be >= {low}", value)
    if high is not None and out > high:
        raise ParameterError(name, rule or f"should be <= {high}", value)
    return out


# --------------------------------------------------------------------------
# Tuners and export (issue 10, "tuners must not pass bad results off as good")
# --------------------------------------------------------------------------


class ExportCancelled(RewardlabError):
    """An export was cancelled (:class:`rewardlab.sessions.CancelToken`); nothing was written.

    Examples
    --------
    >>> str(ExportCancelled("my_reward.py", "the round-trip check"))
    "export of 'my_reward.py' cancelled during the round-trip check; nothing was written"
    """

    def __init__(self, path: str | Path, stage: str):
        self.path = str(path)
        self.stage = stage
        super().__init__(f"export of {self.path!r} cancelled during {stage}; nothing was written")


class ExportWriteError(RewardlabError, OSError):
    """The operating system refused to write an exported file (permissions, full disk, ...).

    Examples
    --------
    >>> str(ExportWriteError("out/r.py", "[Errno 28] No space left on device"))
    "cannot write 'out/r.py': [Errno 28] No space left on device. Nothing was written; check that the folder exists and is writable (and the disk not full), or choose another path."
    """

    def __init__(self, path: str | Path, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"cannot write {self.path!r}: {reason}. Nothing was written; check that the folder "
                         "exists and is writable (and the disk not full), or choose another path.")


class RoundTripError(RewardlabError, ValueError):
    """An exported file did not reproduce rewardlab's rewards or failed check-plugin; it was not written.

    Examples
    --------
    >>> str(RoundTripError("r.py", "round trip: DIFFERS ..."))
    "'r.py' was not written: the file failed its round-trip check.\\nround trip: DIFFERS ...\\nPlease report this as a rewardlab bug; export(..., check=False) writes it unchecked."
    """

    def __init__(self, path: str | Path, roundtrip: object):
        self.path = str(path)
        self.roundtrip = roundtrip
        super().__init__(f"{self.path!r} was not written: the file failed its round-trip check.\n{roundtrip}\n"
                         "Please report this as a rewardlab bug; export(..., check=False) writes it unchecked.")
# Files the system cannot read or write (issue 10, datasets and file I/O).
# --------------------------------------------------------------------------


class FileAccessError(RewardlabError, OSError):
    """A file could not be read or written for a reason outside its content.

    An unreadable input, an output that is a folder or whose folder is
    missing, a full disk; names the path and what to do.

    Examples
    --------
    >>> str(FileAccessError("out/x.parquet", "the folder out does not exist", hint="Create it first."))
    'out/x.parquet: the folder out does not exist. Create it first.'
    >>> isinstance(FileAccessError("x", "cannot be read"), OSError)
    True
    """

    def __init__(self, path: str | Path, message: str, *, hint: str | None = None):
        self.path = str(path)
        self.message = message
        self.hint = hint
        super().__init__(Text(f"{self.path}: ", message, _hint(hint, ". ")))


__all__ += ["FileAccessError"]


# --------------------------------------------------------------------------
# Frame specs (issue 11, one core for every trajectory).
# --------------------------------------------------------------------------


class SpecError(FrameError):
    """A frame does not fit its :class:`~rewardlab.core.spec.FrameSpec`, or has none.

    Names the column and, where rows are at fault, the first offending row
    (its position in the frame, 0-based), and says what to do.

    Examples
    --------
    >>> str(SpecError("episode 'e' is not contiguous", column="e", row=7, hint="Sort by episode."))
    "column 'e', row 7: episode 'e' is not contiguous. Sort by episode."
    """

    def __init__(self, message: str, *, column: str | None = None, row: int | None = None,
                 hint: str | None = None):
        self.column = column
        self.row = row
        where = []
        if column is not None:
            where.append(f"column {column!r}")
        if row is not None:
            where.append(f"row {row}")
        self.message = message
        super().__init__((", ".join(where) + ": " if where else "") + message, hint=hint)


__all__ += ["SpecError"]


# --------------------------------------------------------------------------
# Shards (issue 11, shard-ready execution).
# --------------------------------------------------------------------------


class ShardError(FrameError):
    """One shard of a stream cannot be run: says which (its index, 0-based) and what to do.

    Examples
    --------
    >>> str(ShardError(2, "it does not end at an end of episode", hint="Cut shards at episode ends."))
    'shard 2: it does not end at an end of episode. Cut shards at episode ends.'
    """

    def __init__(self, shard: int, message: str, *, hint: str | None = None):
        self.shard = shard
        super().__init__(f"shard {shard}: {message}", hint=hint)


__all__ += ["ShardError"]


# --------------------------------------------------------------------------
# Step tables (issue 13, generic step-table source).
# --------------------------------------------------------------------------


class StepTableError(DataFormatError):
    """A step table (Parquet, CSV, JSON lines) broke a rule; names the file, line or row group, column.

    ``line`` is 1-based as an editor shows it (CSV and JSON lines);
    ``row_group`` (0-based) and ``row`` (0-based, within the file) place a
    Parquet row.  ``column`` is a column *name*.

    Examples
    --------
    >>> str(StepTableError("a.csv", "step_order", "step 3 follows step 5", line=7, column="t"))
    "a.csv:7: column 't': step 3 follows step 5 [rule: step_order]"
    >>> str(StepTableError("a.parquet", "ragged_list", "4 values, not 3", row_group=2, row=70000,
    ...                    column="obs"))
    "a.parquet: row group 2 (row 70000): column 'obs': 4 values, not 3 [rule: ragged_list]"
    """

    def __init__(self, path: str | Path, rule: str, message: str, *, line: int | None = None,
                 row_group: int | None = None, row: int | None = None, column: str | None = None,
                 hint: str | None = None):
        self.path, self.line, self.column, self.rule, self.message, self.hint = (
            str(path), line, column, rule, message, hint)
        self.row_group, self.row = row_group, row
        where = self.path if line is None else f"{self.path}:{line}"
        if line is None and row_group is not None:
            where += f": row group {row_group}" + (f" (row {row})" if row is not None else "")
        elif line is None and row is not None:
            where += f": row {row}"
        if column is not None:
            where += f": column {column!r}"
        ValueError.__init__(self, Text(f"{where}: ", message, f" [rule: {rule}]", _hint(hint)))


__all__ += ["StepTableError"]


# --------------------------------------------------------------------------
# RLlib offline data (issue 13, review fixes).
# --------------------------------------------------------------------------


class FilesLeftOutWarning(RewardlabWarning):
    """A folder load passed over files that are not the format's data; the message names them all.

    Examples
    --------
    >>> str(FilesLeftOutWarning("left out 1 file of out/ that is not RLlib sample data: out/params.json"))
    'left out 1 file of out/ that is not RLlib sample data: out/params.json'
    """


__all__ += ["FilesLeftOutWarning"]


class PartsLeftOutWarning(RewardlabWarning):
    """A dataset folder opened with ``on_error="skip"`` left out bad parts (missing, truncated, foreign,
    duplicated); the message names each part's file (left in place) and counts the rows and episodes left out.

    Examples
    --------
    >>> str(PartsLeftOutWarning("left out 1 of 4 parts of corpus: part 1 (corpus/part-000001.parquet: missing)"))
    'left out 1 of 4 parts of corpus: part 1 (corpus/part-000001.parquet: missing)'
    """


__all__ += ["PartsLeftOutWarning"]


__all__ += ["EngineError"]


class EngineError(RewardlabError, RuntimeError):
    """A work item could not be run by the engine (not an error of the work itself).

    Raised when a Ray worker died on an item more times than Ray retries, when
    Ray itself failed, or when an item's exception could not be carried back.

    Parameters
    ----------
    message : str
        What failed, on which item.
    hint : str, optional
        What to do.

    Examples
    --------
    >>> str(EngineError("a Ray worker died running item 3", hint="Check its memory."))
    'a Ray worker died running item 3. Check its memory.'
    >>> isinstance(EngineError("x"), RuntimeError)
    True
    """

    def __init__(self, message: str, *, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(Text(message, _hint(hint, ". ")))
