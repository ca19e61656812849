"""Scaling plug-ins for the steps contract: normalization constants -> a self-contained, checked plug-in file.

A step table keeps the reward its environment recorded as the column
``reward_recorded`` (Float64): the candidate ``recorded`` for comparisons,
and, listed in the spec's ``columns``, the root IN key plug-ins read
(:data:`RECORDED_KEY`).  :class:`StepsScaling` is the
plug-in that scales such a column with constants measured by
:func:`rewardlab.normalization_constants`::

    reward = (data[key] - shift) / scale        (float64, every step; done left as given)

with ``shift = mean`` (``0.0`` when ``center=False``) and ``scale = std``.
It is a family of the family core, registered as ``"scaling"``
(:mod:`rewardlab.families.scaling`, where it lives with
:func:`check_scaling_key`, :func:`scaling_keys` and :func:`constants_header`;
they are re-exported here).  :func:`export_scaling_plugin` writes it as one
stand-alone file (imports torch only; the constants as literals, exactly
rewardlab's floats; a header naming the constants' provenance and data
fingerprint), rendered by the core (:func:`rewardlab.families.export.render_family`),
written atomically and only after the core's round trip
(:func:`rewardlab.families.roundtrip.family_roundtrip`): the file is applied in
**every** batch mode and compared bit for bit with
:meth:`StepsScaling.evaluate`, and check-plugin passes on whole episodes
(:func:`scaling_roundtrip`).

A near-constant reward has a tiny std, and dividing by it turns its rare
other values into huge rewards (Acrobot's -1 a step with std 0.0123 makes
the terminal 0 a reward of +81).  :func:`scaling_blowup` finds the scaled
rewards beyond :data:`BLOWUP_LIMIT` (SB3's default clip of normalized
rewards); :func:`export_scaling_plugin` raises a
:class:`ScalingBlowUpWarning` with the numbers (the largest ``|scaled|``, the
raw value it comes from, the constants) and keeps the text in
:attr:`ScalingExport.warnings`, which its ``str`` (what ``rewardlab export
scaling`` prints) ends with.

Safety as in :mod:`rewardlab.export`: every literal is checked (finite
floats; the key an identifier), user text appears only in sanitized ``#``
comments, and the file defines only ``get_reward`` and ``_RL_*`` names.

Examples
--------
>>> import polars as pl
>>> from rewardlab.analysis.stats import NormalizationConstants
>>> c = NormalizationConstants("recorded", "all", 1.0, 2.0, 4, None, 4, "blake2b-128:00")
>>> s = StepsScaling(c)
>>> s.shift, s.scale
(1.0, 2.0)
>>> "def get_reward(data, contiguous):" in s.render()
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.stats import NormalizationConstants
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RoundTripError, ScalingBlowUpWarning
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.contracts.advice import warn_outside
from rewardlab.export import plugin_target, write_text
from rewardlab.families.rendering import REWARD_LIMIT, float_literal
from rewardlab.families.roundtrip import CHECK_ROWS, ModesRoundTrip, family_roundtrip
from rewardlab.families.scaling import (RECORDED_KEY, ScalingParams, StepsScaling, check_scaling_key,
                                        constants_header, scaling_keys)

__all__ = ["RECORDED_KEY", "StepsScaling", "ScalingRoundTrip", "ScalingExport", "scaling_roundtrip",
           "export_scaling_plugin", "scaling_keys", "check_scaling_key", "CHECK_ROWS", "BLOWUP_LIMIT",
           "ScalingBlowUp", "ScalingBlowUpWarning", "scaling_blowup", "float_literal", "check_reward_range",
           "WrittenPlugin", "constants_header", "ScalingParams"]

#: What :func:`scaling_roundtrip` returns: the family core's round trip in every batch mode
#: (:class:`rewardlab.families.roundtrip.ModesRoundTrip`), under its former name.
ScalingRoundTrip = ModesRoundTrip
#: ``|scaled reward|`` beyond which scaling is said to blow a value up: SB3's default clip of normalized
#: rewards (``VecNormalize(clip_reward=10.0)``), and 10 standard deviations from the mean.
BLOWUP_LIMIT = 10.0


@dataclasses.dataclass(frozen=True)
class ScalingBlowUp:
    """Scaled rewards of the data beyond ``±limit`` (see :func:`scaling_blowup`).

    Attributes
    ----------
    key : str
        The column scaled.
    largest : float
        The scaled reward of largest magnitude.
    raw : float
        The raw value it comes from.
    row : int
        Its row in the data.
    count, rows : int
        Steps whose ``|scaled|`` exceeds ``limit``, of ``rows``.
    shift, scale : float
        The constants (``(raw - shift) / scale``).
    limit : float
    reward, scope : str
        Where the constants come from.

    Examples
    --------
    >>> b = ScalingBlowUp("reward_recorded", 81.3, 0.0, 9, 1, 500, -0.99985, 0.0123, 10.0, "recorded", "all")
    >>> str(b).startswith("scaling blows up rare values: reward_recorded 0 becomes 81.3")
    True
    """

    key: str
    largest: float
    raw: float
    row: int
    count: int
    rows: int
    shift: float
    scale: float
    limit: float
    reward: str
    scope: str

    def __str__(self) -> str:
        share = self.count / self.rows if self.rows else 0.0
        return (f"scaling blows up rare values: {self.key} {self.raw:.6g} becomes {self.largest:.6g} "
                f"= ({self.raw:.6g} - {self.shift:.6g}) / {self.scale:.6g} (row {self.row:,}); "
                f"{self.count:,} of {self.rows:,} steps ({share:.3%}) scale beyond ±{self.limit:g} "
                f"(constants: shift {self.shift!r}, scale {self.scale!r}, of reward {self.reward!r} over scope "
                f"{self.scope!r}). A reward that is nearly constant has a tiny std, so its rare other values "
                "become huge rewards; measure the constants where the reward varies (e.g. over scope "
                "'episode_return', dividing without centring) or leave this reward unscaled")

def scaling_roundtrip(scaling: StepsScaling, path, frame: pl.DataFrame, *, spec: FrameSpec | None = None,
                      check_rows: int = CHECK_ROWS, progress: bool | None = False) -> ScalingRoundTrip:
    """Apply a scaling plug-in file in every batch mode, compare it bit for bit, and run check-plugin.

    The family core's round trip (:func:`rewardlab.families.roundtrip.family_roundtrip`)
    against :meth:`StepsScaling.evaluate`, through the steps contract.

    Parameters
    ----------
    scaling : StepsScaling
        What the file should reproduce.
    path : str or Path
        The plug-in file.
    frame : polars.DataFrame
        A steps frame holding the scaling's key column.
    spec : FrameSpec, optional
        The frame's spec, when it carries none.
    check_rows : int
        Rows of whole episodes check-plugin runs on (all rows when the frame is no bigger).
    progress : bool or None
        A progress bar for each run (None: on an interactive terminal or in
        Jupyter; what the CLI passes).

    Returns
    -------
    ScalingRoundTrip

    Examples
    --------
    >>> print(scaling_roundtrip(StepsScaling(c), "scaled.py", frame))  # doctest: +SKIP
    """
    scaling.check_frame(frame, spec=spec)  # the key's own message, before any run
    return family_roundtrip(scaling, path, frame, spec=spec, contract="steps", check_rows=check_rows,
                            progress=progress)


def scaling_blowup(scaling: StepsScaling, data: pl.DataFrame, *, spec: FrameSpec | None = None,
                   limit: float = BLOWUP_LIMIT, reward: np.ndarray | None = None) -> ScalingBlowUp | None:
    """The data's scaled rewards beyond ``±limit``, or None when every one is within.

    Parameters
    ----------
    scaling : StepsScaling
    data : polars.DataFrame
        A steps frame holding the scaling's key column.
    spec : FrameSpec, optional
        ``data``'s spec, when it carries none.
    limit : float
        Default :data:`BLOWUP_LIMIT`.
    reward : float array ``[N]``, optional
        ``scaling.evaluate(data)``'s rewards, when already computed.

    Returns
    -------
    ScalingBlowUp or None

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0] * 4, "reward_recorded": [-1.0, -1.0, -1.0, 0.0]})
    >>> c = NormalizationConstants("recorded", "all", -0.99, 0.0123, 4, None, 4, "x")
    >>> b = scaling_blowup(StepsScaling(c), f, spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded",)))
    >>> b.raw, round(b.largest, 2), b.count
    (0.0, 80.49, 1)
    """
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0 or not math.isfinite(limit):
        raise ParameterError("limit", "should be a finite number > 0", limit)
    if reward is None:
        reward, _ = scaling.evaluate(data, spec=spec)
    magnitude = np.abs(reward)
    beyond = magnitude > limit
    count = int(np.count_nonzero(beyond))
    if not count:
        return None
    row = int(np.argmax(np.where(np.isfinite(magnitude), magnitude, -1.0)))
    raw = float(data[scaling.key].cast(pl.Float64)[row])
    c = scaling.constants
    return ScalingBlowUp(key=scaling.key, largest=float(reward[row]), raw=raw, row=row, count=count,
                         rows=int(reward.shape[0]), shift=scaling.shift, scale=scaling.scale, limit=float(limit),
                         reward=str(c.reward), scope=str(c.scope))


def check_reward_range(reward: np.ndarray, scaling: StepsScaling) -> None:
    """Refuse constants that take a reward of the data (``reward``: scaled) past ``±REWARD_LIMIT`` (as every
    export does).

    Examples
    --------
    >>> check_reward_range(np.array([1.0]), StepsScaling(NormalizationConstants("a", "all", 0.0, 1.0, 1, None, 1, "x")))
    """
    far = ~(np.abs(reward) <= REWARD_LIMIT)
    if far.any():
        row = int(np.argmax(far))
        raise ParameterError("constants", f"should keep every scaled reward within ±{REWARD_LIMIT:g}, but row {row} "
                             f"of the data becomes {float(reward[row])!r}", (scaling.shift, scaling.scale),
                             hint="Measure the constants on data where the reward varies (another scope).")


class WrittenPlugin:
    """What the results of the steps exports share (``path``, ``text``, ``roundtrip``, ``warnings``): the
    file's header, and their text, ending in the warnings."""

    @property
    def header(self) -> str:
        """The file's header comment."""
        return "\n".join(line for line in self.text.splitlines() if line.startswith("#"))

    def describe(self, *more: str) -> str:
        """``wrote PATH``, the header, the round trip, ``more`` lines, then one ``warning: ...`` line each."""
        check = str(self.roundtrip) if self.roundtrip is not None else "round trip: not checked (check=False)"
        return "\n".join([f"wrote {self.path}", self.header, check, *more]) + "".join(
            f"\nwarning: {w}" for w in self.warnings)


@dataclasses.dataclass(frozen=True, eq=False)
class ScalingExport(WrittenPlugin):
    """What :func:`export_scaling_plugin` wrote: the path, the file's text and the round trip (None unchecked).

    ``blowup`` is the data's scaled rewards beyond :data:`BLOWUP_LIMIT`
    (:func:`scaling_blowup`, measured with the round trip; None: none, or
    ``check=False``), and ``warnings`` the
    texts of the warnings raised (a :class:`ScalingBlowUpWarning`'s):
    ``str`` ends with them, one ``warning: ...`` line each.
    """

    path: Path
    text: str
    roundtrip: ScalingRoundTrip | None
    blowup: ScalingBlowUp | None = None
    warnings: tuple = ()

    def __str__(self) -> str:
        return self.describe()


def _check_constants_match(scaling: StepsScaling, data) -> None:
    """Refuse constants of a reward whose column in ``data`` differs from the key the file scales."""
    rcol = columns.reward_column(scaling.constants.reward)
    if not isinstance(data, pl.DataFrame) or rcol not in data.columns or scaling.key not in data.columns \
            or not data.schema[scaling.key].is_numeric():  # check_scaling_key refuses such a key
        return
    differ = data.select((pl.col(rcol).cast(pl.Float64) != pl.col(scaling.key).cast(pl.Float64)).sum()).item()
    if differ:
        raise ParameterError("constants", f"should be measured on the reward the key {scaling.key!r} holds; "
                             f"{rcol} differs from {scaling.key!r} on {differ:,} rows of the data",
                             scaling.constants.reward,
                             hint=f"Measure them with normalization_constants(data, <the reward in "
                             f"{scaling.key!r}>), or pass key= naming the column that holds {rcol}'s values.")


def export_scaling_plugin(constants: NormalizationConstants, path, *, data: pl.DataFrame | None,
                          key: str = RECORDED_KEY, center: bool = True, spec: FrameSpec | None = None,
                          overwrite: bool = False, check: bool = True, source: str | None = None,
                          check_rows: int = CHECK_ROWS, created: _dt.datetime | None = None,
                          progress: bool | None = False) -> ScalingExport:
    """Write a scaling plug-in for the steps contract (atomic write), after a bit-for-bit round trip on ``data``.

    Parameters
    ----------
    constants : NormalizationConstants
        From :func:`rewardlab.normalization_constants` (e.g. of ``"recorded"``).
    path : str or Path
        The ``.py`` file to write.
    data : polars.DataFrame or None
        A steps frame holding ``key`` (e.g. the data the constants came
        from): the file is applied to it in every batch mode and compared bit
        for bit with rewardlab, and check-plugin runs on its whole episodes.
        None only with ``check=False``.
    key, center
        See :class:`StepsScaling`.
    spec : FrameSpec, optional
        ``data``'s spec, when it carries none.
    overwrite : bool
        Replace an existing file (otherwise
        :class:`~rewardlab.core.errors.OutputExistsError`, before any work).
    check : bool
        Run the round trip before writing (default); a failure raises
        :class:`~rewardlab.core.errors.RoundTripError` and writes nothing.
    source : str, optional
        A note for the header (sanitized into a comment).
    check_rows : int
        Rows of whole episodes for check-plugin.
    created : datetime, optional
        The time in the header (default now, UTC).
    progress : bool or None
        Progress bars for the round trip's runs (None: on an interactive
        terminal or in Jupyter; what the CLI passes).

    Returns
    -------
    ScalingExport

    Raises
    ------
    ParameterError
        Bad arguments; a path whose name the plug-in loader would refuse
        (:func:`rewardlab.export.plugin_target`); constants of a return scope
        with ``center=True``; a key that is not a numeric scalar column the
        spec hands to plug-ins (:func:`check_scaling_key`); constants of a reward whose
        ``reward_<name>`` column in ``data`` differs from the key's values.
    OutputExistsError, RoundTripError, ExportWriteError
        Nothing is written (ExportWriteError: the write itself failed).

    Warns
    -----
    ScalingBlowUpWarning
        Some scaled reward of ``data`` lies beyond ``±BLOWUP_LIMIT``
        (:func:`scaling_blowup`: the numbers); raised before the file is
        written, attributed to the caller's line.

    Examples
    --------
    >>> c = rewardlab.normalization_constants(frame, "recorded")  # doctest: +SKIP
    >>> print(export_scaling_plugin(c, "scaled.py", data=frame))  # doctest: +SKIP
    """
    for name, value in (("overwrite", overwrite), ("check", check)):
        if not isinstance(value, bool):
            raise ParameterError(name, "should be True or False", value)
    scaling = StepsScaling(constants, key=key, center=center)
    target = plugin_target(path, overwrite=overwrite)
    if isinstance(data, pl.DataFrame) and (spec is not None or attached(data) is not None):
        check_scaling_key(data, scaling.key, spec=spec)  # before the column is read (without a spec: evaluate's)
    text = scaling.render(created=created, source=source)
    roundtrip = blowup = None
    if check:
        if data is None:
            raise ParameterError("data", "should be the steps frame to check the file on (or pass check=False)",
                                 None)
        _check_constants_match(scaling, data)
        reward, _ = scaling.evaluate(data, spec=spec)
        check_reward_range(reward, scaling)
        blowup = scaling_blowup(scaling, data, spec=spec, reward=reward)
        with tempfile.TemporaryDirectory(prefix="rewardlab-export-") as tmp:
            trial = Path(tmp) / "exported.py"
            trial.write_text(text, encoding="utf-8")
            roundtrip = scaling_roundtrip(scaling, trial, data, spec=spec, check_rows=check_rows, progress=progress)
        if not roundtrip.ok:
            raise RoundTripError(str(path), roundtrip)
    found = ()
    if blowup is not None:
        found = (str(blowup),)
        warn_outside(ScalingBlowUpWarning(str(blowup)))  # before the write: an error filter writes nothing
    write_text(target, text, overwrite=overwrite, shown=str(path))
    return ScalingExport(path=target, text=text, roundtrip=roundtrip, blowup=blowup, warnings=found)
