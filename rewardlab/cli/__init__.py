"""The ``rewardlab`` command line: thin fronts over the library's functions.

Each module in this package registers its subcommands; errors of the
:class:`~rewardlab.core.errors.RewardlabError` family, and any ``OSError`` (a file
problem; its text names the path), are printed as one clear message with
exit status 2 (no traceback); anything else propagates.

Examples
--------
>>> from rewardlab.cli import main
>>> main(["--version"])  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import importlib
import sys

from rewardlab._version import __version__
from rewardlab.core.errors import RewardlabError

__all__ = ["main", "build_parser"]

#: Modules that contribute subcommands, each with ``register(subparsers)``.
COMMAND_MODULES = (
    "rewardlab.cli.data",
    "rewardlab.cli.plugins",
    "rewardlab.cli.analysis",
    "rewardlab.cli.export",
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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RewardlabError as exc:
        print(f"rewardlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `rewardlab info ... | head`
        return 0
    except KeyboardInterrupt:  # Ctrl-C: plug-in child processes are already stopped
        print(f"rewardlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file problem no check named: still one line (with the path), no traceback
        print(f"rewardlab {args.command}: error: {exc}", file=sys.stderr)
        return 2
