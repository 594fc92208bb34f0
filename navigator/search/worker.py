"""Work on a stream of batches in a forked child process, on the machine's other core.

A whole-catalogue load is two halves of pure-Python work that need not wait on each other: reading
the rows into the catalogue and its documents, and analysing the documents' text into postings.
Python runs one thread at a time, so the second half runs in a child forked from the loading
process: it starts with everything the parent holds (the modules, the empty index it fills), is
sent its input batch by batch through a pipe, and sends one result back when the input ends.

The parent never waits on the child while it sends: a thread of its own writes the batches (a
pipe write blocks without holding the interpreter). The child touches nothing it shares with the
parent — no connection, no file but its two pipes, no signal handler — and leaves by ``os._exit``,
so nothing inherited is flushed or closed twice. If the child fails, ``result`` raises
``WorkerFailed`` and the caller does the work itself: the result is the same either way.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import queue
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

__all__ = ["ForkedWorker", "WorkerFailed", "can_fork"]

#: How long a child may run before it ends itself (100,000 tools take ~2.5 s of its CPU); past
#: it the parent analyses the texts itself, so a stuck child costs a slower start, never a hung one.
CHILD_LIMIT_S = 300

_HEADER = struct.Struct("!Q")
_PIPE_BYTES = 1 << 20
_END = 0


class WorkerFailed(RuntimeError):
    """The child exited, or was killed, before it sent its result."""


def can_fork() -> bool:
    """Whether this platform forks (Linux and the BSDs; not Windows, and not macOS, whose system
    libraries are not safe to use in a forked child)."""
    return hasattr(os, "fork") and sys.platform.startswith(("linux", "freebsd"))


def _frames(stream: BinaryIO) -> Iterator[Any]:
    """The objects sent through ``stream``, up to the end marker (EOF before it is an error)."""
    while True:
        header = stream.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise EOFError("the input ended without its end marker")
        (size,) = _HEADER.unpack(header)
        if size == _END:
            return
        payload = stream.read(size)
        if len(payload) < size:
            raise EOFError("the input ended inside a batch")
        yield marshal.loads(payload)  # noqa: S302  # our own parent's pipe


def _widen(fd: int) -> None:
    """Give a pipe a 1 MiB buffer where Linux allows (64 KiB by default): the sending thread then
    wakes, and takes the interpreter from the loading thread, once per megabyte, not per 64 KiB."""
    with contextlib.suppress(OSError, AttributeError, ImportError):
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class ForkedWorker:
    """A child process running ``work(batches)`` over the batches ``send`` gives it; ``result``
    ends the input and returns what ``work`` returned.

    ``work`` runs in the child on a copy of the parent as it was at the fork: whatever it reads of
    the parent's objects is theirs as of then, and whatever it changes stays in the child.
    """

    def __init__(
        self, work: Callable[[Iterator[Any]], Any], *, limit_s: int = CHILD_LIMIT_S
    ) -> None:
        """``limit_s``: how long the child may run (``CHILD_LIMIT_S``)."""
        to_child, from_parent = os.pipe()[::-1]  # (write end, read end)
        _widen(to_child)
        from_child, to_parent = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12 warns that forking a process with threads may deadlock the child: this
            # child takes no lock another thread may hold (it imports nothing and logs nothing).
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover  # the child: measured by the parent's tests, not here
            os.close(to_child)
            os.close(from_child)
            _run_child(work, from_parent, to_parent, limit_s)
        os.close(from_parent)
        os.close(to_parent)
        self._pid = pid
        self._from_child = from_child
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._send_error: BaseException | None = None
        self._sender = threading.Thread(
            target=self._send_loop, args=(to_child,), name="meshnav-index-worker", daemon=True
        )
        self._sender.start()

    def send(self, batch: Any) -> None:
        """Queue one batch for the child; never blocks on it. A batch is made of built-in values
        (strings, numbers, tuples, lists, dicts): it is sent with ``marshal``, three times as fast
        as ``pickle`` for them."""
        payload = marshal.dumps(batch)
        self._outbox.put(_HEADER.pack(len(payload)) + payload)

    def _send_loop(self, fd: int) -> None:
        try:
            while (frame := self._outbox.get()) is not None:
                _write_all(fd, frame)
            _write_all(fd, _HEADER.pack(_END))
        except OSError as error:  # the child is gone: ``result`` reports it
            self._send_error = error
        finally:
            os.close(fd)

    def result(self) -> Any:
        """End the input, wait for the child, and return its result."""
        self._outbox.put(None)
        try:
            with os.fdopen(self._from_child, "rb", closefd=True) as stream:
                payload = stream.read()
        finally:
            self._sender.join()
            _, status = os.waitpid(self._pid, 0)
        if status != 0 or not payload:
            raise WorkerFailed(f"the index worker exited with status {status:#x}")
        return pickle.loads(payload)  # noqa: S301  # our own child's pipe

    def abandon(self) -> None:
        """Stop the child without its result (the load that started it failed)."""
        self._outbox.put(None)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.close(self._from_child)
        self._sender.join()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)


def _run_child(  # pragma: no cover  # runs in the forked child
    work: Callable[[Iterator[Any]], Any], from_parent: int, to_parent: int, limit_s: int
) -> None:
    status = 1  # unless the result is sent: the parent sees the status and does the work itself
    try:
        # The parent's handlers would write to its event loop's wake-up socket: a signal for the
        # child ends it. Its parent's death ends its input, which ends it too.
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(-1)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
            signal.signal(number, signal.SIG_DFL)
        # Forked from a process with other threads: should the work ever wait on a lock one of
        # them held at the fork, the alarm ends the child, and the parent does the work.
        signal.alarm(limit_s)
        with os.fdopen(from_parent, "rb", buffering=1 << 20) as stream:
            result = work(_frames(stream))
        _write_all(to_parent, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        status = 0
    finally:
        # On an exception too: leaving by ``os._exit`` unwinds and flushes nothing inherited.
        os._exit(status)
