"""One batch's columns (a JSON line's batch, a Parquet row group) as checked NumPy arrays.

Values become arrays here, packed ones decoded by
:mod:`rewardlab.sources.rllib.compression` within a size the column can
need; every rule on a single column's values is checked here, before the
episode rules (:mod:`rewardlab.sources.rllib.episodes`): numbers only (float16
widened to float32, native byte order), one value (or one row of values)
per step, flags true/false or 1/0, rewards finite.  A broken rule is a
:class:`Problem` naming the column; the reader adds file and line.

Examples
--------
>>> flags("terminateds", np.array([0, 1, 0]), "step {} of the batch").tolist()
[False, True, False]
>>> flags("terminateds", np.array([0, 2]), "step {} of the batch")
Traceback (most recent call last):
...
rewardlab.sources.rllib.columns.Problem: step 1 of the batch is 2, not a flag (true/false or 1/0)
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from rewardlab.core.columns import reward_column
from rewardlab.core.fronts import Fix, Text
from rewardlab.sources.rllib.compression import (MAX_UNPACKED_BYTES, PICKLE_OVERHEAD, OversizedColumn,
                                                 UndecodableColumn, UnsafePickle, unpack)

__all__ = ["RECORDED_NAME", "Problem", "decode", "as_array", "numbers", "rows_of", "flags", "rewards",
           "layout_of", "step_columns", "STEP_VALUE_BYTES"]

#: The candidate name of the rewards RLlib recorded: its columns are ``reward_recorded`` (the steps
#: source's ``RECORDED`` column) and ``done_recorded``.
RECORDED_NAME = "recorded"

#: The most bytes one value of a one-value-per-step column takes (ids, steps, rewards, flags): a
#: packed column of ``n`` steps may decompress to ``n * STEP_VALUE_BYTES + PICKLE_OVERHEAD`` bytes.
STEP_VALUE_BYTES = 8


#: The remedy that lets a trusted file's pickles through (the CLI: ``--option allow_pickle=true``).
TRUST_PICKLE = Fix("allow_pickle", True, verb="Pass", option=True)


class Problem(Exception):
    """A problem of one line / row group: the column, rule and message."""

    def __init__(self, column: str | None, rule: str, message: str):
        self.column, self.rule, self.message = column, rule, message
        super().__init__(message)


def decode(name: str, text, *, allow_pickle: bool, limit: int | None = None, where: str = "") -> np.ndarray:
    """One packed value as an array (any shape), or a :class:`Problem` (``where``: a prefix naming the row).

    ``limit``: the most bytes it may decompress to (what the column can need); with ``allow_pickle``
    (a file you trust) no limit applies but LZ4's own."""
    try:
        return unpack(text, allow_pickle=allow_pickle, limit=None if allow_pickle else limit)
    except UnsafePickle as exc:
        raise Problem(name, "unsafe_pickle",
                      Text(f"{where}the compressed column refers to {exc.name}, not only to NumPy arrays; "
                           "rewardlab decodes RLlib's compressed columns (cloudpickle + LZ4 + base64) "
                           "without running code from the file. ", TRUST_PICKLE, " only for files you trust")) from None
    except OversizedColumn as exc:
        raise Problem(name, "oversized_column", f"{where}the compressed column is refused before decoding "
                      f"it: {exc.reason}; a packed value may decode to at most {MAX_UNPACKED_BYTES} bytes, to "
                      "what its column can need, and to no more than its array's data and "
                      + Text(f"{PICKLE_OVERHEAD} bytes. ", TRUST_PICKLE, " only for files you trust: it lifts these "
                             "limits")) from None
    except UndecodableColumn as exc:
        raise Problem(name, "undecodable_column", f"{where}the compressed column cannot be decoded: "
                      f"{exc.reason}") from None


def _not_numbers(name: str, value: list) -> Problem:
    """The problem of a list NumPy could not turn into a numeric array: ragged rows or non-numbers."""
    def length(v):
        return len(v) if isinstance(v, list) else -1

    for i, v in enumerate(value):
        if not isinstance(v, (list, bool, int, float)):
            what = "null" if v is None else f"a {type(v).__name__}"
            return Problem(name, "mixed_dtype", f"step {i} of the batch is {what}, not a number")
        if isinstance(v, int) and not isinstance(v, bool) and not -2 ** 63 <= v < 2 ** 64:
            return Problem(name, "mixed_dtype", f"step {i} of the batch is {v}, past 64-bit integers")
    lengths = [length(v) for v in value]
    first = lengths[0] if lengths else 0
    bad = next((i for i, k in enumerate(lengths) if k != first), None)
    if bad is None:  # same lengths at the top: the rows' own values are ragged or not numbers
        return Problem(name, "ragged", "the steps' values are ragged, or not all numbers, within a step")
    return Problem(name, "ragged", f"step {bad} of the batch has "
                   f"{'a scalar' if lengths[bad] < 0 else f'{lengths[bad]} values'}, step 0 has "
                   f"{'a scalar' if first < 0 else f'{first} values'} (ragged values)")


def as_array(name: str, value, n: int | None, *, allow_pickle: bool, per_step: bool = False,
             limit: int | None = None) -> np.ndarray:
    """One column's values of a batch as an array of ``n`` rows (None: as many as the value has),
    numbers only, more than two dimensions flattened to ``[n, width]``; a packed column is decoded
    within ``limit`` bytes (``per_step``: one value a step, so ``n * STEP_VALUE_BYTES`` and the
    pickle's overhead)."""
    if isinstance(value, str):
        if per_step and n is not None:
            limit = n * STEP_VALUE_BYTES + PICKLE_OVERHEAD
        arr = decode(name, value, allow_pickle=allow_pickle, limit=limit)
    else:
        if not isinstance(value, list):
            raise Problem(name, "column_length", f"should be a list of {n if n is not None else 'the'} values, "
                          f"found {type(value).__name__}")
        try:
            arr = np.asarray(value)
        except (ValueError, TypeError, OverflowError):
            arr = None
        if arr is None or arr.dtype == object:
            raise _not_numbers(name, value)
    if arr.ndim == 0 or (n is not None and arr.shape[0] != n):
        raise Problem(name, "column_length", f"has {0 if arr.ndim == 0 else arr.shape[0]} values, the "
                      f"batch has {n} steps")
    return rows_of(name, numbers(name, arr))


def numbers(name: str, arr: np.ndarray) -> np.ndarray:
    """``arr`` if it holds booleans, integers or floats (float16 widened to float32, native byte order)."""
    if arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8:
        raise Problem(name, "mixed_dtype", f"holds {arr.dtype} values, not numbers")
    if arr.dtype == np.float16:  # no float16 state columns: float32 holds every float16 exactly
        return arr.astype(np.float32)
    if not arr.dtype.isnative:
        return arr.astype(arr.dtype.newbyteorder("="))
    return arr


def rows_of(name: str, arr: np.ndarray) -> np.ndarray:
    """``[n]`` or ``[n, width]`` (more dimensions flattened); a step without values is a problem."""
    if arr.ndim > 1:
        width = math.prod(arr.shape[1:])
        if width == 0:
            raise Problem(name, "column_length", f"has no values in a step (each step's shape is {arr.shape[1:]})")
        if arr.ndim > 2:
            return arr.reshape(arr.shape[0], width)
    return arr


def flags(name: str, arr: np.ndarray, where: str) -> np.ndarray:
    """A flag column as bools: booleans, or numbers 0 and 1 (``where``: how a message names row ``{}``)."""
    if arr.ndim != 1:
        raise Problem(name, "mixed_dtype", f"should hold one flag per step, found shape {arr.shape}")
    if arr.dtype == bool:
        return arr
    bad = np.flatnonzero((arr != 0) & (arr != 1))  # NaN too
    if bad.size:
        value = arr[bad[0]].item()
        raise Problem(name, "bad_flag", f"{where.format(int(bad[0]))} is {value!r}, not a flag (true/false or 1/0)")
    return arr == 1


def rewards(name: str, arr: np.ndarray, where: str) -> np.ndarray:
    """The rewards as float64: one finite number per step."""
    if arr.ndim != 1:
        raise Problem(name, "mixed_dtype", f"should hold one number per step, found shape {arr.shape}")
    out = arr.astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise Problem(name, "not_finite", f"{where.format(int(bad[0]))}: the reward is {out[bad[0]]}, not a "
                      "finite number")
    return out


def layout_of(arr: np.ndarray | pl.Series) -> str:
    """A column's dtype and width, as the mixed-dtype message says them: ``float64 x 4``."""
    if isinstance(arr, pl.Series):  # Parquet ids (text)
        return str(arr.dtype)
    return f"{arr.dtype}" + (f" x {arr.shape[1]}" if arr.ndim == 2 else "")


def step_columns(cols, policy, obs, new_obs, actions, reward, terminated, truncated, *,
                 where: str = "step {} of the batch", done: str = "terminateds") -> dict:
    """The columns rewardlab keeps, as arrays, checked (``policy``: one name, or one per row;
    ``where``: how a message names row ``{}``; ``done``: the terminated flag's column, or ``dones``)."""
    n = obs.shape[0]
    obs = rows_of("obs", numbers("obs", obs))
    actions = rows_of("actions", numbers("actions", actions))
    if obs.ndim == 0 or actions.ndim == 0:
        raise Problem("obs" if obs.ndim == 0 else "actions", "column_length", "should hold one value per step")
    terminated = flags(done, terminated, where)
    truncated = flags("truncateds", truncated, where) & ~terminated  # both set: the episode ended
    data = {"eps_id": cols["eps_id"], "agent": cols["agent"], "t": cols["t"].astype(np.int64, copy=False),
            "policy_id": np.full(n, policy, dtype=object) if isinstance(policy, str) else policy,
            "obs": obs, "actions": actions, "terminated": terminated, "truncated": truncated,
            reward_column(RECORDED_NAME): rewards("rewards", numbers("rewards", reward), where)}
    if new_obs is not None:
        new_obs = rows_of("new_obs", numbers("new_obs", new_obs))
        if new_obs.shape != obs.shape or new_obs.dtype != obs.dtype:
            raise Problem("new_obs", "mixed_dtype", f"has shape {new_obs.shape[1:]} and dtype {new_obs.dtype}, "
                          f"obs has {obs.shape[1:]} and {obs.dtype}")
        data["new_obs"] = new_obs
    return data
