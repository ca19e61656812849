"""RLlib's compressed columns (``compress_columns``) decoded without running code from the file.

RLlib packs a column (``ray.rllib.utils.compression.pack``) as
``base64(lz4.frame.compress(cloudpickle.dumps(array)))``: decoding means
unpickling, and unpickling an untrusted file can run any code or allocate
any amount of memory.  So by default :func:`unpack` never hands NumPy's own
constructors to the unpickler.  It reads the pickle's operations first
(only those a pickled numeric array uses, at most :data:`MAX_PICKLE_OPS`,
every length within the data), then unpickles with stand-ins for the
globals a pickled array refers to (:data:`SAFE_GLOBALS`): each array is
rebuilt from bytes the pickle holds, of exactly the length its shape and
dtype need (booleans, integers and floats only; no ``numpy.ndarray(...)``
call, no strides), so an array is never larger than the data that holds it.
Any other global is refused with :class:`UnsafePickle`; a malformed value
with :class:`UndecodableColumn`; the caller says which column and line.

Decompression is bounded before it allocates: the LZ4 frame is decoded as
the pickle is read, never past ``limit`` bytes (:data:`MAX_UNPACKED_BYTES`
by default), a frame whose header claims more than that (or more than LZ4
can expand its bytes to, :data:`LZ4_MAX_RATIO`) is refused unread, and the
pickle may hold at most :data:`PICKLE_OVERHEAD` bytes beyond its array's
data (:class:`OversizedColumn`).  ``allow_pickle=True`` unpickles with
Python's full unpickler and lifts :data:`MAX_UNPACKED_BYTES` (the default
``limit``), for files you trust.  LZ4 comes from the ``lz4`` package, the
library RLlib itself uses (the ``rllib`` extra; without it, the command that
installs it is named: :func:`rewardlab.core.extras.missing_extra`).

Examples
--------
>>> import base64, pickle, lz4.frame, numpy as np
>>> text = base64.b64encode(lz4.frame.compress(pickle.dumps(np.arange(3.0), protocol=5))).decode()
>>> unpack(text).tolist()
[0.0, 1.0, 2.0]
>>> unpack(text, limit=10)
Traceback (most recent call last):
...
rewardlab.sources.rllib.compression.OversizedColumn: the value decodes to 151 bytes, more than the limit of 10 bytes
"""

from __future__ import annotations

import base64
import binascii
import math
import pickle
import pickletools

import numpy as np

from rewardlab.core.extras import import_extra

__all__ = ["unpack", "UnsafePickle", "UndecodableColumn", "OversizedColumn", "SAFE_GLOBALS",
           "MAX_UNPACKED_BYTES", "LZ4_MAX_RATIO", "PICKLE_OVERHEAD", "MAX_PICKLE_OPS", "NUMERIC_CODES"]

#: The most bytes one packed value may decompress to (256 MiB), unless ``allow_pickle=True``.
MAX_UNPACKED_BYTES = 1 << 28

#: LZ4 cannot expand its data more than about 255 times (one length byte stands for at most 255
#: bytes): a frame whose header claims more than this many bytes per compressed byte is corrupt.
LZ4_MAX_RATIO = 255

#: The most bytes a pickled array may hold beyond its data (operations, dtype, shape; about 200).
PICKLE_OVERHEAD = 4096

#: The most pickle operations one packed value may have (a pickled array has about 50).
MAX_PICKLE_OPS = 4096

#: The dtypes a packed array may have (NumPy pickles a dtype by kind and size: ``"f4"``).
NUMERIC_CODES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"})

_CHUNK = 1 << 20  # bytes decompressed at a time, when the pickle does not ask for more

_SLACK = 1024  # the LZ4 frame's header and last literals, on top of LZ4_MAX_RATIO

#: The pickle operations of a pickled numeric array (protocols 3 to 5; no lists, dicts or objects).
_OPS = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "MEMOIZE", "BINPUT", "LONG_BINPUT",
    "BINGET", "LONG_BINGET", "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "TUPLE", "TUPLE1", "TUPLE2",
    "TUPLE3", "EMPTY_TUPLE", "NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1",
    "LONG4", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    "BYTEARRAY8", "READONLY_BUFFER"})


# the byte counts a counted argument starts with: (size, signed)
_COUNTS = {pickletools.TAKEN_FROM_ARGUMENT1: (1, False), pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
           pickletools.TAKEN_FROM_ARGUMENT4U: (4, False), pickletools.TAKEN_FROM_ARGUMENT8U: (8, False)}


class UnsafePickle(Exception):
    """The packed value refers to something other than a NumPy array (``name``)."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(name)


class UndecodableColumn(Exception):
    """The text is not base64 of an LZ4 frame of a pickled numeric array (``reason`` says which step failed)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class OversizedColumn(UndecodableColumn):
    """The value would decode to more bytes than allowed (``size``: what it claims or needs; ``limit``)."""

    def __init__(self, reason: str, size: int, limit: int):
        self.size, self.limit = size, limit
        super().__init__(reason)


# --- LZ4, decoded as it is read ------------------------------------------------------------------


def _lz4_frame():
    """``lz4.frame`` (the optional ``rllib`` extra), or the error that says how to install it."""
    return import_extra("lz4.frame", extra="rllib", what="Decoding RLlib's compressed columns", package="lz4")


class _Inflated:
    """An LZ4 frame's content, decoded as far as the pickle reader asks (``need``), never past
    ``limit`` bytes; ``data`` holds what was decoded (the pickle, for the unpickler)."""

    def __init__(self, raw: bytes, limit: int | None, size: int):
        self._decompressor = _lz4_frame().LZ4FrameDecompressor()
        self._raw = raw
        self._limit = limit
        self._chunk = min(_CHUNK, size + 1) if size else _CHUNK  # size: the header's, 0 when not given
        self.data = bytearray()

    def need(self, end: int) -> bool:
        """Decode until ``end`` bytes are decoded in all (refused past the limit); False at the
        frame's end."""
        if self._limit is not None and end > self._limit:
            raise OversizedColumn(f"the value decodes to {end} bytes, more than the limit of {self._limit} bytes",
                                  end, self._limit)
        d = self._decompressor
        while len(self.data) < end:
            if d.eof:
                return False
            most = max(self._chunk, end - len(self.data))
            if self._limit is not None:  # never more than one byte past the limit
                most = min(most, self._limit + 1 - len(self.data))
            try:
                out = d.decompress(self._raw, max_length=most)
            except RuntimeError as exc:
                raise UndecodableColumn(f"not an LZ4 frame ({exc})") from None
            fed, self._raw = bool(self._raw), b""
            if not out and not d.eof and (d.needs_input or not fed):
                raise UndecodableColumn("the LZ4 frame is cut short")
            self.data += out
            if self._limit is not None and len(self.data) > self._limit:
                raise OversizedColumn(f"the value decodes to more than the limit of {self._limit} bytes",
                                      len(self.data), self._limit)
        return True

    def finish(self, end: int) -> None:
        """Check that nothing follows the first ``end`` bytes, and that the frame is whole."""
        if len(self.data) > end or self.need(end + 1):
            raise UndecodableColumn("data follows the pickle's end (STOP) in the LZ4 frame")
        if self._decompressor.unused_data:
            raise UndecodableColumn(f"{len(self._decompressor.unused_data)} bytes follow the LZ4 frame")

    def read_all(self) -> bytes:
        while self.need(len(self.data) + 1):
            pass
        self.finish(len(self.data))
        return bytes(self.data)


def _frame(raw: bytes, limit: int | None) -> _Inflated:
    """The frame, to be read; refused unread when its header claims too many bytes."""
    try:
        size = _lz4_frame().get_frame_info(raw)["content_size"]  # 0: not given
    except (RuntimeError, ValueError, KeyError) as exc:
        raise UndecodableColumn(f"not an LZ4 frame ({exc})") from None
    most = LZ4_MAX_RATIO * len(raw) + _SLACK
    if size > most:
        raise UndecodableColumn(f"the LZ4 frame claims {size} bytes, more than its {len(raw)} bytes can "
                                "hold (a corrupt header)")
    if limit is not None and size > limit:
        raise OversizedColumn(f"the value decodes to {size} bytes, more than the limit of {limit} bytes",
                              size, limit)
    return _Inflated(raw, limit, size)


# --- the pickle's operations, read before anything runs ------------------------------------------


def _op_table() -> list:
    """Per opcode byte: (name, how its argument is read, size): "fixed" (``size`` bytes), "counted"
    (a count of ``abs(size)`` bytes, signed when ``size`` < 0, then that many bytes), "lines"
    (GLOBAL's two lines), "none"; None for a byte that is no opcode."""
    table: list = [None] * 256
    for op in pickletools.opcodes:
        arg = op.arg
        if arg is None:
            how, size = "none", 0
        elif arg.n > 0:
            how, size = "fixed", arg.n
        elif arg.n in _COUNTS:
            count, signed = _COUNTS[arg.n]
            how, size = "counted", -count if signed else count
        else:  # GLOBAL's two lines (the text protocol's other operations are refused)
            how, size = "lines", 0
        table[ord(op.code)] = (op.name, how, size)
    return table


_OP_TABLE = _op_table()


def _scan(stream: _Inflated) -> int:
    """Read the pickle's operations up to STOP (only a pickled array's, each within the data and
    the limit) before anything runs; the pickle's length."""
    data, pos = stream.data, 0  # ``data`` grows in place as ``need`` decodes more
    table, allowed, have = _OP_TABLE, _OPS, len(data)

    def more(end):  # decode up to ``end``; False at the data's end
        nonlocal have
        whole = stream.need(end)
        have = len(data)
        return whole

    for _ in range(MAX_PICKLE_OPS):
        if pos >= have and not more(pos + 1):
            raise UndecodableColumn("not a pickle (the data ends before STOP)")
        entry = table[data[pos]]
        if entry is None:
            raise UndecodableColumn(f"not a pickle (byte {data[pos]} is no pickle operation)")
        name, how, size = entry
        if name not in allowed:
            raise UndecodableColumn(f"the pickle uses {name}, which no pickled NumPy array needs")
        pos += 1
        if how == "none":
            if name == "STOP":
                return pos
        elif how == "fixed":
            if pos + size > have and not more(pos + size):
                raise UndecodableColumn(f"not a pickle (the data ends in a {name})")
            if name == "LONG_BINPUT" and int.from_bytes(data[pos:pos + 4], "little") >= MAX_PICKLE_OPS:
                raise UndecodableColumn(f"the pickle stores a value at memo "
                                        f"{int.from_bytes(data[pos:pos + 4], 'little')}, past any array's")
            pos += size
        elif how == "counted":
            width = abs(size)
            if pos + width > have and not more(pos + width):
                raise UndecodableColumn(f"not a pickle (the data ends in a {name})")
            n = data[pos] if width == 1 else int.from_bytes(data[pos:pos + width], "little", signed=size < 0)
            pos += width
            if n < 0 or (pos + n > have and not more(pos + n)):
                raise UndecodableColumn(f"not a pickle ({name} claims {n} bytes, more than the data holds)")
            pos += n
        else:  # GLOBAL's two lines
            for _ in range(2):
                while (at := data.find(b"\n", pos)) < 0:
                    if not more(have + 1):
                        raise UndecodableColumn(f"not a pickle (the data ends in a {name})")
                pos = at + 1
    raise UndecodableColumn(f"the pickle has more than {MAX_PICKLE_OPS} operations (an array has about 50)")


# --- stand-ins for NumPy's globals: arrays from the pickle's own bytes ----------------------------


class _Global:
    """What the unpickler gets for one of :data:`SAFE_GLOBALS`: calls ``build``; a pickle cannot
    change it (BUILD on it is refused, and it has no attributes to set)."""

    __slots__ = ("_build", "_name")

    def __init__(self, build, name: str):
        self._build, self._name = build, name

    def __call__(self, *args):
        return self._build(*args)

    def __setstate__(self, state):
        raise UndecodableColumn(f"the pickle sets a state on {self._name}")


def _refuse_ndarray(*args):
    raise UndecodableColumn("the pickle calls numpy.ndarray(...) itself, which makes an array of any "
                            "size out of a few bytes; NumPy's own pickles rebuild arrays from their bytes")


#: ``numpy.ndarray``: the type ``_reconstruct`` rebuilds; calling it is refused.
_NDARRAY = _Global(_refuse_ndarray, "numpy.ndarray")


class _Dtype:
    """A numeric dtype named by the pickle (``numpy.dtype("f4", False, True)``), its byte order set by BUILD."""

    __slots__ = ("dtype",)

    def __init__(self, code, align=False, copy=False):
        if not isinstance(code, str) or code not in NUMERIC_CODES:
            raise UndecodableColumn(f"the array's dtype is {code!r:.40}; only booleans, integers and floats "
                                    "are decoded")
        self.dtype = np.dtype(code)

    def __setstate__(self, state):
        if (not isinstance(state, tuple) or len(state) not in (8, 9) or state[0] not in (3, 4)
                or state[1] not in ("<", ">", "|", "=") or any(s is not None for s in state[2:5] + state[8:])):
            raise UndecodableColumn("the array's dtype has a state other than a plain number's")
        if state[1] in "<>":
            self.dtype = self.dtype.newbyteorder(state[1])


def _shape(shape) -> tuple:
    if not isinstance(shape, tuple) or len(shape) > 32:
        raise UndecodableColumn(f"the array's shape is {type(shape).__name__} {shape!r:.80}, not a tuple of sizes")
    out = []
    for d in shape:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or not 0 <= d < 2 ** 31:
            raise UndecodableColumn(f"the array's shape {shape!r:.80} holds {d!r:.40}, not a size")
        out.append(int(d))
    return tuple(out)


def _array(buf, dtype, shape, order) -> np.ndarray:
    """The array of ``shape`` and ``dtype`` whose bytes are ``buf`` (exactly as many as it needs)."""
    if not isinstance(dtype, _Dtype):
        raise UndecodableColumn(f"the array's dtype is a {type(dtype).__name__}, not a numeric dtype")
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise UndecodableColumn(f"the array's data is a {type(buf).__name__}, not bytes")
    if order not in ("C", "F"):
        raise UndecodableColumn(f"the array's order is {order!r:.40}, not 'C' or 'F'")
    shape, dt = _shape(shape), dtype.dtype
    held = memoryview(buf).nbytes
    count = math.prod(shape)
    if count * dt.itemsize != held:
        raise UndecodableColumn(f"the array's shape {shape} and dtype {dt} need {count * dt.itemsize} bytes, "
                                f"the pickle holds {held}")
    flat = np.frombuffer(buf, dtype=dt, count=count)
    if dt.kind == "b" and count and np.frombuffer(buf, dtype=np.uint8, count=count).max() > 1:
        raise UndecodableColumn("a boolean array holds bytes other than 0 and 1")
    if not dt.isnative:
        flat = flat.astype(dt.newbyteorder("="))
    return flat.reshape(shape, order=order)


def _frombuffer(buf, dtype, shape, order):
    return _array(buf, dtype, shape, order)


class _Pending:
    """What ``_reconstruct`` returns: the array comes with the BUILD that follows (its state)."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None

    def __setstate__(self, state):
        if self.array is not None or not isinstance(state, tuple) or len(state) not in (4, 5):
            raise UndecodableColumn("the array's state is not (version, shape, dtype, fortran, data)")
        shape, dtype, fortran, data = state[-4:]
        if not isinstance(fortran, bool):
            raise UndecodableColumn(f"the array's order flag is {fortran!r:.40}, not True or False")
        self.array = _array(data, dtype, shape, "F" if fortran else "C")


def _reconstruct(subtype, shape, typecode):
    if subtype is not _NDARRAY:
        raise UndecodableColumn(f"the pickle rebuilds a {type(subtype).__name__}, not a numpy.ndarray")
    return _Pending()


def _scalar(dtype, data):
    if not isinstance(dtype, _Dtype) or not isinstance(data, bytes) or len(data) != dtype.dtype.itemsize:
        raise UndecodableColumn("a NumPy scalar is not a numeric dtype and its bytes")
    return np.frombuffer(data, dtype=dtype.dtype)[0]


_STAND_INS = {("numpy", "ndarray"): _NDARRAY, ("numpy", "dtype"): _Global(_Dtype, "numpy.dtype")}
for _module in ("numpy._core", "numpy.core"):
    _STAND_INS[(f"{_module}.numeric", "_frombuffer")] = _Global(_frombuffer, "numpy._frombuffer")
    _STAND_INS[(f"{_module}.multiarray", "_reconstruct")] = _Global(_reconstruct, "numpy._reconstruct")
    _STAND_INS[(f"{_module}.multiarray", "scalar")] = _Global(_scalar, "numpy scalar")

#: The globals a pickled numeric NumPy array refers to (NumPy 1.x and 2.x module names); a safe
#: decode gives the unpickler stand-ins for them that rebuild arrays from the pickle's bytes.
SAFE_GLOBALS = frozenset(_STAND_INS)


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _STAND_INS:
            return _STAND_INS[(module, name)]
        raise UnsafePickle(f"{module}.{name}")


class _View:
    """A file over the decoded pickle (no copy of the whole of it)."""

    def __init__(self, data):
        self._data, self._pos = memoryview(data), 0

    def read(self, n=-1):
        end = len(self._data) if n is None or n < 0 else self._pos + n
        out = bytes(self._data[self._pos:end])
        self._pos += len(out)
        return out

    def readinto(self, buf):
        out = memoryview(buf).cast("B")
        n = min(len(out), len(self._data) - self._pos)
        out[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n

    def readline(self, size=-1):
        rest = self._data[self._pos:]
        at = bytes(rest[:4096]).find(b"\n")  # a GLOBAL's names are short
        return self.read(at + 1 if at >= 0 else len(rest))


def unpack(text, *, allow_pickle: bool = False, limit: int | None = None) -> np.ndarray:
    """Decode one value RLlib packed (``compression.pack``) into a NumPy array.

    Parameters
    ----------
    text : str or bytes
        base64 text of an LZ4 frame of a pickle.
    allow_pickle : bool
        Unpickle with the full unpickler (may run code: trusted files only);
        :data:`MAX_UNPACKED_BYTES` does not apply.
    limit : int, optional
        The most bytes the value may decompress to (the caller's bound, from
        the shape it expects); default :data:`MAX_UNPACKED_BYTES` (None with
        ``allow_pickle``).

    Returns
    -------
    np.ndarray
        Booleans, integers or floats in native byte order (any shape).

    Raises
    ------
    UndecodableColumn
        Not base64, not an LZ4 frame, not a pickle, not a numeric array, or
        an array whose bytes do not match its shape and dtype.
    OversizedColumn
        The value decompresses (or claims to) past ``limit``, or holds more
        than :data:`PICKLE_OVERHEAD` bytes beyond its array's data.
    UnsafePickle
        A safe decode met a global other than NumPy's array builders.

    Examples
    --------
    >>> unpack("not base64!")
    Traceback (most recent call last):
    ...
    rewardlab.sources.rllib.compression.UndecodableColumn: not base64 text (Only base64 data is allowed)
    """
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise UndecodableColumn(f"not base64 text ({exc})") from None
    if limit is None and not allow_pickle:
        limit = MAX_UNPACKED_BYTES
    stream = _frame(raw, limit)
    if allow_pickle:
        data = stream.read_all()
        try:
            value = pickle.loads(data)
        except Exception as exc:  # a broken pickle raises many kinds
            raise UndecodableColumn(f"not a pickle ({type(exc).__name__}: {exc})") from None
    else:
        end = _scan(stream)
        stream.finish(end)
        data = stream.data
        try:
            value = _ArraysOnly(_View(data)).load()
        except (UnsafePickle, UndecodableColumn):
            raise
        except Exception as exc:  # a broken pickle raises many kinds
            raise UndecodableColumn(f"not a pickle ({type(exc).__name__}: {exc})") from None
        if isinstance(value, _Pending):
            if value.array is None:
                raise UndecodableColumn("the pickle rebuilds an array without its data")
            value = value.array
    if not isinstance(value, np.ndarray):
        what = {_Dtype: "dtype", _Global: "NumPy global", _Pending: "array without data"}.get(
            type(value), type(value).__name__)
        raise UndecodableColumn(f"the value is a {what}, not an array")
    if value.dtype == object:
        raise UndecodableColumn("the array holds Python objects, not numbers")
    if not allow_pickle and len(data) > value.nbytes + PICKLE_OVERHEAD:
        raise OversizedColumn(f"the pickle holds {len(data)} bytes for an array of {value.nbytes}: more than "
                              f"{PICKLE_OVERHEAD} bytes beyond its data", len(data), value.nbytes + PICKLE_OVERHEAD)
    return value
