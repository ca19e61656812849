"""Options several commands share: ``--format``."""

from __future__ import annotations


def add_format(p) -> None:
    """Add ``--format NAME`` (choices: the registered formats; default: detected)."""
    from rewardlab.sources.registry import format_names  # the names only: no source is imported

    p.add_argument("--format", choices=format_names(), default=None, metavar="NAME",
                   help="input format: " + ", ".join(format_names())
                   + " (default: detected from content, metadata or suffix; "
                   "`rewardlab info --formats` lists them)")


def add_format_options(p) -> None:
    """Add ``--option NAME=VALUE`` (repeatable): a format option, e.g. ``--option episode=ep``."""
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a format option (repeatable), e.g. --option episode=ep for a step table whose "
                   "episode column is 'ep'; values are text, except true / false / none (any case), "
                   "read as True, False, None (e.g. --option reward=false: no reward column)")


#: ``--option`` values read as Python constants (lower case); every other value is text.
CONSTANTS = {"true": True, "false": False, "none": None}


def format_options(args) -> dict:
    """The ``--option NAME=VALUE`` pairs as a dict (a pair without ``=`` is refused, naming it); the
    values ``true``, ``false`` and ``none`` (any case) are True, False and None.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> format_options(SimpleNamespace(option=["episode=ep", "reward=False", "allow_pickle=TRUE", "time=none"]))
    {'episode': 'ep', 'reward': False, 'allow_pickle': True, 'time': None}
    """
    from rewardlab.core.errors import ParameterError

    out = {}
    for item in getattr(args, "option", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParameterError("--option", "should be NAME=VALUE", item)
        out[name.strip()] = CONSTANTS.get(value.strip().lower(), value)
    return out
