"""Advice in the words of the front in use: Python, the command line or a widget.

An error's remedy names a setting ("pass ``overwrite=True``") or an
argument (```vector[3]```), and each front names them its own way: the CLI
says ``--overwrite``, ``--no-center``, ``--option unfinished=truncate``; a
widget says "tick 'overwrite if it exists'" and calls ``vector[3]`` the box
'4th'.  A message is written once, as a :class:`Text` whose remedy parts are
:class:`Term` s (:class:`Arg`, :class:`Fix`, :class:`Say`); a :class:`Front`
renders each term in its vocabulary (:meth:`Front.say`) and keeps the Python
wording wherever it has no word of its own.

A :class:`Text` is a ``str`` whose value is the Python wording, so an error
built from one reads as today in Python; :func:`render` gives an error's (or
a text's) words on another front.  :data:`PYTHON` and :data:`WIDGET` are
plain tables; the CLI's front is built per command from its parser
(:func:`command_front`, called by :func:`rewardlab.cli.main`).

Examples
--------
>>> hint = Text(Fix("overwrite", True), " to replace it")
>>> hint
'pass overwrite=True to replace it'
>>> render(hint, WIDGET)
"tick 'overwrite if it exists' to replace it"
>>> cli = command_front({"overwrite": ("--overwrite", "switch")}, takes_options=True)
>>> render(hint, cli)
'pass --overwrite to replace it'
>>> render(Text(Fix("unfinished", "truncate", verb="load with", option=True)), cli)
'load with --option unfinished=truncate'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["Term", "Arg", "Fix", "Say", "Text", "Front", "PYTHON", "WIDGET", "CLI_WORDS", "command_front",
           "text_of", "render"]


@dataclass(frozen=True)
class Term:
    """A part of a message that fronts word differently; ``key`` is what a front's table looks up.

    Examples
    --------
    >>> Arg("gamma").key, Fix("center", False).key, Say("refit", "with_constants_from(data)").key
    ('gamma', 'center=False', 'refit')
    """

    @property
    def key(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def python(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class Arg(Term):
    """An argument's name, as a :class:`~rewardlab.core.errors.ParameterError` states it.

    Python writes ```name```; the CLI its flag (```--key```) where the
    command has one; a widget the control's label (the box '4th').

    Examples
    --------
    >>> Arg("vector[3]").python()
    '`vector[3]`'
    """

    name: str

    @property
    def key(self) -> str:
        return self.name

    def python(self) -> str:
        return f"`{self.name}`"


@dataclass(frozen=True)
class Fix(Term):
    """A remedy that sets ``name`` to ``value``, with the ``verb`` that introduces it.

    Parameters
    ----------
    name : str
        The keyword argument (``overwrite``) or, with ``option=True``, the
        format option (``unfinished``: ``load(..., unfinished=...)``, the
        CLI's ``--option unfinished=...``).
    value : object
        The value to set; Python writes ``name=value!r``.
    verb : str
        What introduces it ("pass", "load with"; "" for none).  A front's
        own phrase (a widget's "tick ...") replaces the verb too.
    option : bool
        A format option of a load rather than an argument of the call.

    Examples
    --------
    >>> Fix("on_error", "skip", verb="load with", option=True).python()
    "load with on_error='skip'"
    >>> Fix("center", False, verb="").python()
    'center=False'
    """

    name: str
    value: object = True
    verb: str = "pass"
    option: bool = False

    @property
    def key(self) -> str:
        return f"{self.name}={self.value!r}"

    def setting(self) -> str:
        return f"{self.name}={self.value!r}"

    def python(self) -> str:
        return f"{self.verb} {self.setting()}" if self.verb else self.setting()


@dataclass(frozen=True)
class Say(Term):
    """Any other words a front may put its own way (an action: "with_constants_from(data)").

    Examples
    --------
    >>> Say("refit_constants", "with_constants_from(data)").python()
    'with_constants_from(data)'
    """

    name: str
    text: str

    @property
    def key(self) -> str:
        return self.name

    def python(self) -> str:
        return self.text


class Text(str):
    """Message text whose :class:`Term` s each front words its own way; as a ``str``, the Python wording.

    ``+`` with a ``str`` (on either side) or another Text keeps the terms, so
    messages can be assembled as before; an f-string or ``str`` method gives
    a plain ``str`` (the Python wording).

    Examples
    --------
    >>> t = "`x`: " + Text(Fix("overwrite", True)) + "."
    >>> type(t).__name__, t, t.render(WIDGET)
    ('Text', '`x`: pass overwrite=True.', "`x`: tick 'overwrite if it exists'.")
    """

    parts: tuple

    def __new__(cls, *parts):
        flat: list = []
        for part in parts:
            if isinstance(part, Text):
                flat.extend(part.parts)
            elif isinstance(part, (str, Term)):
                flat.append(part)
            elif part is not None:
                raise TypeError(f"a Text is made of str and Term parts, not {type(part).__name__}")
        self = super().__new__(cls, "".join(p if isinstance(p, str) else p.python() for p in flat))
        self.parts = tuple(flat)
        return self

    def render(self, front: Front) -> str:
        """The words on ``front``."""
        return "".join(p if isinstance(p, str) else front.say(p) for p in self.parts)

    @property
    def terms(self) -> tuple:
        """The terms in the text, in order."""
        return tuple(p for p in self.parts if isinstance(p, Term))

    def __add__(self, other):
        if isinstance(other, str):
            return Text(self, other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, str):
            return Text(other, self)
        return NotImplemented

    def __reduce__(self):
        return (Text, self.parts)


@dataclass(frozen=True)
class Front:
    """How one front names terms: its own words by key, then an optional rule, then Python's.

    Parameters
    ----------
    name : str
        ``"python"``, ``"cli"`` or ``"widget"``.
    words : Mapping[str, str]
        A term's :attr:`Term.key` -> the whole phrase on this front (for a
        :class:`Fix`, verb included: "tick 'overwrite if it exists'").
    spell : callable, optional
        ``spell(term) -> str or None``: computed words (the CLI's flags) for
        terms ``words`` lacks; a :class:`Fix` keeps its verb before them.

    Examples
    --------
    >>> PYTHON.say(Fix("overwrite", True)), WIDGET.say(Arg("vector[3]"))
    ('pass overwrite=True', "box '4th'")
    """

    name: str
    words: Mapping[str, str] = field(default_factory=dict)
    spell: Callable[[Term], str | None] | None = None

    def say(self, term: Term) -> str:
        """``term`` in this front's words (Python's where the front has none)."""
        if term.key in self.words:
            return self.words[term.key]
        spelled = self.spell(term) if self.spell is not None else None
        if spelled is None:
            return term.python()
        if isinstance(term, Fix) and term.verb:
            return f"{term.verb} {spelled}"
        return spelled


#: The library's own words.
PYTHON = Front("python")

_PLACES = ("1st", "2nd", "3rd", "4th")

#: The widgets' words: the labels of their controls.
WIDGET = Front("widget", words={
    "overwrite=True": "tick 'overwrite if it exists'",
    "keep_constants=True": "tick 'keep these constants'",
    "refit_constants": "the “from data” button",
    **{f"vector[{k}]": f"box '{place}'" for k, place in enumerate(_PLACES)},
})

#: Words the CLI uses in every command (a command's own flags come first, :func:`command_front`).
CLI_WORDS: dict[str, str] = {
    "refit_constants": "--normalize-from DATA",
    **{f"vector[{k}]": f"the {place} value of `--vector`" for k, place in enumerate(_PLACES)},
}


def _cli_value(value: object) -> str:
    if value is True or value is False:
        return str(value).lower()
    return "none" if value is None else str(value)


def command_front(flags: Mapping[str, tuple[str, str]], *, takes_options: bool,
                  words: Mapping[str, str] | None = None) -> Front:
    """The CLI's front for one command, from its flags.

    Parameters
    ----------
    flags : Mapping[str, tuple[str, str]]
        Each argument's destination name -> ``(option string, kind)``, kind
        ``"switch"`` (a flag without a value) or ``"value"``.
    takes_options : bool
        The command takes ``--option NAME=VALUE`` (format options).
    words : Mapping[str, str], optional
        Fixed words; :data:`CLI_WORDS` by default.

    Returns
    -------
    Front
        ``Arg(name)`` is the command's flag (```--key```) where it has one;
        ``Fix(name, True)`` its switch (``--overwrite``), ``Fix(name, False)``
        its ``--no-NAME`` switch, ``Fix(name, value)`` ``--flag value``; a
        format option ``--option NAME=VALUE``; anything else Python's words.

    Examples
    --------
    >>> cli = command_front({"no_center": ("--no-center", "switch"), "on_error": ("--on-error", "value")},
    ...                     takes_options=False)
    >>> cli.say(Fix("center", False)), cli.say(Fix("on_error", "skip", verb="load with", option=True))
    ('pass --no-center', 'load with --on-error skip')
    >>> cli.say(Fix("unfinished", "truncate", option=True))  # no --option here: Python's words
    "pass unfinished='truncate'"
    """
    flags = dict(flags)

    def spell(term: Term) -> str | None:
        if isinstance(term, Arg):
            flag = flags.get(term.name)
            return None if flag is None else f"`{flag[0]}`"
        if not isinstance(term, Fix):
            return None
        name, value = term.name, term.value
        flag = flags.get(name)
        if value is True and flag is not None and flag[1] == "switch":
            return flag[0]
        if value is False and flags.get(f"no_{name}", ("", ""))[1] == "switch":
            return flags[f"no_{name}"][0]
        if flag is not None and flag[1] == "value" and not isinstance(value, bool):
            return f"{flag[0]} {_cli_value(value)}"
        if term.option and takes_options:
            return f"--option {name}={_cli_value(value)}"
        return None

    return Front("cli", words=dict(CLI_WORDS if words is None else words), spell=spell)


def text_of(error: BaseException) -> str:
    """An error's message: its :class:`Text` (terms kept) when it was built from one, else ``str(error)``.

    Examples
    --------
    >>> text_of(ValueError(Text(Fix("overwrite", True)))).terms
    (Fix(name='overwrite', value=True, verb='pass', option=False),)
    >>> text_of(ValueError("plain"))
    'plain'
    """
    text = str(error)
    args = getattr(error, "args", ())
    if len(args) == 1 and isinstance(args[0], Text) and str.__eq__(args[0], text):
        return args[0]
    return text


def render(what: object, front: Front) -> str:
    """An error's or a text's words on ``front`` (a plain ``str`` is returned as it is).

    Examples
    --------
    >>> render(ValueError(Text("`", "x", "` ", Fix("center", False, verb="pass"))), WIDGET)
    '`x` pass center=False'
    """
    if isinstance(what, BaseException):
        what = text_of(what)
    if isinstance(what, Text):
        return what.render(front)
    return str(what)
