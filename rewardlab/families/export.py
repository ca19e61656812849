"""The exported plug-in file of any family: a sanitized header, the literals, the helpers and the body.

Every exported file has the same shape, whatever the family or the contract
it is written for::

    # header lines (sanitized: printable ASCII, no line breaks)

    import hashlib as _RL_hashlib        (standard modules the file needs, if any)

    import torch as _RL_torch            (the file's one library: torch, or numpy for a reward manager)

    _RL_NAME = literal                   (numbers and tuples of numbers, a key's repr)


    <helpers>                            (fixed code the family shares, if any)


    def get_reward(data, contiguous):    (the family's body: get_reward, or a RewardManager class)
        ...

:func:`render_plugin_text` assembles it from what a family supplies (its
formula lines, literals, helpers and body); :func:`render_family` does it for
a :class:`~rewardlab.families.RewardFamily` (its parameters, constants, their
provenance and whether they were fitted for exactly these parameters:
:func:`constants_fit`, :func:`check_constants_fit`).  Every literal is checked
before anything is written (:func:`rewardlab.families.rendering.render_literal`,
:func:`~rewardlab.families.rendering.float_literal`), user text appears only in
``#`` comments, and the text always compiles.

A family class supplies, for :func:`render_family`:

* ``export_for``: what the file is a plug-in for (``"kanachan"``);
* ``export_formula``: the header's ``reward:`` lines (what the file computes);
* ``export_helpers``: fixed helper code with ``_RL_`` names (may be empty);
* ``export_literals()`` and ``export_body``: the literals and ``get_reward`` (or, for a family
  exported as a reward manager, the ``RewardManager`` class);
* optionally ``export_header(...)``: the lines of a header of its own (the
  default, None, is :func:`family_header`'s);
* optionally ``export_library``: the one library the file imports, ``"torch"`` (the default) or
  ``"numpy"`` (:data:`LIBRARIES`; a reward-manager file, e.g. El Farol's, imports numpy only).

Examples
--------
>>> import datetime as dt
>>> text = render_plugin_text(["A plug-in."], {"_RL_SCALE": "2.0"},
...                           "def get_reward(data, contiguous):\\n    pass\\n")
>>> print(text)
# A plug-in.
<BLANKLINE>
import torch as _RL_torch
<BLANKLINE>
_RL_SCALE = 2.0
<BLANKLINE>
<BLANKLINE>
def get_reward(data, contiguous):
    pass
<BLANKLINE>
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from rewardlab._version import __version__
from rewardlab.core.errors import OutputExistsError, ParameterError, RoundTripError
from rewardlab.core.files import atomic_open, check_output
from rewardlab.core.fronts import Fix, Say, Text
from rewardlab.families.base import RewardFamily
from rewardlab.families.rendering import check_reward_range, format_value, render_literal, sanitize_comment

__all__ = ["LIBRARIES", "export_library", "generated_line", "check_created", "check_note", "render_plugin_text",
           "constants_fit", "check_constants_fit", "family_header", "render_family", "FamilyExport", "write_checked"]

#: Standard-library modules an exported file may import (as ``_RL_<name>``), besides its library.
STANDARD_MODULES = ("hashlib", "os", "sys", "types")

#: The library an exported file imports (as ``_RL_<name>``): torch for a ``get_reward`` plug-in, numpy for a
#: reward manager (:mod:`rewardlab.contracts.manager`).
LIBRARIES = ("torch", "numpy")


def export_library(family) -> str:
    """The library a family's exported file imports: its class's ``export_library``, ``"torch"`` by default.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> export_library(Ranking.from_preset("top"))
    'torch'
    """
    library = getattr(type(family), "export_library", "torch")
    if library not in LIBRARIES:
        raise ParameterError("export_library", "should be one of " + ", ".join(LIBRARIES), library)
    return library


def check_created(created: _dt.datetime | None) -> _dt.datetime:
    """The header's time: ``created``, or now (UTC) when None; anything but a datetime is refused.

    Examples
    --------
    >>> check_created(_dt.datetime(2026, 1, 1)).year
    2026
    """
    created = created or _dt.datetime.now(_dt.timezone.utc)
    if not isinstance(created, _dt.datetime):
        raise ParameterError("created", "should be a datetime", created)
    return created


def check_note(name: str, value) -> None:
    """Refuse a header note (``source``, ``state``) that is neither a string, a Path nor None.

    Examples
    --------
    >>> check_note("source", 3)
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `source` should be a string or None. Received 3.
    """
    if value is not None and not isinstance(value, (str, Path)):
        raise ParameterError(name, "should be a string or None", value)


def generated_line(what: str, created: _dt.datetime) -> str:
    """The header's first line: ``what``, the rewardlab version and the time, in UTC.

    Examples
    --------
    >>> generated_line("A plug-in", _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)).endswith("on 2026-01-01 00:00:00 UTC.")
    True
    """
    stamp = created.astimezone(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M:%S UTC')
    return f"{what}, generated by rewardlab {__version__} on {stamp}."


def render_plugin_text(header: Sequence[str], literals: Mapping[str, str], body: str, *, helpers: str = "",
                       modules: Sequence[str] = (), library: str = "torch") -> str:
    """The text of an exported plug-in file (see the module docstring); it is compiled before it is returned.

    Parameters
    ----------
    header : sequence of str
        The header's lines, each sanitized into a ``#`` comment.
    literals : mapping of str to str
        ``{_RL_NAME: source}``, each source already checked
        (:func:`~rewardlab.families.rendering.render_literal`,
        :func:`~rewardlab.families.rendering.float_literal`, a key's ``repr``).
    body : str
        The family's code defining ``get_reward(data, contiguous)`` (or a ``RewardManager`` class).
    helpers : str
        Fixed code before the body (none by default).
    modules : sequence of str
        Standard-library modules imported as ``_RL_<name>`` before the library
        (of :data:`STANDARD_MODULES`).
    library : str
        The one third-party library, imported as ``_RL_<library>``: ``"torch"``
        (default) or ``"numpy"`` (:data:`LIBRARIES`).

    Examples
    --------
    >>> render_plugin_text(["x"], {"SCALE": "2.0"}, "def get_reward(data, contiguous): pass")
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `name` should be an identifier starting with _RL_. Received 'SCALE'.
    >>> "import numpy as _RL_numpy" in render_plugin_text(["x"], {}, "class RewardManager: pass", library="numpy")
    True
    """
    if library not in LIBRARIES:
        raise ParameterError("library", "should be one of " + ", ".join(LIBRARIES), library)
    for name in literals:  # fixed names from the family classes; checked all the same
        if not name.startswith("_RL_") or not name.isidentifier():
            raise ParameterError("name", "should be an identifier starting with _RL_", name)
    for module in modules:
        if module not in STANDARD_MODULES:
            raise ParameterError("modules", "should name modules of " + ", ".join(STANDARD_MODULES), module)
    comment = "\n".join(("# " + sanitize_comment(line)).rstrip() for line in header)
    imports = "".join(f"import {m} as _RL_{m}\n" for m in modules) + ("\n" if modules else "")
    text = (comment + "\n\n" + imports + f"import {library} as _RL_{library}\n\n"
            + "\n".join(f"{k} = {v}" for k, v in literals.items()) + "\n\n\n"
            + (helpers.strip("\n") + "\n\n\n" if helpers.strip("\n") else "")
            + body.strip("\n") + "\n")
    compile(text, "<rewardlab plug-in>", "exec")  # a generated file always parses
    return text


def constants_fit(family: RewardFamily) -> str:
    """One line for the header: whether the constants were fitted for exactly these parameters.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> constants_fit(Ranking.from_preset("top").with_seed_constants())
    "fitted for exactly these parameters (the wiki's recipe, no data)"
    >>> constants_fit(Ranking.from_preset("top").with_seed_constants().with_params(vector=(2, 0, 0, -1)))
    "NOT fitted for these parameters: fitted for ranking: vector=[1.0, -1.0, -1.0, -1.0] (the wiki's recipe, no data); exported as they are on request (keep_constants=True)"
    """
    prov = family.params.provenance
    if prov.kind not in ("dataset", "seed"):
        return "not fitted (" + prov.describe() + ")"
    data = f"data fingerprint {prov.fingerprint}" if prov.fingerprint else \
        "the wiki's recipe, no data" if prov.kind == "seed" else "data fingerprint not recorded"
    if prov.fitted_for is None:
        return f"fitted, for parameters not recorded ({data})"
    if not family.constants_stale:
        return f"fitted for exactly these parameters ({data})"
    return (f"NOT fitted for these parameters: fitted for {prov.fitted_for} ({data}); exported as they are "
            "on request (keep_constants=True)")


def check_constants_fit(family: RewardFamily, *, keep_constants: bool = False) -> None:
    """Refuse constants fitted for other parameters unless ``keep_constants`` (see :func:`render_family`).

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> check_constants_fit(Ranking.from_preset("top").with_seed_constants().with_params(vector=(2, 0, 0, -1)))
    Traceback (most recent call last):
    rewardlab.core.errors.ParameterError: `constants` should be fitted for the exported parameters (ranking: vector=[2.0, 0.0, 0.0, -1.0]), not for ranking: vector=[1.0, -1.0, -1.0, -1.0]. Received {'mean': -0.5, 'std': 1.0}. Refit them for these parameters (with_constants_from(data)), or pass keep_constants=True to export them as they are.
    >>> from rewardlab.core.fronts import WIDGET, render
    >>> try:
    ...     check_constants_fit(Ranking.from_preset("top").with_seed_constants().with_params(vector=(2, 0, 0, -1)))
    ... except ParameterError as exc:
    ...     print(render(exc, WIDGET).split("}. ")[1])  # the remedy in a widget's words
    Refit them for these parameters (the “from data” button), or tick 'keep these constants' to export them as they are.
    """
    if not isinstance(keep_constants, bool):
        raise ParameterError("keep_constants", "should be True or False", keep_constants)
    if family.constants_stale and not keep_constants:
        p = family.params
        raise ParameterError("constants", f"should be fitted for the exported parameters ({family.parameter_key()}), "
                             f"not for {p.provenance.fitted_for}", {"mean": p.mean, "std": p.std},
                             hint=Text("Refit them for these parameters (",
                                       Say("refit_constants", "with_constants_from(data)"), "), or ",
                                       Fix("keep_constants", True), " to export them as they are."))


def family_header(family: RewardFamily, *, created: _dt.datetime, source=None, state=None) -> list[str]:
    """The header lines of a family's exported file: what it is, parameters, constants and their origin.

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Points
    >>> lines = family_header(Points.from_preset("thousands"), created=_dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc))
    >>> lines[4], lines[5]
    ('family:      points (End-of-game raw points)', 'parameter:   offset = 25000.0')
    """
    p = family.params
    prov = p.provenance
    header = [
        generated_line(f"Reward plug-in for {family.export_for}", created),
        f"Self-contained (imports {export_library(family)} only).  To change it, change the parameters in rewardlab",
        "and export again; the literals below are exactly rewardlab's values.",
        "",
        f"family:      {family.name} ({family.title})",
    ]
    for k, v in family.parameter_summary().items():
        header.append(f"parameter:   {k} = {format_value(v)}")
    header += [
        f"constants:   mean = {p.mean!r}, std = {p.std!r}",
        f"constants from: {prov.describe()}",
    ]
    if prov.kind == "dataset":
        header += [f"  dataset:     {prov.dataset if prov.dataset else '(in memory)'}",
                   f"  rows:        {prov.rows}",
                   f"  steps:       {prov.steps} ({prov.scope})",
                   f"  fingerprint: {prov.fingerprint}"]
    header.append(f"constants fit: {constants_fit(family)}")
    if source is not None:
        header.append(f"source:      {source}")
    if state is not None:
        header.append(f"state:       {state}")
    formula = family.export_formula
    header.append("reward:      " + formula[0])
    header += ["             " + line for line in formula[1:]]
    return header


def render_family(family: RewardFamily, *, source: str | None = None, created: _dt.datetime | None = None,
                  keep_constants: bool = False, state: str | None = None) -> str:
    """The text of a family's stand-alone plug-in file, every value checked first.

    Checks, before any text is made: every literal is a finite number, the
    raw and normalized rewards stay within ``±REWARD_LIMIT`` for every input
    the file can receive (:func:`rewardlab.families.rendering.check_reward_range`),
    and constants fitted for other parameters are refused unless
    ``keep_constants`` (:func:`check_constants_fit`).

    Parameters
    ----------
    family : RewardFamily
        Supplies ``export_for``, ``export_formula``, ``export_helpers``,
        ``export_literals()``, ``export_body`` and ``export_header()``
        (module docstring).
    source, state : str, optional
        Notes for the header (sanitized); without them, no such line.
    created : datetime, optional
        The time in the header (default now, UTC).
    keep_constants : bool

    Returns
    -------
    str

    Examples
    --------
    >>> from rewardlab.domains.mahjong.families import Ranking
    >>> "def get_reward(data, contiguous):" in render_family(Ranking.from_preset("top"))
    True
    """
    if not isinstance(family, RewardFamily):
        raise ParameterError("family", "should be a reward family (rewardlab.families.RewardFamily)",
                             type(family).__name__)
    check_note("source", source)
    check_note("state", state)
    created = check_created(created)
    literals = {name: render_literal(name, value) for name, value in family.export_literals().items()}
    check_reward_range(family.params)  # again: the parameters may have been built around validation
    check_constants_fit(family, keep_constants=keep_constants)
    header = family.export_header(created=created, source=source, state=state)
    if header is None:
        header = family_header(family, created=created, source=source, state=state)
    return render_plugin_text(header, literals, family.export_body, helpers=family.export_helpers,
                              library=export_library(family))


@dataclasses.dataclass(frozen=True)
class FamilyExport:
    """What a family's checked export wrote: the path, and its round trip (None when no data was given).

    ``str`` is what the CLI prints: ``wrote PATH``, then the round trip's text, indented.

    Examples
    --------
    >>> str(FamilyExport(Path("c.py"), None))
    'wrote c.py'
    """

    path: Path
    roundtrip: object | None

    def __str__(self) -> str:
        text = f"wrote {self.path}"
        if self.roundtrip is not None:
            text += "\n  " + str(self.roundtrip).replace("\n", "\n  ")
        return text


def export_target(family, kind: type, path, *, overwrite: bool) -> Path:
    """The checked arguments of a family's export function: ``family`` a ``kind``, ``overwrite`` a bool, and
    ``path`` writable (refused before any work when it exists and ``overwrite`` is False); returns ``Path(path)``.

    Examples
    --------
    >>> export_target(object(), RewardFamily, "r.py", overwrite=False)
    Traceback (most recent call last):
    ...
    rewardlab.core.errors.ParameterError: `family` should be a RewardFamily. Received 'object'.
    """
    if not isinstance(family, kind):
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        raise ParameterError("family", f"should be {article} {kind.__name__}", type(family).__name__)
    if not isinstance(overwrite, bool):
        raise ParameterError("overwrite", "should be True or False", overwrite)
    target = Path(path)
    check_output(target, overwrite=overwrite)
    return target


def write_checked(text: str, path, *, overwrite: bool = False, check=None):
    """Write an exported file's ``text`` to ``path`` atomically, after ``check`` passed on a temporary copy.

    ``check(temporary_path)`` returns a round trip whose ``ok`` says whether
    the file reproduces the library (None: no check).  When it is not ok,
    a :class:`~rewardlab.core.errors.RoundTripError` is raised and nothing
    is written.  Returns the round trip (None unchecked).

    Examples
    --------
    >>> write_checked(ContestFamily().render(), "contest.py", check=None)  # doctest: +SKIP
    """
    roundtrip = None
    if check is not None:
        with tempfile.TemporaryDirectory() as folder:
            temporary = Path(folder) / "exported.py"
            temporary.write_text(text)
            roundtrip = check(temporary)
        if not roundtrip.ok:
            raise RoundTripError(str(path), roundtrip)
    try:
        with atomic_open(Path(path), "w", overwrite=overwrite, compress=None) as f:
            f.write(text)
    except OutputExistsError:
        raise OutputExistsError(str(path)) from None
    return roundtrip
