"""The pipes between rewardlab and the plug-in process: results up, a feed of data down.

Up: the worker sends each partial result and its final one as a
length-prefixed pickle (:func:`write_message`, :func:`sendable`); the parent
reads them without ever blocking (:class:`Messages`), so a grandchild
holding the pipe open or writing into it cannot hang the parent, and what
cannot be read back is reported (:attr:`Messages.junk`), not raised.

Down: a thread of the parent (:class:`Feeder`) pickles a feed's items into a
second pipe with out-of-band buffers, each only once the worker asks for it
on a third, and the worker reads them one at a time, the next while it works
on this one (:func:`received`); see
:func:`rewardlab.plugins.isolation.run_in_child`'s ``feed``.

Examples
--------
>>> import os
>>> from rewardlab.plugins.child_messages import Messages, write_message
>>> read_fd, write_fd = os.pipe()
>>> write_message(write_fd, ("part", [1, 2])); write_message(write_fd, ("ok", 42))
>>> os.close(write_fd); os.set_blocking(read_fd, False)
>>> messages = Messages(read_fd)
>>> messages.read(); messages.messages()
[('part', [1, 2]), ('ok', 42)]
>>> messages.closed, messages.junk
(True, None)
>>> os.close(read_fd)
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import struct
import threading
import traceback

#: Feeders of this process that may read and send an item at the same time (each item is one dataset
#: part's arrays, ~1 KB a row): the parent's memory stays a few parts whatever the number of workers,
#: and reading a part takes a small share of the time a worker spends on it.
FEEDS_AT_ONCE = 4
_SENDING = threading.BoundedSemaphore(FEEDS_AT_ONCE)

#: A fed item's head: the pickle's size and the number of out-of-band buffers after it.
_FEED_HEAD = struct.Struct("<qq")
#: Bytes read from the result pipe at a time, and the pipe size asked for (Linux).
CHUNK = 1 << 20

# Taken once: a plug-in that replaces os.write does not change how rewardlab ends.
_write = os.write


def write_message(fd: int, payload) -> None:
    """Write ``payload`` to the pipe ``fd`` as one message: its pickle's length (8 bytes), then the pickle."""
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("<q", len(data)) + data)
    while view:
        n = _write(fd, view)
        view = view[n:]


def sendable(payload):
    """``payload`` if it pickles and unpickles; else a text stand-in."""
    try:
        pickle.loads(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        return payload
    except BaseException as exc:  # noqa: BLE001
        if payload[0] == "raised":
            return ("raised", None, payload[2])
        text = "".join(traceback.format_exception(exc))
        return ("raised", None, "rewardlab could not send a result back:\n" + text)


def _read_exactly(stream, size: int) -> bytearray:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            raise EOFError("rewardlab's feed of data to the plug-in process ended early")
        got += n
    return buffer


def _read_item(stream):
    """One fed item off the data pipe: ``(kind, payload)``."""
    head = _read_exactly(stream, _FEED_HEAD.size)
    meta_size, count = _FEED_HEAD.unpack(head)
    sizes = struct.unpack(f"<{count}q", _read_exactly(stream, 8 * count)) if count else ()
    meta = _read_exactly(stream, meta_size)
    buffers = [_read_exactly(stream, n) for n in sizes]
    return pickle.loads(meta, buffers=buffers)


def received(fds: tuple[int, int]):
    """The objects the parent feeds, one at a time, the next read while this one is worked on.

    See :func:`~rewardlab.plugins.isolation.run_in_child`'s ``feed``.

    ``fds`` is (the data pipe's read end, the ask pipe's write end): one byte
    on the ask pipe lets the parent's feeder read and send the next item, so
    the parent holds an item only while it is being sent.  A thread of this
    process asks for item k+1 and reads it off the pipe as soon as item k
    is handed over, so the plug-ins do not wait, part after part, for the
    parent to read, build and send the next one; this process holds at most
    two items (the one worked on and the next).

    Examples
    --------
    >>> import os
    >>> from rewardlab.plugins.child_messages import Feeder
    >>> data_read, data_write = os.pipe(); ask_read, ask_write = os.pipe()
    >>> feeder = Feeder(iter([1, 2, 3]), data_write, ask_read)
    >>> list(received((data_read, ask_write)))
    [1, 2, 3]
    >>> feeder.join()
    """
    data_fd, ask_fd = fds
    ready: queue.SimpleQueue = queue.SimpleQueue()  # (kind, payload) items read, in order
    taken = threading.Semaphore(0)  # released as each item is handed over: the reader may fetch the next
    stopping = threading.Event()

    def read_ahead() -> None:
        try:
            # signals go to the thread running the plug-ins: a hang's stack dump (faulthandler on SIGUSR1
            # prints the thread it lands in) must show the plug-in, never this thread waiting on the pipe
            signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            with os.fdopen(data_fd, "rb", buffering=1 << 20) as stream:
                while True:
                    try:
                        os.write(ask_fd, b"\x01")
                    except BrokenPipeError:
                        pass  # the feeder has stopped: what it sent last (end, abort) is read below
                    kind, payload = _read_item(stream)
                    ready.put((kind, payload))
                    del payload
                    if kind != "item":
                        return
                    taken.acquire()
                    if stopping.is_set():
                        return
        except BaseException as exc:  # noqa: BLE001 - raised to the consumer in its own thread
            ready.put(("failed", exc))
        finally:
            os.close(ask_fd)

    reader = threading.Thread(target=read_ahead, name="rewardlab-feed-reader", daemon=True)
    reader.start()
    try:
        while True:
            kind, payload = ready.get()
            if kind == "end":
                return
            if kind == "abort":  # the parent could not read the next item: it reports why
                raise EOFError("rewardlab's parent process stopped feeding data: " + str(payload))
            if kind == "failed":
                raise payload
            taken.release()
            yield payload
            del payload
    finally:
        stopping.set()
        taken.release()  # a reader waiting to fetch the next item stops instead


class Messages:
    """The length-prefixed pickles read from the worker, never blocking on a read."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.closed, self.junk = fd, bytearray(), False, None

    def read(self) -> None:
        """Read what is there now: until the pipe is empty or closed, at most 64 MB at a time."""
        for _ in range(64):
            try:
                chunk = os.read(self.fd, CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self.closed = True
                return
            self.buffer += chunk

    def messages(self) -> list:
        """The whole messages read so far; :attr:`junk` says why reading stopped at one that is not."""
        found, start = [], 0
        try:
            while self.junk is None and len(self.buffer) - start >= 8:
                size = struct.unpack_from("<q", self.buffer, start)[0]
                if size < 0:
                    raise ValueError(f"a message length of {size} bytes")
                if len(self.buffer) - start - 8 < size:
                    break
                with memoryview(self.buffer) as view, view[start + 8:start + 8 + size] as data:
                    message = pickle.loads(data)
                start += 8 + size
                if not (isinstance(message, tuple) and len(message) >= 2
                        and message[0] in ("part", "ok", "raised")):
                    raise ValueError(f"an unexpected message ({type(message).__name__})")
                found.append(message)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - e.g. a plug-in wrote into the pipe
            self.junk = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if self.junk is None:
            del self.buffer[:start]
        return found

    @property
    def unfinished(self) -> bool:
        """Whether bytes of a message that never ended are left."""
        return bool(self.buffer)


class Feeder:
    """The parent's thread that sends a feed's items into the worker's pipe, each when the worker asks.

    The next item is read (``next(items)``) only once the worker has asked
    for it, and sent with pickle's out-of-band buffers (protocol 5: a numpy
    array's memory is written straight into the pipe, never copied into a
    pickle), so the parent holds an item only while sending it; at most
    :data:`FEEDS_AT_ONCE` feeders of this process read and send at once,
    however many workers run.
    """

    def __init__(self, items, fd: int, ask_fd: int):
        self.error: BaseException | None = None
        self._fd = fd
        self._ask_fd = ask_fd
        self._thread = threading.Thread(target=self._run, args=(items,), name="rewardlab-feed", daemon=True)
        self._thread.start()

    def _write(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def _send(self, kind: str, payload) -> None:
        buffers: list[pickle.PickleBuffer] = []
        meta = pickle.dumps((kind, payload), protocol=5, buffer_callback=buffers.append)
        raws = [b.raw() for b in buffers]
        self._write(_FEED_HEAD.pack(len(meta), len(raws))
                    + (struct.pack(f"<{len(raws)}q", *(r.nbytes for r in raws)) if raws else b""))
        self._write(meta)
        for raw in raws:
            self._write(raw)

    def _asked(self) -> bool:
        """Wait until the worker asks for the next item; False when it has gone (no more asks can come)."""
        while True:
            try:
                return os.read(self._ask_fd, 1) != b""
            except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
                continue

    def _run(self, items) -> None:
        try:
            try:
                iterator = iter(items)
                while self._asked():
                    with _SENDING:  # memory: a few items in the parent at once, however many workers
                        try:
                            item = next(iterator)
                        except StopIteration:
                            self._send("end", None)
                            return
                        self._send("item", item)
                        del item
            except BrokenPipeError:
                return  # the worker ended: the parent reports how
            except BaseException as exc:  # noqa: BLE001 - reading the next item failed: raised in the parent
                self.error = exc
                self._send("abort", "".join(traceback.format_exception_only(exc)).strip())
                return
        except OSError:
            pass  # the worker is gone
        finally:
            os.close(self._fd)
            os.close(self._ask_fd)

    def join(self) -> None:
        self._thread.join()

    def raise_error(self) -> None:
        """Raise what reading the feed raised (it is why the child stopped), if anything."""
        self._thread.join()
        if self.error is not None:
            raise self.error
