"""Options several commands share: ``--format``, ``--option``, the engine options."""

from __future__ import annotations

import re

from rewardlab.core.extras import install_command


def add_format(p) -> None:
    """Add ``--format NAME`` (choices: the registered formats; default: detected)."""
    from rewardlab.sources.registry import format_names  # the names only: no source is imported

    p.add_argument("--format", choices=format_names(), default=None, metavar="NAME",
                   help="input format: " + ", ".join(format_names())
                   + " (default: detected from content, metadata or suffix; "
                   "`rewardlab info --formats` lists them)")


def add_input_options(p) -> None:
    """Add ``--format NAME`` and ``--option NAME=VALUE``: how a command's data is read (every command that
    reads data takes both; :func:`format_options` reads the options back)."""
    add_format(p)
    add_format_options(p)


def add_engine_options(p, *, work: str) -> None:
    """Add ``--engine``, ``--workers`` and ``--ray-address``, for a dataset folder's parts; ``work`` says
    what is done with them ("worked on", "read")."""
    p.add_argument("--engine", default="embedded", metavar="NAME",
                   help=f"dataset folder: where the parts are {work}: embedded (this machine, in threads; "
                   "default), processes (this machine, one worker process per work item: for many cores) or "
                   "ray (Ray Data, rewardlab's optional 'ray' extra: "
                   + install_command("ray").replace("%", "%%") + ")")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="dataset folder: work items at once (default: the cores available)")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="--engine ray: the cluster to join, e.g. auto or ray://HEAD:10001 (default: a local Ray)")


def refuse_engine_options(args, *, rule: str = "applies to a dataset folder (rewardlab convert ... --out "
                                               "FOLDER) only",
                          hint: str = "Convert the data to a dataset folder first, or leave the option out.") -> None:
    """Refuse the engine options where no parts are read (by default: input that is not a dataset folder),
    naming the first one given."""
    from rewardlab.core.errors import ParameterError

    given = [(flag, value) for flag, value, unset in (("--engine", args.engine, "embedded"),
                                                      ("--workers", args.workers, None),
                                                      ("--ray-address", args.ray_address, None))
             if value != unset]
    if given:
        raise ParameterError(given[0][0], rule, given[0][1], hint=hint)


def add_format_options(p) -> None:
    """Add ``--option NAME=VALUE`` (repeatable): a format option, e.g. ``--option episode=ep``."""
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a format option (repeatable), e.g. --option episode=ep for a step table whose "
                   "episode column is 'ep'; values are text, except true / false / none (any case), "
                   "read as True, False, None (e.g. --option reward=false: no reward column), and "
                   "integers or comma-separated integers (--option room=3, --option grades=1,2,3,4); the "
                   "value of an option naming a file (NAME ending in _path, e.g. skipped_path) is always text")


#: ``--option`` values read as Python constants (lower case); every other value is text.
CONSTANTS = {"true": True, "false": False, "none": None}
#: ``--option`` values read as an integer, or a tuple of integers when comma-separated.
_INTEGERS = re.compile(r"-?[0-9]+(\s*,\s*-?[0-9]+)*")


def option_value(text: str):
    """An ``--option`` value as Python: the :data:`CONSTANTS`, integers, comma-separated integers
    (a tuple), else the text itself.

    Examples
    --------
    >>> option_value("None"), option_value("3"), option_value("1, 2,3"), option_value("ep"), option_value("a,b")
    (None, 3, (1, 2, 3), 'ep', 'a,b')
    """
    value = text.strip()
    if value.lower() in CONSTANTS:
        return CONSTANTS[value.lower()]
    if _INTEGERS.fullmatch(value):
        numbers = tuple(int(v) for v in value.split(","))
        return numbers if "," in value else numbers[0]
    return text


#: ``--option`` names whose value is a file name, kept as typed (``skipped_path=3`` names the file ``3``).
PATH_SUFFIX = "_path"


def format_options(args) -> dict:
    """The ``--option NAME=VALUE`` pairs as a dict (a pair without ``=`` is refused, naming it); each
    value read by :func:`option_value`, except a file name (a NAME ending in ``_path``), kept as text.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> format_options(SimpleNamespace(option=["episode=ep", "reward=False", "allow_pickle=TRUE", "time=none",
    ...                                        "room=3", "skipped_path=3"]))
    {'episode': 'ep', 'reward': False, 'allow_pickle': True, 'time': None, 'room': 3, 'skipped_path': '3'}
    """
    from rewardlab.core.errors import ParameterError

    out = {}
    for item in getattr(args, "option", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParameterError("--option", "should be NAME=VALUE", item)
        name = name.strip()
        out[name] = value if name.endswith(PATH_SUFFIX) else option_value(value)
    return out
