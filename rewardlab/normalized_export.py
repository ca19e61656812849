"""A normalized version of the user's own steps plug-in: a generated file that runs the plug-in beside it.

``rewardlab export scaling`` scales a column of the data; a user's own
steps plug-in (``data/plugins/steps/potential_shaping.py``) computes its
reward from the data, so its normalized version must run that code::

    reward = (get_reward of the user's file - shift) / scale     (float64, every step; done as the file gives it)

with ``shift`` the constants' mean (``0.0`` without centering) and ``scale``
their std, as :class:`rewardlab.scaling.StepsScaling` does.
:func:`export_normalized_plugin` writes such a file.

Safety and self-containment
---------------------------
The exported file holds only what rewardlab generated: a fixed loader, and
literals (the user's file as a *relative path* from the exported file's
folder, fixed at export; the SHA-256 of its bytes at export; the two
constants).  It never copies the user's code: it reads the file beside it
(imports torch and the standard library only), and **refuses to load**
(``RuntimeError``, naming both files and what to do) when

* the user's file is not where it was, relative to the exported file
  (moved without it, renamed, deleted): move or copy both files together,
  keeping their relative place, or export again;
* its bytes changed (another SHA-256): the constants were measured on the
  old file's rewards; export again (``--overwrite``) or restore the file.

It hashes and compiles the same bytes it read (no window between check and
use), runs them as a stand-alone module (so the user's file must import what
it uses; a file that takes ``torch`` from kanachan's trainer scope is refused
at export), and calls its ``get_reward(data, contiguous)`` before
normalizing.  The exported file finds its companion through its own
``__file__``: load it as a file (rewardlab, ``importlib``, ``runpy``), not by
``exec``-ing its text into another module.

Before anything is written the file is checked as the scaling export's is,
with the family core's pieces (:mod:`rewardlab.families.roundtrip`;
:func:`normalized_roundtrip`): written beside the target under a temporary
name (so the relative path is the final one), applied in **every** batch
mode next to the user's plug-in, compared bit for bit with
``(reward - shift) / scale`` of the user's rewards in that mode, and
check-plugin runs on whole episodes.  User code runs only in rewardlab's
child processes.  A blow-up of rare values warns
(:class:`~rewardlab.core.errors.ScalingBlowUpWarning`, as ``export scaling``).

Examples
--------
>>> n = NormalizedPlugin(Path("potential_shaping.py"), "0" * 64,
...                      NormalizationConstants("potential_shaping", "all", 1.0, 2.0, 4, None, 4, "x"))
>>> n.shift, n.scale
(1.0, 2.0)
>>> text = n.render(out=Path("potential_shaping_normalized.py"))
>>> [line for line in text.splitlines() if line.startswith("_RL_COMPANION")]
["_RL_COMPANION = ('potential_shaping.py',)"]
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import os
import re
from pathlib import Path

import numpy as np
import polars as pl

from rewardlab.analysis.stats import NormalizationConstants, normalization_constants
from rewardlab.contracts.advice import warn_outside
from rewardlab.contracts.kanachan.trainer_scope import names_from_trainer
from rewardlab.core import columns
from rewardlab.core.errors import ParameterError, RoundTripError, ScalingBlowUpWarning, check_choice, check_int
from rewardlab.core.files import atomic_path, check_input, check_not_input
from rewardlab.core.spec import FrameSpec
from rewardlab.export import plugin_target
from rewardlab.families.export import check_created, check_note, generated_line, render_plugin_text
from rewardlab.families.roundtrip import collect_warnings, compare_bits, sample_whole_episodes
from rewardlab.plugins import apply_plugins, check_plugin
from rewardlab.plugins.batch_modes import BATCH_MODES
from rewardlab.plugins.loading import plugin_name, read_plugin
from rewardlab.scaling import (
    CHECK_ROWS, ScalingBlowUp, ScalingRoundTrip, StepsScaling, WrittenPlugin, check_reward_range,
    constants_header, float_literal, scaling_blowup,
)
from rewardlab.sources.registry import spec_of

__all__ = ["NormalizedPlugin", "NormalizedExport", "companion_digest", "companion_link", "plugin_constants",
           "normalized_roundtrip", "export_normalized_plugin"]

_DIGEST = re.compile(r"[0-9a-f]{64}")

_BODY = '''

def _RL_load():
    """The user's get_reward, from the file beside this one, if its bytes are those exported with."""
    here = _RL_os.path.dirname(_RL_os.path.abspath(__file__))
    path = _RL_os.path.normpath(_RL_os.path.join(here, *_RL_COMPANION))
    what = f"rewardlab export normalized --plugin {path} --data DATA --out {__file__} --overwrite"
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as exc:
        raise RuntimeError(
            f"{__file__} normalizes the plug-in {path}, which cannot be read ({exc.strerror or exc}). This "
            f"file was exported to run beside that plug-in, at {_RL_os.path.join(*_RL_COMPANION)} relative to "
            f"itself: move or copy both files together, keeping their relative place, or export again: {what}"
        ) from None
    digest = _RL_hashlib.sha256(raw).hexdigest()
    if digest != _RL_SHA256:
        raise RuntimeError(
            f"refusing to run {__file__}: the plug-in it normalizes, {path}, changed since the export (its "
            f"SHA-256 is {digest}, exported with {_RL_SHA256}), and the constants were measured on the old "
            f"file's rewards. Export again from the changed file ({what}), or restore the file."
        )
    module = _RL_types.ModuleType("_rewardlab_normalized_companion")
    module.__file__ = path
    _RL_sys.modules[module.__name__] = module
    try:
        exec(compile(raw, path, "exec", dont_inherit=True), module.__dict__)
    finally:
        _RL_sys.modules.pop(module.__name__, None)
    function = module.__dict__.get("get_reward")
    if not callable(function):
        raise RuntimeError(f"{path} defines no callable get_reward, which {__file__} normalizes")
    return function


_RL_get_reward = _RL_load()


def get_reward(data, contiguous):
    _RL_get_reward(data, contiguous)
    reward = data["next", "reward"].to(_RL_torch.float64)
    data["next", "reward"] = (reward - _RL_SHIFT) / _RL_SCALE
'''


def companion_digest(path) -> str:
    """The SHA-256 (hex) of a file's bytes: what an exported file checks its companion against.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d) / "x.py"
    ...     _ = p.write_bytes(b"")
    ...     companion_digest(p)[:16]
    'e3b0c44298fc1c14'
    """
    check_input(path)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def companion_link(plugin, out) -> tuple[str, ...]:
    """The user's plug-in as a path relative to the exported file's folder, in parts (what the file holds).

    Absolute paths of both are taken first (symbolic links are kept, so a
    linked folder moves with its links).

    Examples
    --------
    >>> companion_link("data/plugins/steps/potential_shaping.py", "data/potential_normalized.py")
    ('plugins', 'steps', 'potential_shaping.py')
    >>> companion_link("a/p.py", "b/out.py")
    ('..', 'a', 'p.py')
    """
    target = Path(os.path.abspath(out)).parent
    try:
        relative = os.path.relpath(os.path.abspath(plugin), target)
    except ValueError:  # another drive (Windows): no relative path
        raise ParameterError("plugin", "should be reachable from the exported file's folder by a relative path "
                             f"(from {str(target)!r})", str(plugin),
                             hint="Write the exported file on the plug-in's drive.") from None
    return Path(relative).parts


@dataclasses.dataclass(frozen=True)
class NormalizedPlugin:
    """The user's steps plug-in ``plugin`` (SHA-256 ``digest``), normalized with ``constants``.

    Parameters
    ----------
    plugin : Path
        The user's plug-in file (``get_reward(data, contiguous)``, steps contract).
    digest : str
        The SHA-256 of its bytes (64 lowercase hex digits; :func:`companion_digest`).
    constants : NormalizationConstants
        Of the plug-in's reward (e.g. :func:`plugin_constants`).
    center : bool
        Subtract the mean (default); False for constants of a return scope
        (see :class:`rewardlab.scaling.StepsScaling`, which checks both).

    Examples
    --------
    >>> c = NormalizationConstants("p", "episode_return", 10.0, 4.0, 3, None, 30, "x")
    >>> NormalizedPlugin(Path("p.py"), "0" * 64, c, center=False).shift
    0.0
    """

    plugin: Path
    digest: str
    constants: NormalizationConstants
    center: bool = True

    def __post_init__(self):
        if not isinstance(self.plugin, Path):
            raise ParameterError("plugin", "should be a pathlib.Path", self.plugin)
        if not isinstance(self.digest, str) or not _DIGEST.fullmatch(self.digest):
            raise ParameterError("digest", "should be a SHA-256 in 64 lowercase hex digits", self.digest)
        _ = self.scaling  # checks the constants and center

    @property
    def scaling(self) -> StepsScaling:
        """The same constants as a :class:`~rewardlab.scaling.StepsScaling` (its checks, shift and scale)."""
        return StepsScaling(self.constants, key=columns.reward_column(plugin_name(self.plugin)), center=self.center)

    @property
    def shift(self) -> float:
        """What is subtracted: the constants' mean, or 0.0 without centering."""
        return self.scaling.shift

    @property
    def scale(self) -> float:
        """What the shifted reward is divided by: the constants' std."""
        return self.scaling.scale

    def normalize(self, reward) -> np.ndarray:
        """``(reward - shift) / scale`` in float64: the library's side, bit for bit what the file computes.

        Examples
        --------
        >>> c = NormalizationConstants("p", "all", 3.0, 2.0, 2, None, 2, "x")
        >>> NormalizedPlugin(Path("p.py"), "0" * 64, c).normalize([1.0, 5.0]).tolist()
        [-1.0, 1.0]
        """
        return (np.asarray(reward, dtype=np.float64) - self.shift) / self.scale

    def render(self, *, out, created: _dt.datetime | None = None, source: str | None = None) -> str:
        """The exported file's text for the path ``out`` (see the module docstring); checks every literal.

        Examples
        --------
        >>> c = NormalizationConstants("p", "all", 0.5, 2.0, 4, None, 4, "x")
        >>> text = NormalizedPlugin(Path("a/p.py"), "ab" * 32, c).render(out="b/n.py")
        >>> [line for line in text.splitlines() if line.startswith("_RL_")][:2]
        ["_RL_COMPANION = ('..', 'a', 'p.py')", "_RL_SHA256 = 'abababababababababababababababababababababababababababababababab'"]
        """
        created = check_created(created)
        check_note("source", source)
        link = companion_link(self.plugin, out)
        if not link or any(not isinstance(p, str) or not p or "\x00" in p for p in link):
            raise ParameterError("plugin", "should be a file other than the exported one", str(self.plugin))
        c = self.constants
        literals = {"_RL_COMPANION": repr(tuple(link)), "_RL_SHA256": repr(self.digest),
                    "_RL_SHIFT": float_literal("shift", self.shift), "_RL_SCALE": float_literal("scale", self.scale)}
        shown = "/".join(link)
        header = [
            generated_line("Normalized steps plug-in", created),
            f"It runs the plug-in {shown} (relative to this file; not copied here), then normalizes its reward.",
            "It refuses to load when that file is missing (keep both files together, in the same relative",
            "place) or changed (its SHA-256 differs): then export again. Imports torch and the standard library.",
            "",
            "reward:      (get_reward of the plug-in - shift) / scale in float64 on every step; done as it gives",
            f"plug-in:     {shown}",
            f"sha-256:     {self.digest}",
            f"shift:       {self.shift!r} ({'the mean' if self.center else 'not centered'})",
            f"scale:       {self.scale!r} (the population std)",
            *constants_header(c),
        ]
        if source is not None:
            header.append(f"source:      {source}")
        return render_plugin_text(header, literals, _BODY, modules=("hashlib", "os", "sys", "types"))


def _check_plugin_file(plugin, name: str = "plugin") -> tuple[Path, str]:
    """The user's plug-in file, read and compiled (never run here), and its SHA-256; refused when it takes
    names from kanachan's trainer scope (the exported file runs it as a stand-alone module)."""
    if not isinstance(plugin, (str, os.PathLike)):
        raise ParameterError(name, "should be the path of your steps plug-in file", plugin)
    _, path, source, _ = read_plugin(plugin)
    borrowed = names_from_trainer(source, str(path))
    if borrowed:
        raise ParameterError(name, "should import what it uses: the normalized file runs it as a stand-alone "
                             f"module, and it reads {', '.join(borrowed)} from kanachan's trainer scope without "
                             "binding them", str(plugin),
                             hint=f"Add the imports (e.g. `import torch`) at the top of {path}.")
    return path, hashlib.sha256(source.encode("utf-8")).hexdigest()


def _check_steps(data, spec) -> FrameSpec:
    if not isinstance(data, pl.DataFrame):
        raise ParameterError("data", "should be a polars DataFrame of the steps contract", type(data).__name__)
    here = spec_of(data, spec)
    if here.contract not in (None, "steps"):
        raise ParameterError("data", f"should be data of the steps contract; its spec {here.name!r} uses the "
                             f"{here.contract!r} contract", here.name,
                             hint="A normalized plug-in is exported for step tables (rewardlab export normalized).")
    return here


def plugin_constants(data: pl.DataFrame, plugin, *, scope: str = "all", spec: FrameSpec | None = None,
                     batch_mode: str = "episodes", progress=None) -> tuple[pl.DataFrame, NormalizationConstants]:
    """Apply the user's steps plug-in to ``data`` and measure the normalization constants of its reward.

    Parameters
    ----------
    data : polars.DataFrame
        A step table (steps contract).
    plugin : str or Path
        The plug-in file (run in a child process).
    scope : str
        The constants' scope (:func:`rewardlab.normalization_constants`).
    spec : FrameSpec, optional
        ``data``'s spec, when it carries none.
    batch_mode : str
        How the plug-in is applied (:data:`rewardlab.plugins.batch_modes.BATCH_MODES`).
    progress : bool, None or callable
        As :func:`rewardlab.apply_plugins`.

    Returns
    -------
    (polars.DataFrame, NormalizationConstants)
        ``data`` with ``reward_<name>`` / ``done_<name>`` of the plug-in (replaced if present) and the
        constants of reward ``<name>`` over ``scope``.

    Examples
    --------
    >>> frame = rewardlab.load("data/gym/cartpole_random.parquet")  # doctest: +SKIP
    >>> applied, c = plugin_constants(frame, "data/plugins/steps/potential_shaping.py")  # doctest: +SKIP
    """
    here = _check_steps(data, spec)
    path, _ = _check_plugin_file(plugin)
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    applied = apply_plugins(data, str(path), batch_mode=batch_mode, progress=progress, spec=here,
                            contract="steps", replace=True)
    return applied, normalization_constants(applied, plugin_name(path), scope=scope, spec=here)


def normalized_roundtrip(normalized: NormalizedPlugin, path, data: pl.DataFrame, *, spec: FrameSpec | None = None,
                         check_rows: int = CHECK_ROWS, progress=None, cancel=None) -> tuple[ScalingRoundTrip, dict]:
    """Apply an exported file beside the user's plug-in in every batch mode, compare bit for bit, check-plugin.

    In each batch mode of :data:`~rewardlab.plugins.batch_modes.BATCH_MODES`
    both files run in one :func:`rewardlab.apply_plugins` call (the same
    batches, each on its own copy of the data, in a child process); the
    exported file's rewards must equal ``normalized.normalize`` of the user's,
    bit for bit, and its dones the user's.

    Parameters
    ----------
    normalized : NormalizedPlugin
    path : str or Path
        The exported file (its companion at its relative place).
    data : polars.DataFrame
        A step table.
    spec : FrameSpec, optional
    check_rows : int
        Rows of whole episodes check-plugin runs on.
    progress : callable, optional
        ``progress(fraction, message)``.
    cancel : callable, optional
        Polled; True stops the work (:class:`~rewardlab.core.errors.PluginRunCancelled`).

    Returns
    -------
    (ScalingRoundTrip, dict)
        The comparison, and the user's raw rewards ``{mode: float64 array}``.

    Examples
    --------
    >>> print(normalized_roundtrip(n, "p_normalized.py", frame)[0])  # doctest: +SKIP
    """
    check_rows = check_int("check_rows", check_rows, low=1, rule="should be an integer >= 1")
    here = _check_steps(data, spec)
    report = (lambda fraction, message: None) if progress is None else progress
    steps = len(BATCH_MODES) + 1
    user, exported = plugin_name(normalized.plugin), plugin_name(path)
    differing, raw = {}, {}
    with collect_warnings() as log:
        for k, mode in enumerate(BATCH_MODES):
            report(k / steps, f"applying both files in batch mode {mode!r}")
            out = apply_plugins(data, [str(normalized.plugin), str(path)], batch_mode=mode, spec=here,
                                contract="steps", replace=True, cancel=cancel,
                                progress=lambda f, m, k=k: report((k + f) / steps, m))
            raw[mode] = out[columns.reward_column(user)].cast(pl.Float64).to_numpy()
            got = out[columns.reward_column(exported)].cast(pl.Float64).to_numpy()
            rewards, dones, _ = compare_bits(got, out[columns.done_column(exported)].to_numpy(),
                                             normalized.normalize(raw[mode]), out[columns.done_column(user)].to_numpy())
            differing[mode] = (rewards, dones)
    positions, picked, episodes = sample_whole_episodes(data, check_rows, spec=here)
    sample = data if positions is None else data[positions]
    report(len(BATCH_MODES) / steps, "check-plugin on whole episodes")
    checked = check_plugin(sample, str(path), spec=here, contract="steps", cancel=cancel,
                           progress=lambda f, m: report((len(BATCH_MODES) + f) / steps, m))
    report(1.0, "round trip done")
    return ScalingRoundTrip(rows=data.height, differing=differing, report=checked, warnings=log.texts,
                            checked_rows=sample.height, checked_episodes=picked, episodes=episodes), raw


@dataclasses.dataclass(frozen=True, eq=False)
class NormalizedExport(WrittenPlugin):
    """What :func:`export_normalized_plugin` wrote: the file, its companion and digest, the round trip.

    Attributes
    ----------
    path : Path
        The exported file.
    plugin : Path
        The user's plug-in it runs (the companion), and ``link`` its relative path from ``path``'s folder.
    digest : str
        The companion's SHA-256 at export.
    text : str
    roundtrip : ScalingRoundTrip or None
        None with ``check=False``.
    blowup : ScalingBlowUp or None
    warnings : tuple of str
        The blow-up's text, when any (``str`` ends with ``warning: ...`` lines).
    """

    path: Path
    plugin: Path
    link: tuple
    digest: str
    text: str
    roundtrip: ScalingRoundTrip | None
    blowup: ScalingBlowUp | None = None
    warnings: tuple = ()

    def __str__(self) -> str:
        return self.describe(f"it runs {self.plugin} ({'/'.join(self.link)} from its folder) and refuses to run "
                             "if that file is missing there or changed: move or copy both together, or export again")


def export_normalized_plugin(plugin, constants: NormalizationConstants, path, *, data: pl.DataFrame | None,
                             center: bool = True, spec: FrameSpec | None = None, batch_mode: str = "episodes",
                             overwrite: bool = False, check: bool = True, source: str | None = None,
                             check_rows: int = CHECK_ROWS, created: _dt.datetime | None = None, progress=None,
                             cancel=None) -> NormalizedExport:
    """Write a normalized version of the user's steps plug-in (atomic), after a bit-for-bit round trip on ``data``.

    The file loads ``plugin`` from beside it (a relative path fixed now),
    checks its SHA-256 and normalizes its reward (module docstring).

    Parameters
    ----------
    plugin : str or Path
        The user's steps plug-in file; it must import what it uses.
    constants : NormalizationConstants
        Of the plug-in's reward (:func:`plugin_constants`, or a session's).
    path : str or Path
        The ``.py`` file to write; not ``plugin`` itself.
    data : polars.DataFrame or None
        A step table: the file is applied to it in every batch mode and
        compared bit for bit, check-plugin runs on its whole episodes, and,
        when it holds ``reward_<constants.reward>``, that column must equal
        the plug-in's rewards in ``batch_mode`` (constants of another
        version of the file are refused).  None only with ``check=False``.
    center : bool
        Subtract the mean (default); False for a return scope.
    spec : FrameSpec, optional
        ``data``'s spec, when it carries none.
    batch_mode : str
        The mode ``data``'s reward column (and the constants) were computed in.
    overwrite : bool
        Replace an existing file (otherwise
        :class:`~rewardlab.core.errors.OutputExistsError`, before any work).
    check : bool
        Run the round trip (default); a failure raises
        :class:`~rewardlab.core.errors.RoundTripError`, nothing written.
    source : str, optional
        A note for the header (sanitized into a comment).
    check_rows : int
        Rows of whole episodes for check-plugin.
    created : datetime, optional
        The time in the header (default now, UTC).
    progress : callable, optional
        ``progress(fraction, message)`` during the round trip.
    cancel : callable, optional
        Polled during the round trip; True stops it
        (:class:`~rewardlab.core.errors.PluginRunCancelled`), nothing written.

    Returns
    -------
    NormalizedExport

    Raises
    ------
    ParameterError
        Bad arguments; ``path`` naming ``plugin``; a plug-in that reads
        kanachan's trainer names without importing them; data of another
        contract; constants that do not match the data's reward column, or
        take a reward past the export limit.
    OutputExistsError, RoundTripError, PluginLoadError, PluginRunCancelled, FileAccessError
        Nothing is written.

    Warns
    -----
    ScalingBlowUpWarning
        Some normalized reward of ``data`` lies beyond ``±BLOWUP_LIMIT``;
        raised before the file is written.

    Examples
    --------
    >>> applied, c = plugin_constants(frame, "data/plugins/steps/potential_shaping.py")  # doctest: +SKIP
    >>> print(export_normalized_plugin("data/plugins/steps/potential_shaping.py", c,
    ...                                "data/plugins/steps/potential_shaping_normalized.py", data=applied))  # doctest: +SKIP
    """
    for name, value in (("overwrite", overwrite), ("check", check), ("center", center)):
        if not isinstance(value, bool):
            raise ParameterError(name, "should be True or False", value)
    check_choice("batch_mode", batch_mode, BATCH_MODES)
    target = plugin_target(path, overwrite=overwrite)
    check_not_input(target, [plugin], name="path")
    companion, digest = _check_plugin_file(plugin)
    normalized = NormalizedPlugin(Path(os.path.abspath(companion)), digest, constants, center=center)
    text = normalized.render(out=target, created=created, source=source)
    link = companion_link(normalized.plugin, target)
    if check and data is None:
        raise ParameterError("data", "should be the step table to check the file on (or pass check=False)", None)
    if data is not None:
        _check_steps(data, spec)
    roundtrip = blowup = None
    with atomic_path(target, overwrite=overwrite) as trial:  # beside the target: the same relative path
        trial.write_text(text, encoding="utf-8")
        if check:
            roundtrip, raw = normalized_roundtrip(normalized, trial, data, spec=spec, check_rows=check_rows,
                                                  progress=progress, cancel=cancel)
            _check_constants_match(normalized, data, raw[batch_mode], batch_mode)
            reward = normalized.normalize(raw[batch_mode])
            scaling = normalized.scaling
            check_reward_range(reward, scaling)
            blowup = scaling_blowup(scaling, pl.DataFrame({scaling.key: raw[batch_mode]}), reward=reward)
            if not roundtrip.ok:
                raise RoundTripError(str(path), roundtrip)
        if companion_digest(companion) != digest:
            raise ParameterError("plugin", "should not change during the export; its bytes changed while the "
                                 "file was checked", str(plugin), hint="Export again.")
        found = ()
        if blowup is not None:
            found = (str(blowup),)
            warn_outside(ScalingBlowUpWarning(str(blowup)))  # before the rename: an error filter writes nothing
    return NormalizedExport(path=target, plugin=normalized.plugin, link=link, digest=digest, text=text,
                            roundtrip=roundtrip, blowup=blowup, warnings=found)


def _check_constants_match(normalized: NormalizedPlugin, data: pl.DataFrame, raw: np.ndarray, mode: str) -> None:
    """Refuse constants of a reward whose column in ``data`` differs from what the plug-in gives now."""
    rcol = columns.reward_column(normalized.constants.reward)
    if rcol not in data.columns or not data.schema[rcol].is_numeric():
        return
    held = data[rcol].cast(pl.Float64).to_numpy()
    differ = int((held.view(np.uint64) != raw.view(np.uint64)).sum())
    if differ:
        raise ParameterError("constants", f"should be measured on the rewards the plug-in gives now; the data's "
                             f"{rcol} differs from what {normalized.plugin} gives in batch mode {mode!r} on "
                             f"{differ:,} of {raw.shape[0]:,} rows (the file changed since, or the column comes "
                             "from another plug-in or batch mode)", normalized.constants.reward,
                             hint="Apply the plug-in again and measure the constants again (plugin_constants), "
                             "or pass the batch mode the column was computed in.")
