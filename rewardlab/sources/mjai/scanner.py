"""The compiled scanner: MJAI JSON lines straight into arrays of event codes.

One pass over a block of text reads each line as one JSON object and keeps
only the fields the tracker needs (:data:`rewardlab.sources.mjai.tiles.FIELDS`),
as small integers: the event type, seats, tiles as 37-kind codes, the
integers of ``start_kyoku`` and the score lists.  Any other key is skipped
whatever its value (strings with escapes, numbers, nested lists and objects).
A line that is not one JSON object (its strings included: JSON's escapes
only, UTF-8 only; a repeated key replaces the value, as in JSON), names an
unknown event type or a tile that does not exist, or gives a known field a
value of the wrong shape gets an error code, the byte column and the field
(:data:`CODES`); nothing here
formats messages (:mod:`rewardlab.sources.mjai.reader` does, only for the
lines it reports).

The kernel is compiled by numba on first use (cached on disk afterwards,
``make`` compiles it) and releases the GIL, so blocks are scanned in
parallel threads.  ``tests/test_mjai.py`` checks it against ``json.loads``
line by line (``tests/test_mjai_hostile.py`` on random strings).

Examples
--------
>>> import numpy as np
>>> from rewardlab.sources.mjai.scanner import scan
>>> text = b'{"type":"dahai","actor":2,"pai":"5pr","tsumogiri":false}\\n'
>>> ev = scan(np.frombuffer(text, dtype=np.uint8), np.array([0]), np.array([len(text) - 1]))
>>> int(ev.type[0]), int(ev.actor[0]), int(ev.pai[0]), int(ev.tsumogiri[0]), int(ev.code[0])
(4, 2, 10, 0, 0)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rewardlab.sources.mjai import tiles as T

__all__ = ["Events", "scan", "CODES", "compile_all"]

#: Error codes of :func:`scan`, by rule name (0: the line passed; :data:`rewardlab.sources.mjai.tiles.SCAN_CODES`).
CODES = T.SCAN_CODES
_NOT_JSON, _UNKNOWN, _BAD_TILE, _BAD_VALUE, _NO_TYPE = 1, 2, 3, 4, 5
_ABSENT = -(2 ** 31)  # an absent integer field

# --- byte-level tables --------------------------------------------------------------------------
_SPACE = np.zeros(256, dtype=np.bool_)
for _c in b" \t\r":
    _SPACE[_c] = True

#: Keys and event types as byte strings in one table each: (bytes, code).
_KEY_BYTES = [(k.encode(), v) for k, v in T.FIELDS.items()]
_TYPE_BYTES = [(k.encode(), v) for k, v in T.EVENT_TYPES.items()]


def _table(pairs):
    """Pack (bytes, code) pairs into a padded 2-D byte table, lengths and codes (numba reads them)."""
    width = max(len(b) for b, _ in pairs)
    table = np.zeros((len(pairs), width), dtype=np.uint8)
    lengths = np.zeros(len(pairs), dtype=np.int64)
    codes = np.zeros(len(pairs), dtype=np.int64)
    for i, (b, code) in enumerate(pairs):
        table[i, :len(b)] = np.frombuffer(b, dtype=np.uint8)
        lengths[i] = len(b)
        codes[i] = code
    return table, lengths, codes


_KEYS = _table(_KEY_BYTES)
_TYPES = _table(_TYPE_BYTES)
#: Tile names: "1m" .. "C", "5mr", "?" -> kind (as (bytes, kind)).
_TILES = _table([(name.encode(), kind) for name, kind in T.KIND_OF_NAME.items()])
_WIND_CODES = _table([(name.encode(), code) for name, code in T.WINDS.items()])


class Events:
    """The arrays one :func:`scan` call fills, one row per line.

    Attributes
    ----------
    type : numpy.ndarray of int8, shape (n,)
        :data:`rewardlab.sources.mjai.tiles.EVENT_TYPES` code; 0 for a blank line.
    actor, target, pai, tsumogiri, bakaze, oya, dora : numpy.ndarray of int8, shape (n,)
        Seats, tile kinds, 0/1, wind; -1 when the line has no such field.
    kyoku, honba, kyotaku : numpy.ndarray of int32, shape (n,)
        ``start_kyoku``'s integers; ``-2**31`` when absent.
    consumed : numpy.ndarray of int8, shape (n, 4)
        Tile kinds, -1 padded.
    scores, deltas : numpy.ndarray of int64, shape (n, 4)
        With ``has_scores`` / ``has_deltas`` (bool, shape (n,)).
    tenpais : numpy.ndarray of int8, shape (n, 4)
        0/1, -1 when absent.
    ranks : numpy.ndarray of int64, shape (n, 4)
        ``end_game``'s ranks as given, with ``has_ranks`` (int8, shape (n,)): 0 absent (or null), 1 four
        integers, -1 a value of another shape (an error only where the tracker reads it: on ``end_game``).
    tehais : numpy.ndarray of int8, shape (n, 4, 14)
        Tile kinds of each seat's dealt hand, -1 padded (``start_kyoku`` only).
    code, column, detail : numpy.ndarray, shape (n,)
        First rule the line breaks (:data:`CODES`), the 0-based byte column,
        and the field (a :data:`rewardlab.sources.mjai.tiles.FIELDS` code).
    """

    def __init__(self, n: int):
        i8 = lambda *shape: np.full(shape, -1, dtype=np.int8)  # noqa: E731
        self.n = n
        self.type = np.zeros(n, dtype=np.int8)
        self.actor, self.target, self.pai, self.tsumogiri = i8(n), i8(n), i8(n), i8(n)
        self.bakaze, self.oya, self.dora = i8(n), i8(n), i8(n)
        self.kyoku = np.full(n, _ABSENT, dtype=np.int32)
        self.honba = np.full(n, _ABSENT, dtype=np.int32)
        self.kyotaku = np.full(n, _ABSENT, dtype=np.int32)
        self.consumed = i8(n, 4)
        self.scores = np.zeros((n, 4), dtype=np.int64)
        self.deltas = np.zeros((n, 4), dtype=np.int64)
        self.has_scores = np.zeros(n, dtype=np.bool_)
        self.has_deltas = np.zeros(n, dtype=np.bool_)
        self.tenpais = i8(n, 4)
        self.ranks = np.zeros((n, 4), dtype=np.int64)
        self.has_ranks = np.zeros(n, dtype=np.int8)
        self.tehais = i8(n, 4, 14)
        self.code = np.zeros(n, dtype=np.int8)
        self.column = np.zeros(n, dtype=np.int32)
        self.detail = np.zeros(n, dtype=np.int32)


def scan(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Events:
    """Scan lines ``buf[starts[i]:ends[i]]`` (no ``\\n``) into :class:`Events`.

    Parameters
    ----------
    buf : numpy.ndarray of uint8
        The text.
    starts, ends : numpy.ndarray of int64, shape (n,)
        Byte offsets of each line's first byte and of its end.

    Examples
    --------
    >>> text = b'{"type":"nukidora","actor":0}\\n'
    >>> ev = scan(np.frombuffer(text, dtype=np.uint8), np.array([0]), np.array([len(text) - 1]))
    >>> int(ev.code[0]) == CODES["unknown_event"], int(ev.column[0])
    (True, 8)
    """
    n = len(starts)
    ev = Events(n)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    special = np.zeros(n, dtype=np.bool_)
    _special_rows(buf, ends, special)
    _scan_kernel(buf, np.ascontiguousarray(starts, dtype=np.int64), ends, special,
                 _KEYS[0], _KEYS[1], _KEYS[2], _TYPES[0], _TYPES[1], _TYPES[2], _TILES[0], _TILES[1], _TILES[2],
                 _WIND_CODES[0], _WIND_CODES[1], _WIND_CODES[2],
                 ev.type, ev.actor, ev.target, ev.pai, ev.tsumogiri, ev.bakaze, ev.oya, ev.dora, ev.kyoku,
                 ev.honba, ev.kyotaku, ev.consumed, ev.scores, ev.deltas, ev.has_scores, ev.has_deltas,
                 ev.tenpais, ev.tehais, ev.ranks, ev.has_ranks, ev.code, ev.column, ev.detail)
    return ev


# --- the kernel -----------------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _ws(buf, i, e):
    while i < e and _SPACE[buf[i]]:
        i += 1
    return i



@njit(cache=True, nogil=True)
def _lookup(buf, a, b, table, lengths, codes):
    """Code of the bytes ``buf[a:b]`` in ``table``, or -1."""
    size = b - a
    for r in range(table.shape[0]):
        if lengths[r] != size:
            continue
        same = True
        for j in range(size):
            if buf[a + j] != table[r, j]:
                same = False
                break
        if same:
            return codes[r]
    return -1


@njit(cache=True, nogil=True)
def _utf8_length(buf, i, e):
    """The length of the well-formed UTF-8 sequence at ``i`` (its first byte >= 0x80), or 0."""
    c = buf[i]
    if 0xC2 <= c <= 0xDF:
        n, lo, hi = 2, 0x80, 0xBF
    elif c == 0xE0:
        n, lo, hi = 3, 0xA0, 0xBF
    elif c == 0xED:  # no UTF-16 surrogates
        n, lo, hi = 3, 0x80, 0x9F
    elif 0xE1 <= c <= 0xEF:
        n, lo, hi = 3, 0x80, 0xBF
    elif c == 0xF0:
        n, lo, hi = 4, 0x90, 0xBF
    elif 0xF1 <= c <= 0xF3:
        n, lo, hi = 4, 0x80, 0xBF
    elif c == 0xF4:
        n, lo, hi = 4, 0x80, 0x8F
    else:
        return 0
    if i + n > e or not lo <= buf[i + 1] <= hi:
        return 0
    for k in range(2, n):
        if not 0x80 <= buf[i + k] <= 0xBF:
            return 0
    return n


@njit(cache=True, nogil=True)
def _hex(c):
    return 48 <= c <= 57 or 65 <= c <= 70 or 97 <= c <= 102


@njit(cache=True, nogil=True)
def _string_end(buf, i, e):
    """``buf[i]`` is an opening quote: the index of the closing one, or -1 (a control byte).  Escapes
    and UTF-8 are checked by :func:`_bad_string_byte` once the line has parsed."""
    i += 1
    while i < e:
        c = buf[i]
        if c == 34:  # "
            return i
        if c == 92:  # backslash: skip the escaped byte
            i += 2
            continue
        if c < 32:
            return -1
        i += 1
    return -1


@njit(cache=True, nogil=True)
def _special_rows(buf, ends, out):
    """Mark ``out[row]`` for each line holding a byte >= 0x80 or a backslash: only their strings need
    :func:`_bad_string_byte`.  Eight bytes at a time (nearly every MJAI line has neither)."""
    n = buf.shape[0] // 8
    words = buf[:n * 8].view(np.uint64)
    high = np.uint64(0x8080808080808080)
    ones = np.uint64(0x0101010101010101)
    backslashes = np.uint64(0x5C5C5C5C5C5C5C5C)
    for w in range(n + 1):
        if w < n:
            x = words[w]
            y = x ^ backslashes
            if (x & high) == 0 and ((y - ones) & ~y & high) == 0:
                continue
        for p in range(8 * w, min(8 * w + 8, buf.shape[0])):
            if buf[p] >= 128 or buf[p] == 92:
                row = np.searchsorted(ends, p)
                if row < out.shape[0]:
                    out[row] = True


@njit(cache=True, nogil=True)
def _bad_string_byte(buf, i, e):
    """The index of the first byte in a string of the parsed line ``buf[i:e]`` that makes it not JSON's
    (an escape other than ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``, bytes that are not UTF-8), or -1."""
    inside = False
    while i < e:
        c = buf[i]
        if not inside:
            inside = c == 34
            i += 1
        elif c == 34:
            inside = False
            i += 1
        elif c == 92:
            x = buf[i + 1] if i + 1 < e else 0
            if x == 117:  # u and four hex digits
                if i + 6 > e or not (_hex(buf[i + 2]) and _hex(buf[i + 3]) and _hex(buf[i + 4])
                                     and _hex(buf[i + 5])):
                    return i
                i += 6
            elif x == 34 or x == 92 or x == 47 or x == 98 or x == 102 or x == 110 or x == 114 or x == 116:
                i += 2
            else:
                return i
        elif c >= 128:
            n = _utf8_length(buf, i, e)
            if n == 0:
                return i
            i += n
        else:
            i += 1
    return -1


@njit(cache=True, nogil=True)
def _boolean(buf, i, e):
    """``true`` / ``false`` at ``i``: (1 / 0, index after it), index -1 when it is neither."""
    if i + 4 <= e and buf[i] == 116 and buf[i + 1] == 114 and buf[i + 2] == 117 and buf[i + 3] == 101:
        return 1, i + 4
    if i + 5 <= e and buf[i] == 102 and buf[i + 1] == 97 and buf[i + 2] == 108 and buf[i + 3] == 115 \
            and buf[i + 4] == 101:
        return 0, i + 5
    return 0, -1


@njit(cache=True, nogil=True)
def _scalar_end(buf, i, e):
    """A JSON literal or number at ``i``: the index after it, or -1."""
    c = buf[i]
    if c == 116 or c == 102:  # true false
        return _boolean(buf, i, e)[1]
    if c == 110:  # null
        ok = i + 4 <= e and buf[i + 1] == 117 and buf[i + 2] == 108 and buf[i + 3] == 108
        return i + 4 if ok else -1
    j = i
    if buf[j] == 45:  # -
        j += 1
    if j >= e:
        return -1
    if buf[j] == 48:  # a 0 has no digits after it
        j += 1
    elif 49 <= buf[j] <= 57:
        while j < e and 48 <= buf[j] <= 57:
            j += 1
    else:
        return -1
    if j < e and buf[j] == 46:  # .
        j += 1
        k = j
        while j < e and 48 <= buf[j] <= 57:
            j += 1
        if j == k:
            return -1
    if j < e and (buf[j] == 101 or buf[j] == 69):  # e E
        j += 1
        if j < e and (buf[j] == 43 or buf[j] == 45):
            j += 1
        k = j
        while j < e and 48 <= buf[j] <= 57:
            j += 1
        if j == k:
            return -1
    return j


@njit(cache=True, nogil=True)
def _member_key(buf, i, e):
    """A ``"key" :`` at ``i`` (after whitespace): the index after the colon, or -1."""
    i = _ws(buf, i, e)
    if i >= e or buf[i] != 34:
        return -1
    j = _string_end(buf, i, e)
    if j < 0:
        return -1
    i = _ws(buf, j + 1, e)
    if i >= e or buf[i] != 58:
        return -1
    return i + 1


@njit(cache=True, nogil=True)
def _skip_value(buf, i, e, stack):
    """Skip one well-formed JSON value starting at ``i`` (nested up to ``len(stack)``); the index after
    it, or -1 when it is not one."""
    depth = 0
    while True:
        # a value is expected at i
        i = _ws(buf, i, e)
        if i >= e:
            return -1
        c = buf[i]
        if c == 123 or c == 91:  # { [
            if depth >= stack.shape[0]:
                return -1
            stack[depth] = c
            depth += 1
            i = _ws(buf, i + 1, e)
            if i < e and buf[i] == (125 if c == 123 else 93):
                depth -= 1
                i += 1
            elif c == 123:
                i = _member_key(buf, i, e)
                if i < 0:
                    return -1
                continue
            else:
                continue
        elif c == 34:
            j = _string_end(buf, i, e)
            if j < 0:
                return -1
            i = j + 1
        else:
            i = _scalar_end(buf, i, e)
            if i < 0:
                return -1
        # after a value: close containers, or go on to the next member
        while True:
            if depth == 0:
                return i
            i = _ws(buf, i, e)
            if i >= e:
                return -1
            c = buf[i]
            top = stack[depth - 1]
            if c == 44:  # ,
                if top == 123:
                    i = _member_key(buf, i + 1, e)
                    if i < 0:
                        return -1
                else:
                    i += 1
                break
            if c == (125 if top == 123 else 93):
                depth -= 1
                i += 1
                continue
            return -1


@njit(cache=True, nogil=True)
def _integer(buf, i, e):
    """An integer at ``i``: (value, index after it); index -1 when it is not one (floats included)."""
    neg = False
    if i < e and buf[i] == 45:
        neg = True
        i += 1
    v = 0
    digits = 0
    while i < e and 48 <= buf[i] <= 57:
        v = v * 10 + (buf[i] - 48)
        digits += 1
        i += 1
    if digits == 0 or digits > 15:
        return 0, -1
    if i < e and (buf[i] == 46 or buf[i] == 101 or buf[i] == 69):  # . e E: not an integer
        return 0, -1
    return (-v if neg else v), i


@njit(cache=True, nogil=True)
def _tile(buf, i, e, ttable, tlengths, tcodes):
    """A tile name string at ``i``: (kind, index after it); kind -1: not a tile; index -1: not a string."""
    if i >= e or buf[i] != 34:
        return -1, -1
    j = _string_end(buf, i, e)
    if j < 0:
        return -1, -1
    return _lookup(buf, i + 1, j, ttable, tlengths, tcodes), j + 1


@njit(cache=True, nogil=True)
def _int_list(buf, i, e, out, row):
    """``[a, b, c, d]`` of integers into ``out[row]``; the index after it, or -1 (-2: wrong length)."""
    if i >= e or buf[i] != 91:
        return -1
    i = _ws(buf, i + 1, e)
    k = 0
    if i < e and buf[i] == 93:
        return -2
    while True:
        v, j = _integer(buf, i, e)
        if j < 0:
            return -1
        if k >= 4:
            return -2
        out[row, k] = v
        k += 1
        i = _ws(buf, j, e)
        if i < e and buf[i] == 44:
            i = _ws(buf, i + 1, e)
            continue
        if i < e and buf[i] == 93:
            return i + 1 if k == 4 else -2
        return -1


@njit(cache=True, nogil=True)
def _bool_list(buf, i, e, out, row):
    """``[true, false, ...]`` (4 values) into ``out[row]`` as 1/0; the index after it, or -1."""
    if i >= e or buf[i] != 91:
        return -1
    i = _ws(buf, i + 1, e)
    k = 0
    while True:
        v, i = _boolean(buf, i, e)
        if i < 0:
            return -1
        if k >= 4:
            return -1
        out[row, k] = v
        k += 1
        i = _ws(buf, i, e)
        if i < e and buf[i] == 44:
            i = _ws(buf, i + 1, e)
            continue
        if i < e and buf[i] == 93:
            return i + 1 if k == 4 else -1
        return -1


@njit(cache=True, nogil=True)
def _tile_list(buf, i, e, out, limit, ttable, tlengths, tcodes):
    """``["1m", ...]`` (at most ``limit`` tiles) into ``out``; (index after it, bad tile flag), index -1: shape."""
    if i >= e or buf[i] != 91:
        return -1, False
    i = _ws(buf, i + 1, e)
    if i < e and buf[i] == 93:
        return i + 1, False
    k = 0
    bad = False
    while True:
        kind, j = _tile(buf, i, e, ttable, tlengths, tcodes)
        if j < 0 or k >= limit:
            return -1, False
        if kind < 0:
            bad = True
        out[k] = kind
        k += 1
        i = _ws(buf, j, e)
        if i < e and buf[i] == 44:
            i = _ws(buf, i + 1, e)
            continue
        if i < e and buf[i] == 93:
            return i + 1, bad
        return -1, False


@njit(cache=True, nogil=True)
def _scan_kernel(buf, starts, ends, special, ktable, klengths, kcodes, etable, elengths, ecodes, ttable, tlengths,
                 tcodes, wtable, wlengths, wcodes, etype, actor, target, pai, tsumogiri, bakaze, oya, dora,
                 kyoku, honba, kyotaku, consumed, scores, deltas, has_scores, has_deltas, tenpais, tehais,
                 ranks, has_ranks, code, column, detail):
    stack = np.empty(64, dtype=np.uint8)  # open containers of a skipped value
    for row in range(starts.shape[0]):
        s = starts[row]
        e = ends[row]
        i = _ws(buf, s, e)
        if e - i >= 3 and buf[i] == 0xEF and buf[i + 1] == 0xBB and buf[i + 2] == 0xBF:
            i = _ws(buf, i + 3, e)  # a UTF-8 byte order mark (a file's first line)
        if i == e:
            continue  # a blank line: type 0, no error
        first = i
        err = 0
        err_at = i
        field = 0
        if buf[i] != 123:
            code[row] = _NOT_JSON
            column[row] = i - s
            continue
        i = _ws(buf, i + 1, e)
        seen_type = False
        if i < e and buf[i] == 125:
            i += 1
        else:
            while True:
                if i >= e or buf[i] != 34:
                    err, err_at = _NOT_JSON, i
                    break
                kend = _string_end(buf, i, e)
                if kend < 0:
                    err, err_at = _NOT_JSON, i
                    break
                key = _lookup(buf, i + 1, kend, ktable, klengths, kcodes)
                i = _ws(buf, kend + 1, e)
                if i >= e or buf[i] != 58:  # :
                    err, err_at = _NOT_JSON, i
                    break
                i = _ws(buf, i + 1, e)
                v_at = i
                j = -1
                if key == 1:  # type
                    if i < e and buf[i] == 34:
                        j = _string_end(buf, i, e)
                        if j >= 0:
                            t = _lookup(buf, i + 1, j, etable, elengths, ecodes)
                            if t < 0:
                                err, err_at, field = _UNKNOWN, i, key
                            else:
                                etype[row] = t
                                seen_type = True
                            j += 1
                    if j < 0 and err == 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                elif key == 2 or key == 3 or key == 11:  # actor target oya
                    v, j = _integer(buf, i, e)
                    if j >= 0 and 0 <= v <= 3:
                        if key == 2:
                            actor[row] = v
                        elif key == 3:
                            target[row] = v
                        else:
                            oya[row] = v
                    else:
                        j = -1
                        err, err_at, field = _BAD_VALUE, v_at, key
                elif key == 4 or key == 14:  # pai dora_marker
                    kind, j = _tile(buf, i, e, ttable, tlengths, tcodes)
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                    elif kind < 0:
                        err, err_at, field = _BAD_TILE, v_at, key
                        j = -1
                    elif key == 4:
                        pai[row] = kind
                    else:
                        dora[row] = kind
                elif key == 5:  # consumed (a repeated key replaces the list, as in JSON)
                    consumed[row, :] = -1
                    j, bad = _tile_list(buf, i, e, consumed[row], 4, ttable, tlengths, tcodes)
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                    elif bad:
                        err, err_at, field = _BAD_TILE, v_at, key
                        j = -1
                elif key == 6:  # tsumogiri
                    v, j = _boolean(buf, i, e)
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                    else:
                        tsumogiri[row] = v
                elif key == 7:  # bakaze
                    if i < e and buf[i] == 34:
                        j = _string_end(buf, i, e)
                        if j >= 0:
                            w = _lookup(buf, i + 1, j, wtable, wlengths, wcodes)
                            if w < 0:
                                j = -1
                            else:
                                bakaze[row] = w
                                j += 1
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                elif key == 8 or key == 9 or key == 10:  # kyoku honba kyotaku
                    v, j = _integer(buf, i, e)
                    if j >= 0 and 0 <= v < 2 ** 31:
                        if key == 8:
                            kyoku[row] = v
                        elif key == 9:
                            honba[row] = v
                        else:
                            kyotaku[row] = v
                    else:
                        j = -1
                        err, err_at, field = _BAD_VALUE, v_at, key
                elif key == 12 or key == 15:  # scores deltas
                    if i + 4 <= e and buf[i] == 110 and buf[i + 1] == 117 and buf[i + 2] == 108 \
                            and buf[i + 3] == 108:  # null: treated as absent (a later key wins, as in JSON)
                        j = i + 4
                        if key == 12:
                            has_scores[row] = False
                            scores[row, :] = 0
                        else:
                            has_deltas[row] = False
                            deltas[row, :] = 0
                    else:
                        j = _int_list(buf, i, e, scores if key == 12 else deltas, row)
                        if j < 0:
                            err, err_at, field = _BAD_VALUE, v_at, key
                        elif key == 12:
                            has_scores[row] = True
                        else:
                            has_deltas[row] = True
                elif key == 13:  # tehais: four lists of tiles
                    tehais[row, :, :] = -1
                    if i < e and buf[i] == 91:
                        i = _ws(buf, i + 1, e)
                        p = 0
                        while p < 4:
                            j, bad = _tile_list(buf, i, e, tehais[row, p], 14, ttable, tlengths, tcodes)
                            if j < 0:
                                break
                            if bad and err == 0:
                                err, err_at, field = _BAD_TILE, i, key
                            p += 1
                            i = _ws(buf, j, e)
                            if i < e and buf[i] == 44:
                                i = _ws(buf, i + 1, e)
                                continue
                            break
                        if j >= 0 and p == 4 and i < e and buf[i] == 93:
                            j = i + 1
                        else:
                            j = -1
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                    elif err != 0:
                        j = -1
                elif key == 16:  # tenpais
                    tenpais[row, :] = -1
                    j = _bool_list(buf, i, e, tenpais, row)
                    if j < 0:
                        err, err_at, field = _BAD_VALUE, v_at, key
                elif key == 17:  # ranks: 4 integers; another shape is only wrong on end_game (the tracker's call)
                    if i + 4 <= e and buf[i] == 110 and buf[i + 1] == 117 and buf[i + 2] == 108 \
                            and buf[i + 3] == 108:  # null: treated as absent
                        j = i + 4
                        has_ranks[row] = 0
                        ranks[row, :] = 0
                    else:
                        j = _int_list(buf, i, e, ranks, row)
                        if j >= 0:
                            has_ranks[row] = 1
                        else:
                            has_ranks[row] = -1
                            j = _skip_value(buf, i, e, stack)
                            if j < 0:
                                err, err_at = _NOT_JSON, v_at
                else:
                    j = _skip_value(buf, i, e, stack)
                    if j < 0:
                        err, err_at = _NOT_JSON, v_at
                if err != 0:
                    break
                i = _ws(buf, j, e)
                if i < e and buf[i] == 44:
                    i = _ws(buf, i + 1, e)
                    continue
                if i < e and buf[i] == 125:
                    i += 1
                    break
                err, err_at = _NOT_JSON, i
                break
        if err == 0:
            i = _ws(buf, i, e)
            if i != e:
                err, err_at = _NOT_JSON, i
            elif not seen_type:
                err, err_at = _NO_TYPE, first
        if err == 0 and special[row]:
            bad = _bad_string_byte(buf, first, e)
            if bad >= 0:  # JSON's strings: only its escapes, and UTF-8
                err, err_at, field = _NOT_JSON, bad, 0
        if err != 0:
            code[row] = err
            column[row] = err_at - s
            detail[row] = field


def compile_all() -> None:
    """Compile (or load from numba's cache) the kernel."""
    text = b'{"type":"start_kyoku","tehais":[["1m"],[],[],[]],"scores":[1,2,3,4],"x":[{"a":"\\""}]}\n'
    scan(np.frombuffer(text, dtype=np.uint8), np.array([0]), np.array([len(text) - 1]))
