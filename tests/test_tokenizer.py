"""The compiled tokenizer against a plain, line-by-line reference of the same rules.

The reference below is deliberately naive (``str.split`` and a regular
expression per token); hypothesis mutates valid lines (from ``tests/lines.py``)
into every kind of malformed one and the two must agree on the rule, the
column, the detail value and the parsed arrays.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rewardlab.sources.kanachan.tokenizer import CODES, line_ends, tokenize
from lines import game_lines, gid

RULES = {v: k for k, v in CODES.items()}
INT = re.compile(r"-?[0-9]{1,18}")
I32 = (-(2**31), 2**31)
# name: (max length, lowest, highest + 1, padding, exact length or 0)
SPECS = {
    "sparse": (29, 0, 510, 510, 0),
    "numeric": (6, *I32, 0, 6),
    "progression": (109, 0, 2165, 2165, 0),
    "candidates": (32, 0, 546, 546, 0),
    "round_summary": (7, 0, 29, 29, 0),
    "results": (8, *I32, 0, 8),
}


def ref_list(text: str, spec) -> tuple[str | None, int, list[int]]:
    max_len, lo, hi, pad, exact = spec
    tokens = text.split(",")
    if not all(INT.fullmatch(t) for t in tokens):
        return "not_integer", 0, []
    values = [int(t) for t in tokens]
    if len(values) > max_len:
        return "too_many_ids", len(values), []
    if exact and len(values) != exact:
        return "wrong_length", len(values), []
    for v in values:
        if not lo <= v < hi:
            return "out_of_range", v, []
    return None, 0, values + [pad] * (max_len - len(values))


def ref_line(line: str) -> dict:
    """(rule, column, detail) and, for a good line, its arrays."""
    cols = line.split("\t")
    control = any((c < " " and c != "\t") or c == "\x7f" for c in line)
    if len(cols) not in (8, 10, 12):
        return {"rule": "bad_encoding" if control else "column_count", "column": -1,
                "detail": len(cols), "kind": 0}
    out = {"kind": len(cols)}
    found = []  # (rule, column, detail) in the order the rules are checked
    if control:
        found.append(("bad_encoding", -1, 0))
    if not re.fullmatch(r"[0-9a-fA-F]{32}", cols[0]):
        found.append(("bad_game_id", 0, 0))
    lists = [("sparse", 1), ("numeric", 2), ("progression", 3), ("candidates", 4)]
    if len(cols) in (10, 12):  # the next state: the same rules as the state columns (values not kept)
        lists += [("next " + name, c + 5) for name, c in lists]
    if len(cols) == 8:
        lists += [("round_summary", 6), ("results", 7)]
    elif len(cols) == 12:
        lists += [("round_summary", 10), ("results", 11)]
    for name, c in lists:
        rule, detail, values = ref_list(cols[c], SPECS[name.removeprefix("next ")])
        if rule:
            found.append((rule, c, detail))
        elif not name.startswith("next "):
            out[name] = values
    if INT.fullmatch(cols[5]):
        action = int(cols[5])
        n_cand = min(len(cols[4].split(",")), 32)
        if not 0 <= action < n_cand:
            found.append(("bad_action", 5, action))
    else:
        found.append(("not_integer", 5, 0))
    rule, column, detail = found[0] if found else (None, -1, 0)
    out.update(rule=rule, column=column, detail=detail)
    return out


def check_block(lines: list[str]) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    tok = tokenize(data)
    assert tok.n == len(lines)
    names = list(SPECS)
    for r, line in enumerate(lines):
        ref = ref_line(line)
        got = RULES.get(int(tok.code[r]))
        assert (got, int(tok.column[r]), int(tok.kind[r])) == (ref["rule"], ref["column"], ref["kind"]), line
        if ref["rule"] in ("column_count", "too_many_ids", "wrong_length", "out_of_range", "bad_action"):
            assert int(tok.detail[r]) == ref["detail"], line
        if ref["rule"] is None:
            for k, name in enumerate(names):
                if name in ref:
                    assert getattr(tok, name)[r].tolist() == ref[name], (name, line)
            assert int(tok.action[r]) == int(line.split("\t")[5])
        # the previous line's next state against this line's state, as text
        prev = lines[r - 1].split("\t") if r else None
        cols = line.split("\t")
        expect = -2
        if prev and len(prev) in (10, 12) and len(cols) in (8, 10, 12) and ref_line(lines[r - 1])["kind"]:
            diffs = [j for j in range(4) if prev[6 + j] != cols[1 + j]]
            expect = diffs[0] if diffs else -1
        assert int(tok.next_mismatch[r]) == expect, (r, line)
        assert bool(tok.same_game[r]) == (r > 0 and lines[r - 1].split("\t")[0] == cols[0])


VALID = game_lines(gid(7), rounds=(3, 2)) + game_lines(gid(8), rounds=(1,))
EDGES = ["0", "-1", "-0", "28", "29", "509", "510", "545", "546", "2164", "2165",
         str(2**31 - 1), str(2**31), str(-(2**31)), str(-(2**31) - 1), "9" * 18, "9" * 19]
#: Tokens Python's int() takes but the format does not: a sign, full-width digits, odd spaces, underscores.
LOOKALIKES = ["+1", "+0", "\uff11", "\uff10\uff15", " 7", "7 ", "\u30007", "\xa07", "1_0", "\u0661"]
ALPHABET = st.sampled_from(list("0123456789") * 4 + list(",,,--x \x00\x7f\x1f") + ["99999", "9" * 19]
                           + LOOKALIKES)


@st.composite
def mutated(draw):
    """A valid line with one column replaced, cut, duplicated, joined or repeated."""
    line = draw(st.sampled_from(VALID))
    cols = line.split("\t")
    how = draw(st.sampled_from(["replace", "replace", "replace", "drop", "extra", "join", "empty", "grow", "edge"]))
    c = draw(st.integers(0, len(cols) - 1))
    if how == "replace":
        cols[c] = "".join(draw(st.lists(ALPHABET, min_size=0, max_size=12)))
    elif how == "drop":
        del cols[c]
    elif how == "extra":
        cols.insert(c, cols[c])
    elif how == "join" and c + 1 < len(cols):
        cols[c:c + 2] = [cols[c] + "," + cols[c + 1]]
    elif how == "empty":
        cols[c] = ""
    elif how == "edge":  # one value at or just past a range limit
        tokens = cols[c].split(",")
        tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(EDGES))
        cols[c] = ",".join(tokens)
    elif how == "grow":  # more values than the list may hold (or than an exact length)
        cols[c] = ",".join([cols[c]] * draw(st.integers(2, 6)))
    return "\t".join(cols)


#: Lines of VALID followed by a line of the same episode: their next state is that line's state.
WITH_NEXT = [r for r in range(len(VALID) - 1) if len(VALID[r].split("\t")) in (10, 12)
             and VALID[r].split("\t")[6:10] == VALID[r + 1].split("\t")[1:5]]


@st.composite
def mutated_next_state(draw):
    """VALID with one next-state token changed, alone or together with the following line's state.

    Together, the next state still equals the following state byte for byte
    (the path where the tokenizer does not scan it); alone, it differs.
    """
    lines = list(VALID)
    r = draw(st.sampled_from(WITH_NEXT))
    j = draw(st.integers(0, 3))
    cols = lines[r].split("\t")
    tokens = cols[6 + j].split(",")
    k = draw(st.integers(0, len(tokens) - 1))
    how = draw(st.sampled_from(["lookalike", "lookalike", "junk", "edge", "grow", "empty"]))
    if how == "lookalike":  # a token equal to the original as an int() would read it
        t = tokens[k]
        tokens[k] = draw(st.sampled_from(["+" + t, " " + t, t + " ", "\u3000" + t, "0" + t,
                                          "".join(chr(0xFF10 + int(d)) for d in t)]))
    elif how == "junk":
        tokens[k] = "".join(draw(st.lists(ALPHABET, min_size=0, max_size=4)))
    elif how == "edge":
        tokens[k] = draw(st.sampled_from(EDGES))
    elif how == "grow":
        tokens = tokens * draw(st.integers(2, 6))
    else:
        tokens = [""]
    cols[6 + j] = ",".join(tokens)
    lines[r] = "\t".join(cols)
    if draw(st.booleans()):  # the following line's state the same: equal bytes, both malformed
        nxt = lines[r + 1].split("\t")
        nxt[1 + j] = cols[6 + j]
        lines[r + 1] = "\t".join(nxt)
    return lines


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(mutated_next_state(), st.integers(0, len(VALID)))
def test_next_state_columns_take_exactly_the_state_columns_tokens(lines, cut):
    check_block(lines)
    check_block(lines[:cut])  # also when the line with the next state ends the block
    check_block(lines[cut:])


@pytest.mark.parametrize("lookalike", [
    lambda t: "+" + t, lambda t: " " + t, lambda t: t + " ", lambda t: "\u3000" + t, lambda t: "0_" + t,
    lambda t: "".join(chr(0xFF10 + int(d)) for d in t),  # full-width digits
], ids=["plus", "space", "trailing_space", "ideographic_space", "underscore", "full_width"])
@pytest.mark.parametrize("column", [6, 7, 8, 9])
def test_a_next_state_token_int_reads_as_equal_is_refused(lookalike, column):
    """int() reads these as the following state's value; the state columns refuse them, so must these."""
    lines = list(VALID)
    r = WITH_NEXT[0]
    cols = lines[r].split("\t")
    tokens = cols[column].split(",")
    assert int(lookalike(tokens[-1])) == int(tokens[-1])
    tokens[-1] = lookalike(tokens[-1])
    cols[column] = ",".join(tokens)
    lines[r] = "\t".join(cols)
    tok = tokenize("".join(line + "\n" for line in lines).encode())
    assert (RULES.get(int(tok.code[r])), int(tok.column[r])) == ("not_integer", column)
    check_block(lines)


def test_valid_lines_agree_with_the_reference():
    check_block(VALID)


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(st.lists(mutated(), min_size=1, max_size=6), st.integers(0, len(VALID)))
def test_mutated_lines_agree_with_the_reference(bad, at):
    check_block(VALID[:at] + bad + VALID[at:])


@pytest.mark.parametrize("line, rule, column, detail", [
    ("", "column_count", -1, 1),
    ("\t".join(["x"] * 9), "column_count", -1, 9),
    ("\t".join(["x"] * 13), "column_count", -1, 13),
    (VALID[0].replace("\t", "\t\x00", 1), "bad_encoding", -1, 0),
    ("\x00" + "\t" * 3, "bad_encoding", -1, 4),
])
def test_whole_line_rules(line, rule, column, detail):
    tok = tokenize((line + "\n").encode())
    assert (RULES[int(tok.code[0])], int(tok.column[0]), int(tok.detail[0])) == (rule, column, detail)


def test_a_last_line_without_line_end_and_bytes_above_ascii():
    tok = tokenize(VALID[0].encode())  # no "\n"
    assert tok.n == 1 and tok.code[0] == 0
    tok = tokenize((VALID[0].replace("\t", "\té", 1) + "\n").encode())
    assert tok.non_ascii[0] and RULES[int(tok.code[0])] == "not_integer"


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(st.binary(max_size=300), st.integers(0, 7), st.integers(0, 9))
def test_line_ends_against_bytes_count(data, offset, skip):
    data = data[offset:]  # also buffers that do not start on an 8-byte boundary
    rest = data[skip:]
    expected = rest.count(b"\n") + (1 if rest and not rest.endswith(b"\n") else 0)
    assert line_ends(data, skip).size == expected
    assert tokenize(data, skip=skip).n == expected
    lfs = [k for k in range(skip, len(data)) if data[k] == 10]
    assert line_ends(data, skip).tolist() == lfs + ([len(data)] if rest and not rest.endswith(b"\n") else [])


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(st.integers(0, len(VALID) - 1), st.integers(0, 40))
def test_a_skipped_prefix_is_not_parsed(first, junk):
    """Blocks of a memory-mapped file start 8-byte aligned and skip the previous block's last bytes."""
    rest = "".join(line + "\n" for line in VALID[first:]).encode()
    prefix = (b"x\t" * junk)[:junk] + b"\n"
    whole, part = tokenize(prefix + rest, skip=len(prefix)), tokenize(rest)
    assert whole.n == part.n
    for name in ("kind", "code", "column", "detail", "next_mismatch", "same_game", "sparse", "progression"):
        assert np.array_equal(getattr(whole, name)[1:], getattr(part, name)[1:]), name
    assert np.array_equal(whole.start - len(prefix), part.start)
    assert (whole.code[0], whole.kind[0]) == (part.code[0], part.kind[0])


def test_one_compiled_variant_whatever_the_buffer(tmp_path):
    from rewardlab.sources.kanachan import tokenizer as _tokenizer
    line = (VALID[0] + "\n").encode()
    for data in (line, bytearray(line), memoryview(b"x" + line)[1:], line * 3):
        tokenize(data)
    assert len(_tokenizer._tokenize_kernel.signatures) == 1


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(st.lists(st.sampled_from(VALID), min_size=1, max_size=8), st.binary(max_size=40))
def test_arbitrary_bytes_never_crash_and_keep_the_line_count(lines, junk):
    data = ("\n".join(lines)).encode() + junk
    tok = tokenize(data)
    assert tok.n == line_ends(data).size
    assert (tok.kind == 0).sum() <= tok.n and set(np.unique(tok.code).tolist()) <= {0, *CODES.values()}


@settings(deadline=None)  # the first call may compile the kernel (or load it from numba's cache)
@given(st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=30), min_size=1, max_size=8))
def test_game_rounds_against_a_loop(games):
    from rewardlab.sources.kanachan.tokenizer import game_rounds

    key = np.array([k for g in games for k in g], dtype=np.int64)
    starts = np.cumsum([0] + [len(g) for g in games[:-1]])
    expected = [sorted(set(g)).index(k) for g in games for k in g]
    assert game_rounds(key, starts).tolist() == expected


@pytest.mark.parametrize("insert, code, non_ascii", [("\x01", "bad_encoding", False), ("é", "not_integer", True)])
def test_odd_bytes_in_a_next_state_equal_to_the_following_state(insert, code, non_ascii):
    """A next state that equals the following line's state is not scanned: its bytes are that line's."""
    lines = list(VALID[:3])
    for r, c in ((0, 6), (1, 1)):
        cols = lines[r].split("\t")
        cols[c] = cols[c] + insert
        lines[r] = "\t".join(cols)
    tok = tokenize("".join(line + "\n" for line in lines).encode())
    assert int(tok.next_mismatch[1]) == -1  # still equal as text
    assert RULES[int(tok.code[1])] == code
    assert bool(tok.non_ascii[0]) == bool(tok.non_ascii[1]) == non_ascii
    assert (RULES.get(int(tok.code[0])) == "bad_encoding") == (code == "bad_encoding")


HEAD_LOWS = [0, 5, 7, 23, 39, 55, 71, 75, 78]
HEAD_COUNTS = [5, 2, 16, 16, 16, 16, 4, 3, 4]


@st.composite
def sparse_rows(draw):
    """Sparse rows whose head mostly fits, with later ids mostly >= 82 (sometimes one below: a second id)."""
    head = [draw(st.integers(lo, lo + c - 1)) if draw(st.integers(0, 9)) else draw(st.integers(0, 600))
            for lo, c in zip(HEAD_LOWS, HEAD_COUNTS)]
    rest = draw(st.lists(st.integers(82, 509) | st.integers(0, 81), min_size=1, max_size=20))
    return head + rest + [510] * (29 - len(head) - len(rest))


@settings(deadline=None)
@given(st.lists(sparse_rows(), min_size=1, max_size=20), st.data())
def test_sparse_head_against_a_loop(rows, data):
    """A row passes only if its head is in range and no later id is below 82 (one id of each kind)."""
    from rewardlab.sources.kanachan.tokenizer import sparse_head

    lows, counts = np.array(HEAD_LOWS), np.array(HEAD_COUNTS)
    sparse = np.array(rows, dtype=np.int16)
    ok = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool)
    head, every = sparse_head(sparse, ok, lows, counts, 82)
    fits = [all(lows[p] <= r[p] < lows[p] + counts[p] for p in range(9)) and all(v >= 82 for v in r[9:])
            for r in rows]
    assert every == all(f for f, o in zip(fits, ok) if o)
    for r, row in enumerate(rows):
        if fits[r]:
            assert head[r].tolist() == [row[p] - lows[p] for p in range(9)]


def test_a_second_seat_id_after_the_head_fails_the_head_check():
    """Two seat ids (the second after the head): the fast check must not pass it, whatever else is in the block."""
    from rewardlab.sources.kanachan.tokenizer import sparse_head

    row = [2, 6, 7 + 9, 23 + 10, 39 + 11, 55 + 12, 71, 75, 78, 87, 72, 340] + [510] * 17
    head, every = sparse_head(np.array([row], dtype=np.int16), np.ones(1, dtype=bool), np.array(HEAD_LOWS),
                              np.array(HEAD_COUNTS), 82)
    assert not every
