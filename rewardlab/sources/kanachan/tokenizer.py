"""The compiled line tokenizer behind :mod:`rewardlab.sources.kanachan.reader`.

One pass over a block of annotation text: parse the game id, the state lists
and the action of each line straight into padded fixed-size arrays and check
every line-level rule.  The columns after the action are mostly not read on
their own: a line is first taken to have 10 columns whose next state equals
the following line's state, and one byte comparison with the following line
confirms it (the same comparison the next-state rule needs).  Lines where it
does not hold (end of a round or a game, a wrong column count, a next state
that differs) have their tail scanned and are settled again.  A next state
takes exactly the tokens a state takes: where its bytes equal the following
line's state it has that line's list errors (5 columns on), else a pass after
the kernel parses it on its own (:func:`_next_state_pass`).  Line ends come
from a separate word-wise pass (:func:`line_ends`), which the loader runs
while the workers parse.

The kernels are compiled by numba on first use (cached on disk afterwards)
and release the GIL, so two blocks are parsed in parallel threads.  Nothing
here formats messages: each line gets an error code, the file column and one
detail value, and :mod:`rewardlab.sources.kanachan.reader` turns them into
:class:`~rewardlab.core.errors.DataFormatError` messages (only for lines that are
reported).  The rules and their order are those of ``SKIP_REASONS`` there;
``tests/test_tokenizer.py`` checks the kernel against a line-by-line
reference parser.
"""

from __future__ import annotations

import numpy as np

from rewardlab.sources.kanachan import schema as S
__all__ = ["Tokens", "tokenize", "line_ends", "game_rounds", "sparse_head", "CODES"]

#: Error codes of :func:`tokenize`, by rule name (0: the line passed).
CODES = {
    "bad_encoding": 1,
    "column_count": 2,
    "bad_game_id": 3,
    "not_integer": 4,
    "too_many_ids": 5,
    "wrong_length": 6,
    "out_of_range": 7,
    "bad_action": 8,
}

#: Lists parsed into arrays (:data:`rewardlab.sources.kanachan.schema.LIST_LIMITS`).
_SPARSE, _NUMERIC, _PROGRESSION, _CANDIDATES, _ROUND_SUMMARY, _RESULTS = (
    S.LIST_LIMITS[name] for name in (S.SPARSE, S.NUMERIC, S.PROGRESSION, S.CANDIDATES, S.ROUND_SUMMARY, S.RESULTS))
_LF, _TAB, _COMMA, _MINUS = 10, 9, 44, 45
#: Byte classes for scanning: 0 plain, 1 TAB, 2 LF, 3 other control byte, 4 byte >= 0x80.
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[:32] = 3
_CLASS[127] = 3
_CLASS[128:] = 4
_CLASS[_TAB] = 1
_CLASS[_LF] = 2
#: Longest digit string parsed as an integer (longer ones are "not an integer", as in an int64 cast).
_MAX_DIGITS = 18


class Tokens:
    """The arrays one :func:`tokenize` call fills (one row per line of the block).

    Attributes
    ----------
    n : int
        Lines in the block.
    start, end : numpy.ndarray of int64, shape (n,)
        Byte offsets of each line in the block (``end``: its ``\\n``, or the end of the data).
    kind : numpy.ndarray of int8, shape (n,)
        8, 10 or 12 (columns of the line), 0 for any other count.
    code, column : numpy.ndarray of int8 / int16, shape (n,)
        First rule the line breaks (:data:`CODES`, 0 if none) and its file
        column (-1 when the rule is about the whole line).
    detail : numpy.ndarray of int64, shape (n,)
        The rule's value: column count, list length, out-of-range value or
        action index.
    non_ascii : numpy.ndarray of bool, shape (n,)
        The line has bytes >= 0x80 (the caller checks they are UTF-8).
    same_game : numpy.ndarray of bool, shape (n,)
        Column 0 equals the previous line's column 0 (False on line 0).
    next_mismatch : numpy.ndarray of int8, shape (n,)
        For a line after a 10- or 12-column line: the first of the previous
        line's next-state columns (0-3 for file columns 6-9) whose text
        differs from this line's state column (1-4), -1 if all are equal;
        -2 when the previous line has no next state.
    sparse, numeric, progression, candidates, round_summary, results : numpy.ndarray
        Padded arrays, shapes (n, 29), (n, 6), (n, 109), (n, 32), (n, 7), (n, 8).
    lengths : numpy.ndarray of int16, shape (n, 6)
        Values kept per list, in the order above.
    action : numpy.ndarray of int64, shape (n,)
    """

    def __init__(self, n: int):
        self.n = n
        self.start = np.empty(n, dtype=np.int64)
        self.end = np.empty(n, dtype=np.int64)
        self.kind = np.zeros(n, dtype=np.int8)
        self.code = np.zeros(n, dtype=np.int8)
        self.column = np.full(n, -1, dtype=np.int16)
        self.detail = np.zeros(n, dtype=np.int64)
        self.non_ascii = np.zeros(n, dtype=np.bool_)
        self.same_game = np.zeros(n, dtype=np.bool_)
        self.next_mismatch = np.full(n, -2, dtype=np.int8)
        self.sparse = np.empty((n, _SPARSE[0]), dtype=np.int16)
        self.numeric = np.empty((n, _NUMERIC[0]), dtype=np.int32)
        self.progression = np.empty((n, _PROGRESSION[0]), dtype=np.int16)
        self.candidates = np.empty((n, _CANDIDATES[0]), dtype=np.int16)
        self.round_summary = np.empty((n, _ROUND_SUMMARY[0]), dtype=np.int8)
        self.results = np.empty((n, _RESULTS[0]), dtype=np.int32)
        self.lengths = np.zeros((n, 6), dtype=np.int16)
        self.action = np.zeros(n, dtype=np.int64)


def line_ends(data, skip: int = 0) -> np.ndarray:
    """Byte offsets of the ends of the lines of ``data[skip:]`` (bytes-like).

    A line ends at its ``\\n``, or at the end of the data for an unterminated
    last line.  The offsets count from the start of ``data``.

    Examples
    --------
    >>> line_ends(b"ab\\nc\\n").tolist(), line_ends(b"ab\\nc").tolist(), line_ends(b"ab\\nc\\n", skip=3).tolist()
    ([2, 4], [2, 4], [4])
    """
    buf = _aligned(data)
    if buf.size <= skip:
        return np.zeros(0, dtype=np.int64)
    words = np.frombuffer(buf, dtype=np.uint64, count=buf.size // 8)
    out = np.empty(buf.size // 32 + 16, dtype=np.int64)  # enough unless lines are very short
    n = _line_ends(buf, words, skip, out)
    if n > out.size:
        out = np.empty(n, dtype=np.int64)
        _line_ends(buf, words, skip, out)
    if buf[-1] != _LF:
        out = np.append(out[:n], buf.size)
        n += 1
    return out[:n]


def _aligned(data) -> np.ndarray:
    """``data`` as a read-only uint8 array whose start is 8-byte aligned (copied if it is not).

    The kernels read 8-byte words; one alignment (and read-only) means one
    compiled variant.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.ctypes.data % 8:
        buf = np.frombuffer(bytes(data), dtype=np.uint8)
    if buf.flags.writeable:  # read-only like bytes and memory maps: one compiled variant
        buf = buf.view()
        buf.flags.writeable = False
    return buf


def tokenize(data, ends: np.ndarray | None = None, *, skip: int = 0) -> Tokens:
    """Parse and check every line of ``data[skip:]`` (whole lines of an annotation file).

    Parameters
    ----------
    data : bytes-like
        Text of one or more lines; the last line may lack its ``\\n``.
    ends : numpy.ndarray of int64, optional
        ``line_ends(data, skip)``, if the caller has it already.
    skip : int
        Bytes at the start of ``data`` that are not part of it (the end of a
        previous block, kept so that ``data`` can start on an 8-byte
        boundary).  Line offsets in the result count from the start of ``data``.

    Returns
    -------
    Tokens
        The filled arrays.

    Examples
    --------
    >>> t = tokenize(b"not a line\\n")
    >>> int(t.code[0]) == CODES["column_count"], int(t.detail[0])
    (True, 1)
    """
    if ends is None:
        ends = line_ends(data, skip)
    tokens = Tokens(ends.size)
    if tokens.n:
        buf = _aligned(data)
        _tokenize_kernel(buf, skip, ends, tokens.start, tokens.end, tokens.kind, tokens.code,
                         tokens.column, tokens.detail, tokens.non_ascii, tokens.same_game, tokens.next_mismatch,
                         tokens.sparse, tokens.numeric, tokens.progression, tokens.candidates,
                         tokens.round_summary, tokens.results, tokens.lengths, tokens.action)
        _next_state_pass(buf, tokens.start, tokens.end, tokens.kind, tokens.code, tokens.column, tokens.detail,
                         tokens.next_mismatch)
    return tokens


# ---------------------------------------------------------------------------
# The numba kernel (module-level so numba can cache it on disk; this module is
# imported only when a text file is parsed, so ``import rewardlab`` does not
# import numba).
# ---------------------------------------------------------------------------

from numba import njit  # noqa: E402
from numba.cpython.unsafe.numbers import trailing_zeros  # noqa: E402  (LLVM cttz)
from numba.core import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402
from llvmlite import ir  # noqa: E402

sparse_spec, numeric_spec, progression_spec, candidates_spec, summary_spec, results_spec = (
    _SPARSE, _NUMERIC, _PROGRESSION, _CANDIDATES, _ROUND_SUMMARY, _RESULTS)
c_column_count, c_bad_game_id = CODES["column_count"], CODES["bad_game_id"]
c_bad_encoding, c_not_integer = CODES["bad_encoding"], CODES["not_integer"]
c_too_many, c_wrong_length = CODES["too_many_ids"], CODES["wrong_length"]
c_out_of_range, c_bad_action = CODES["out_of_range"], CODES["bad_action"]
max_digits = _MAX_DIGITS



@njit(nogil=True, cache=True)
def _odd(c) -> int:
    """1 for a control byte, 2 for a byte >= 0x80, else 0."""
    if c >= 128:
        return 2
    if c < 32 or c == 127:
        return 1
    return 0


@njit(nogil=True, cache=True)
def _list(buf, i, size, out, row, spec):
    """Parse the comma-separated integers from ``buf[i]`` to the column's end into ``out[row]``, padded.

    Returns (position of the TAB / LF / end of data that ends the column,
    error code, detail, values kept, odd-byte flags).  Indexing a slice with
    ``range`` indices keeps numba from adding negative-index checks.
    """
    max_len, lo, hi, pad, exact = spec
    view = buf[i:]
    count = 0
    v = 0
    digits = 0
    neg = False
    bad = False
    range_bad = False
    first_bad = 0
    odd = 0
    length = view.shape[0]
    k = 0
    for k in range(length + 1):
        c = np.int64(view[k]) if k < length else _LF
        d = c - 48
        if 0 <= d <= 9:
            v = v * 10 + d
            digits += 1
            continue
        if c == _COMMA or c == _TAB or c == _LF:
            if digits == 0 or digits > max_digits:
                bad = True
            else:
                if neg:
                    v = -v
                if (v < lo or v >= hi) and not range_bad:
                    range_bad = True
                    first_bad = v
            if count < max_len:
                out[row, count] = v
            count += 1
            if c != _COMMA:
                break
            v = 0
            digits = 0
            neg = False
        elif c == _MINUS and digits == 0 and not neg:
            neg = True
        else:
            bad = True
            odd |= _odd(c)
    kept = min(count, max_len)
    for t in range(kept, max_len):
        out[row, t] = pad
    end = i + k
    if bad:
        return end, c_not_integer, 0, kept, odd
    if count > max_len:
        return end, c_too_many, count, kept, odd
    if exact and count != exact:
        return end, c_wrong_length, count, kept, odd
    if range_bad:
        return end, c_out_of_range, first_bad, kept, odd
    return end, 0, 0, kept, odd


@njit(nogil=True, cache=True)
def _scalar(buf, i, size):
    """Parse one integer column; returns (end, ok, value, odd-byte flags)."""
    v = 0
    digits = 0
    neg = False
    bad = False
    odd = 0
    while i < size:
        c = np.int64(buf[i])
        if 48 <= c <= 57:
            v = v * 10 + (c - 48)
            digits += 1
        elif c == _TAB or c == _LF:
            break
        elif c == _MINUS and digits == 0 and not neg:
            neg = True
        else:
            bad = True
            odd |= _odd(c)
        i += 1
    ok = not bad and 0 < digits <= max_digits
    return i, ok, -v if neg else v, odd


@njit(nogil=True, cache=True)
def _game_id(buf, i, size):
    """Scan column 0; returns (end, is 32 hex digits, odd-byte flags)."""
    s = i
    hexok = True
    odd = 0
    while i < size:
        c = buf[i]
        if c == _TAB or c == _LF:
            break
        if not (48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70):
            hexok = False
            odd |= _odd(c)
        i += 1
    return i, hexok and i - s == 32, odd


@intrinsic
def _load_u64(typingctx, arr, idx):
    """The 8 bytes ``arr[idx:idx + 8]`` as one little-endian word (an unaligned load; no checks)."""
    sig = types.uint64(arr, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@njit(nogil=True, cache=True)
def _same(buf, s1, e1, s2, e2):
    """``buf[s1:e1] == buf[s2:e2]``, 8 bytes at a time."""
    length = e1 - s1
    if length != e2 - s2:
        return False
    acc = np.uint64(0)
    words = length >> 3
    for k in range(words):
        acc |= _load_u64(buf, s1 + 8 * k) ^ _load_u64(buf, s2 + 8 * k)
    for k in range(words * 8, length):
        acc |= np.uint64(buf[s1 + k] ^ buf[s2 + k])
    return acc == np.uint64(0)


@njit(nogil=True, cache=True)
def _pad_rest(row, first, sparse, numeric, progression, candidates, round_summary, results, lengths):
    """Pad the arrays of ``row`` from list ``first`` on (0 sparse ... 5 results)."""
    if first <= 0:
        sparse[row, :] = sparse_spec[3]
    if first <= 1:
        numeric[row, :] = 0
    if first <= 2:
        progression[row, :] = progression_spec[3]
    if first <= 3:
        candidates[row, :] = candidates_spec[3]
    if first <= 4:
        round_summary[row, :] = summary_spec[3]
    results[row, :] = 0
    for k in range(max(first, 0), 6):
        lengths[row, k] = 0


_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_LOWS = np.uint64(0x7F7F7F7F7F7F7F7F)
_LFS8 = np.uint64(0x0A0A0A0A0A0A0A0A)


@njit(nogil=True, cache=True)
def _line_ends(buf, words, skip, out):
    """Write the offsets of the LF bytes from ``skip`` on into ``out`` (as many as fit); return their count.

    Reads 8-byte words: a word's LF bytes are found with an exact zero-byte
    test, so only words that hold one are looked at further.
    """
    n = 0
    cap = out.shape[0]
    for k in range(skip >> 3, words.shape[0]):
        y = words[k] ^ _LFS8
        m = ~(((y & _LOWS) + _LOWS) | y) & _HIGHS  # bit 7 of every LF byte
        while m != np.uint64(0):
            p = k * 8 + (np.int64(trailing_zeros(m)) >> 3)
            if p >= skip:
                if n < cap:
                    out[n] = p
                n += 1
            m &= m - np.uint64(1)
    for j in range(max(words.shape[0] * 8, skip), buf.shape[0]):
        if buf[j] == _LF:
            if n < cap:
                out[n] = j
            n += 1
    return n


@njit(nogil=True, cache=True)
def _tail_columns(buf, a, b):
    """TABs and odd-byte flags of ``buf[a:b]``; also the position of its second-last TAB (-1 if none)."""
    tabs = 0
    odd = 0
    last = -1
    second = -1
    for p in range(a, b):
        t = _CLASS[buf[p]]
        if t == 1:
            tabs += 1
            second = last
            last = p
        elif t > 2:
            odd |= t - 2
    return tabs, odd, second


@njit(nogil=True, cache=True)
def _first_diff(buf, s1, e1, s2, e2):
    """The first of the TAB-separated columns of ``buf[s1:e1]`` and ``buf[s2:e2]`` that differ (0-3)."""
    for q in range(4):
        t1 = s1
        while t1 < e1 and buf[t1] != _TAB:
            t1 += 1
        t2 = s2
        while t2 < e2 and buf[t2] != _TAB:
            t2 += 1
        if not _same(buf, s1, t1, s2, t2):
            return q
        s1 = t1 + 1
        s2 = t2 + 1
    return 3


@njit(nogil=True, cache=True)
def _finish(buf, size, row, ncols, odd, gid_ok, lerr, lcol, lval, act_ok, act, ncand, q, summary_start,
            kind, code, column, detail, non_ascii, action, sparse, numeric, progression, candidates,
            round_summary, results, lengths):
    """Settle a line once its column count is known: the round-summary / results lists and the rule."""
    non_ascii[row] = (odd & 2) != 0
    if ncols != 8 and ncols != 10 and ncols != 12:
        _pad_rest(row, q, sparse, numeric, progression, candidates, round_summary, results, lengths)
        kind[row] = 0
        code[row] = c_bad_encoding if odd & 1 else c_column_count
        column[row] = -1
        detail[row] = ncols
        action[row] = -1
        return
    kind[row] = ncols
    if ncols == 10:
        _pad_rest(row, 4, sparse, numeric, progression, candidates, round_summary, results, lengths)
    else:
        first = 6 if ncols == 8 else 10
        t, rc, rv, kept, o = _list(buf, summary_start, size, round_summary, row, summary_spec)
        lengths[row, 4] = kept
        if rc != 0 and lerr == 0:
            lerr, lcol, lval = rc, first, rv
        _, rc, rv, kept, o = _list(buf, t + 1, size, results, row, results_spec)
        lengths[row, 5] = kept
        if rc != 0 and lerr == 0:
            lerr, lcol, lval = rc, first + 1, rv
    action[row] = act if act_ok else -1
    if odd & 1:
        code[row], column[row], detail[row] = c_bad_encoding, -1, 0
    elif not gid_ok:
        code[row], column[row], detail[row] = c_bad_game_id, 0, 0
    elif lerr != 0:
        code[row], column[row], detail[row] = lerr, lcol, lval
    elif not act_ok:
        code[row], column[row], detail[row] = c_not_integer, 5, 0
    elif act < 0 or act >= ncand:
        code[row], column[row], detail[row] = c_bad_action, 5, act
    else:
        code[row], column[row], detail[row] = 0, -1, 0


@njit(nogil=True, cache=True)
def _settle(buf, size, row, tail, end, odd, gid_ok, lerr, lcol, lval, act_ok, act, ncand, kind, code, column,
            detail, non_ascii, action, next_mismatch, sparse, numeric, progression, candidates, round_summary,
            results, lengths):
    """Settle a line whose guess failed by scanning its tail ``buf[tail:end]``.

    Returns (its column count, the position of the TAB before its round
    summary when it has 12 columns).
    """
    tabs, o, second = _tail_columns(buf, tail, end)
    ncols = 7 + tabs
    summary_start = tail if ncols == 8 else second + 1
    _finish(buf, size, row, ncols, odd | o, gid_ok, lerr, lcol, lval, act_ok, act, ncand, 5, summary_start,
            kind, code, column, detail, non_ascii, action, sparse, numeric, progression, candidates,
            round_summary, results, lengths)
    if kind[row] == 0:
        next_mismatch[row] = -2
    return ncols, second


@njit(nogil=True, cache=True)
def _next_state_error(buf, a, size, s_sparse, s_numeric, s_progression, s_candidates):
    """Check the four next-state columns starting at ``buf[a]`` with the state columns' list rules.

    Returns (error code, file column 6-9, detail) of the first column that
    breaks a rule, (0, -1, 0) if none.  The values go to one-row scratch arrays.
    """
    i = a - 1
    for j in range(4):
        if j == 0:
            i, rc, rv, _, _ = _list(buf, i + 1, size, s_sparse, 0, sparse_spec)
        elif j == 1:
            i, rc, rv, _, _ = _list(buf, i + 1, size, s_numeric, 0, numeric_spec)
        elif j == 2:
            i, rc, rv, _, _ = _list(buf, i + 1, size, s_progression, 0, progression_spec)
        else:
            i, rc, rv, _, _ = _list(buf, i + 1, size, s_candidates, 0, candidates_spec)
        if rc != 0:
            return rc, 6 + j, rv
    return 0, -1, 0


@njit(nogil=True, cache=True)
def _next_state_rule(row, rc, rcol, rv, code, column, detail):
    """Record a next-state list error for ``row`` unless an earlier rule already holds it.

    List errors come in column order (1-4, 6-9, then round summary and
    results), all before the action's rules; the whole-line and game-id rules
    come first.
    """
    if rc != 0 and (code[row] == 0 or column[row] == 5 or column[row] >= 10):
        code[row], column[row], detail[row] = rc, rcol, rv


@njit(nogil=True, cache=True)
def _tokenize_kernel(buf, skip, ends, start, end, kind, code, column, detail, non_ascii, same_game, next_mismatch,
                     sparse, numeric, progression, candidates, round_summary, results, lengths, action):
    """Parse every line; see :class:`Tokens` for what is filled.

    The columns after the action are not scanned on the common path: a line
    with more columns is first taken for a 10-column line whose next state
    (its tail) equals the following line's state columns.  Reading the
    following line confirms that with one byte comparison; otherwise the
    line's tail is scanned and the line settled again (8 or 12 columns, a
    wrong count, or a next state that differs).
    """
    size = buf.shape[0]
    n = start.shape[0]
    cs = np.empty(6, dtype=np.int64)  # column starts (0-5)
    ce = np.empty(6, dtype=np.int64)  # column ends
    prev_has_next = False  # the previous line has next-state columns: buf[prev_ns:prev_ne]
    prev_ns = 0
    prev_ne = 0
    prev_gs = -1
    prev_ge = -1
    # the line whose tail is still a guess, and what settling it needs
    g_row = -1
    g_tail = g_odd = g_lerr = g_lcol = g_lval = g_act = g_ncand = 0
    g_gid_ok = g_act_ok = False
    pos = skip
    for row in range(n):
        s = pos
        e = ends[row]
        pos = e + 1
        start[row] = s
        end[row] = e
        i, gid_ok, odd = _game_id(buf, s, size)
        cs[0] = s
        ce[0] = i
        lerr = 0
        lcol = -1
        lval = 0
        act_ok = False
        act = -1
        ncand = 0
        state_odd = 0
        q = 0
        # columns 1-5: the state lists and the action
        while q < 5 and i < size and buf[i] == _TAB:
            q += 1
            st = i + 1
            rc = 0
            rv = 0
            if q == 1:
                i, rc, rv, kept, o = _list(buf, st, size, sparse, row, sparse_spec)
                lengths[row, 0] = kept
            elif q == 2:
                i, rc, rv, kept, o = _list(buf, st, size, numeric, row, numeric_spec)
                lengths[row, 1] = kept
            elif q == 3:
                i, rc, rv, kept, o = _list(buf, st, size, progression, row, progression_spec)
                lengths[row, 2] = kept
            elif q == 4:
                i, rc, rv, kept, o = _list(buf, st, size, candidates, row, candidates_spec)
                lengths[row, 3] = kept
                ncand = kept
            else:
                i, act_ok, act, o = _scalar(buf, st, size)
            cs[q] = st
            ce[q] = i
            odd |= o
            if q <= 4:
                state_odd |= o
            if rc != 0 and lerr == 0:
                lerr, lcol, lval = rc, q, rv
        same_game[row] = prev_gs >= 0 and _same(buf, cs[0], ce[0], prev_gs, prev_ge)
        prev_gs = cs[0]
        prev_ge = ce[0]

        # settle the previous line's guess with this line's state columns
        confirmed = False
        if g_row >= 0:
            if q >= 4 and _same(buf, g_tail, ends[g_row], cs[1], ce[4]):
                # right: 10 columns, and its next state is this line's state (same bytes, same odd bytes)
                if state_odd & 1:
                    code[g_row], column[g_row], detail[g_row] = c_bad_encoding, -1, 0
                if state_odd & 2:
                    non_ascii[g_row] = True
                prev_has_next, prev_ns, prev_ne = True, g_tail, ends[g_row]
                confirmed = True
            else:
                ncols, second = _settle(buf, size, g_row, g_tail, ends[g_row], g_odd, g_gid_ok, g_lerr, g_lcol,
                                        g_lval, g_act_ok, g_act, g_ncand, kind, code, column, detail, non_ascii,
                                        action, next_mismatch, sparse, numeric, progression, candidates,
                                        round_summary, results, lengths)
                prev_has_next = ncols == 10 or ncols == 12
                prev_ns = g_tail
                prev_ne = ends[g_row] if ncols == 10 else second
            g_row = -1

        # this line
        if q == 5 and i < size and buf[i] == _TAB:  # a tail: guess 10 columns (settled by the next line)
            g_row, g_tail, g_odd, g_gid_ok = row, i + 1, odd, gid_ok
            g_lerr, g_lcol, g_lval, g_act_ok, g_act, g_ncand = lerr, lcol, lval, act_ok, act, ncand
            ncols = 10
        else:
            ncols = q + 1
        _finish(buf, size, row, ncols, odd, gid_ok, lerr, lcol, lval, act_ok, act, ncand, q, 0,
                kind, code, column, detail, non_ascii, action,
                sparse, numeric, progression, candidates, round_summary, results, lengths)
        if kind[row] == 0:
            next_mismatch[row] = -2
        elif prev_has_next:  # the previous line's next-state columns against this line's state columns
            if confirmed or _same(buf, prev_ns, prev_ne, cs[1], ce[4]):
                next_mismatch[row] = -1
            else:
                next_mismatch[row] = _first_diff(buf, prev_ns, prev_ne, cs[1], ce[4])
        else:
            next_mismatch[row] = -2
        prev_has_next = False  # set again when this line is settled

    if g_row >= 0:  # the last line: nothing follows to confirm a guess
        _settle(buf, size, g_row, g_tail, ends[g_row], g_odd, g_gid_ok, g_lerr, g_lcol, g_lval, g_act_ok, g_act,
                g_ncand, kind, code, column, detail, non_ascii, action, next_mismatch, sparse, numeric,
                progression, candidates, round_summary, results, lengths)


@njit(nogil=True, cache=True)
def _next_state_pass(buf, start, end, kind, code, column, detail, next_mismatch):
    """Check the next-state columns (6-9) of every 10- and 12-column line with the state columns' list rules.

    Runs after the kernel, so its loop stays as it was.  Where a line's next
    state equals the following line's state byte for byte (``next_mismatch``
    -1 there), its tokens are that line's: its first list error in columns
    1-4, moved 5 columns on.  Other next states (different bytes, the last
    line of the data, a following line whose state errors are hidden behind a
    whole-line or game-id error) are parsed on their own.
    """
    n = start.shape[0]
    size = buf.shape[0]
    s_sparse = np.empty((1, sparse_spec[0]), dtype=np.int16)
    s_numeric = np.empty((1, numeric_spec[0]), dtype=np.int32)
    s_progression = np.empty((1, progression_spec[0]), dtype=np.int16)
    s_candidates = np.empty((1, candidates_spec[0]), dtype=np.int16)
    for r in range(n):
        if kind[r] != 10 and kind[r] != 12:
            continue
        if r + 1 < n and next_mismatch[r + 1] == -1:
            c = column[r + 1]
            if 1 <= c <= 4:
                _next_state_rule(r, code[r + 1], c + 5, detail[r + 1], code, column, detail)
                continue
            if code[r + 1] == 0 or c >= 5:  # no list error in its state columns
                continue
        # parse on its own: the next state starts after the line's sixth TAB
        p = start[r]
        tabs = 0
        while tabs < 6:
            if buf[p] == _TAB:
                tabs += 1
            p += 1
        rc, rcol, rv = _next_state_error(buf, p, size, s_sparse, s_numeric, s_progression, s_candidates)
        _next_state_rule(r, rc, rcol, rv, code, column, detail)


@njit(nogil=True, cache=True)
def game_rounds(key, starts):
    """Dense rank of ``key`` within each game: the game-wide round index of every row.

    ``starts`` are the first rows of the games (ascending, ``starts[0] == 0``);
    a game's rows are contiguous.  Shapes: ``key`` (n,), ``starts`` (g,);
    returns (n,) int64.
    """
    n = key.shape[0]
    out = np.empty(n, dtype=np.int64)
    for g in range(starts.shape[0]):
        a = starts[g]
        b = starts[g + 1] if g + 1 < starts.shape[0] else n
        distinct = np.unique(key[a:b])
        out[a:b] = np.searchsorted(distinct, key[a:b])
    return out


@njit(nogil=True, cache=True)
def sparse_head(sparse, ok, lows, counts, min_next):
    """The identifiers at the head of each sparse vector, and whether every ok row has them there.

    Position ``p`` should hold an id in ``[lows[p], lows[p] + counts[p])``
    and every later position an id ``>= min_next`` (so with disjoint ranges
    below ``min_next`` a passing row holds exactly one id of each range).  Shapes: ``sparse``
    (n, 29), ``ok`` (n,), ``lows``/``counts`` (k,); returns ((n, k) uint8 of
    ``sparse[:, p] - lows[p]``, True if every ok row passes).
    """
    n = sparse.shape[0]
    k = lows.shape[0]
    out = np.empty((n, k), dtype=np.uint8)
    every = True
    width = sparse.shape[1]
    for r in range(n):
        low = min_next
        for p in range(k, width):
            low = min(low, np.int64(sparse[r, p]))
        fits = low >= min_next
        for p in range(k):
            v = np.int64(sparse[r, p]) - lows[p]
            fits = fits and 0 <= v < counts[p]
            out[r, p] = v
        if ok[r] and not fits:
            every = False
    return out, every


if __name__ == "__main__":  # `python -m rewardlab.sources.kanachan.tokenizer`: compile now (make does, once per install)
    import time

    t0 = time.perf_counter()
    tokenize(b"0\n")
    game_rounds(np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    sparse_head(np.zeros((1, 29), dtype=np.int16), np.ones(1, dtype=np.bool_), np.zeros(9, dtype=np.int64),
                np.ones(9, dtype=np.int64), 0)
    print(f"rewardlab: text tokenizer ready ({time.perf_counter() - t0:.1f} s; compiled once, then cached by numba)")
