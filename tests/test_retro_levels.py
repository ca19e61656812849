"""The Sonic level table (rewardlab.sources.retro.levels) against the installed stable-retro files.

Independent references: each game's script.lua run by Lua 5.1 itself (lupa) for ``level_max_x``, and the
state names' own zone/act words (GreenHillZone.Act2 -> the zone of GreenHillZone's other acts, act 1) for
the states' levels read from RAM.
"""

from __future__ import annotations

import json
import re

import pytest

from rewardlab.core.errors import DataFormatError, ParameterError
from rewardlab.sources.retro import levels as lv

lupa = pytest.importorskip("lupa.lua51")


def lua_table(text: str) -> dict:
    """``level_max_x`` after running the script's top level in a fresh Lua 5.1 (as retro loads it)."""
    runtime = lupa.LuaRuntime()
    runtime.execute("data = {}; scenario = {frame = 0}")
    runtime.execute(text)
    return {str(k): int(v) for k, v in runtime.globals().level_max_x.items()}


@pytest.mark.parametrize("game", lv.SONIC_GAMES)
def test_installed_table_equals_lua(game):
    script = lv.game_folder(game) / "script.lua"
    assert lv.level_table(game) == lua_table(script.read_text())
    assert lv.read_level_max_x(script) == lua_table(script.read_text())


def test_known_entries():
    assert lv.level_table("SonicTheHedgehog-Genesis-v0")["zone=0,act=1"] == 0x1F60
    assert "zone=5,act=2" not in lv.level_table("SonicTheHedgehog-Genesis-v0")  # commented out
    assert lv.level_table("SonicAndKnuckles3-Genesis-v0")["zone=0,act=0"] == 0x3080 + 0x1049
    assert len(lv.level_table("SonicTheHedgehog2-Genesis-v0")) == 18


@pytest.mark.parametrize("game", lv.SONIC_GAMES)
def test_every_state_is_a_level(game):
    levels = lv.game_levels(game)
    folder = lv.game_folder(game)
    assert set(levels.states) == {p.name[:-6] for p in folder.glob("*.state")}
    for state, (zone, act) in levels.states.items():
        assert lv.level_key(zone, act) in levels.max_x, state
    # the names agree: same zone name -> same zone number, ActN -> consecutive acts of that zone
    by_zone = {}
    for state, (zone, act) in levels.states.items():
        name, _, number = state.partition(".Act")
        by_zone.setdefault(name, set()).add((zone, int(number) if number else None, act))
    zones = {}
    for name, rows in by_zone.items():
        numbers = sorted(r for r in rows)
        if name == "MetropolisZone":  # S2: act 3 is its own zone number (5), act 0
            assert numbers == [(4, 1, 0), (4, 2, 1), (5, 3, 0)]
            continue
        assert len({z for z, _, _ in rows}) == 1, name
        with_numbers = [(n, a) for _, n, a in rows if n is not None]
        assert all(a == n - 1 for n, a in with_numbers), name
        zones[name] = next(iter(rows))[0]
    assert len(set(zones.values())) == len(zones)  # distinct zone names, distinct numbers


def test_state_values_match_raw_bytes():
    folder = lv.game_folder("SonicTheHedgehog-Genesis-v0")
    import gzip
    raw = gzip.open(folder / "LabyrinthZone.Act1.state").read()
    ram_words = raw[16:16 + 0x10000]
    info = json.loads((folder / "data.json").read_text())["info"]
    values = lv.state_values("SonicTheHedgehog-Genesis-v0", "LabyrinthZone.Act1")
    for name, var in info.items():  # a plain byte-by-byte big-endian read of the swapped words
        a = var["address"] - 0xFF0000
        size = {"|u1": 1, "|i1": 1, ">u2": 2, ">i2": 2, ">u4": 4}[var["type"]]
        value = 0
        for k in range(size):
            value = value * 256 + ram_words[(a + k) ^ 1]
        if var["type"][1] == "i" and value >= 1 << (8 * size - 1):
            value -= 1 << (8 * size)
        assert values[name] == value, name
    assert (values["zone"], values["act"], values["lives"]) == (1, 0, 3)


GOOD = """
-- a comment with level_max_x = { in it
level_max_x = {
    ["zone=0,act=0"] = 0x10 + 2 * (3 - 1),  --[[ block
    comment ]] ['zone=1,act=0'] = 100;
    ["zone=2,act=0"] = -(-7),
}
function f()
    level_max_x["zone=0,act=0"] = 5  -- inside a function: not the table
    if x then return 1 end
end
"""


def test_parse_against_lua():
    assert lv.parse_level_max_x(GOOD) == lua_table(GOOD) == {"zone=0,act=0": 20, "zone=1,act=0": 100,
                                                                "zone=2,act=0": 7}


@pytest.mark.parametrize("text, where", [
    ("x = 1\n", "no level_max_x"),
    ('level_max_x = {\n ["zone=0,act=0"] = 0x10\n', "never closed"),
    ('level_max_x = {\n  ["zone=0,act=0"] = 1.5,\n}\n', "whole number"),
    ('level_max_x = {\n  zone = 1,\n}\n', "does not start"),
    ('level_max_x = {\n  ["zone=0"] = 1,\n}\n', "is not \"zone=Z,act=A\""),
    ('level_max_x = {\n  ["zone=0,act=0"] = 1,\n  ["zone=0,act=0"] = 2,\n}\n', "appears twice"),
    ('level_max_x = {\n  ["zone=0,act=0"] = foo,\n}\n', "not part of an integer"),
    ('level_max_x = {}\nlevel_max_x["zone=0,act=0"] = 3\n', "assigned again"),
    ('level_max_x = make()\n', "not set by a table constructor"),
])
def test_unreadable_table_names_file(tmp_path, text, where):
    path = tmp_path / "script.lua"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=re.escape(str(path))) as info:
        lv.read_level_max_x(path)
    assert where in str(info.value)


def test_error_line_and_column(tmp_path):
    path = tmp_path / "script.lua"
    path.write_text('level_max_x = {\n  ["zone=0,act=0"] = 0x10,\n  ["zone=0,act=1"] = oops,\n}\n')
    with pytest.raises(DataFormatError) as info:
        lv.read_level_max_x(path)
    assert (info.value.line, info.value.column) == (3, 21)


def test_load_edited_script(tmp_path):
    text = (lv.game_folder("SonicTheHedgehog-Genesis-v0") / "script.lua").read_text()
    text = text.replace('-- ["zone=5,act=2"] = 000000,', '["zone=5,act=2"] = 0x2000,')
    text = text.replace('["zone=0,act=0"] = 0x2560,', "")
    path = tmp_path / "script.lua"
    path.write_text(text)
    levels = lv.load_levels(path, game="SonicTheHedgehog-Genesis-v0")["SonicTheHedgehog-Genesis-v0"]
    assert dict(levels.max_x) == lua_table(text)
    assert levels.end_x(5, 2) == 0x2000
    assert "GreenHillZone.Act1" not in levels.states  # its level is gone
    assert levels.states["GreenHillZone.Act2"] == (0, 1)


def test_script_game_from_its_name(tmp_path):
    text = (lv.game_folder("SonicTheHedgehog2-Genesis-v0") / "script.lua").read_text()
    named = tmp_path / "SonicTheHedgehog2-Genesis-v0.lua"
    named.write_text(text)
    assert lv.load_levels(named)["SonicTheHedgehog2-Genesis-v0"].states["MetropolisZone.Act3"] == (5, 0)
    plain = tmp_path / "script.lua"
    plain.write_text(text)
    with pytest.raises(ParameterError, match="game="):
        lv.load_levels(plain)


def test_load_json_and_toml(tmp_path):
    doc = {"MyGame-Genesis-v0": {"level_max_x": {"zone=1,act=0": 5000}, "states": {"One": [1, 0]}}}
    (tmp_path / "l.json").write_text(json.dumps(doc))
    (tmp_path / "l.toml").write_text('[MyGame-Genesis-v0]\nlevel_max_x = {"zone=1,act=0" = 5000}\n'
                                     'states = {One = [1, 0]}\n')
    for name in ("l.json", "l.toml"):
        levels = lv.load_levels(tmp_path / name)["MyGame-Genesis-v0"]
        assert dict(levels.max_x) == {"zone=1,act=0": 5000} and dict(levels.states) == {"One": (1, 0)}
    bad = {"MyGame-Genesis-v0": {"level_max_x": {}, "states": {"One": [1, 0]}}}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(DataFormatError, match="no end x"):
        lv.load_levels(tmp_path / "bad.json")
    (tmp_path / "typo.json").write_text(json.dumps({"G": {"level_max": {}}}))
    with pytest.raises(DataFormatError, match="level_max"):
        lv.load_levels(tmp_path / "typo.json")


def test_bad_arguments(tmp_path):
    with pytest.raises(ParameterError, match="-v0"):
        lv.game_folder("SonicTheHedgehog-Genesis")
    with pytest.raises(ParameterError):
        lv.state_values("SonicTheHedgehog-Genesis-v0", "GreenHillZone.Act9")
    not_state = tmp_path / "x.state"
    not_state.write_bytes(b"not gzip")
    with pytest.raises(DataFormatError, match="x.state"):
        lv.read_state_ram(not_state)
