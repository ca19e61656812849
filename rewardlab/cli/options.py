"""Options several commands share: ``--format``."""

from __future__ import annotations


def add_format(p) -> None:
    """Add ``--format NAME`` (choices: the registered formats; default: detected)."""
    from rewardlab.sources.registry import format_names  # the names only: no source is imported

    p.add_argument("--format", choices=format_names(), default=None, metavar="NAME",
                   help="input format: " + ", ".join(format_names())
                   + " (default: detected from content, metadata or suffix; "
                   "`rewardlab info --formats` lists them)")
