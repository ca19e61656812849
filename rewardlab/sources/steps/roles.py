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
final          ``final``                                      a flag marking *final rows*
                                                              (see below); not kept
=============  =============================================  ===========================

Every other column is kept.  A numeric, Boolean or list column whose name
starts with ``obs``, ``observation`` or ``state`` (any case) is a *state*
(a text column too when most of its values are numbers or lists such as
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

**Final states** (the state after an episode's last step; each becomes a
column ``final_<state>``, :func:`~rewardlab.core.spec.final_column`, on the
frame: the final state on each episode's last row, null elsewhere and where
the table lacks it; :mod:`rewardlab.sources.steps.finals` reads them) come
in three layouts, detected by name and usable together:

=========================  ===============================================  ============================
layout                     columns                                          read as
=========================  ===============================================  ============================
N+1 rows                   ``final`` (the ``final`` role): true on one      the row removed, its states
                           extra row after an episode's last step           -> ``final_<state>`` of the
                                                                            last step
next-state columns         ``next_<state>`` or ``new_<state>`` beside a     checked equal to the next
                           state ``<state>``: the next state on every row   row's state; dropped; the
                                                                            last row's -> final
final-state columns        ``final_<state>`` beside a state: the final      kept (checked: null except on
                           state on each episode's last row                 episodes' last rows)
=========================  ===============================================  ============================

A next-state or final-state column is one only when its values could be a
state (numbers, lists, or all null); otherwise it is an extra.

Examples
--------
>>> import polars as pl
>>> roles = detect_roles({"episode_id": pl.Int64, "t": pl.Int32, "obs": pl.List(pl.Float32),
...                       "new_obs": pl.List(pl.Float32), "final": pl.Boolean})
>>> roles.final, roles.nexts, roles.extras, roles.final_columns()
('final', (('obs', 'new_obs'),), (), {'obs': 'final_obs'})

>>> roles = detect_roles({"episode_id": pl.Int64, "t": pl.Int32, "obs": pl.List(pl.Float32),
...                       "action": pl.Int64, "reward": pl.Float64, "terminated": pl.Boolean,
...                       "truncated": pl.Boolean})
>>> roles.episode, roles.step, roles.states, roles.extras, roles.reward
('episode_id', 't', ('obs',), ('action',), 'reward')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from rewardlab.core.errors import ParameterError
from rewardlab.core.spec import FINAL_PREFIX, final_column

__all__ = ["StepRoles", "detect_roles", "DEFAULT_NAMES", "ROLE_OPTIONS", "STATE_NAME", "NEXT_PREFIXES", "RESERVED",
           "mostly"]

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
    "final": ("final",),
}

#: A column named one of these followed by a state's name holds that state's next value on every row.
NEXT_PREFIXES = ("next_", "new_")

#: The role options of the ``"steps"`` format, in order.
ROLE_OPTIONS = tuple(DEFAULT_NAMES)

#: Column names a state or extra column may not have: the steps contract's TensorDict holds the next
#: states, the flags and the reward under ``"next"`` (``("next", "obs")``, ``("next", "done")``, ...).
RESERVED = ("next",)

#: A column whose name matches this is a state (when numeric or a numeric list).
STATE_NAME = re.compile(r"^(obs|observation|state)", re.IGNORECASE)


@dataclass(frozen=True)
class StepRoles:
    """The columns of a step table by role (see the module docstring).

    Attributes
    ----------
    episode, step : str
    agent, terminated, truncated, done, reward, time : str or None
    final : str or None
        The flag marking final rows (N+1 layout).
    states : tuple of str
        State columns (observations).
    nexts : tuple of (str, str)
        ``(state, column)``: the table's next-state columns (``next_obs``).
    finals : tuple of (str, str)
        ``(state, column)``: the table's final-state columns (``final_obs``).
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
    final: str | None = None
    states: tuple[str, ...] = ()
    nexts: tuple[tuple[str, str], ...] = ()
    finals: tuple[tuple[str, str], ...] = ()
    extras: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    given: tuple[str, ...] = ()

    def final_columns(self) -> dict[str, str]:
        """``{state: final column}`` of the frame: every state with a final row (when the table has a
        ``final`` column), a next-state or a final-state column; the table's own final column, else
        ``final_<state>`` (with ``_`` appended while the table has a column of that name).

        Examples
        --------
        >>> roles = StepRoles("ep", "t", states=("obs", "x"), nexts=(("x", "next_x"),), extras=("final_x",))
        >>> roles.final_columns()
        {'x': 'final_x_'}
        """
        own = dict(self.finals)
        with_final = {s for s, _ in (*self.nexts, *self.finals)}
        taken = {c for c in (self.episode, self.step, self.agent, self.terminated, self.truncated, self.done,
                             self.reward, self.time, self.final, *self.states, *self.extras) if c}
        taken |= {c for _, c in (*self.nexts, *self.finals)}
        out = {}
        for state in self.states:
            if state in own:
                out[state] = own[state]
            elif self.final is not None or state in with_final:
                name = final_column(state)
                while name in taken:
                    name += "_"
                out[state] = name
                taken.add(name)
        return out

    def final_sources(self, state: str) -> list[str]:
        """Where ``state``'s final values come from: ``"final rows"``, its next- and final-state columns.

        Examples
        --------
        >>> StepRoles("ep", "t", final="final", states=("obs",), nexts=(("obs", "new_obs"),)).final_sources("obs")
        ['final rows', 'new_obs']
        """
        rows = ["final rows"] if self.final is not None else []
        return rows + [c for s, c in (*self.nexts, *self.finals) if s == state]

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
            if role == "final":
                shown += " (rows after an episode's last step: removed, their states -> final states)"
            if role == "done" and column in self.ignored:
                shown += " (not used: terminated is present)"
            elif role == "done":
                shown += " (read as terminated" + (", except where truncated)" if self.truncated else ")")
            out[role] = shown
        out["states"] = list(self.states)
        if self.nexts:
            out["next"] = [f"{c} (the next {s}: checked against the following step's, then dropped)"
                           for s, c in self.nexts]
        finals = self.final_columns()
        if finals:
            out["finals"] = [f"{c} (from " + ", ".join(self.final_sources(s)) + ")" for s, c in finals.items()]
        out["extras"] = list(self.extras)
        return out


def _option(name: str, value) -> str | None | bool:
    if value is None or value is False:
        return value
    if not isinstance(value, str) or not value:
        raise ParameterError(name, "should be a column name (a non-empty string), None (detect it) or "
                             "False (no such column)", value)
    return value


#: How many of a text column's values :func:`mostly` looks at (its first ones that are set).
MOSTLY_ROWS = 10_000


def mostly(series: pl.Series, *, numbers: bool = False, lists: bool = False) -> bool:
    """Whether half or more of a text column's values (not null, not blank; its first
    :data:`MOSTLY_ROWS`) are numbers (``numbers``) or lists such as ``"[0.1, 0.2]"`` (``lists``); False
    when it has none.  The column's values decide, not its first one: a broken first value is reported
    as the value at fault (``not_numeric``), not taken as the column's kind.

    Examples
    --------
    >>> mostly(pl.Series([None, "x", "[1, 2]", "[3, 4]"]), lists=True), mostly(pl.Series(["idle", "1.5"]), numbers=True)
    (True, True)
    >>> mostly(pl.Series(["idle", "run", "1"]), numbers=True), mostly(pl.Series([None], dtype=pl.String), numbers=True)
    (False, False)
    """
    head = series.head(MOSTLY_ROWS).drop_nulls()
    if not head.len() and series.len() > MOSTLY_ROWS:
        head = series.drop_nulls().head(MOSTLY_ROWS)
    text = head.str.strip_chars()
    text = text.filter(text != "")
    if not text.len():
        return False
    ok = pl.Series(np.zeros(text.len(), dtype=bool))
    if numbers:
        ok |= text.cast(pl.Float64, strict=False).is_not_null()
    if lists:
        ok |= text.str.starts_with("[")
    return 2 * int(ok.sum()) >= text.len()


def _may_be_state(name: str, dtype, values: pl.Series | None) -> bool:
    """A state's name, and numbers: numeric, Boolean, a list, or text most of whose values are numbers or lists."""
    if not STATE_NAME.match(name):
        return False
    return _may_be_values(dtype, values)


def _may_be_values(dtype, values: pl.Series | None, *, empty: bool = False) -> bool:
    """Numbers: numeric, Boolean, a list, or text most of whose values are numbers or lists (``empty``: or
    a column without a value)."""
    if empty and values is not None and values.len() and values.null_count() == values.len():
        return True
    if dtype.is_numeric() or dtype in (pl.Boolean, pl.Null) or isinstance(dtype, (pl.List, pl.Array)):
        return True
    if dtype == pl.String and values is not None:
        return mostly(values, numbers=True, lists=True)
    return False


def detect_roles(schema, **options) -> StepRoles:
    """The roles of a table's columns: the options' columns, else the default names found.

    Parameters
    ----------
    schema : mapping or polars.DataFrame
        ``{column: polars dtype}`` in table order, or the table (or its
        first rows): then a text column named like a state is a state when
        most of its values are numbers or lists (with a mere schema, never).
    **options
        ``episode``, ``step``, ``agent``, ``terminated``, ``truncated``,
        ``done``, ``reward``, ``time``, ``final``: a column name, None
        (detect by default name) or False (none).

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
    states, others = [], []
    for name in names:
        if name in seen:
            continue
        values = frame.get_column(name) if frame is not None else None
        (states if _may_be_state(name, schema[name], values) else others).append(name)
    nexts, finals, extras = [], [], []
    for name in others:
        values = frame.get_column(name) if frame is not None else None
        state = _state_of(name, states)
        if state is not None and _may_be_values(schema[name], values, empty=True):
            (finals if name.startswith(FINAL_PREFIX) else nexts).append((state, name))
        else:
            extras.append(name)
    return StepRoles(**{k: v for k, v in chosen.items() if k not in ("episode", "step")},
                     episode=chosen["episode"], step=chosen["step"], states=tuple(states),
                     nexts=tuple(nexts), finals=tuple(finals), extras=tuple(extras), ignored=ignored,
                     given=tuple(given))


def _state_of(name: str, states: list[str]) -> str | None:
    """The state whose next-state (``next_<state>``, ``new_<state>``) or final-state (``final_<state>``)
    column ``name`` is, or None."""
    for prefix in (*NEXT_PREFIXES, FINAL_PREFIX):
        if name.startswith(prefix) and name[len(prefix):] in states:
            return name[len(prefix):]
    return None
