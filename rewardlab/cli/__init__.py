"""The ``rewardlab`` command line: thin fronts over the library's functions.

Each module in this package registers its subcommands; errors of the
:class:`~rewardlab.core.errors.RewardlabError` family, and any ``OSError`` (a file
problem; its text names the path), are printed as one clear message with
exit status 2 (no traceback); anything else propagates.  A message's
remedy is worded for the command line by the command's own flags
(:func:`command_front`: ``--overwrite``, ``--no-center``,
``--option unfinished=truncate``), not as Python keywords.

Examples
--------
>>> from rewardlab.cli import main
>>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from rewardlab._version import __version__
from rewardlab.core.errors import RewardlabError, RewardlabWarning
from rewardlab.core.fronts import Front, command_front as front_of_flags, render

__all__ = ["main", "build_parser", "command_front", "command_flags"]

#: Modules that contribute subcommands, each with ``register(subparsers)``.
COMMAND_MODULES = (
    "rewardlab.cli.data",
    "rewardlab.cli.plugins",
    "rewardlab.cli.analysis",
    "rewardlab.cli.export",
    "rewardlab.cli.diagnose",
    "rewardlab.cli.report",
)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="rewardlab",
        description="Interactive reward analysis for RL: load trajectories, run reward plug-ins, "
        "compare, tune and export them.",
    )
    parser.add_argument("--version", action="version", version=f"rewardlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a command group not written yet
                continue
            raise
        module.register(sub)
    parser.commands = sub.choices  # name -> its parser, for command_front
    return parser


def command_front(parser: argparse.ArgumentParser, args: argparse.Namespace | None = None) -> Front:
    """The CLI's words for one command's messages, from its parser's flags.

    Each flag's destination names the library argument it sets
    (``--no-center`` sets ``no_center``, a switch), so a remedy
    ``Fix("center", False)`` reads ``--no-center`` and a format option
    ``--option NAME=VALUE`` where the command takes ``--option``
    (:func:`rewardlab.core.fronts.command_front`).  With ``args``, the
    flags of the sub-command it chose (``export scaling``) come first.

    Examples
    --------
    >>> from rewardlab.core.errors import OutputExistsError
    >>> parser = build_parser()
    >>> render(OutputExistsError("r.py"), command_front(parser.commands["convert"]))
    'r.py already exists; pass --overwrite to replace it'
    """
    flags = command_flags(parser, args)
    return front_of_flags(flags, takes_options="option" in flags)


def command_flags(parser: argparse.ArgumentParser, args: argparse.Namespace | None = None) -> dict:
    """Each flag of ``parser`` (and of the sub-command ``args`` chose) by destination: ``(flag, kind)``.

    Examples
    --------
    >>> command_flags(build_parser().commands["convert"])["overwrite"]
    ('--overwrite', 'switch')
    """
    flags: dict[str, tuple[str, str]] = {}
    chosen = []
    for action in parser._actions:  # argparse has no public list of a parser's arguments
        if isinstance(action.choices, dict) and getattr(args, action.dest, None) in action.choices:
            chosen.append(action.choices[getattr(args, action.dest)])
        elif action.option_strings:
            flags[action.dest] = (max(action.option_strings, key=len), "switch" if action.nargs == 0 else "value")
    for inner in chosen:
        flags.update(command_flags(inner, args))
    return flags


def _warning_printer(command: str, front: Front, other):
    """A ``warnings.showwarning`` that prints a :class:`~rewardlab.core.errors.RewardlabWarning` as
    ``rewardlab COMMAND: warning: ...`` (worded by ``front``, no source line of rewardlab's own) and hands
    any other warning to ``other``."""
    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, RewardlabWarning):
            print(f"rewardlab {command}: warning: {render(message, front)}", file=file or sys.stderr)
        else:
            other(message, category, filename, lineno, file, line)

    return show


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    front = command_front(parser.commands[args.command], args)
    try:
        with warnings.catch_warnings():  # rewardlab's warnings as one line each, in the command's words
            warnings.showwarning = _warning_printer(args.command, front, warnings.showwarning)
            return int(args.func(args) or 0)
    except RewardlabError as exc:
        text = render(exc, front)
        print(f"rewardlab {args.command}: error: {text}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `rewardlab info ... | head`
        return 0
    except KeyboardInterrupt:  # Ctrl-C: plug-in child processes are already stopped
        print(f"rewardlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file problem no check named: still one line (with the path), no traceback
        print(f"rewardlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
