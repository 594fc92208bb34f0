"""The ``--module`` grammar, and the one table from a module's name to the server it builds.

A node serves each of its assignments from one spec given on its command line (SPEC §13)::

    node                          host facts (the node seat every machine holds)
    sqlite:PATH[,PATH...]         the machine's SQLite files, or directories of them
    postgres:DSN                  the machine's PostgreSQL, read-only
    stdio:NAME=COMMAND            an existing MCP server run as a subprocess
    http:NAME=URL                 an MCP server on HTTP, proxied behind the node

Any of the first three may be prefixed ``ROLE=`` to name an instance apart (``postgres-replica=
postgres:postgresql://...``); the role otherwise is the module's name. stdio's and http's
``NAME`` already is its role, so they take no prefix. A prefix is recognised only when the text
before the first ``=`` holds no ``:``, which keeps ``stdio:NAME=...`` and key=value DSNs
(``postgres:host=db``) out of it.

A spec may carry a password (a DSN does), so no message here repeats any part of the spec beyond
the names of the modules this grammar knows.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from mesh.errors import ModuleSpecError
from mesh.modules.credentials import ModuleCredentials
from mesh.settings import UPSTREAM_ANSWER_BYTES, UPSTREAM_ERROR_LOG_S

if TYPE_CHECKING:
    from fastmcp import FastMCP

__all__ = [
    "LIBPQ_SECRETS",
    "MODULES",
    "ModuleOptions",
    "ModuleSpec",
    "UpstreamLimits",
    "build_module",
    "check_traced",
    "parse_module_spec",
    "take_libpq_secrets",
]

#: The module names this grammar knows, in the order help texts list them.
MODULES = ("node", "sqlite", "postgres", "stdio", "http")

#: What libpq reads from its process's environment that is a secret: the node takes them out of
#: its own at start and gives them to its ``postgres`` modules alone (``take_libpq_secrets``).
LIBPQ_SECRETS = ("PGPASSWORD", "PGPASSFILE")

_ROLE = re.compile(r"[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?")
_RESERVED_ROLES = frozenset({"mesh"})
_ROLE_RULE = "a role is 1-63 of a-z, 0-9, '_' and '-', starting and ending with a letter or digit"


@dataclass(frozen=True)
class ModuleSpec:
    """One parsed ``--module`` spec.

    ``module`` is one of :data:`MODULES`; ``role`` names the assignment on its machine (the
    ``ROLE`` of ``HOLDER/ROLE/TOOL``); ``argument`` is the rest as given: ``""`` for ``node``,
    the comma-separated paths for ``sqlite``, the DSN for ``postgres``, the command line for
    ``stdio``. The DSN is kept out of ``repr`` so that logging a spec never prints a password.
    """

    module: str
    role: str
    argument: str

    def __repr__(self) -> str:
        shown = "<hidden>" if self.module == "postgres" else repr(self.argument)
        return f"ModuleSpec(module={self.module!r}, role={self.role!r}, argument={shown})"


@dataclass(frozen=True)
class UpstreamLimits:
    """What the operator chose for the upstreams of ``http`` and ``stdio`` modules
    (``mesh.modules.upstream``)."""

    #: The most of one ``http`` upstream answer read (``--upstream-answer-bytes``).
    answer_bytes: int = UPSTREAM_ANSWER_BYTES
    #: Seconds between two log lines about one upstream's failures.
    error_log_s: float = UPSTREAM_ERROR_LOG_S
    #: The roles given the mesh's trace context (``--module-trace ROLE``).
    traced: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ModuleOptions:
    """What the node gives every module it builds, beyond its spec: its operator's choices."""

    #: Serve a ``postgres`` module whose role is privileged (``--allow-privileged-role``).
    allow_privileged_role: bool = False
    #: The ``LIBPQ_SECRETS`` the node took from its environment, for ``postgres`` modules.
    libpq_secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Each role's upstream credentials (``--module-header``, ``--module-env``, …), read at start.
    credentials: Mapping[str, ModuleCredentials] = field(default_factory=dict, repr=False)
    #: What the upstreams of ``http`` and ``stdio`` modules are read to and shown.
    upstream: UpstreamLimits = UpstreamLimits()


def take_libpq_secrets(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Take ``LIBPQ_SECRETS`` out of ``environ``: libpq would read them from the process's
    environment for any connection, and every subprocess started with it would inherit them."""
    return {name: environ.pop(name) for name in LIBPQ_SECRETS if name in environ}


def parse_module_spec(text: str) -> ModuleSpec:
    """Parse one spec; raise :class:`ModuleSpecError` saying what is wrong, never echoing it."""
    text = text.strip()
    if not text:
        raise ModuleSpecError("empty module spec; expected one of " + _known())
    role: str | None = None
    head, sep, rest = text.partition("=")
    if sep and ":" not in head:
        _check_role(head)
        role, text = head, rest
    module, colon, argument = text.partition(":")
    if module not in MODULES:
        raise ModuleSpecError("unknown module in spec; expected one of " + _known())
    if module == "node":
        if colon:
            raise ModuleSpecError("the node module takes no argument: write 'node'")
        return ModuleSpec("node", role or "node", "")
    if not argument.strip():
        raise ModuleSpecError(f"the {module} module needs an argument: {_usage(module)}")
    if module == "sqlite":
        if any(not part.strip() for part in argument.split(",")):
            raise ModuleSpecError("empty path in a sqlite spec: " + _usage("sqlite"))
        return ModuleSpec("sqlite", role or "sqlite", argument)
    if module == "postgres":
        return ModuleSpec("postgres", role or "postgres", argument)
    if role is not None:
        raise ModuleSpecError(f"a {module} spec names its role itself: {_usage(module)}")
    if module == "http":
        return _http_spec(argument)
    name, eq, command = argument.partition("=")
    if not eq:
        raise ModuleSpecError("a stdio spec needs a name and a command: " + _usage("stdio"))
    _check_role(name)
    try:
        argv = shlex.split(command)
    except ValueError:
        raise ModuleSpecError("the stdio command does not parse (unbalanced quotes?)") from None
    if not argv:
        raise ModuleSpecError("the stdio command is empty: " + _usage("stdio"))
    return ModuleSpec("stdio", name, command)


def _http_spec(argument: str) -> ModuleSpec:
    name, eq, url = argument.partition("=")
    if not eq:
        raise ModuleSpecError("an http spec needs a name and a URL: " + _usage("http"))
    _check_role(name)
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModuleSpecError("an http spec's URL is http(s)://HOST[:PORT]/PATH: " + _usage("http"))
    if parts.username or parts.password:
        raise ModuleSpecError(
            "an http spec's URL holds no credentials: give them with --module-header or "
            "--module-oauth"
        )
    return ModuleSpec("http", name, url.strip())


def build_module(spec: ModuleSpec, options: ModuleOptions | None = None) -> FastMCP:
    """Build the FastMCP server that serves ``spec``'s assignment.

    Builders are imported on demand, so a node that serves no PostgreSQL never loads psycopg.
    """
    options = options or ModuleOptions()
    if spec.module == "node":
        from mesh.modules.node import build_node_module

        return build_node_module()
    if spec.module == "sqlite":
        from mesh.modules.sqlite import build_sqlite_module

        return build_sqlite_module([Path(part.strip()) for part in spec.argument.split(",")])
    if spec.module == "postgres":
        from mesh.modules.postgres import build_postgres_module

        return build_postgres_module(
            spec.argument,
            role=spec.role,
            environment=options.libpq_secrets,
            allow_privileged_role=options.allow_privileged_role,
        )
    credentials = options.credentials.get(spec.role)
    if spec.module == "stdio":
        from mesh.modules.stdio import build_stdio_module

        environment = None if credentials is None else credentials.environment
        return build_stdio_module(spec.role, spec.argument, environment, upstream=options.upstream)
    if spec.module == "http":
        from mesh.modules.http import build_http_module

        return build_http_module(spec.role, spec.argument, credentials, options.upstream)
    raise ModuleSpecError("unknown module; expected one of " + _known())


def check_traced(roles: Iterable[str], served: Mapping[str, str]) -> None:
    """Each role given the mesh's trace context (``--module-trace``) is an ``http`` or ``stdio``
    module the node serves (``served``: role to module name): a typo would otherwise pass on
    nothing, silently, and the built-in modules have no upstream to pass it to."""
    for role in roles:
        if served.get(role) not in ("http", "stdio"):
            raise ModuleSpecError(
                f"--module-trace {role}: no http or stdio module of that role is served"
            )


def _check_role(role: str) -> None:
    if not _ROLE.fullmatch(role):
        raise ModuleSpecError(f"invalid role in module spec: {_ROLE_RULE}")
    if role in _RESERVED_ROLES:
        raise ModuleSpecError("the role 'mesh' is reserved")


def _known() -> str:
    return ", ".join(MODULES)


def _usage(module: str) -> str:
    return {
        "sqlite": "sqlite:PATH[,PATH...]",
        "postgres": "postgres:DSN",
        "stdio": "stdio:NAME=COMMAND",
        "http": "http:NAME=URL",
    }[module]
