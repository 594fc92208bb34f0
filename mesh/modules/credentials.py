"""Credentials a node gives its modules' upstreams, read from its own environment or files at start.

The command line names where a secret is, never the secret (ADR 0038)::

    --module-header 'ROLE:Authorization=Bearer ${GITHUB_TOKEN}'  a header for an http module
    --module-header 'ROLE:X-Api-Key=@/etc/meshnav/key'           its value from a file
    --module-env 'ROLE:GITHUB_TOKEN'                             that variable, for a stdio module
    --module-env 'ROLE:NAME=${VAR}'                              NAME, from VAR
    --module-env-file 'ROLE:/path/file.env'                      NAME=VALUE lines
    --module-oauth 'ROLE:TOKEN_URL,CLIENT_ID,@SECRET_FILE[,SCOPE]'
                                               an OAuth client (the client credentials grant)

``${VAR}`` is replaced by the node's environment variable ``VAR`` — which the node then takes out
of its own environment, as it takes ``PGPASSWORD`` (``take_libpq_secrets``), so no subprocess
inherits it — and ``@PATH`` (a whole value) by the file's contents, less the line end. The values
are held in memory only, kept out of every ``repr``; a message names the role, the variable or the
file, never a value.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from mesh.errors import ModuleSpecError

__all__ = ["ClientCredentials", "ModuleCredentials", "check_credentials", "read_credentials"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Headers the node sets itself on a proxied request: a credential may not replace them.
_OWN_HEADERS = frozenset(
    {"host", "content-length", "content-type", "mcp-session-id", "accept", "accept-encoding"}
)
MAX_SECRET_BYTES = 64 * 1024


@dataclass(frozen=True)
class ClientCredentials:
    """An OAuth client of an upstream's authorization server (the client credentials grant)."""

    token_url: str
    client_id: str
    secret: str = field(repr=False)
    scope: str = ""
    #: Where the secret came from (``${VAR}`` or ``@PATH``): what a log line may name.
    source: str = ""


@dataclass(frozen=True)
class ModuleCredentials:
    """What one module's upstream is given: headers (http), environment (stdio), an OAuth client."""

    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    oauth: ClientCredentials | None = None
    #: Where each value came from, for the node's log: ``header Authorization from ${VAR}``.
    sources: tuple[str, ...] = ()


@dataclass
class _Building:
    headers: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    oauth: ClientCredentials | None = None
    sources: list[str] = field(default_factory=list)


class _Reader:
    """Resolves references against one environment, noting the variables it took."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.taken: set[str] = set()

    def value(self, role: str, template: str) -> tuple[str, str]:
        """``template`` resolved, and where it came from (names only)."""
        if template.startswith("@"):
            return self.file(role, template[1:]), template
        names = _REFERENCE.findall(template)

        def variable(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.environ:
                raise ModuleSpecError(
                    f"module {role}: the node's environment has no {name}; export it before "
                    "starting the node"
                )
            self.taken.add(name)
            return self.environ[name]

        resolved = _REFERENCE.sub(variable, template)
        return resolved, " ".join("${" + n + "}" for n in names) or "the command line"

    def file(self, role: str, path: str) -> str:
        try:
            with Path(path).open("rb") as handle:
                data = handle.read(MAX_SECRET_BYTES + 1)
        except OSError:
            raise ModuleSpecError(
                f"module {role}: {path} cannot be read by the node; check the path and that the "
                "node's user may read it"
            ) from None
        if len(data) > MAX_SECRET_BYTES:
            raise ModuleSpecError(f"module {role}: {path} is larger than a credential can be")
        try:
            return data.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise ModuleSpecError(f"module {role}: {path} is not UTF-8 text") from None


#: Header names that carry a credential: one written out on the command line is warned of.
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie|pass", re.IGNORECASE)
_HEADER_ON_ARGV = (
    "module %s: header %s is written on the node's command line, which every user of this "
    "machine can read (ps): give it as ${VARIABLE} from the node's environment or @FILE instead"
)
logger = logging.getLogger("meshnav.node")


def _split(option: str, text: str) -> tuple[str, str]:
    role, colon, rest = text.partition(":")
    if not colon or not role or not rest:
        raise ModuleSpecError(f"{option} takes ROLE:VALUE (e.g. {option} 'github:...')")
    return role, rest


def read_credentials(
    *,
    headers: Iterable[str] = (),
    environment: Iterable[str] = (),
    env_files: Iterable[str] = (),
    oauth: Iterable[str] = (),
    environ: MutableMapping[str, str] = os.environ,
) -> dict[str, ModuleCredentials]:
    """Every module's credentials by role, read now; the variables they name taken out of
    ``environ``. A reference that cannot be read stops the node at start, naming it."""
    reader = _Reader(environ)
    building: dict[str, _Building] = {}
    for text in headers:
        role, rest = _split("--module-header", text)
        name, eq, template = rest.partition("=")
        name = name.strip()
        if not eq or not _HEADER.fullmatch(name) or name.lower() in _OWN_HEADERS:
            raise ModuleSpecError(
                f"module {role}: --module-header takes ROLE:NAME=VALUE with a header name the "
                "node does not set itself (e.g. Authorization=Bearer ${TOKEN})"
            )
        value, source = reader.value(role, template.strip())
        if any(c in value for c in "\r\n\0"):
            raise ModuleSpecError(f"module {role}: header {name}'s value holds a line break")
        if source == "the command line" and _SECRET_HEADER.search(name):
            logger.warning(_HEADER_ON_ARGV, role, name)
        entry = building.setdefault(role, _Building())
        entry.headers[name] = value
        entry.sources.append(f"header {name} from {source}")
    for text in environment:
        role, rest = _split("--module-env", text)
        name, eq, template = rest.partition("=")
        if not _ENV_NAME.fullmatch(name):
            raise ModuleSpecError(f"module {role}: --module-env takes ROLE:NAME or ROLE:NAME=VALUE")
        value, source = reader.value(role, template if eq else "${" + name + "}")
        entry = building.setdefault(role, _Building())
        entry.environment[name] = value
        entry.sources.append(f"environment {name} from {source}")
    for text in env_files:
        role, path = _split("--module-env-file", text)
        entry = building.setdefault(role, _Building())
        for number, raw in enumerate(reader.file(role, path).splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, eq, value = line.removeprefix("export ").partition("=")
            name = name.strip()
            if not eq or not _ENV_NAME.fullmatch(name):
                raise ModuleSpecError(f"module {role}: {path} line {number} is not NAME=VALUE")
            entry.environment[name] = value.strip().strip("'\"") if value.strip() else ""
            entry.sources.append(f"environment {name} from {path}")
    for text in oauth:
        role, rest = _split("--module-oauth", text)
        parts = [p.strip() for p in rest.split(",")]
        if len(parts) not in (3, 4) or not all(parts[:3]):
            raise ModuleSpecError(
                f"module {role}: --module-oauth takes ROLE:TOKEN_URL,CLIENT_ID,@SECRET_FILE"
                "[,SCOPE] (or ${VAR} for the secret)"
            )
        token_url, client_id, secret_ref = parts[:3]
        if not token_url.startswith(("https://", "http://")):
            raise ModuleSpecError(f"module {role}: --module-oauth's TOKEN_URL is an http(s) URL")
        if not (secret_ref.startswith("@") or _REFERENCE.fullmatch(secret_ref)):
            raise ModuleSpecError(
                f"module {role}: --module-oauth's secret is @FILE or ${{VAR}}, never the secret"
            )
        secret, source = reader.value(role, secret_ref)
        entry = building.setdefault(role, _Building())
        scope = parts[3] if len(parts) == 4 else ""
        entry.oauth = ClientCredentials(token_url, client_id, secret, scope, source)
        entry.sources.append(f"OAuth client {client_id} at {token_url}, secret from {source}")
    for name in reader.taken:  # no subprocess the node starts inherits them
        environ.pop(name, None)
    return {
        role: ModuleCredentials(b.headers, b.environment, b.oauth, tuple(b.sources))
        for role, b in building.items()
    }


def check_credentials(
    credentials: Mapping[str, ModuleCredentials], modules: Mapping[str, str]
) -> None:
    """Each role's credentials fit its module (``modules``: role to module name): headers and an
    OAuth client for ``http``, environment for ``stdio``; a role the node does not serve has
    none (a typo would otherwise send the secret nowhere, silently)."""
    for role, given in credentials.items():
        module = modules.get(role)
        if module is None:
            raise ModuleSpecError(f"credentials for role {role}, which no --module serves")
        if (given.headers or given.oauth) and module != "http":
            raise ModuleSpecError(f"module {role}: headers and OAuth are for http modules")
        if given.environment and module != "stdio":
            raise ModuleSpecError(f"module {role}: --module-env is for stdio modules")
