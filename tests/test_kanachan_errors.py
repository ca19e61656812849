"""Bad input gets a clear error naming file, line, column and rule; skip mode loses nothing."""

from __future__ import annotations

import gzip

import polars as pl
import pytest

import rewardlab
from rewardlab.core.errors import DataFormatError, ParameterError, SkippedLinesWarning
from lines import game_lines, gid, set_column, write


def _lines():
    return game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(2, 2))




def _load_error(tmp_path, lines) -> DataFormatError:
    path = write(tmp_path / "bad.tsv", lines)
    with pytest.raises(DataFormatError) as info:
        rewardlab.load_kanachan(path)
    err = info.value
    assert err.path == str(path)
    assert str(path) in str(err)
    return err


CASES = {
    # name: (edit, expected line, column, rule, message fragment)
    "column_count": (lambda L: L[:3] + ["\t".join(L[3].split("\t")[:9])] + L[4:], 4, None, "column_count",
                     "expected 8, 10 or 12 TAB-separated columns, found 9"),
    "empty_line": (lambda L: L[:2] + [""] + L[2:], 3, None, "column_count", "(empty line)"),
    "not_integer": (lambda L: set_column(L, 1, 3, "0,12,x7"), 2, 3, "not_integer", "'x7'"),
    "bad_game_id": (lambda L: set_column(L, 0, 0, "not-a-uuid"), 1, 0, "bad_game_id", "'not-a-uuid'"),
    "out_of_range": (lambda L: set_column(L, 2, 4, "1,2,546"), 3, 4, "out_of_range", "value 546"),
    "too_many_ids": (lambda L: set_column(L, 1, 4, ",".join(str(i) for i in range(33))), 2, 4, "too_many_ids",
                     "has 33 values; at most 32"),
    "numeric_length": (lambda L: set_column(L, 1, 2, "0,0,25000"), 2, 2, "wrong_length", "exactly 6 values, found 3"),
    "bad_action": (lambda L: set_column(L, 1, 5, "9"), 2, 5, "bad_action", "action 9 is not an index into the 4"),
    "negative_action": (lambda L: set_column(L, 1, 5, "-1"), 2, 5, "bad_action", "action -1"),
    "results_length": (lambda L: set_column(L, 4, 7, "1,2,3"), 5, 7, "wrong_length", "exactly 8 values"),
    "summary_range": (lambda L: set_column(L, 4, 6, "29"), 5, 6, "out_of_range", "in [0, 29)"),
    "missing_seat": (lambda L: set_column(L, 0, 1, L[0].split("\t")[1].replace(",71,", ",")), 1, 1, "sparse_layout",
                     "exactly one seat id in [71, 74], found 0"),
    "next_state": (lambda L: set_column(L, 0, 8, "0,1,2"), 1, 8, "next_state_mismatch",
                   "next-state column 8 (progression) disagrees with the state of line 2"),
    "missing_end": (lambda L: L[:4] + L[5:], 4, None, "missing_end_of_game", "should be an 8-column end-of-game"),
    # int() reads these as the following state's values; the state columns refuse them, so do the next-state ones
    "next_state_plus": (lambda L: set_column(L, 0, 8, "+" + L[0].split("\t")[8]), 1, 8, "not_integer",
                        "next progression (column 8) should be decimal integers separated by commas, found '+0'"),
    "next_state_full_width": (lambda L: set_column(L, 1, 6, L[1].split("\t")[6].replace("2", "\uff12", 1)), 2, 6,
                              "not_integer", "next sparse (column 6) should be decimal integers"),
    "next_state_space": (lambda L: set_column(L, 0, 7, L[0].split("\t")[7].replace(",", ", ", 1)), 1, 7, "not_integer",
                         "next numeric (column 7) should be decimal integers separated by commas, found ' 0'"),
    "next_state_range": (lambda L: set_column(L, 1, 9, L[1].split("\t")[9] + ",546"), 2, 9, "out_of_range",
                         "next candidates (column 9) has value 546; each should be in [0, 546)"),
    "game_reappears": (lambda L: L[:20] + L[40:] + L[20:40] if len(L) >= 60 else None, None, 0, "game_reappears",
                       "reappears after other games"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_rule_is_reported_with_file_line_column(tmp_path, case):
    edit, line, column, rule, fragment = CASES[case]
    lines = _lines()
    if case == "game_reappears":
        lines = game_lines(gid(1), rounds=(2,)) + game_lines(gid(2), rounds=(2,))
        lines = lines[:4] + lines[8:12] + lines[4:8]  # game 1 seat 0, game 2 seat 0, game 1 seat 1
        line = 9
    else:
        lines = edit(lines)
    err = _load_error(tmp_path, lines)
    assert err.rule == rule
    assert err.line == line
    assert err.column == column
    assert fragment in str(err)
    assert f"[rule: {rule}]" in str(err)
    assert "on_error='skip'" in str(err)  # says what to do


def test_episode_not_contiguous(tmp_path):
    lines = game_lines(gid(1), rounds=(2,))
    # seat 0's episode split around seat 1's lines
    lines = lines[:1] + lines[4:8] + lines[1:4] + lines[8:]
    err = _load_error(tmp_path, lines)
    assert err.rule in ("next_state_mismatch", "episode_not_contiguous", "missing_end_of_game")


def test_end_of_game_line_followed_by_same_player(tmp_path):
    lines = game_lines(gid(1), rounds=(2,))
    lines = lines[:2] + lines[:2] + lines[2:]  # seat 0 plays its whole game twice in a row
    err = _load_error(tmp_path, lines)
    assert err.rule == "end_of_game_not_last"
    assert err.line == 2


def test_game_in_two_files(tmp_path):
    a = write(tmp_path / "a.tsv", game_lines(gid(1)))
    b = write(tmp_path / "b.tsv", game_lines(gid(1)))
    with pytest.raises(DataFormatError, match="also appears in an earlier file") as info:
        rewardlab.load_kanachan([a, b])
    assert info.value.path == str(b) and info.value.line == 1


def test_empty_file(tmp_path):
    path = tmp_path / "empty.tsv"
    path.write_text("")
    with pytest.raises(DataFormatError, match="has no lines") as info:
        rewardlab.load_kanachan(path)
    assert info.value.rule == "empty_file"


def test_truncated_gzip(tmp_path):
    data = gzip.compress("".join(line + "\n" for line in _lines()).encode())
    path = tmp_path / "cut.tsv.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataFormatError, match="damaged or truncated") as info:
        rewardlab.load_kanachan(path)
    assert info.value.rule == "truncated_stream"


def test_binary_garbage(tmp_path):
    lines = _lines()
    lines[2] = lines[2].replace("\t", "\t\x00", 1)
    err = _load_error(tmp_path, lines)
    assert err.line == 3 and err.rule == "bad_encoding"


@pytest.mark.parametrize("insert, rule", [
    ("é", "not_integer"),  # valid UTF-8, but not a digit
    ("\udcff", "bad_encoding"),  # a byte that is not UTF-8
    ("\r", "bad_encoding"),  # a lone carriage return
])
def test_bytes_outside_printable_ascii(tmp_path, insert, rule):
    lines = _lines()
    lines[2] = lines[2].replace("\t", "\t1" + insert, 1)
    path = tmp_path / "odd.tsv"
    path.write_bytes("".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape"))
    with pytest.raises(DataFormatError) as info:
        rewardlab.load_kanachan(path)
    assert (info.value.line, info.value.rule) == (3, rule)


def test_skip_mode_across_blocks_keeps_every_line(monkeypatch, tmp_path):
    from rewardlab.sources.kanachan import reader as kanachan
    lines = game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(2, 2)) + game_lines(gid(3))
    lines = set_column(lines, 25, 5, "9")
    lines[30] = "garbage"
    path = write(tmp_path / "x.tsv", lines)
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", 700)
    with pytest.warns(SkippedLinesWarning):
        result = rewardlab.read_kanachan(path, on_error="skip")
    assert result.frame.height + result.skipped.height == len(lines)
    assert result.skipped["text"].to_list() == [lines[r - 1] for r in result.skipped["line"].to_list()]
    assert {"bad_action", "column_count"} <= set(result.skip_counts)


def test_a_folder_of_text_files_is_refused_with_what_to_do(tmp_path):
    write(tmp_path / "a.tsv", _lines())
    with pytest.raises(DataFormatError, match=r"is a folder, not an annotation file \[rule: not_a_file\] "
                                              r"Name the files: FOLDER/\*\.tsv\.gz on the command line"):
        rewardlab.load_kanachan(tmp_path)


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        rewardlab.load_kanachan(tmp_path / "nope.tsv")


def test_skip_mode_counts_keeps_and_loads_the_rest(tmp_path):
    good = game_lines(gid(1), rounds=(3, 2))
    broken = game_lines(gid(2), rounds=(2, 2))
    tail = game_lines(gid(3), rounds=(1,))
    broken = set_column(broken, 1, 5, "9")  # bad action in seat 0's episode of game 2
    lines = good + broken + tail
    path = write(tmp_path / "mixed.tsv", lines)
    side = tmp_path / "skipped.txt"
    with pytest.warns(SkippedLinesWarning, match="bad_action: 1"):
        result = rewardlab.read_kanachan(path, on_error="skip", skipped_path=side)
    # everything is accounted for: loaded + skipped == lines in the file
    assert result.frame.height + result.skipped.height == len(lines)
    assert result.skip_counts["bad_action"] == 1
    assert result.skipped.filter(pl.col("reason") == "bad_action")["line"].to_list() == [len(good) + 2]
    # skipped lines are kept verbatim, in file order
    kept = side.read_text().splitlines()
    assert kept == result.skipped["text"].to_list()
    assert broken[1] in kept
    # no partial episode survives: every loaded episode ends with end_of_game
    ends = result.frame.group_by("game", "seat").agg(pl.col("end_of_game").last())
    assert ends["end_of_game"].all()
    # the other games are intact
    assert set(result.frame["game_id"].cast(pl.String).unique()) >= {gid(1), gid(3)}


def test_skip_mode_drops_the_episode_of_a_broken_first_line(tmp_path):
    lines = game_lines(gid(1), rounds=(2, 2))
    lines[0] = "garbage"
    path = write(tmp_path / "first.tsv", lines)
    with pytest.warns(SkippedLinesWarning):
        result = rewardlab.read_kanachan(path, on_error="skip")
    assert result.frame.height + result.skipped.height == len(lines)
    seat0 = result.frame.filter(pl.col("seat") == 0)
    assert seat0.height == 0  # the remains of seat 0's episode are not passed off as whole


def test_skip_mode_needs_a_side_file_in_load_kanachan(tmp_path):
    path = write(tmp_path / "x.tsv", _lines())
    with pytest.raises(ParameterError, match="`skipped_path` is required"):
        rewardlab.load_kanachan(path, on_error="skip")


def test_on_error_is_validated(tmp_path):
    with pytest.raises(ParameterError, match="`on_error` should be one of 'raise', 'skip'. Received 'ignore'."):
        rewardlab.read_kanachan(tmp_path / "x.tsv", on_error="ignore")


def test_side_file_is_not_overwritten(tmp_path):
    lines = set_column(_lines(), 1, 5, "9")
    path = write(tmp_path / "x.tsv", lines)
    side = tmp_path / "side.txt"
    side.write_text("old")
    with pytest.raises(rewardlab.core.errors.OutputExistsError):  # refused before any parsing
        rewardlab.read_kanachan(path, on_error="skip", skipped_path=side)
    assert side.read_text() == "old"
