"""The Sonic level table: where each level ends, and which ``.state`` files start a level.

The retro contest pays progress towards ``level_max_x["zone=Z,act=A"]``, a
Lua table at the top of each Sonic integration's ``script.lua`` in the
installed ``stable-retro`` (``stable_retro/data/stable/<game>/``).  This
module reads that table from the installed file (never a copy), so a new
stable-retro or a user's edited script is what counts:

- :func:`parse_level_max_x` reads the table constructor ``level_max_x = {...}``
  from Lua text: ``["zone=Z,act=A"] = EXPR`` fields, ``EXPR`` an integer
  expression of decimal or hexadecimal numbers with ``+ - *`` and
  parentheses (S3K writes ``0x3080 + 0x1049``); ``--`` and ``--[[ ]]``
  comments are skipped (S1's Scrap Brain act 3 is commented out, so it is no
  level).  Only the constructor is read: a top-level statement that assigns
  ``level_max_x`` or one of its keys again (outside every function) is
  refused, since the table would then not be what the constructor says.
  Assignments inside functions (S3K's ``xpos_done`` moves AIZ's end for the
  ``xpos`` scenario) run only when that function is called and are not part of
  the contest table.  A script whose table cannot be read raises
  :class:`~rewardlab.core.errors.DataFormatError` naming the file, line and column.
- :func:`state_levels` finds which level each ``.state`` file starts, from the
  files themselves: a state is a gzip'd Genesis Plus GX save state
  (``GENPLUS-GX`` header of 16 bytes, then the 64 KiB of 68000 work RAM at
  ``0xFF0000``, stored as 16-bit words in the host's little-endian order, so
  the byte at address ``a`` sits at offset ``16 + ((a - 0xFF0000) ^ 1)``).
  ``zone`` and ``act`` are read at the addresses ``data.json`` gives them, as
  retro would on the first frame.  For every installed Sonic state this gives a
  key of ``level_max_x`` (S2's ``MetropolisZone.Act3`` is ``zone=5,act=0``,
  S3K's ``HiddenPalaceZone`` is ``zone=22,act=1``: the names alone would not
  say so).  :func:`state_values` reads every ``data.json`` variable of a state
  the same way (start ``x``, ``lives``, ``screen_x``...).
- :func:`level_table` (``{"zone=Z,act=A": end_x}``) and :func:`game_levels`
  (a :class:`Levels`: that table, the states and the file they come from) for
  an installed game; :func:`load_levels` for a user's own: an edited
  ``script.lua`` or a JSON / TOML table of their own levels (format in its
  docstring).

Examples
--------
>>> from rewardlab.sources.retro.levels import level_table, level_key
>>> table = level_table("SonicTheHedgehog-Genesis-v0")
>>> hex(table[level_key(0, 0)])
'0x2560'
>>> "zone=5,act=2" in table  # Scrap Brain act 3 is commented out in script.lua
False
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from rewardlab.core.errors import DataFormatError, FileAccessError, ParameterError
from rewardlab.core.extras import install_command
from rewardlab.sources.retro.lua import level_key, parse_level_key, parse_level_max_x, read_level_max_x

__all__ = [
    "SONIC_GAMES", "LEVEL_VARIABLES", "Levels", "level_key", "parse_level_key", "retro_data_root", "game_folder",
    "parse_level_max_x", "read_level_max_x", "read_state_ram", "state_values", "state_levels", "level_table",
    "game_levels", "load_levels", "installed_levels",
]

#: The three contest games (stable-retro ids) whose ``script.lua`` holds a ``level_max_x`` table.
SONIC_GAMES = ("SonicTheHedgehog-Genesis-v0", "SonicTheHedgehog2-Genesis-v0", "SonicAndKnuckles3-Genesis-v0")

#: The ``data.json`` variables that say which level is played (``level_key``).
LEVEL_VARIABLES = ("zone", "act")

#: Where the Genesis work RAM starts in the 68000 address space, and its size.
_RAM_BASE, _RAM_SIZE = 0xFF0000, 0x10000
#: The Genesis Plus GX save state header (``STATE_VERSION`` is 16 bytes, e.g. ``GENPLUS-GX 1.7.5``).
_STATE_MAGIC, _STATE_HEADER = b"GENPLUS-GX", 16
#: stable-retro's integration folders, in the order retro searches them.
_INTEGRATIONS = ("stable", "experimental", "contrib")


# --------------------------------------------------------------------------
# The installed integrations
# --------------------------------------------------------------------------


def retro_data_root() -> Path:
    """The installed ``stable_retro/data`` folder, found without importing stable-retro (no emulator loaded).

    Examples
    --------
    >>> retro_data_root().name
    'data'
    """
    spec = importlib.util.find_spec("stable_retro")
    if spec is None or not spec.submodule_search_locations:
        raise FileAccessError("stable_retro", "stable-retro is not installed, so its level tables cannot be read",
                              hint=f"Install the retro extra ({install_command('retro')}), or pass a level "
                              "table of your own (load_levels)")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def game_folder(game: str) -> Path:
    """The installed integration folder of ``game`` (a stable-retro id such as ``SonicTheHedgehog-Genesis-v0``).

    Examples
    --------
    >>> game_folder("SonicTheHedgehog2-Genesis-v0").name
    'SonicTheHedgehog2-Genesis-v0'
    """
    if not isinstance(game, str) or not game:
        raise ParameterError("game", "should be a stable-retro game id such as 'SonicTheHedgehog-Genesis-v0'", game)
    root = retro_data_root()
    for kind in _INTEGRATIONS:
        folder = root / kind / game
        if (folder / "data.json").is_file():
            return folder
    hint = ""
    if not game.endswith("-v0") and any((root / k / (game + "-v0")).is_dir() for k in _INTEGRATIONS):
        hint = f" stable-retro names it {game + '-v0'!r}."
    raise ParameterError("game", f"should be a game integrated in the installed stable-retro ({root}); "
                         "the contest's games are " + ", ".join(SONIC_GAMES) + "." + hint, game)


# --------------------------------------------------------------------------
# .state files: the work RAM as retro sees it on the first frame
# --------------------------------------------------------------------------

_TYPES = {"|u1": (1, False), "|i1": (1, True), ">u2": (2, False), ">i2": (2, True), ">u4": (4, False),
          ">i4": (4, True), "<u2": (2, False), "<i2": (2, True), "<u4": (4, False), "<i4": (4, True)}


def read_state_ram(path) -> bytes:
    """The 64 KiB of Genesis work RAM in the gzip'd Genesis Plus GX save state at ``path``, in address order.

    The state holds the RAM as 16-bit words in little-endian order (byte
    ``a`` at ``a ^ 1``); this returns it byte-swapped back, so ``ram[a -
    0xFF0000]`` is the byte at address ``a``.

    Examples
    --------
    >>> ram = read_state_ram(game_folder("SonicTheHedgehog-Genesis-v0") / "GreenHillZone.Act2.state")
    >>> len(ram), ram[0xFE10], ram[0xFE11]  # zone 0, act 1
    (65536, 0, 1)
    """
    path = Path(path)
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read(_STATE_HEADER + _RAM_SIZE)
    except (OSError, EOFError) as err:
        raise DataFormatError(path, None, None, "state_file", f"is not a gzip'd emulator save state ({err})") \
            from None
    if not raw.startswith(_STATE_MAGIC) or len(raw) < _STATE_HEADER + _RAM_SIZE:
        raise DataFormatError(path, None, None, "state_file", "is not a Genesis Plus GX save state (it should "
                              f"start with {_STATE_MAGIC.decode()!r} and hold 64 KiB of work RAM), so its level "
                              "cannot be read", hint="Give the level of such a state in a level table of your own "
                              "(load_levels).")
    words = raw[_STATE_HEADER:]
    swapped = bytearray(_RAM_SIZE)
    swapped[0::2], swapped[1::2] = words[1::2], words[0::2]
    return bytes(swapped)


def _variables(folder: Path) -> dict:
    path = folder / "data.json"
    try:
        return json.loads(path.read_text())["info"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataFormatError(path, None, None, "data_json", f"has no readable 'info' table of variables ({err})") \
            from None


def _value(ram: bytes, name: str, var: dict, where: Path) -> int:
    try:
        size, signed = _TYPES[var["type"]]
        offset = int(var["address"]) - _RAM_BASE
    except (KeyError, TypeError, ValueError):
        raise DataFormatError(where / "data.json", None, None, "data_json",
                              f"variable {name!r} ({var!r}) is not a work-RAM variable of a type rewardlab reads "
                              "(" + ", ".join(_TYPES) + ")") from None
    if not 0 <= offset <= _RAM_SIZE - size:
        raise DataFormatError(where / "data.json", None, None, "data_json",
                              f"variable {name!r} lies outside the work RAM (address {var['address']:#x})")
    order = "little" if var["type"].startswith("<") else "big"
    return int.from_bytes(ram[offset:offset + size], order, signed=signed)


def state_values(game: str, state: str) -> dict[str, int]:
    """Every ``data.json`` variable of ``game`` as the installed ``state`` (name without ``.state``) starts it.

    Examples
    --------
    >>> v = state_values("SonicTheHedgehog-Genesis-v0", "GreenHillZone.Act1")
    >>> v["zone"], v["act"], v["lives"], v["x"]
    (0, 0, 3, 80)
    """
    folder = game_folder(game)
    path = folder / (state + ".state")
    if not path.is_file():
        raise ParameterError("state", f"should name one of {game}'s .state files "
                             f"({', '.join(sorted(p.stem for p in folder.glob('*.state')))})", state)
    ram = read_state_ram(path)
    return {name: _value(ram, name, var, folder) for name, var in _variables(folder).items()}


def state_levels(folder) -> dict[str, tuple[int, int]]:
    """``{state name: (zone, act)}`` for every ``.state`` file in the integration ``folder``, read from its RAM.

    The ``zone`` and ``act`` addresses come from the folder's ``data.json``.

    Examples
    --------
    >>> state_levels(game_folder("SonicTheHedgehog2-Genesis-v0"))["MetropolisZone.Act3"]
    (5, 0)
    """
    folder = Path(folder)
    variables = _variables(folder)
    missing = [v for v in LEVEL_VARIABLES if v not in variables]
    if missing:
        raise DataFormatError(folder / "data.json", None, None, "data_json",
                              f"has no {' or '.join(missing)} variable, so its states' levels cannot be read")
    out = {}
    for path in sorted(folder.glob("*.state")):
        ram = read_state_ram(path)
        out[path.name[:-len(".state")]] = tuple(_value(ram, v, variables[v], folder) for v in LEVEL_VARIABLES)
    return out


# --------------------------------------------------------------------------
# Level tables
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Levels:
    """One game's levels: each level's end x, and the states that start a level.

    Parameters
    ----------
    game : str
        The stable-retro game id.
    max_x : mapping
        ``{"zone=Z,act=A": end_x}``, ``script.lua``'s ``level_max_x``.
    states : mapping
        ``{state name: (zone, act)}``: the ``.state`` files (without
        ``.state``) that start a level.  A recording's ``state`` must be one
        of them.
    origin : str
        Where the table comes from (a file), for messages.

    Examples
    --------
    >>> levels = game_levels("SonicAndKnuckles3-Genesis-v0")
    >>> levels.state_key("HiddenPalaceZone"), levels.end_x(22, 1)
    ('zone=22,act=1', 4040)
    """

    game: str
    max_x: Mapping[str, int]
    states: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    origin: str = ""

    def __post_init__(self):
        object.__setattr__(self, "max_x", MappingProxyType(dict(self.max_x)))
        object.__setattr__(self, "states", MappingProxyType({k: tuple(v) for k, v in self.states.items()}))

    def end_x(self, zone: int, act: int) -> int | None:
        """The level's end x (``level_max_x[level_key(zone, act)]``), None when the level has none."""
        return self.max_x.get(level_key(zone, act))

    def state_key(self, state: str) -> str | None:
        """The level key the state ``state`` starts, None when it is no known state."""
        level = self.states.get(state)
        return None if level is None else level_key(*level)

    def as_dict(self) -> dict:
        """``{"level_max_x": {...}, "states": {name: [zone, act]}}``: the JSON form :func:`load_levels` reads."""
        return {"level_max_x": dict(self.max_x), "states": {k: list(v) for k, v in self.states.items()}}


_CACHE: dict[str, Levels] = {}


def game_levels(game: str) -> Levels:
    """The installed ``game``'s :class:`Levels`: ``script.lua``'s ``level_max_x`` and its ``.state`` files' levels.

    Read once per process (the installed files do not change under it).

    Examples
    --------
    >>> game_levels("SonicTheHedgehog-Genesis-v0").states["ScrapBrainZone.Act2"]
    (5, 1)
    """
    if game not in _CACHE:
        folder = game_folder(game)
        script = folder / "script.lua"
        if not script.is_file():
            raise ParameterError("game", "should be a game whose integration has a script.lua with a level_max_x "
                                 "table (the contest's games are " + ", ".join(SONIC_GAMES) + ")", game)
        _CACHE[game] = Levels(game, read_level_max_x(script), state_levels(folder), str(script))
    return _CACHE[game]


def level_table(game: str) -> dict[str, int]:
    """``{"zone=Z,act=A": end_x}`` from the installed ``game``'s ``script.lua`` (a fresh dict each call).

    Examples
    --------
    >>> level_table("SonicTheHedgehog2-Genesis-v0")["zone=0,act=0"] == 0x2A40
    True
    """
    return dict(game_levels(game).max_x)


def installed_levels(games=SONIC_GAMES) -> dict[str, Levels]:
    """``{game: Levels}`` for the installed ``games`` (by default the three Sonic games).

    Examples
    --------
    >>> sorted(len(v.max_x) for v in installed_levels().values())
    [17, 18, 23]
    """
    return {game: game_levels(game) for game in games}


def load_levels(path, *, game: str | None = None) -> dict[str, Levels]:
    """A level table of the user's own: ``{game: Levels}``.

    ``path`` is either

    - a Lua script (``.lua``): its ``level_max_x`` (an edited copy of a
      game's ``script.lua``).  ``game`` names the game; by default the script's
      folder name when that is a game (an integration folder or an installed
      game), else the file's name (``SonicTheHedgehog-Genesis-v0.lua``).  Its states are the ``.state`` files beside it when the
      folder has a ``data.json`` (an integration folder of your own), else the
      installed game's states;
    - a JSON (``.json``) or TOML (``.toml``) file: one table per game id, each
      with ``level_max_x`` (``{"zone=Z,act=A": end_x}``) and ``states``
      (``{state name: [zone, act]}``), and optionally ``extends_installed =
      true`` to start from the installed game's table and states (the file's
      entries added, or replacing an end x it repeats).  ``game`` picks one of
      the file's games.

    Every state's level must have an end x in its game's table.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> own = {"SonicTheHedgehog-Genesis-v0": {"extends_installed": True,
    ...        "level_max_x": {"zone=5,act=2": 8000}, "states": {"ScrapBrainZone.Act3": [5, 2]}}}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "levels.json"
    >>> _ = path.write_text(json.dumps(own))
    >>> levels = load_levels(path)["SonicTheHedgehog-Genesis-v0"]
    >>> levels.end_x(5, 2), levels.end_x(0, 0) == 0x2560
    (8000, True)
    """
    path = Path(path)
    if not path.is_file():
        raise FileAccessError(path, "is not a file", hint="Pass a script.lua, or a .json / .toml level table")
    suffix = path.suffix.lower()
    if suffix == ".lua":
        out = {_script_game(path, game): _script_levels(path, game)}
    elif suffix in (".json", ".toml"):
        out = _table_levels(path, suffix)
        if game is not None:
            if game not in out:
                raise ParameterError("game", f"should be one of the games in {path} ({', '.join(out)})", game)
            out = {game: out[game]}
    else:
        raise ParameterError("path", "should be a Lua script (.lua) or a JSON / TOML level table (.json, .toml)",
                             str(path))
    for levels in out.values():
        _check_states(levels, path)
    return out


def _script_game(path: Path, game: str | None) -> str:
    """The game a script's levels are for: ``game``, else its folder's name when the folder is an
    integration (a ``data.json``) or an installed game, else the file's stem when that is an installed game."""
    if game is not None:
        return game
    for name, folder in ((path.parent.name, path.parent), (path.stem, None)):
        if folder is not None and (folder / "data.json").is_file():
            return name
        try:
            game_folder(name)
            return name
        except (ParameterError, FileAccessError):
            continue
    raise ParameterError("game", f"should name the game whose levels {path} holds: neither its folder "
                         f"({path.parent.name!r}) nor its name ({path.stem!r}) is a stable-retro game",
                         game, hint="Pass game=, or name the file after the game (for example "
                         "SonicTheHedgehog-Genesis-v0.lua).")


def _script_levels(path: Path, game: str | None) -> Levels:
    name = _script_game(path, game)
    max_x = read_level_max_x(path)
    if (path.parent / "data.json").is_file() and any(path.parent.glob("*.state")):
        states = state_levels(path.parent)
    else:
        try:
            states = dict(game_levels(name).states)
        except (ParameterError, FileAccessError):
            states = {}
    # a state whose level the edited script dropped is no level any more
    states = {k: v for k, v in states.items() if level_key(*v) in max_x}
    return Levels(name, max_x, states, str(path))


def _table_levels(path: Path, suffix: str) -> dict[str, Levels]:
    try:
        if suffix == ".json":
            doc = json.loads(path.read_text(encoding="utf-8"))
        else:
            doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise DataFormatError(path, getattr(err, "lineno", None), None, "level_table",
                              f"is not valid {suffix[1:].upper()} ({err})") from None
    if not isinstance(doc, dict) or not doc:
        raise DataFormatError(path, None, None, "level_table", "should hold one table per game id, each with "
                              "level_max_x and states")
    out = {}
    for name, entry in doc.items():
        if not isinstance(entry, dict) or set(entry) - {"level_max_x", "states", "extends_installed"}:
            extra = sorted(set(entry) - {"level_max_x", "states", "extends_installed"}) if isinstance(entry, dict) \
                else entry
            raise DataFormatError(path, None, None, "level_table",
                                  f"game {name!r}: expected a table with level_max_x, states and optionally "
                                  f"extends_installed, not {extra!r}")
        max_x, states = {}, {}
        if entry.get("extends_installed", False):
            base = game_levels(name)
            max_x, states = dict(base.max_x), dict(base.states)
        for key, end in dict(entry.get("level_max_x", {})).items():
            try:
                zone, act = parse_level_key(key)
            except ParameterError:
                raise DataFormatError(path, None, None, "level_table",
                                      f"game {name!r}: key {key!r} is not \"zone=Z,act=A\"") from None
            if isinstance(end, bool) or not isinstance(end, int):
                raise DataFormatError(path, None, None, "level_table",
                                      f"game {name!r}: end x of {key!r} should be an integer, not {end!r}")
            max_x[level_key(zone, act)] = end
        for state, level in dict(entry.get("states", {})).items():
            if (not isinstance(level, (list, tuple)) or len(level) != 2
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in level)):
                raise DataFormatError(path, None, None, "level_table",
                                      f"game {name!r}: state {state!r} should map to [zone, act], not {level!r}")
            states[str(state)] = (level[0], level[1])
        out[str(name)] = Levels(str(name), max_x, states, str(path))
    return out


def _check_states(levels: Levels, path: Path) -> None:
    for state, level in levels.states.items():
        if level_key(*level) not in levels.max_x:
            raise DataFormatError(path, None, None, "level_table",
                                  f"game {levels.game!r}: state {state!r} starts level {level_key(*level)!r}, "
                                  "which has no end x in level_max_x",
                                  hint="Add the level's end x, or drop the state.")
