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

Every other column is kept.  A numeric, Boolean or list column whose name
starts with ``obs``, ``observation`` or ``state`` (any case) is a *state*
(a text column too when its first value is a number or a list such as
``"[0.1, 0.2]"``: CSV and JSON lines hold lists and odd numbers as text;
other text, such as a ``state_label``, is an extra)
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

import polars as pl

from rewardlab.core.errors import ParameterError

__all__ = ["StepRoles", "detect_roles", "DEFAULT_NAMES", "ROLE_OPTIONS", "STATE_NAME", "first_value", "is_number"]

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


def is_number(text: str) -> bool:
    """True for text Python reads as a float.

    Examples
    --------
    >>> is_number(" 1e-3"), is_number("idle")
    (True, False)
    """
    try:
        float(text)
    except ValueError:
        return False
    return True


def first_value(series: pl.Series, test) -> bool:
    """``test`` of the column's first value that is not null (False when all are null).

    Examples
    --------
    >>> first_value(pl.Series([None, "[1, 2]"]), lambda v: v.lstrip().startswith("["))
    True
    """
    value = series.drop_nulls().head(1).to_list()
    return bool(value) and bool(test(value[0]))


def _may_be_state(name: str, dtype, values: pl.Series | None) -> bool:
    """A state's name, and numbers: numeric, Boolean, a list, or text whose first value is a number or list."""
    if not STATE_NAME.match(name):
        return False
    if dtype.is_numeric() or dtype in (pl.Boolean, pl.Null) or isinstance(dtype, (pl.List, pl.Array)):
        return True
    if dtype == pl.String and values is not None:
        return first_value(values, lambda v: v.lstrip().startswith("[") or is_number(v))
    return False


def detect_roles(schema, **options) -> StepRoles:
    """The roles of a table's columns: the options' columns, else the default names found.

    Parameters
    ----------
    schema : mapping or polars.DataFrame
        ``{column: polars dtype}`` in table order, or the table (or its
        first rows): then a text column named like a state is a state when
        its first value is a number or a list (with a mere schema, never).
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
    >>> detect_roles(pl.DataFrame({"t": [0], "episode": [0], "state_label": ["idle"], "obs": ["[1]"]})).states
    ('obs',)
    """
    unknown = sorted(set(options) - set(ROLE_OPTIONS))
    if unknown:
        raise ParameterError(unknown[0], "is not a role option (" + ", ".join(ROLE_OPTIONS) + ")",
                             options[unknown[0]])
    frame = schema if isinstance(schema, pl.DataFrame) else None
    schema = dict(schema.schema) if frame is not None else schema
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
        values = frame.get_column(name) if frame is not None else None
        (states if _may_be_state(name, schema[name], values) else extras).append(name)
    return StepRoles(**{k: v for k, v in chosen.items() if k not in ("episode", "step")},
                     episode=chosen["episode"], step=chosen["step"], states=tuple(states),
                     extras=tuple(extras), ignored=ignored, given=tuple(given))
