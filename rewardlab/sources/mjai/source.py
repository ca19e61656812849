"""MJAI game logs registered as a source (format ``"mjai"``): they produce the kanachan frame.

Examples
--------
>>> SOURCE.name, SOURCE.spec.name, SOURCE.spec.contract
('mjai', 'kanachan', 'kanachan')
"""

from __future__ import annotations

import bz2
import json
import zlib

import polars as pl

from rewardlab.core.files import compression_of, open_compressed
from rewardlab.sources.kanachan import schema as S
from rewardlab.sources.mjai import tiles as T
from rewardlab.sources.mjai.reader import DEFAULTS, PADDED_COLUMNS, compression_by_content, load_mjai, read_mjai
from rewardlab.sources.registry import Source, register_source
from rewardlab.sources.results import LoadResult

__all__ = ["SOURCE", "sniff_mjai", "mjai_roles"]


def sniff_mjai(path) -> bool:
    """True when the file's first non-blank line is a JSON object whose ``type`` is an MJAI event
    (plain, ``.gz`` or ``.bz2``; reads at most 64 KiB).  A gzip or bz2 body under a plain name is
    looked into too, so the load names it (rule ``looks_compressed``: rename it) instead of another
    format misreading it.

    Examples
    --------
    >>> sniff_mjai("data/mjai/tonpusen_196.json"), sniff_mjai("data/mjai/README.md")
    (True, False)
    """
    try:
        with open_compressed(path) as f:
            head = f.read(1 << 16)
        found = compression_by_content(head) if compression_of(path) is None else None
        if found is not None and found[0] == "gzip":
            head = zlib.decompressobj(wbits=31).decompress(head, 1 << 16)
        elif found is not None and found[0] == "bz2":
            head = bz2.BZ2Decompressor().decompress(head, 1 << 16)
    except (OSError, EOFError, ValueError, zlib.error):  # not readable, not gzip / bz2 after all
        return False
    first = next((line for line in head.split(b"\n") if line.strip()), b"")
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("type") in T.EVENT_TYPES


def mjai_roles(paths, *, room: int = 0, grades=0, game_length=None) -> dict:
    """What ``rewardlab info`` shows for logs: the columns a log cannot fill, and the options' values.

    Examples
    --------
    >>> sorted(mjai_roles([]))
    ['action', 'candidates', 'game_length', 'grades', 'progression', 'room']
    """
    return {
        **{name: f"padding, {what}" for name, what in PADDED_COLUMNS.items()},
        "room": f"{room} (option room; a log has none; default {DEFAULTS['room']})",
        "grades": f"{grades} (option grades; a log has none; default 0 for every seat)",
        "game_length": DEFAULTS["game_length"] if game_length is None else f"{game_length} (option game_length)",
    }


def _load_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False, room: int = 0,
                 grades=0, game_length=None, workers: int | None = None,
                 progress: bool | None = None) -> pl.DataFrame:
    return load_mjai(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite, room=room,
                     grades=grades, game_length=game_length, workers=workers, progress=progress)


def _read_source(paths, *, on_error: str = "raise", skipped_path=None, overwrite: bool = False, room: int = 0,
                 grades=0, game_length=None, workers: int | None = None,
                 progress: bool | None = None) -> LoadResult:
    return read_mjai(paths, on_error=on_error, skipped_path=skipped_path, overwrite=overwrite, room=room,
                     grades=grades, game_length=game_length, workers=workers, progress=progress)


#: MJAI logs as a source (format ``"mjai"``).
SOURCE = register_source(Source(
    name="mjai",
    spec=S.KANACHAN_SPEC,
    load=_load_source,
    read=_read_source,
    suffixes=tuple(s + ".gz" for s in (".mjson",)) + (".mjson",),
    sniff=sniff_mjai,
    roles=mjai_roles,
    validates=True,
    description="MJAI game logs (JSON lines of start_game ... end_game events, plain, .gz or .bz2; Mortal, "
                "mjai.app, riichienv): the kanachan frame",
))
