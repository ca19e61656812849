"""Issue 22 for saved session state: hostile state files (code they name, invalid pins, huge numbers, deep
nesting, NaN, odd paths) load cleanly or fail with a rewardlab error naming the file, and no plug-in runs
unless the caller passes it."""

from __future__ import annotations

import copy
import json
import os
import random
import warnings
from pathlib import Path

import polars as pl
import pytest

from rewardlab.core.errors import DataFormatError, FrameError, ParameterError, RewardlabError, RewardlabWarning
from rewardlab.sessions import (
    ComparisonSession, EpsilonScheduleSession, NormalizationSession, RankingTuningSession, Session,
)
from rewardlab.sessions import state as state_module

ROOT = Path(__file__).resolve().parents[1]
RAW_POINTS = ROOT / "data" / "plugins" / "raw_points.py"
KINDS = ("ranking", "epsilon", "normalization", "comparison")


# --------------------------------------------------------------------------
# Fixtures: a plug-in that leaves a mark when its code runs, frames, saved states
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def marker_plugin(tmp_path_factory) -> Path:
    """A working reward plug-in (raw points) whose import writes ``<file>.ran``: proof that its code ran."""
    folder = tmp_path_factory.mktemp("plugins")
    path = folder / "marker_reward.py"
    path.write_text("import pathlib as _pathlib\n"
                    "_pathlib.Path(__file__ + '.ran').write_text('imported')\n" + RAW_POINTS.read_text())
    return path


def ran(plugin: Path) -> bool:
    return Path(f"{plugin}.ran").exists()


def forget_run(plugin: Path) -> None:
    Path(f"{plugin}.ran").unlink(missing_ok=True)


@pytest.fixture(scope="module")
def reward_frame(small_frame):
    from rewardlab.domains.mahjong.families import Points, RoundDelta

    frame = Points.from_preset("raw").with_columns(small_frame, "score")
    return RoundDelta.from_preset("thousands").with_columns(frame, "delta")


@pytest.fixture(scope="module")
def small_path(small_frame) -> Path:
    return Path(small_frame["source_file"][0])


@pytest.fixture(scope="module")
def plugin_state(small_frame, marker_plugin, tmp_path_factory):
    """A comparison saved with two plug-in files, one of them the marker; the marker's run forgotten."""
    s = ComparisonSession(small_frame, [RAW_POINTS, marker_plugin])
    assert ran(marker_plugin)  # the plug-in works, and marks its runs
    s.pin("both")
    path = s.save_state(tmp_path_factory.mktemp("cmp") / "cmp.state.json")
    forget_run(marker_plugin)
    return s, path


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def other_games(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame without its last game: other data, still whole episodes."""
    return frame.filter(pl.col("game_id") != frame["game_id"][-1])


# --------------------------------------------------------------------------
# Loading a comparison state runs no code the call does not name
# --------------------------------------------------------------------------


def test_loading_a_comparison_state_runs_no_plugin_it_names(plugin_state, small_frame, marker_plugin, tmp_path):
    s, path = plugin_state
    names = [str(RAW_POINTS.resolve()), str(marker_plugin.resolve())]
    for load in (ComparisonSession.load_state, Session.load_state):
        with pytest.raises(ParameterError) as err:
            load(path, small_frame)
        text = str(err.value)
        assert text.startswith(f"`plugins` should list the plug-in files to run: the state file {path} names 2 "
                               f"({names[0]!r}, {names[1]!r}), and loading a state runs no code the call does "
                               "not name. Received None.")
        assert f"plugins=[{names[0]!r}, {names[1]!r}]" in text
        assert not ran(marker_plugin)
    # the file names a relative path (../../ included): still nothing runs
    data = json.loads(path.read_text())
    relative = os.path.relpath(marker_plugin, tmp_path / "a" / "b")
    assert relative.startswith("../../")
    data["options"]["plugins"] = [relative, str(marker_plugin)]
    (tmp_path / "a" / "b").mkdir(parents=True)
    edited = write_json(tmp_path / "a" / "b" / "edited.json", data)
    cwd = os.getcwd()
    os.chdir(edited.parent)
    try:
        with pytest.raises(ParameterError, match="names 2"):
            ComparisonSession.load_state(edited.name, small_frame)
        assert ComparisonSession.saved_plugins(edited.name) == [relative, str(marker_plugin)]
    finally:
        os.chdir(cwd)
    assert not ran(marker_plugin)
    # what the file names, listed without running it; then passed on purpose: it runs, and the state loads
    assert ComparisonSession.saved_plugins(path) == names
    assert not ran(marker_plugin)
    loaded = ComparisonSession.load_state(path, small_frame, plugins=names)
    assert ran(marker_plugin)
    assert loaded.parameters == s.parameters and loaded.pinned == s.pinned
    forget_run(marker_plugin)


def test_the_data_is_checked_before_any_plugin_runs(plugin_state, small_frame, marker_plugin):
    s, path = plugin_state
    other = other_games(small_frame)
    with pytest.raises(FrameError) as err:
        ComparisonSession.load_state(path, other, plugins=[RAW_POINTS, marker_plugin])
    assert str(err.value).startswith(f"the data (before any plug-in ran) differs from the data the state file "
                                     f"{path} was saved with: fingerprint expected blake2b-128:")
    assert f"found {ComparisonSession(other, k=1, plugins=[RAW_POINTS]).base_fingerprint} " \
           f"({other.height:,} rows)" in str(err.value)
    assert not ran(marker_plugin)
    # "warn": the plug-ins the call names run, and one warning names the file
    with pytest.warns(RewardlabWarning) as warned:
        loaded = ComparisonSession.load_state(path, other, plugins=[RAW_POINTS, marker_plugin], on_mismatch="warn")
    assert [str(w.message) for w in warned if "differs" in str(w.message)] == [
        next(str(w.message) for w in warned if "differs" in str(w.message))]
    assert str(path) in str(warned[0].message) and ran(marker_plugin)
    assert loaded.parameters == s.parameters
    forget_run(marker_plugin)


def test_other_plugins_than_saved_are_caught_by_the_fingerprint(plugin_state, small_frame, marker_plugin):
    _, path = plugin_state
    with pytest.raises(FrameError, match=f"the state file {path} was saved with"):
        ComparisonSession.load_state(path, small_frame, plugins=[RAW_POINTS])
    assert not ran(marker_plugin)


def test_restore_runs_no_plugin(plugin_state, reward_frame, marker_plugin, tmp_path):
    _, path = plugin_state
    live = ComparisonSession(reward_frame)
    before = (live.parameters, live.pinned)
    with pytest.raises(FrameError, match="the data differs"):
        live.restore(path)
    assert (live.parameters, live.pinned) == before and not ran(marker_plugin)
    # a state of this very session whose file also names the marker: restored, the marker is not run
    live.pin("p")
    data = json.loads(live.save_state(tmp_path / "live.json").read_text())
    data["options"]["plugins"] = [str(marker_plugin), "../../marker_reward.py"]
    live.clear_pins()
    live.restore(write_json(tmp_path / "named.json", data))
    assert [p.label for p in live.pinned] == ["p"] and not ran(marker_plugin)


def test_a_comparison_state_without_the_base_fingerprint_still_loads(plugin_state, small_frame, marker_plugin,
                                                                      tmp_path):
    s, path = plugin_state
    data = json.loads(path.read_text())
    del data["options"]["base_fingerprint"]  # a file of the previous rewardlab
    old = write_json(tmp_path / "old.json", data)
    with pytest.raises(ParameterError, match="`plugins` should list"):
        ComparisonSession.load_state(old, small_frame)
    assert not ran(marker_plugin)
    loaded = ComparisonSession.load_state(old, small_frame, plugins=[RAW_POINTS, marker_plugin])
    assert loaded.parameters == s.parameters
    forget_run(marker_plugin)


def test_comparison_options_are_checked_naming_the_field(plugin_state, small_frame, marker_plugin, tmp_path):
    _, path = plugin_state
    good = json.loads(path.read_text())
    bad = tmp_path / "bad.json"
    for options, start in [
        ({"plugins": "x.py"}, "field 'options.plugins' should be a list of paths, not \"x.py\""),
        ({"plugins": [3]}, "field 'options.plugins[0]' should be a path, not 3"),
        ({"plugins": ["a\x00.py"]}, "field 'options.plugins[0]' should be a path"),
        ({"batch_mode": "all"}, "field 'options.batch_mode' should be one of episodes, sequential, dataloader, "
                         "fragments, shuffled, not \"all\""),
        ({"batch_size": 0}, "field 'options.batch_size' should be a positive integer or null, not 0"),
        ({"batch_size": True}, "field 'options.batch_size' should be a positive integer or null, not true"),
        ({"base_fingerprint": 7}, "field 'options.base_fingerprint' should be a string or null, not 7"),
    ]:
        write_json(bad, {**good, "options": {**good["options"], **options}})
        for call in (lambda: ComparisonSession.load_state(bad, small_frame, plugins=[RAW_POINTS, marker_plugin]),
                     lambda: ComparisonSession.saved_plugins(bad)):
            with pytest.raises(DataFormatError) as err:
                call()
            assert str(err.value).startswith(f"{bad}: {start}"), (str(err.value), start)
        assert not ran(marker_plugin)


# --------------------------------------------------------------------------
# Pins are checked when the file is read, with the live session's rules
# --------------------------------------------------------------------------


def saved(kind, small_frame, reward_frame, small_path, tmp_path):
    """A live session of ``kind`` with two pins, its saved file and how to load it."""
    if kind == "ranking":
        s = RankingTuningSession(small_path, preset="top")
        s.pin("top")
        s.update(vector=(3.0, 1.0, -1.0, -3.0))
        data = small_frame
    elif kind == "epsilon":
        s = EpsilonScheduleSession(kind="exp", decay_steps=100, n_steps=500)
        s.pin("exp")
        s.threshold = 0.3
        data = None
    elif kind == "normalization":
        s = NormalizationSession(reward_frame, reward="delta", scope="end_of_round")
        s.pin("round")
        s.update(scope="all", gamma=0.9)
        data = reward_frame
    else:
        s = ComparisonSession(reward_frame, k=2)
        s.pin("spearman")
        s.update(metric="pearson")
        data = reward_frame
    s.pin("second")
    path = s.save_state(tmp_path / f"{kind}.state.json")
    return s, path, data


@pytest.mark.parametrize("kind, edit, field, says", [
    ("ranking", lambda p: p["constants"].update(std=0), "pinned[0].constants.std",
     "is refused: `std` should be > 0"),
    ("ranking", lambda p: p["parameters"].update(vector=[1, 2, 3]), "pinned[0].parameters.vector",
     "is refused: `vector` should have 4 entries"),
    ("ranking", lambda p: p["constants"].update(provenance=[1]), "pinned[0].", "is"),
    ("ranking", lambda p: p.update(constants=None), "pinned[0].constants", "is refused"),
    ("epsilon", lambda p: p["parameters"].update(n_steps=0), "pinned[0].parameters.n_steps",
     "is refused: `n_steps` should be >= 1"),
    ("epsilon", lambda p: p["parameters"].update(colour="red"), "pinned[0].parameters",
     "is refused: `parameter` should be one of"),
    ("normalization", lambda p: p["parameters"].update(gamma=2.0), "pinned[0].parameters.gamma", "is refused"),
    ("comparison", lambda p: p["parameters"].update(chosen=["nope"]), "pinned[0].parameters.chosen",
     "is refused: `chosen` should be one of"),
    ("comparison", lambda p: p["parameters"].update(k=[1]), "pinned[0].parameters.k", "is refused"),
])
def test_invalid_pins_are_refused_when_the_file_is_read(kind, edit, field, says, small_frame, reward_frame,
                                                         small_path, tmp_path):
    s, path, data = saved(kind, small_frame, reward_frame, small_path, tmp_path)
    bad = json.loads(path.read_text())
    edit(bad["pinned"][0])
    write_json(path, bad)
    with pytest.raises(DataFormatError) as err:
        type(s).load_state(path, data)
    assert str(err.value).startswith(f"{path}: field '{field}"), str(err.value)
    assert says in str(err.value) and "[rule: state_file]" in str(err.value)
    before = (s.parameters, s.pinned, s.version)
    with pytest.raises(DataFormatError, match="field 'pinned\\[0\\]"):
        s.restore(path)
    assert (s.parameters, s.pinned, s.version) == before  # nothing changed


def test_a_pinned_summary_with_infinity_or_nan_is_refused(small_frame, reward_frame, small_path, tmp_path):
    s, path, data = saved("ranking", small_frame, reward_frame, small_path, tmp_path)
    text = path.read_text()
    for constant in ("Infinity", "-Infinity", "NaN"):
        path.write_text(text.replace('"expected reward": ', f'"expected reward": {constant}, "x": ', 1))
        with pytest.raises(DataFormatError) as err:
            RankingTuningSession.load_state(path, data)
        assert str(err.value).startswith(f"{path}: field 'pinned[0].summary.expected reward' is {constant}, not a "
                                         "finite number (a missing value is written null)"), str(err.value)


def test_loaded_pins_give_their_results_at_once(small_frame, reward_frame, small_path, tmp_path):
    for kind in KINDS:
        s, path, data = saved(kind, small_frame, reward_frame, small_path, tmp_path)
        loaded = type(s).load_state(path, data)
        for pin in loaded.pinned:  # computed when the file was read (and checked finite), then kept
            assert loaded.pinned_results(pin.label) is loaded.pinned_results(pin.label)
            assert loaded._pinned_cache[pin.label][0] is pin


def test_pin_labels_that_clash_in_the_comparison_table_are_refused(tmp_path):
    s = EpsilonScheduleSession(n_steps=100)
    s.pin("x - live")
    with pytest.raises(ParameterError, match="without its ' - live' \\('x - live' is pinned"):
        s.pin("x")
    s.clear_pins()
    s.pin("x")
    with pytest.raises(ParameterError, match="should not be 'live', 'statistic' or '<a pin> - live'"):
        s.pin("x - live")
    good = json.loads(s.save_state(tmp_path / "s.json").read_text())
    pin = good["pinned"][0]
    bad = tmp_path / "bad.json"
    for labels, field, says in [
        (["x - live", "x"], "pinned[0].label", "should not be 'live', 'statistic' or '<a pin> - live'"),
        (["x", "x - live"], "pinned[0].label", "should not be a pinned candidate's label without its ' - live'"),
        (["statistic"], "pinned[0].label", "should not be 'live'"),
        ([" "], "pinned[0].label", "should be a non-empty string"),
    ]:
        write_json(bad, {**good, "pinned": [{**pin, "label": label} for label in labels]})
        with pytest.raises(DataFormatError) as err:
            Session.load_state(bad)
        assert str(err.value).startswith(f"{bad}: field '{field}' {says}"), str(err.value)


# --------------------------------------------------------------------------
# Numbers, nesting, text and size: the parser's limits
# --------------------------------------------------------------------------


@pytest.mark.parametrize("old, new, field, says", [
    ('"rows": 56\n }', '"rows": ' + "9" * 5000 + "\n }", "data.rows",
     "is the integer 999999999999...999999 (5000 digits)"),
    ('"options": {}', '"options": ' + "[" * 100_000 + "]" * 100_000, None, "nests arrays or objects deeper than 32"),
    ('"options": {}', '"options": ' + "[" * 40 + "]" * 40, "options" + "[0]" * 31, "nests deeper than 32 levels"),
    ('"vector": [\n   3.0', '"vector": [\n   ' + "4" * 400, "parameters.vector[0]", "(400 digits), beyond"),
    ('"vector": [\n   3.0', '"vector": [\n   1e400', "parameters.vector[0]", "is 1e400, beyond the range"),
    ('"vector": [\n   3.0', '"vector": [\n   -1' + "0" * 400 + ".5", "parameters.vector[0]",
     "is -10000000000...0000.5, beyond the range"),
    ('"offset": 25000', '"offset": 9223372036854775808', "parameters.offset",
     "is the integer 9223372036854775808 (19 digits)"),
    ('"mean": ', '"mean": NaN, "x": ', "constants.mean", "is NaN, not a finite number"),
    ('"label": "top"', '"label": "\\ud800"', "pinned[0].label", "is not valid text (a lone UTF-16 surrogate)"),
    ('"label": "top"', '"label": "top", "\\udfff": 1', "pinned[0]", "has a name that is not valid text"),
])
def test_numbers_nesting_and_text_beyond_the_limits_name_the_file(old, new, field, says, small_frame,
                                                                   reward_frame, small_path, tmp_path):
    s, path, data = saved("ranking", small_frame, reward_frame, small_path, tmp_path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(DataFormatError) as err:
        RankingTuningSession.load_state(path, data)
    message = str(err.value)
    assert message.startswith(f"{path}: " + ("" if field is None else f"field '{field}' ")), message
    assert says in message and "[rule: state_file]" in message and len(message) < 600, message


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path, monkeypatch):
    path = EpsilonScheduleSession(n_steps=10).save_state(tmp_path / "s.json")
    monkeypatch.setattr(state_module, "MAX_STATE_BYTES", 100)
    with pytest.raises(DataFormatError) as err:
        Session.load_state(path)
    assert str(err.value).startswith(f"{path}: is {path.stat().st_size:,} bytes, larger than 100 bytes, the most "
                                     "a state file may be")


def test_recorded_data_paths_that_do_not_load_name_the_state_file(small_frame, reward_frame, small_path, tmp_path,
                                                                   marker_plugin):
    s, path, _ = saved("ranking", small_frame, reward_frame, small_path, tmp_path)
    good = json.loads(path.read_text())
    assert good["data"]["paths"] == [str(small_path.resolve())]
    loaded = RankingTuningSession.load_state(path)  # the recorded path, read once
    assert loaded.data_paths == (str(small_path.resolve()),) and loaded.data_path == str(small_path.resolve())
    assert loaded.data_fingerprint() == s.data_fingerprint()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for paths, field, says in [
        ([str(tmp_path / "gone.tsv")], "data.paths[0]", "names data that cannot be read: "),
        ([str(fifo)], "data.paths[0]", "is a FIFO"),
        (["a\x00b"], "data.paths[0]", "should be a path"),
        ([""], "data.paths[0]", "should be a path"),
        ([str(marker_plugin)], "data.paths", "names data that does not load: `format` could not be detected"),
        ([str(tmp_path)], "data.paths", "names data that does not load"),
    ]:
        write_json(path, {**good, "data": {**good["data"], "paths": paths}})
        with pytest.raises(DataFormatError) as err:
            RankingTuningSession.load_state(path)
        assert str(err.value).startswith(f"{path}: field '{field}' "), str(err.value)
        assert says in str(err.value)
    assert not ran(marker_plugin)


# --------------------------------------------------------------------------
# Fuzz: mutated state files of every kind
# --------------------------------------------------------------------------

#: Placeholders for values json.dumps cannot write (or would write differently), replaced in the text.
_RAW = {
    "@@HUGE_INT@@": "7" * 5000,
    "@@WIDE_INT@@": "-" + "3" * 400,
    "@@BIG_FLOAT@@": "1e400",
    "@@LONG_FLOAT@@": "2" * 500 + ".5",
    "@@DEEP@@": "[" * 100_000 + "]" * 100_000,
    "@@DEEP_OBJECT@@": '{"a":' * 5000 + "1" + "}" * 5000,
    "@@NAN@@": "NaN",
    "@@INF@@": "-Infinity",
    "@@SURROGATE@@": '"\\udc80"',
}


def hostile_values(marker: Path) -> list:
    return [
        *_RAW, 0, -1, 1, 2**63 - 1, -(2**63), 0.0, -0.0, 5e-324, 1.7976931348623157e308, True, False, None, "",
        "x" * 5000, "../../marker_reward.py", str(marker), "/dev/zero", "/", "a\x00b", [], {}, [1, 2, 3],
        [1.0, 2.0, 3.0, 4.0, 5.0], [[1.0]] * 4, {"unknown": 1}, {"mean": 1.0, "std": 0.0, "provenance": {}},
        [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    ]


def nodes(data, parts=()):
    """Every (container, key) place of the JSON tree, in document order."""
    out = []
    if isinstance(data, dict):
        for k, v in data.items():
            out.append((data, k))
            out += nodes(v, (*parts, k))
    elif isinstance(data, list):
        for k, v in enumerate(data):
            out.append((data, k))
            out += nodes(v, (*parts, k))
    return out


def mutate(rng: random.Random, text: str, marker: Path) -> str | bytes:
    """One hostile variant of a valid state file's text."""
    how = rng.randrange(12)
    if how == 0:  # truncated
        return text[:rng.randrange(len(text))]
    if how == 1:  # bytes changed (maybe not UTF-8)
        raw = bytearray(text.encode())
        for _ in range(rng.randint(1, 4)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    data = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        places = nodes(data)
        container, key = rng.choice(places)
        step = rng.randrange(10) if how != 2 else 9
        if step <= 4:  # a hostile value
            container[key] = copy.deepcopy(rng.choice(hostile_values(marker)))
        elif step == 5 and isinstance(container, dict):  # a field missing
            del container[key]
        elif step == 6 and isinstance(container, dict):  # an unknown field
            container[rng.choice(["extra", "label", "__proto__", "\u00e9"])] = rng.choice(hostile_values(marker))
        elif step == 7:  # wrong container type
            value = container[key]
            container[key] = list(value.values()) if isinstance(value, dict) else \
                {str(i): v for i, v in enumerate(value)} if isinstance(value, list) else [value]
        elif step == 8 and isinstance(data.get("pinned"), list) and data["pinned"]:  # pins duplicated, relabelled
            pin = copy.deepcopy(rng.choice(data["pinned"]))
            if isinstance(pin, dict):
                pin["label"] = rng.choice(["live", "statistic", "a", "a - live", "second - live", pin.get("label")])
            data["pinned"].append(pin)
        else:  # paths: the plug-in files and the data the file names
            options = data.setdefault("options", {}) if isinstance(data.get("options", {}), dict) else {}
            options["plugins"] = rng.choice([[str(marker)], ["../../marker_reward.py"], [str(RAW_POINTS)],
                                             [str(marker), "../x.py"], []])
            if isinstance(data.get("data"), dict):
                data["data"]["paths"] = rng.choice([None, [str(marker)], ["/nonexistent/x.tsv"], ["/dev/zero"],
                                                    ["/"], data["data"].get("paths")])
    out = json.dumps(data, indent=rng.choice([None, 1]))
    for token, raw in _RAW.items():
        out = out.replace(f'"{token}"', raw)
    return out


def load_outcome(load, path: Path) -> str:
    """``"ok"``, or ``"error"`` for a rewardlab error naming the file; anything else fails the test."""
    try:
        load()
    except RewardlabError as exc:
        assert str(path) in str(exc), (type(exc).__name__, str(exc)[:500])
        return "error"
    return "ok"


def fuzz_state_files(seed: int, per_kind: int, small_frame, reward_frame, small_path, marker, folder: Path):
    """Load and restore ``per_kind`` mutations of a saved state of each kind (and a few of a comparison whose
    caller passes its plug-in); returns how many of each outcome."""
    rng = random.Random(seed)
    outcomes: dict = {}
    for kind in (*KINDS, "plugins"):
        if kind == "plugins":  # a plug-in the caller passes runs (in a child process: slower, so fewer cases)
            live = ComparisonSession(small_frame, [RAW_POINTS])
            live.pin("raw")
            path, data, count = live.save_state(folder / "plugins.state.json"), small_frame, max(1, per_kind // 10)
        else:
            (live, path, data), count = saved(kind, small_frame, reward_frame, small_path, folder), per_kind
        text = path.read_text()
        target = folder / f"{kind}.mutated.json"
        for _ in range(count):
            mutated = mutate(rng, text, marker)
            (target.write_bytes if isinstance(mutated, bytes) else target.write_text)(mutated)
            given = data if kind != "ranking" or rng.random() < 0.7 else None  # ranking: the recorded path too
            extra = {"plugins": [RAW_POINTS]} if kind == "plugins" else \
                {"plugins": []} if kind == "comparison" and rng.random() < 0.2 else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RewardlabWarning)  # on_mismatch is "raise": none expected anyway
                got = load_outcome(lambda: type(live).load_state(target, given, **extra), target)
            outcomes[(kind, "load", got)] = outcomes.get((kind, "load", got), 0) + 1
            before = (live.parameters, live.pinned, live.version)
            got = load_outcome(lambda: live.restore(target), target)
            if got == "error":
                assert (live.parameters, live.pinned, live.version) == before  # nothing changed
            outcomes[(kind, "restore", got)] = outcomes.get((kind, "restore", got), 0) + 1
            assert not ran(marker), (kind, mutated[:2000])
    return outcomes


def test_fuzzed_state_files_load_cleanly_or_name_the_file(small_frame, reward_frame, small_path, marker_plugin,
                                                          tmp_path):
    outcomes = fuzz_state_files(2201, 50, small_frame, reward_frame, small_path, marker_plugin, tmp_path)
    for kind in KINDS:  # the generator reaches both outcomes for every kind
        assert outcomes.get((kind, "load", "error")), outcomes
        assert outcomes.get((kind, "restore", "ok")) or outcomes.get((kind, "load", "ok")), outcomes


@pytest.mark.long_fuzz
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fuzzed_state_files_long_run(seed, small_frame, reward_frame, small_path, marker_plugin, tmp_path):
    fuzz_state_files(seed, 800, small_frame, reward_frame, small_path, marker_plugin, tmp_path)



# --------------------------------------------------------------------------
# The same class elsewhere: numbers typed as text
# --------------------------------------------------------------------------


def test_typed_numbers_beyond_float64_are_refused_not_raised():
    s = EpsilonScheduleSession(n_steps=100)
    for text in ("9" * 5000, "-" + "9" * 400, "1" * 100_000 + ".5", "1e400"):
        assert not s.try_update(n_steps=text) and s.n_steps == 100
        assert s.last_error.startswith("`n_steps` should be a finite number (it overflows float64). Received '")
        assert len(s.last_error) < 200  # the text is echoed cut
    s.update(n_steps="0" * 5000 + "200")  # leading zeros are not digits of the value
    assert s.n_steps == 200


def test_fuzzed_typed_text_updates_or_says_why():
    rng = random.Random(2202)
    s = EpsilonScheduleSession(n_steps=100)
    pieces = ["9" * 5000, "1e400", "-", "+", ".", "e", "0", "1", "nan", "inf", " ", "_", "\u0663", "1e-400", "x"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        name = rng.choice(["n_steps", "decay_steps", "epsilon_stable", "threshold"])
        before = s.parameters
        if not s.try_update(**{name: text}):
            assert s.parameters == before and s.last_error.startswith(f"`{name}` ")
