"""Where a family's normalization constants came from, how they are measured, and when they are stale.

A family normalizes its raw reward as ``(raw - mean) / std``.  The constants
are the default (0, 1), typed by the user, taken from a recipe (``"seed"``)
or measured on data (:func:`population_constants`); :class:`Provenance`
records which, and for fitted constants the parameters they were fitted for,
so constants kept after a parameter change are recognised as stale
(:func:`constants_stale`).

Examples
--------
>>> prov = Provenance.seed("vector mean / sample std", fitted_for="ranking: vector=[1.0, -1.0]")
>>> constants_stale(prov, "ranking: vector=[1.0, -1.0]"), constants_stale(prov, "ranking: vector=[2.0, -1.0]")
(False, True)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from rewardlab.core.errors import FrameError, ParameterError, check_int

__all__ = ["PROVENANCE_KINDS", "SCOPE_WORDS", "Provenance", "population_constants", "constants_stale"]

#: What each scope of fitted constants covers, in words (the scopes of :mod:`rewardlab.analysis.stats`
#: that families fit over; another scope reads "steps").
SCOPE_WORDS = {"end_of_game": "end-of-game steps", "end_of_round": "end-of-round and end-of-game steps"}
#: The kinds of :class:`Provenance`.
PROVENANCE_KINDS = ("default", "typed", "seed", "dataset")


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a family's normalization constants (mean, std) came from.

    Attributes
    ----------
    kind : str
        ``"default"`` (mean 0, std 1: no normalization), ``"typed"`` (given
        by the user), ``"seed"`` (the recipe of the example in kanachan's wiki, e.g. the mean and
        sample std of the rank vector), ``"dataset"`` (measured on data).
    detail : str
        A short free-text note (the recipe, for ``"seed"``).
    dataset : str or None
        The dataset's path(s) or source files, for ``"dataset"``.
    rows : int or None
        Rows (transitions) in the dataset.
    steps : int or None
        Steps the constants were computed over (the family's scope).
    scope : str or None
        ``"end_of_game"``, or ``"end_of_round"`` (the end of every round,
        including the game's last step), as in :mod:`rewardlab.analysis.stats`.
    fingerprint : str or None
        Content fingerprint of the data the rewards depend on
        (``sha256:`` + 16 hex digits, e.g. a mahjong ``PreparedFrame``'s).
    fitted_for : str or None
        For ``"dataset"`` and ``"seed"``: the family and parameters the
        constants were fitted for (:meth:`rewardlab.families.RewardFamily.parameter_key`), so
        constants kept after a parameter change are recognised as stale
        (:func:`constants_stale`).

    Examples
    --------
    >>> Provenance.typed().describe()
    'typed by the user'
    """

    kind: str = "default"
    detail: str = ""
    dataset: str | None = None
    rows: int | None = None
    steps: int | None = None
    scope: str | None = None
    fingerprint: str | None = None
    fitted_for: str | None = None

    def __post_init__(self):
        if self.kind not in PROVENANCE_KINDS:
            raise ParameterError("kind", "should be one of " + ", ".join(map(repr, PROVENANCE_KINDS)),
                                 self.kind)
        for name in ("detail", "dataset", "scope", "fingerprint", "fitted_for"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ParameterError(name, "should be a string or None", value)
        for name in ("rows", "steps"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, low=0, integral_float=True)

    @classmethod
    def default(cls) -> "Provenance":
        """No normalization (mean 0, std 1)."""
        return cls("default")

    @classmethod
    def typed(cls, detail: str = "") -> "Provenance":
        """Constants typed by the user."""
        return cls("typed", detail)

    @classmethod
    def seed(cls, detail: str, *, fitted_for: str | None = None) -> "Provenance":
        """Constants from the recipe of kanachan's wiki example (``fitted_for``: the parameters it was applied to)."""
        return cls("seed", detail, fitted_for=fitted_for)

    def describe(self) -> str:
        """One line of text for headers, widgets and the CLI.

        Examples
        --------
        >>> Provenance.seed("vector mean / sample std").describe()
        "the wiki's recipe: vector mean / sample std"
        """
        if self.kind == "default":
            return "default (mean 0, std 1: no normalization)"
        if self.kind == "typed":
            return "typed by the user" + (f" ({self.detail})" if self.detail else "")
        if self.kind == "seed":
            return f"the wiki's recipe: {self.detail}" if self.detail else "the wiki's recipe"
        parts = [f"dataset {self.dataset}" if self.dataset else "dataset (in memory)"]
        if self.rows is not None:
            parts.append(f"{self.rows:,} rows")
        if self.steps is not None:
            parts.append(f"{self.steps:,} {SCOPE_WORDS.get(self.scope, 'steps')}")
        if self.fingerprint:
            parts.append(f"fingerprint {self.fingerprint}")
        text = ", ".join(parts)
        return text + (f" ({self.detail})" if self.detail else "")


def constants_stale(provenance: Provenance, parameter_key: str) -> bool:
    """True when constants were fitted (data or a recipe) for other parameters than ``parameter_key``.

    Constants typed by the user, the default (0, 1), and fitted constants
    whose provenance does not record what they were fitted for are not
    stale.

    Examples
    --------
    >>> constants_stale(Provenance("dataset", fitted_for="points: offset=0.0"), "points: offset=1.0")
    True
    >>> constants_stale(Provenance.typed(), "points: offset=1.0")
    False
    """
    return (provenance.kind in ("dataset", "seed") and provenance.fitted_for is not None
            and provenance.fitted_for != parameter_key)


def population_constants(values: np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (ddof 0) of ``values``, via :class:`rewardlab.analysis.moments.Moments`.

    Examples
    --------
    >>> population_constants(np.array([1.0, -1.0, -1.0, -1.0]))
    (-0.5, 0.8660254037844386)
    """
    from rewardlab.analysis.moments import Moments

    moments = Moments.of(np.asarray(values, dtype=np.float64))
    if moments.count == 0:
        raise FrameError("no steps to compute normalization constants from",
                         hint="The dataset has no complete episodes.")
    return moments.mean, moments.std
