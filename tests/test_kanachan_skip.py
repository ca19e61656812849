"""Skip mode keeps only whole episodes, whatever is corrupted, and keeps every skipped line byte for byte."""

from __future__ import annotations

import gzip
import re

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rewardlab
from rewardlab.core.errors import DataFormatError, SkippedLinesWarning
from lines import game_lines, gid, set_column, write

pytestmark = pytest.mark.filterwarnings("ignore::rewardlab.core.errors.SkippedLinesWarning")




def _seat_token(sparse: str, seat: int) -> str:
    return ",".join(str(71 + seat) if 71 <= int(t) <= 74 else t for t in sparse.split(","))


def _episodes(frame: pl.DataFrame) -> list[list[int]]:
    """The source lines of each loaded episode."""
    eps = frame.group_by("game", "seat", maintain_order=True).agg(pl.col("source_line"))
    return [sorted(x) for x in eps["source_line"].to_list()]


def _skip(path, **kw):
    return rewardlab.read_kanachan(path, on_error="skip", progress=False, **kw)


def _three_games():
    return game_lines(gid(1), rounds=(3, 2)) + game_lines(gid(2), rounds=(2, 2)) + game_lines(gid(3), rounds=(2,))


def _original_episodes(lines):
    """Line numbers (1-based) of each episode of a clean file."""
    out, cur, key = [], [], None
    for i, line in enumerate(lines):
        cols = line.split("\t")
        k = (cols[0], [t for t in cols[1].split(",") if 71 <= int(t) <= 74][0])
        if k != key and cur:
            out.append(cur)
            cur = []
        key = k
        cur.append(i + 1)
    return out + [cur]


@pytest.mark.parametrize("where", ["first", "middle", "end"])
@pytest.mark.parametrize("how", ["game_id_of_next_game", "game_id_new", "seat"])
def test_one_valid_looking_corruption_drops_exactly_its_episode(tmp_path, where, how):
    lines = _three_games()
    episodes = _original_episodes(lines)
    ep = episodes[5]  # game 2, seat 1
    row = {"first": ep[0], "middle": ep[len(ep) // 2], "end": ep[-1]}[where] - 1
    if how == "game_id_of_next_game":
        lines = set_column(lines, row, 0, gid(3))
    elif how == "game_id_new":
        lines = set_column(lines, row, 0, gid(99))
    else:
        lines = set_column(lines, row, 1, _seat_token(lines[row].split("\t")[1], 3))
    result = _skip(write(tmp_path / "x.tsv", lines))
    kept = _episodes(result.frame)
    assert all(e in episodes for e in kept)  # whole original episodes only
    assert ep not in kept and not set(ep) & {x for e in kept for x in e}
    assert sorted(result.skipped["line"].to_list()) == sorted(set(range(1, len(lines) + 1))
                                                              - {x for e in kept for x in e})
    assert len(kept) >= len(episodes) - 3  # at most the episode and its neighbours


def test_an_end_of_game_line_made_a_valid_10_column_line_drops_both_episodes_it_joins(tmp_path):
    lines = _three_games()
    episodes = _original_episodes(lines)
    end = episodes[0][-1] - 1  # seat 0's last line; the next line starts seat 1's episode
    nxt = lines[end + 1].split("\t")
    lines[end] = "\t".join(lines[end].split("\t")[:6] + nxt[1:5])  # next state == the following state
    result = _skip(write(tmp_path / "x.tsv", lines))
    kept = _episodes(result.frame)
    assert episodes[0] not in kept and episodes[1] not in kept
    assert all(e in episodes for e in kept) and len(kept) == len(episodes) - 2


def test_an_end_of_round_line_cut_to_a_valid_end_of_game_line_drops_the_whole_episode(tmp_path):
    lines = _three_games()
    episodes = _original_episodes(lines)
    row = next(i for i in range(len(lines)) if len(lines[i].split("\t")) == 12)
    cols = lines[row].split("\t")
    lines[row] = "\t".join(cols[:6] + cols[10:])  # a valid 8-column line splitting the episode
    result = _skip(write(tmp_path / "x.tsv", lines))
    kept = _episodes(result.frame)
    assert all(e in episodes for e in kept)
    assert not any(row + 1 in e for e in kept) and len(kept) == len(episodes) - 1
    assert result.skip_counts.get("episode_not_contiguous", 0) + result.skip_counts.get(
        "end_of_game_not_last", 0) >= 1


def test_a_line_copied_over_the_first_line_of_the_next_episode(tmp_path):
    """The copy is a valid end-of-game line: the rest of the episode after it must not pass as whole."""
    lines = _three_games()
    episodes = _original_episodes(lines)
    first = episodes[2][0] - 1
    lines[first] = lines[first - 1]
    result = _skip(write(tmp_path / "x.tsv", lines))
    kept = _episodes(result.frame)
    assert all(e in episodes for e in kept)
    assert episodes[2] not in kept and episodes[1] not in kept


def test_a_game_that_reappears_is_caught_in_skip_mode_as_in_raise_mode(tmp_path):
    g1 = game_lines(gid(1), rounds=(2,))
    g2 = game_lines(gid(2), rounds=(2,))
    lines = g1[:4] + g2 + g1[4:]  # game 1 seats 0-1, game 2, game 1 seats 2-3
    path = write(tmp_path / "x.tsv", lines)
    with pytest.raises(DataFormatError) as info:
        rewardlab.load_kanachan(path)
    assert (info.value.rule, info.value.line) == ("game_reappears", 13)
    result = _skip(path)
    assert result.frame["game_id"].cast(pl.String).unique().to_list() == [gid(2)]
    assert result.frame.height == len(g2)
    assert result.skip_counts["game_reappears"] == 1
    row = result.skipped.filter(pl.col("reason") == "game_reappears").row(0, named=True)
    assert row["line"] == 13 and "reappears after other games" in row["message"]
    assert sorted(result.skipped["line"].to_list()) == [*range(1, 5), *range(13, 17)]
    assert set(result.skipped["reason"]) == {"game_reappears", "in_broken_episode"}
    assert "because of line 13 (game_reappears)" in result.skipped.filter(
        pl.col("line") == 1)["message"][0]


# ---------------------------------------------------------------------------
# Property: random corruption of a sample-like file
# ---------------------------------------------------------------------------

def _sample_head(sample_path, games=3) -> list[bytes]:
    with gzip.open(sample_path, "rb") as f:
        out, seen = [], []
        for line in f:
            g = line.split(b"\t", 1)[0]
            if not seen or seen[-1] != g:
                seen.append(g)
            if len(seen) > games:
                break
            out.append(line.rstrip(b"\n"))
    return out


@pytest.fixture(scope="module")
def sample_head(sample_path):
    lines = _sample_head(sample_path)
    episodes = _original_episodes([x.decode() for x in lines])
    first = {e[0] - 1 for e in episodes}
    return lines, episodes, first


JUNK = st.lists(st.sampled_from(list("0123456789,-") + ["x", "+1", "\uff11", " "]), max_size=6)


@st.composite
def corrupted(draw, lines, firsts):
    """``lines`` with 1-4 lines corrupted so that each corrupted line breaks a rule alone or in context."""
    original, lines = lines, list(lines)
    game_ids = sorted({x.split(b"\t", 1)[0] for x in lines})
    for _ in range(draw(st.integers(1, 4))):
        r = draw(st.integers(0, len(lines) - 1))
        cols = lines[r].split(b"\t")
        how = draw(st.sampled_from(["junk", "game_id", "seat", "to8", "to10", "truncate", "utf8", "empty",
                                    "digit", "copy_prev", "seat_next", "copy_any", "swap"]))
        if how == "junk":  # always has an "x": never a valid value
            c = draw(st.integers(0, len(cols) - 1))
            text = "".join(draw(JUNK))
            k = draw(st.integers(0, len(text)))
            cols[c] = (text[:k] + "x" + text[k:]).encode()
        elif how == "game_id":
            cols[0] = draw(st.sampled_from(game_ids + [b"f" * 32]))
        elif how == "seat" and len(cols) > 1 and re.fullmatch(rb"[0-9,]+", cols[1]):
            cols[1] = _seat_token(cols[1].decode(), draw(st.integers(0, 3))).encode()
        elif how == "seat_next" and len(cols) in (10, 12) and re.fullmatch(rb"[0-9,]+", cols[6]):
            cols[6] = _seat_token(cols[6].decode(), draw(st.integers(0, 3))).encode()
        elif how == "to8" and len(cols) == 12:
            cols = cols[:6] + cols[10:]
        elif how == "to10" and len(cols) == 8 and r + 1 < len(lines):
            cols = cols[:6] + lines[r + 1].split(b"\t")[1:5]
        elif how == "truncate":
            cols = [lines[r][:draw(st.integers(0, len(lines[r])))] + b"x"]
        elif how == "utf8":
            k = draw(st.integers(0, len(lines[r])))
            cols = [lines[r][:k] + b"\xff" + lines[r][k:]]
        elif how == "empty":
            cols = [b""]
        elif how == "digit":  # a state value whose previous line's next state must equal it, or a next state
            choices = [c for c in (1, 2, 3, 4) if r not in firsts and c < len(cols)]
            choices += [6, 7, 8, 9] if len(cols) in (10, 12) else []
            choices = [c for c in choices if re.search(rb"[0-9]", cols[c])]
            if choices:
                c = draw(st.sampled_from(choices))
                digits = [m.start() for m in re.finditer(rb"[0-9]", cols[c])]
                k = draw(st.sampled_from(digits))
                old = cols[c][k:k + 1]
                new = draw(st.sampled_from([d for d in b"0123456789" if bytes([d]) != old]))
                cols[c] = cols[c][:k] + bytes([new]) + cols[c][k + 1:]
        elif how == "copy_prev" and r > 0:
            cols = lines[r - 1].split(b"\t")
        elif how == "copy_any":  # a valid line of another place
            cols = original[draw(st.integers(0, len(original) - 1))].split(b"\t")
        elif how == "swap" and r + 1 < len(lines) and lines[r] != lines[r + 1]:
            cols = lines[r + 1].split(b"\t")
            lines[r + 1] = lines[r]
        lines[r] = b"\t".join(cols)
    return lines


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_random_corruption_never_keeps_part_of_an_episode(monkeypatch, tmp_path, sample_head, data):
    from rewardlab.sources.kanachan import reader as kanachan
    original, episodes, firsts = sample_head
    lines = data.draw(corrupted(original, firsts))
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", data.draw(st.sampled_from([4000, 1 << 25])))
    crlf = data.draw(st.booleans())
    end = b"\r\n" if crlf else b"\n"
    path = tmp_path / "x.tsv"
    path.write_bytes(b"".join(x + end for x in lines))
    result = _skip(path)
    frame = result.frame
    kept = _episodes(frame)
    changed = {i + 1 for i in range(len(lines)) if lines[i] != original[i]}
    for e in kept:
        assert e in episodes, e  # a whole episode of the original file, full length
        assert not set(e) & changed  # byte-identical lines
    per_ep = frame.group_by("game", "seat", maintain_order=True).agg(pl.col("end_of_game"), pl.col("step"))
    for eog, steps in zip(per_ep["end_of_game"].to_list(), per_ep["step"].to_list()):
        assert eog[-1] and not any(eog[:-1]) and steps == list(range(len(steps)))
    kept_lines = {x for e in kept for x in e}
    skipped = result.skipped["line"].to_list()
    assert len(skipped) == len(set(skipped)) and not set(skipped) & kept_lines
    assert len(kept_lines) + len(skipped) == len(lines)
    # skipped lines verbatim
    assert result.skipped["raw"].to_list() == [lines[r - 1] + (b"\r" if crlf else b"") for r in skipped]
    assert sum(result.skip_counts.values()) == len(skipped)


# ---------------------------------------------------------------------------
# Rules do not depend on the block size
# ---------------------------------------------------------------------------

def _file_with_layout_errors(tmp_path):
    lines = _three_games()
    episodes = _original_episodes(lines)
    # a second seat id after the head, on an episode's first line (no next state compares it)
    r = episodes[3][0] - 1
    lines = set_column(lines, r, 1, lines[r].split("\t")[1] + ",73")
    # a line whose head is out of kanachan's order (fails the fast check, takes the general path)
    r2 = episodes[6][0] - 1
    cols = lines[r2].split("\t")[1].split(",")
    cols[0], cols[1] = cols[1], cols[0]
    lines = set_column(lines, r2, 1, ",".join(cols))
    return write(tmp_path / "layout.tsv", lines), episodes[3][0]


@pytest.mark.parametrize("chunk", [1, 64, 700, 4096, 1 << 25])
def test_a_second_seat_id_is_reported_whatever_the_block_size(monkeypatch, tmp_path, chunk):
    from rewardlab.sources.kanachan import reader as kanachan
    path, line = _file_with_layout_errors(tmp_path)
    monkeypatch.setattr(kanachan, "CHUNK_BYTES", chunk)
    with pytest.raises(DataFormatError, match=r"layout\.tsv:\d+: column 1: .*exactly one seat id in \[71, 74\], "
                       r"found 2 \[rule: sparse_layout\]") as info:
        rewardlab.load_kanachan(path, progress=False)
    assert info.value.line == line


def test_skip_mode_results_do_not_depend_on_the_block_size(monkeypatch, tmp_path, sample_head):
    from rewardlab.sources.kanachan import reader as kanachan
    path, _ = _file_with_layout_errors(tmp_path)
    lines = [x.decode() for x in sample_head[0]]  # the sample-like file too, with a few corruptions
    n = len(lines)
    lines = set_column(lines, 5, 5, "99")
    lines = set_column(lines, n // 2, 1, lines[n // 2].split("\t")[1] + ",72")
    lines[n - 20] = lines[n - 20] + "\tx"
    other = write(tmp_path / "sample.tsv", lines)
    for p in (path, other):
        results = []
        for chunk in (1, 50, 700, 10_000, 1 << 25):
            monkeypatch.setattr(kanachan, "CHUNK_BYTES", chunk)
            results.append(_skip(p))
        for r in results[1:]:
            assert r.skipped.equals(results[0].skipped)
            assert r.frame.equals(results[0].frame)
        assert "sparse_layout" in results[0].skip_counts
        errors = set()
        for chunk in (1, 50, 700, 10_000, 1 << 25):  # raise mode: the same first error
            monkeypatch.setattr(kanachan, "CHUNK_BYTES", chunk)
            with pytest.raises(DataFormatError) as info:
                rewardlab.load_kanachan(p, progress=False)
            errors.add(str(info.value))
        assert len(errors) == 1


# ---------------------------------------------------------------------------
# Skipped lines byte for byte
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("line_end", ["crlf", "mixed"])
def test_side_file_keeps_undecodable_bytes_and_crlf_line_ends(tmp_path, line_end):
    lines = [x.encode() for x in _three_games()]
    episodes = _original_episodes([x.decode() for x in lines])
    bad = episodes[2][1] - 1
    lines[bad] = lines[bad].replace(b"\t", b"\t\xff\xfe", 1)  # not UTF-8
    ends = [b"\r\n" if line_end == "crlf" or i % 3 else b"\n" for i in range(len(lines))]
    path = tmp_path / "crlf.tsv"
    path.write_bytes(b"".join(x + e for x, e in zip(lines, ends)))
    side = tmp_path / "skipped.txt"
    result = _skip(path, skipped_path=side)
    skipped = result.skipped["line"].to_list()
    assert skipped == episodes[2] and result.skip_counts["bad_encoding"] == 1
    assert side.read_bytes() == b"".join(lines[r - 1] + ends[r - 1] for r in skipped)
    assert result.skipped["raw"].to_list() == [lines[r - 1] + ends[r - 1][:-1] for r in skipped]
    assert result.frame.height == len(lines) - len(skipped)


@pytest.mark.parametrize("text", [b"x\n", b"\n", b"x\ny\n", b"a\tb\tc\n"])
def test_skip_mode_with_no_good_line_keeps_nothing_and_reports_every_line(tmp_path, text):
    """A file whose every line is bad: an empty frame and every line kept as skipped (was an IndexError)."""
    from rewardlab.sources.kanachan.reader import read_kanachan

    path = tmp_path / "bad.tsv"
    path.write_bytes(text)
    with pytest.warns(SkippedLinesWarning):
        result = read_kanachan(path, on_error="skip")
    assert result.frame.height == 0
    assert result.skipped.height == text.count(b"\n")
