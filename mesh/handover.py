"""A node's secrets kept out of its environment block: read at start, then handed to the node's
own process image, run anew, over a pipe (ADR 0046).

A process's environment block is fixed when it starts: ``os.environ.pop`` changes what Python
and its children see, not the block, which ``/proc/PID/environ`` goes on showing to every process
of the same user (and to root). A ``stdio`` module read the node's ``MESHNAV_TOKEN``, every other
module's ``--module-env`` and ``--module-header`` secrets and ``PGPASSWORD`` from there. So, once
the node has read its options and knows which variables hold secrets, it replaces its own image
(``execve``: the same process, the same pid, which a service manager or a test waits on) with the
same command line under the environment less those variables; their values go through a pipe
whose reading end the new image inherits, named by ``MESHNAV_SECRETS_FD`` (a number, no secret).
The new image reads the pipe as the first thing the command does (``take_over``, from
``meshnav.cli.main``), closes it, and is made non-dumpable at once (``keep_secrets_from_children``),
which keeps its memory and descriptors from same-user processes: extra hardening, since root
reads ``/proc`` regardless.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import stat
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from typing import NoReturn

from mesh.errors import MeshError

__all__ = [
    "SECRETS_FD",
    "HandoverFailed",
    "keep_out_of_environment",
    "keep_secrets_from_children",
    "received",
    "take_over",
]

#: The variable naming the descriptor the secrets arrive on, in the re-executed image.
SECRETS_FD = "MESHNAV_SECRETS_FD"
#: The most the pipe carries: a pipe can be made to hold 1 MiB without privileges.
MAX_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux's fcntl


class HandoverFailed(MeshError):
    """The secrets could not be handed to the re-executed node, or read there."""


_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3


def keep_secrets_from_children() -> bool:
    """Make this process non-dumpable (Linux): its ``/proc`` files — its memory, which holds the
    token and the call-token key, and its descriptors — are then readable by root alone, not by
    a ``stdio`` module's subprocess running as the same user. Extra hardening: the environment
    block holds no secret whoever reads it. Whether it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 == libc.prctl(_PR_GET_DUMPABLE))


class _Image:
    """What this process image was handed: ``None`` until ``take_over`` has looked."""

    secrets: dict[str, str] | None = None


def take_over(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Read the secrets handed to this image, if it was run anew with them (``SECRETS_FD`` set),
    once, and then make the process non-dumpable; what was handed (empty in a first image)."""
    if _Image.secrets is None:
        _Image.secrets = _read(environ)
        if _Image.secrets:
            keep_secrets_from_children()
    return dict(_Image.secrets)


def received(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """The secrets the node's first image handed over (``take_over``)."""
    return take_over(environ)


def _read(environ: MutableMapping[str, str]) -> dict[str, str]:
    named = environ.pop(SECRETS_FD, None)
    if named is None:
        return {}
    try:
        fd = int(named)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise HandoverFailed(f"{SECRETS_FD} names no pipe; do not set it yourself")
    except (ValueError, OSError):
        raise HandoverFailed(f"{SECRETS_FD} names no pipe; do not set it yourself") from None
    try:
        with os.fdopen(fd, "rb") as pipe:
            data = pipe.read(MAX_BYTES + 1)
        secrets = json.loads(data)
    except (OSError, ValueError):
        raise HandoverFailed("the secrets handed to the node could not be read") from None
    if not isinstance(secrets, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in secrets.items()
    ):
        raise HandoverFailed("the secrets handed to the node could not be read")
    return secrets


def keep_out_of_environment(
    secrets: Mapping[str, str],
    argv: Sequence[str],
    *,
    reexecute: bool,
    environ: MutableMapping[str, str] = os.environ,
) -> None:
    """Make sure no variable of ``secrets`` is in this process's environment block: when one is
    and ``reexecute``, run ``argv`` anew in this process (it does not return) with the secrets on
    a pipe; otherwise (a process that is not the node's command alone, such as a test calling
    it) take them out of ``environ``, so that no child inherits them at least."""
    present = [name for name in secrets if name in environ]
    if not present:
        return
    if not reexecute:
        for name in present:
            environ.pop(name, None)
        return
    _reexecute(secrets, argv, {k: v for k, v in environ.items() if k not in secrets})


def _reexecute(secrets: Mapping[str, str], argv: Sequence[str], kept: dict[str, str]) -> NoReturn:
    data = json.dumps(dict(secrets)).encode()
    if len(data) > MAX_BYTES:
        raise HandoverFailed("the node's secrets are more than 1 MiB; give them in files")
    read, write = os.pipe()
    try:
        if len(data) > 65536 and sys.platform.startswith("linux"):
            import fcntl

            fcntl.fcntl(write, _F_SETPIPE_SZ, MAX_BYTES)
        os.set_blocking(write, False)  # all of it fits, or nothing waits for a reader
        view = memoryview(data)
        while view:
            view = view[os.write(write, view) :]
    except OSError:
        os.close(read)
        raise HandoverFailed("the node's secrets do not fit a pipe; give them in files") from None
    finally:
        os.close(write)
    os.set_inheritable(read, True)
    kept[SECRETS_FD] = str(read)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os.execve(sys.executable, list(argv), kept)  # noqa: S606  # this very command, anew
