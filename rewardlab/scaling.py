"""Scaling plug-ins for the steps contract: normalization constants -> a self-contained, checked plug-in file.

A step table keeps the reward its environment recorded as the column
``reward_recorded`` (Float64): the candidate ``recorded`` for comparisons,
and, listed in the spec's ``columns``, the root IN key plug-ins read
(:data:`RECORDED_KEY`).  :class:`StepsScaling` is the
plug-in that scales such a column with constants measured by
:func:`rewardlab.normalization_constants`::

    reward = (data[key] - shift) / scale        (float64, every step; done left as given)

with ``shift = mean`` (``0.0`` when ``center=False``) and ``scale = std``.
:func:`export_scaling_plugin` writes it as one stand-alone file (imports
torch only; the constants as literals, exactly rewardlab's floats; a header
naming the constants' provenance and data fingerprint), written atomically
and only after a round trip: the file is applied in **every** batch mode and
compared bit for bit with :meth:`StepsScaling.evaluate`, and check-plugin
passes on whole episodes (:func:`scaling_roundtrip`).

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

from rewardlab.analysis.scopes import RETURN_SCOPES
from rewardlab.analysis.stats import NormalizationConstants
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RoundTripError, ScalingBlowUpWarning
from rewardlab.core.fronts import Fix, Text
from rewardlab.core.spec import FrameSpec, attached
from rewardlab.contracts.advice import warn_outside
from rewardlab.export import plugin_target, write_text
from rewardlab.families.export import check_created, check_note, generated_line, render_plugin_text
from rewardlab.families.rendering import REWARD_LIMIT, float_literal
from rewardlab.families.roundtrip import CHECK_ROWS, ModesRoundTrip, plugin_roundtrip
from rewardlab.sources.registry import spec_of
from rewardlab.sources.steps.reader import RECORDED

__all__ = ["RECORDED_KEY", "StepsScaling", "ScalingRoundTrip", "ScalingExport", "scaling_roundtrip",
           "export_scaling_plugin", "scaling_keys", "check_scaling_key", "CHECK_ROWS", "BLOWUP_LIMIT",
           "ScalingBlowUp", "ScalingBlowUpWarning", "scaling_blowup", "float_literal", "check_reward_range",
           "WrittenPlugin", "constants_header"]

#: The root IN key under which step-table sources hand the recorded reward to steps plug-ins: the
#: candidate column ``reward_recorded`` itself (an extra column of the spec; see
#: :data:`rewardlab.sources.steps.RECORDED`).
RECORDED_KEY = RECORDED
#: What :func:`scaling_roundtrip` returns: the family core's round trip in every batch mode
#: (:class:`rewardlab.families.roundtrip.ModesRoundTrip`), under its former name.
ScalingRoundTrip = ModesRoundTrip
_SCALE_LIMIT = 1e-300  # a smaller std makes (x - shift) / scale overflow for ordinary rewards
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

_BODY = '''
def get_reward(data, contiguous):
    raw = data[_RL_KEY].to(_RL_torch.float64)
    data["next", "reward"] = (raw - _RL_SHIFT) / _RL_SCALE
'''


def scaling_keys(frame: pl.DataFrame, spec: FrameSpec) -> list[str]:
    """The columns a scaling plug-in can scale: numeric scalar columns the steps contract hands at the root.

    Those are the spec's states and its extra columns (``columns``) whose
    dtype is a number, one per step (not an Array or List, not Boolean).

    Examples
    --------
    >>> from rewardlab.core.spec import StateColumn
    >>> f = pl.DataFrame({"e": [0, 0], "obs": [[0.0, 1.0], [2.0, 3.0]], "action": [1, 0],
    ...                   "reward_recorded": [1.0, 5.0]}, schema_overrides={"obs": pl.Array(pl.Float64, 2)})
    >>> spec = FrameSpec(name="s", episode=("e",), states=(StateColumn("obs", 2, "float64", 0.0),),
    ...                  columns=("action", "reward_recorded"))
    >>> scaling_keys(f, spec)
    ['action', 'reward_recorded']
    """
    handed = dict.fromkeys([*spec.state_names, *spec.columns])
    return [c for c in handed if c in frame.columns and frame.schema[c].is_numeric()]


def check_scaling_key(frame: pl.DataFrame, key, *, spec: FrameSpec | None = None, name: str = "key") -> FrameSpec:
    """Refuse a ``key`` that is not a numeric scalar column the steps contract hands at the root; the spec.

    The one check of the key a scaling plug-in reads (:class:`StepsScaling`,
    :func:`export_scaling_plugin`, ``rewardlab export scaling --key``): the
    message names the key, what it is, and the columns that would work
    (:func:`scaling_keys`).  ``name`` is the argument's name as the user typed
    it.

    Examples
    --------
    >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0], "flag": [True, False]})
    >>> check_scaling_key(f, "flag", spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded", "flag")))
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `key` should be a numeric scalar column the steps contract hands to plug-ins at the root (a state or an extra column of the spec); 'flag' holds Boolean. Received 'flag'. Columns that would work: reward_recorded.
    """
    if not isinstance(frame, pl.DataFrame):
        raise ParameterError("frame", "should be a polars DataFrame", type(frame).__name__)
    columns.check_name(key, what=name)
    here = spec_of(frame, spec)
    usable = scaling_keys(frame, here)
    hint = ("Columns that would work: " + ", ".join(usable) + ".") if usable else \
        "No column would: list a numeric column in the spec's columns (FrameSpec(columns=...))."
    what = "a numeric scalar column the steps contract hands to plug-ins at the root (a state or an extra " \
           "column of the spec)"
    if key not in frame.columns:
        raise ParameterError(name, f"should be a column of the frame ({what}); the data has none of that name",
                             key, hint=hint)
    if key not in here.columns and key not in here.state_names:
        raise ParameterError(name, f"should be handed to plug-ins: list it in the {here.name} spec's columns "
                             f"(FrameSpec(columns=...)); it should be {what}", key, hint=hint)
    dtype = frame.schema[key]
    if not dtype.is_numeric():
        kind = " (a vector per step)" if isinstance(dtype, (pl.Array, pl.List)) else ""
        raise ParameterError(name, f"should be {what}; {key!r} holds {dtype}{kind}", key, hint=hint)
    return here


@dataclasses.dataclass(frozen=True)
class StepsScaling:
    """``(data[key] - shift) / scale`` on every step, for the steps contract, from normalization constants.

    Parameters
    ----------
    constants : NormalizationConstants
        From :func:`rewardlab.normalization_constants` (of the reward the key
        holds, e.g. ``"recorded"``): ``scale`` is its ``std``, ``shift`` its ``mean``.
    key : str
        The root IN key holding the raw reward (a scalar extra column of the
        spec); default :data:`RECORDED_KEY`.
    center : bool
        Subtract the mean (default).  Constants of a return scope
        (``episode_return``, ``trajectory_return``) only scale: their mean
        is per episode, not per step, so ``center`` must be False there.

    Examples
    --------
    >>> c = NormalizationConstants("recorded", "episode_return", 10.0, 4.0, 3, None, 30, "x")
    >>> StepsScaling(c, center=False).shift
    0.0
    """

    constants: NormalizationConstants
    key: str = RECORDED_KEY
    center: bool = True

    def __post_init__(self):
        if not isinstance(self.constants, NormalizationConstants):
            raise ParameterError("constants", "should be rewardlab.NormalizationConstants (from "
                                 "rewardlab.normalization_constants)", type(self.constants).__name__)
        columns.check_name(self.key, what="key")
        if not isinstance(self.center, bool):
            raise ParameterError("center", "should be True or False", self.center)
        if self.center and self.constants.scope in RETURN_SCOPES:
            raise ParameterError("center", f"should be False for constants of scope {self.constants.scope!r} "
                                 "(their mean is a per-episode sum; subtracting it from every step would "
                                 "shift returns by length x mean)", self.center,
                                 hint=Text(Fix("center", False, verb="Pass"), " to divide by the return std only, "
                                           "or measure constants over steps (scope='all')."))
        float_literal("constants.mean", float(self.constants.mean))
        if not float(self.constants.std) >= _SCALE_LIMIT:
            raise ParameterError("constants.std", f"should be >= {_SCALE_LIMIT} (rewards are divided by it)",
                                 self.constants.std)

    @property
    def shift(self) -> float:
        """What is subtracted: the constants' mean, or 0.0 without centering."""
        return float(self.constants.mean) if self.center else 0.0

    @property
    def scale(self) -> float:
        """What the shifted reward is divided by: the constants' std."""
        return float(self.constants.std)

    def evaluate(self, frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The rewards and dones the plug-in gives on ``frame``, in NumPy (the library's side of the round trip).

        Returns
        -------
        reward : float64 array ``[N]``
        done : bool array ``[N]``
            True on each episode's last step (the plug-in leaves ``done`` as given).

        Examples
        --------
        >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0]})
        >>> c = NormalizationConstants("recorded", "all", 3.0, 2.0, 2, None, 2, "x")
        >>> r, d = StepsScaling(c).evaluate(f, spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded",)))
        >>> r.tolist(), d.tolist()
        ([-1.0, 1.0], [False, True])
        """
        here = self.check_frame(frame, spec=spec)
        raw = frame[self.key].cast(pl.Float64).to_numpy()
        done = frame.select(here.episode_end(frame.columns)).to_series().to_numpy().astype(bool)
        return (raw - self.shift) / self.scale, done

    def check_frame(self, frame: pl.DataFrame, *, spec: FrameSpec | None = None) -> FrameSpec:
        """Refuse a frame whose key column a steps plug-in cannot read (:func:`check_scaling_key`); its spec.

        Examples
        --------
        >>> f = pl.DataFrame({"e": [0, 0], "reward_recorded": [1.0, 5.0]})
        >>> c = NormalizationConstants("recorded", "all", 3.0, 2.0, 2, None, 2, "x")
        >>> StepsScaling(c).check_frame(f, spec=FrameSpec(name="s", episode=("e",), columns=("reward_recorded",))).name
        's'
        """
        return check_scaling_key(frame, self.key, spec=spec)

    def render(self, *, created: _dt.datetime | None = None, source: str | None = None) -> str:
        """The plug-in file's text (see the module docstring); checks every literal first.

        Examples
        --------
        >>> c = NormalizationConstants("recorded", "all", 0.5, 2.0, 4, "t.parquet", 4, "blake2b-128:ab")
        >>> text = StepsScaling(c).render(created=_dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc))
        >>> [line for line in text.splitlines() if line.startswith("_RL_")]
        ["_RL_KEY = 'reward_recorded'", '_RL_SHIFT = 0.5', '_RL_SCALE = 2.0']
        """
        created = check_created(created)
        check_note("source", source)
        c = self.constants
        literals = {"_RL_KEY": repr(columns.check_name(self.key, what="key")),
                    "_RL_SHIFT": float_literal("shift", self.shift),
                    "_RL_SCALE": float_literal("scale", self.scale)}
        header = [
            generated_line("Reward plug-in for the steps contract", created),
            "Self-contained (imports torch only).  To change it, measure the constants again in rewardlab",
            "and export again; the literals below are exactly rewardlab's values.",
            "",
            f"reward:      (data[{self.key!r}] - shift) / scale in float64 on every step; done left as given",
            f"key:         {self.key!r} (a root IN key of the steps contract)",
            f"shift:       {self.shift!r} ({'the mean' if self.center else 'not centered'})",
            f"scale:       {self.scale!r} (the population std)",
            *constants_header(c),
        ]
        if source is not None:
            header.append(f"source:      {source}")
        return render_plugin_text(header, literals, _BODY)  # the module's body, read now


def scaling_roundtrip(scaling: StepsScaling, path, frame: pl.DataFrame, *, spec: FrameSpec | None = None,
                      check_rows: int = CHECK_ROWS, progress: bool | None = False) -> ScalingRoundTrip:
    """Apply a scaling plug-in file in every batch mode, compare it bit for bit, and run check-plugin.

    The family core's round trip (:func:`rewardlab.families.roundtrip.plugin_roundtrip`)
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
    here = scaling.check_frame(frame, spec=spec)
    full = spec if spec is not None else here
    expected = scaling.evaluate(frame, spec=spec)
    return plugin_roundtrip(path, frame, expected, spec=full, contract="steps", check_rows=check_rows,
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


def constants_header(c: NormalizationConstants) -> list[str]:
    """The header lines of an exported file that say where its constants come from (reward, scope, values,
    data, rows, fingerprint).

    Examples
    --------
    >>> constants_header(NormalizationConstants("recorded", "all", 1.0, 2.0, 4, None, 4, "blake2b-128:00"))[1]
    '  constants:   mean = 1.0, std = 2.0 (over 4 values)'
    """
    return [f"constants from: rewardlab.normalization_constants of reward {c.reward!r}, scope {c.scope!r}",
            f"  constants:   mean = {c.mean!r}, std = {c.std!r} (over {c.count:,} values)",
            f"  data:        {c.source if c.source else '(in memory)'}",
            f"  rows:        {c.rows:,}",
            f"  fingerprint: {c.fingerprint}"]


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
