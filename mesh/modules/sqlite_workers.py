"""The worker processes a ``sqlite`` module's statements run in, on the node's side (SPEC §6).

A statement runs in a process of its own (``mesh.modules.sqlite_worker``) so that the node can
end it at its deadline: one step of SQLite's may run for minutes, and no thread can be stopped.
A worker serves one statement at a time and is kept for the next; it ends with the node however
the node ends and whichever thread started it (its lifeline, ADR 0052). A worker that ends
before it answers is never sent the statement again: the caller is told what became of it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from fastmcp.exceptions import ToolError

from mesh.modules.sqlite_worker import LATE, LIFELINE

__all__ = ["NODE_WORKERS", "Workers"]

LATE_S = 0.5  # how long past its time limit a statement's process is let run before it is killed
START_S = 10.0  # how long a new worker process may take to start and take its first job
IDLE_WORKERS = 2  # worker processes kept for the next statements
_GONE = "the SQLite worker process of this machine stopped"


class Workers:
    """The worker processes statements run in: one statement at a time each, started when none
    is idle, at most ``idle`` kept for the next, and killed at a statement's deadline."""

    def __init__(self, idle: int = IDLE_WORKERS) -> None:
        self._idle: list[_Worker] = []
        self._most_idle = idle
        self._lock = threading.Lock()

    def run(self, job: dict[str, Any], time_limit_s: float, writes: bool) -> Any:
        """The job's result, or a ``ToolError`` with its message; blocks (run it in a thread)."""
        dead: list[_Worker] = []  # ended while idle (killed from outside)
        with self._lock:
            while self._idle and not self._idle[-1].alive():
                dead.append(self._idle.pop())
            worker = self._idle.pop() if self._idle else None
        for gone in dead:
            gone.close()
        worker = worker or _Worker()
        try:
            answer = worker.exchange(job, time_limit_s + LATE_S)
        except BaseException as error:  # the worker is gone, or this thread is being stopped
            worker.kill()
            if writes:
                _recover(Path(job["path"]))
            if isinstance(error, _Gone):
                raise ToolError(error.message(writes)) from None
            raise
        if answer is None:
            worker.kill()
            if writes:
                _recover(Path(job["path"]))
                raise ToolError(LATE.format(time_limit_s=time_limit_s) + "; nothing was changed")
            raise ToolError(LATE.format(time_limit_s=time_limit_s))
        with self._lock:
            if len(self._idle) < self._most_idle:
                self._idle.append(worker)
                worker = None
        if worker is not None:
            worker.close()
        if "error" in answer:
            raise ToolError(str(answer["error"]))
        return answer["ok"]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()


class _Worker:
    """One ``python -I -m mesh.modules.sqlite_worker``, with no environment but its lifeline's
    descriptor: the read end of a pipe whose write end only this process holds, so that the
    worker ends with the node whichever thread started it (``sqlite_worker._end_with_the_node``)."""

    def __init__(self) -> None:
        jobs_in, self._jobs = os.pipe()
        self._answers, answers_out = os.pipe()
        lifeline, self._lifeline = os.pipe()  # not inherited: close-on-exec in every other child
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-m", "mesh.modules.sqlite_worker"],
                stdin=jobs_in,
                stdout=answers_out,
                env={LIFELINE: str(lifeline)},
                close_fds=True,
                pass_fds=(lifeline,),
            )
        except BaseException:
            os.close(self._lifeline)
            raise
        finally:
            os.close(jobs_in)
            os.close(answers_out)
            os.close(lifeline)
        self.jobs = Connection(self._jobs, readable=False)
        self.answers = Connection(self._answers, writable=False)

    def exchange(self, job: dict[str, Any], deadline_s: float) -> dict[str, Any] | None:
        """The job's answer, or None when it was not given within ``deadline_s`` of the worker
        taking the job and had not begun to commit. ``_Gone`` when the worker is gone."""
        committing = False
        try:
            self.jobs.send_bytes(json.dumps(job).encode())
            if not self.answers.poll(START_S):
                return None
            self.answers.recv_bytes()  # started
            end: float | None = time.monotonic() + deadline_s
            while True:
                if end is not None and not self.answers.poll(max(0.0, end - time.monotonic())):
                    return None
                answer: dict[str, Any] = json.loads(self.answers.recv_bytes())
                if not answer.get("committing"):
                    return answer
                committing = True
                end = None  # a commit is waited for: it is short, and the answer says it
        except (EOFError, OSError):
            raise _Gone(committing) from None

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.kill()
        self.close()

    def close(self) -> None:
        """Close the worker's stdin and lifeline, which end it, and reap it (killed, it ends at
        once)."""
        self.jobs.close()
        self.answers.close()
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        try:
            self.process.wait(timeout=START_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Gone(Exception):
    """The worker ended before it answered (killed from outside: the OOM killer, an operator)."""

    def __init__(self, committing: bool) -> None:
        super().__init__()
        #: Whether it had said it was committing: only then may a write have been made.
        self.committing = committing

    def message(self, writes: bool) -> str:
        """What the caller is told: never sent again by the node, a write's fate as far as it is
        known (SQLite's journal makes it whole or nothing, never half)."""
        if not writes:
            return f"{_GONE}; try again"
        if not self.committing:
            return f"{_GONE} before the statement committed; nothing was changed: try again"
        return (
            f"{_GONE} while the statement committed: it was made wholly or not at all; read the"
            " database to see which before running it again"
        )


def _recover(path: Path) -> None:
    """Roll back what a killed write left in the database's journal: a read-only connection
    cannot, and would answer every read with an error until the next write."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, timeout=2.0)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 0").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # the next statement on it says what is wrong


#: The node's worker processes, shared by every sqlite assignment and seat it serves.
NODE_WORKERS = Workers()
