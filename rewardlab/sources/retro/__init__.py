"""stable-retro recordings (format ``"retro"``) and the Sonic level table.

:mod:`~rewardlab.sources.retro.levels` reads the contest's level-end table
(``level_max_x``, parsed by :mod:`~rewardlab.sources.retro.lua`) from the
installed games' ``script.lua`` and which ``.state`` file starts which level.
The ``"retro"`` format: :mod:`~rewardlab.sources.retro.layout` (columns, spec),
:mod:`~rewardlab.sources.retro.reader` (``read_retro`` / ``load_retro``: the
steps reader, then the retro rules), :mod:`~rewardlab.sources.retro.relay`
(variables a game lacks), :mod:`~rewardlab.sources.retro.running`
(``act_shift`` / ``reach_x``), :mod:`~rewardlab.sources.retro.outcomes`
(per-level outcomes for ``rewardlab info``) and
:mod:`~rewardlab.sources.retro.source` (the registry entry, imported by the
registry on first use, not by this package).

Examples
--------
>>> from rewardlab.sources.retro import level_table
>>> len(level_table("SonicTheHedgehog-Genesis-v0"))
17
"""

from rewardlab.sources.retro.levels import (LEVEL_VARIABLES, SONIC_GAMES, Levels, game_folder, game_levels,
                                            installed_levels, level_key, level_table, load_levels,
                                            parse_level_key, parse_level_max_x, read_level_max_x,
                                            read_state_ram, retro_data_root, state_levels, state_values)

__all__ = ["SONIC_GAMES", "LEVEL_VARIABLES", "Levels", "level_key", "parse_level_key", "retro_data_root",
           "game_folder", "parse_level_max_x", "read_level_max_x", "read_state_ram", "state_values",
           "state_levels", "level_table", "game_levels", "load_levels", "installed_levels"]
