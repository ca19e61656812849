"""Advice a contract gives about a plug-in's rewards, and warnings that point at the user's own line.

Whether rewards should sit near mean 0 / std 1 is not a rule of every
contract: it is kanachan's wiki advice for its trainer
(:attr:`Contract.asks_unit_scale <rewardlab.contracts.base.Contract.asks_unit_scale>`
is True for the kanachan contract only).  :func:`scale_advice` is the one
place that decides whether a run's :class:`~rewardlab.contracts.checks.RewardScale`
deserves the warning, and :func:`scale_advice_text` words it with the
contract's own name.

:func:`warn_outside` raises a warning attributed to the first frame outside
the ``rewardlab`` package (the user's notebook cell or script), so a
notebook shows the user's line under the warning, never one of rewardlab's
internal source lines (``stacklevel=2`` only reaches the caller, which is
rewardlab itself when a session or the scaling export calls the library).

Examples
--------
>>> from rewardlab.contracts import get_contract
>>> from rewardlab.contracts.checks import RewardScale
>>> far = RewardScale(8.1, 0.0, 10, 8.1, 0.0, 10)
>>> scale_advice(get_contract("kanachan"), far), scale_advice(get_contract("steps"), far)
(True, False)
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from rewardlab.contracts.checks import RewardScale

__all__ = ["scale_advice", "scale_advice_text", "external_stacklevel", "warn_outside"]

#: The folder of the ``rewardlab`` package: frames whose file lies below it are rewardlab's own.
_PACKAGE = str(Path(__file__).resolve().parents[1]) + "/"


def scale_advice(contract, scale: RewardScale | None) -> bool:
    """True when ``contract`` asks for rewards near mean 0 / std 1 and ``scale`` is far from it.

    Parameters
    ----------
    contract : Contract
        The contract the plug-in ran under (kanachan's asks; the steps contract does not).
    scale : RewardScale or None
        The run's reward scale (None or no transitions: False).

    Examples
    --------
    >>> from rewardlab.contracts import get_contract
    >>> scale_advice(get_contract("kanachan"), RewardScale(0.0, 1.0, 4, 0.0, 1.0, 4))
    False
    """
    return bool(getattr(contract, "asks_unit_scale", False)) and scale is not None \
        and scale.count_all > 0 and scale.far


def scale_advice_text(contract) -> str:
    """Who asks for mean 0 / std 1, in words (``"kanachan's trainer (its wiki's advice)"``).

    Examples
    --------
    >>> from rewardlab.contracts import get_contract
    >>> scale_advice_text(get_contract("kanachan"))
    "the kanachan contract (kanachan's wiki advises rewards near mean 0 / std 1)"
    """
    return f"the {contract.name} contract ({contract.scale_advice})"


def external_stacklevel(skip: int = 1) -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that names the first frame outside rewardlab.

    Parameters
    ----------
    skip : int
        Which frame is level 1 (the one that calls ``warnings.warn``): 1, the
        default, is the caller of ``external_stacklevel``.

    Returns
    -------
    int
        The level of the nearest frame whose file is not in the ``rewardlab``
        package (the outermost frame when every frame is rewardlab's).

    Examples
    --------
    >>> external_stacklevel() >= 1
    True
    """
    frame = sys._getframe(skip)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def warn_outside(warning: Warning) -> None:
    """``warnings.warn(warning)`` attributed to the user's own line (see the module docstring).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_outside(UserWarning("far"))
    >>> caught[0].filename.endswith("advice.py")
    False
    """
    warnings.warn(warning, stacklevel=external_stacklevel())
