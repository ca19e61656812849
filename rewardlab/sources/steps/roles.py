"""Which column of a step table plays which role: :func:`detect_roles`.

Each role takes the column its option names, else the first of its default
names the table has (exact, case-sensitive):

=============  =============================================  ===========================
role           default names                                  becomes
=============  =============================================  ===========================
episode        ``episode_id``, ``eps_id``, ``episode``        the episode key (required)
step           ``t``, ``step``                                the step index (required)
agent          ``agent_id``, ``agent_index``                  the agent; with it an episode
                                                              is one agent's steps
terminated     ``terminated``, ``terminateds``                the terminated flag
truncated      ``truncated``, ``truncateds``                  the truncated flag
done           ``done``, ``dones``                            one flag for both: read as
                                                              *terminated*, except where
                                                              ``truncated`` is set
reward         ``reward``, ``rewards``,                       ``reward_recorded``
               ``reward_recorded``
time           ``time``, ``timestamp``                        the spec's ``time``
=============  =============================================  ===========================

Every other column is kept.  A numeric column or a list column whose name
starts with ``obs``, ``observation`` or ``state`` (any case) is a *state*
(:class:`~rewardlab.core.spec.StateColumn`: the steps contract hands ``obs``
and ``("next", "obs")``); every other column is an *extra* (``action``, ...;
numeric and Boolean extras reach the plug-in at the root of its TensorDict).
A ``done`` column next to a ``terminated`` one is not used (``ignored``).
A table already in the recorded layout (``reward_recorded``, with or without
``done_recorded``, as every step-table source and ``rewardlab.record`` write
it) reads back as itself: ``reward_recorded`` is its reward role.

Pass ``False`` for an optional role to use no column for it (``reward=False``:
keep a ``reward`` column as a plain extra).

Examples
--------
>>> import polars as pl
>>> roles = detect_roles({"episode_id": pl.Int64, "t": pl.Int32, "obs": pl.List(pl.Float32),
...                       "action": pl.Int64, "reward": pl.Float64, "terminated": pl.Boolean,
...                       "truncated": pl.Boolean})
>>> roles.episode, roles.step, roles.states, roles.extras, roles.reward
('episode_id', 't', ('obs',), ('action',), 'reward')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rewardlab.core.errors import ParameterError

__all__ = ["StepRoles", "detect_roles", "DEFAULT_NAMES", "ROLE_OPTIONS", "STATE_NAME"]

#: Each role's default column names, tried in order.
DEFAULT_NAMES: dict[str, tuple[str, ...]] = {
    "episode": ("episode_id", "eps_id", "episode"),
    "step": ("t", "step"),
    "agent": ("agent_id", "agent_index"),
    "terminated": ("terminated", "terminateds"),
    "truncated": ("truncated", "truncateds"),
    "done": ("done", "dones"),
    "reward": ("reward", "rewards", "reward_recorded"),
    "time": ("time", "timestamp"),
}

#: The role options of the ``"steps"`` format, in order.
ROLE_OPTIONS = tuple(DEFAULT_NAMES)

#: A column whose name matches this is a state (when numeric or a numeric list).
STATE_NAME = re.compile(r"^(obs|observation|state)", re.IGNORECASE)


@dataclass(frozen=True)
class StepRoles:
    """The columns of a step table by role (see the module docstring).

    Attributes
    ----------
    episode, step : str
    agent, terminated, truncated, done, reward, time : str or None
    states : tuple of str
        State columns (observations).
    extras : tuple of str
        Every other column, in table order.
    ignored : tuple of str
        Columns with a role that is not used (a ``done`` beside ``terminated``).
    given : tuple of str
        The roles set by an option (the others were detected by name).
    """

    episode: str
    step: str
    agent: str | None = None
    terminated: str | None = None
    truncated: str | None = None
    done: str | None = None
    reward: str | None = None
    time: str | None = None
    states: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    given: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        """The roles as a JSON-ready dict (what ``rewardlab info`` prints).

        Examples
        --------
        >>> StepRoles("ep", "t", reward="r").as_dict()["reward"]
        'r -> reward_recorded'
        """
        out: dict = {}
        for role in ROLE_OPTIONS:
            column = getattr(self, role)
            if column is None:
                continue
            shown = column + (" -> reward_recorded" if role == "reward" else "")
            if role == "done" and column in self.ignored:
                shown += " (not used: terminated is present)"
            elif role == "done":
                shown += " (read as terminated" + (", except where truncated)" if self.truncated else ")")
            out[role] = shown
        out["states"] = list(self.states)
        out["extras"] = list(self.extras)
        return out


def _option(name: str, value) -> str | None | bool:
    if value is None or value is False:
        return value
    if not isinstance(value, str) or not value:
        raise ParameterError(name, "should be a column name (a non-empty string), None (detect it) or "
                             "False (no such column)", value)
    return value


def detect_roles(schema, **options) -> StepRoles:
    """The roles of a table's columns: the options' columns, else the default names found.

    Parameters
    ----------
    schema : mapping
        ``{column: polars dtype}`` in table order.
    **options
        ``episode``, ``step``, ``agent``, ``terminated``, ``truncated``,
        ``done``, ``reward``, ``time``: a column name, None (detect by
        default name) or False (none).

    Returns
    -------
    StepRoles
        ``episode`` or ``step`` is None when neither an option nor a default
        name found one (the reader then reports what to pass).

    Raises
    ------
    ParameterError
        An option names a column the table lacks (the message lists the
        columns), or two roles name one column.

    Examples
    --------
    >>> import polars as pl
    >>> detect_roles({"ep": pl.Int64, "step": pl.Int64, "done": pl.Boolean}, episode="ep").done
    'done'
    """
    unknown = sorted(set(options) - set(ROLE_OPTIONS))
    if unknown:
        raise ParameterError(unknown[0], "is not a role option (" + ", ".join(ROLE_OPTIONS) + ")",
                             options[unknown[0]])
    names = list(schema)
    chosen: dict[str, str | None] = {}
    given = []
    for role in ROLE_OPTIONS:
        value = _option(role, options.get(role))
        if value is False:
            chosen[role] = None
        elif value is not None:
            if value not in schema:
                raise ParameterError(role, "should name a column of the table (" + ", ".join(names[:40])
                                     + (", ..." if len(names) > 40 else "") + ")", value)
            chosen[role] = value
            given.append(role)
        else:
            taken = set(v for v in chosen.values() if v)
            chosen[role] = next((c for c in DEFAULT_NAMES[role] if c in schema and c not in taken), None)
    seen: dict[str, str] = {}
    for role, column in chosen.items():
        if column is None:
            continue
        if column in seen:
            raise ParameterError(role, f"should name another column than {seen[column]}= does", column)
        seen[column] = role
    ignored = ()
    if chosen["done"] is not None and chosen["terminated"] is not None:
        ignored = (chosen["done"],)
    states, extras = [], []
    for name in names:
        if name in seen:
            continue
        (states if STATE_NAME.match(name) else extras).append(name)
    return StepRoles(**{k: v for k, v in chosen.items() if k not in ("episode", "step")},
                     episode=chosen["episode"], step=chosen["step"], states=tuple(states),
                     extras=tuple(extras), ignored=ignored, given=tuple(given))
