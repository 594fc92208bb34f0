"""A real OAuth 2.1 authorization server for the tests: panva's ``oidc-provider`` under Node.js.

Its npm packages are pinned by ``tests/e2e/oauth/package-lock.json`` and installed from it once
(``npm ci``) into ``tests/e2e/oauth/node_modules`` (git-ignored); later runs need no registry. A
machine without npm, or without the registry on the first run, fails the tests that need it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import select
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import free_port, stop

__all__ = ["OAUTH_PACKAGES", "AuthorizationServer", "authorization_server", "node_packages"]

OAUTH_PACKAGES = Path(__file__).resolve().parent / "e2e" / "oauth"
INSTALL_TIMEOUT_S = 240
START_TIMEOUT_S = 60


def node_packages() -> Path:
    """``tests/e2e/oauth`` with its locked packages installed (``npm ci``, once)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.fail("node and npm are not on PATH: these tests need Node.js 20+", pytrace=False)
    lock_file = OAUTH_PACKAGES / "package-lock.json"
    stamp = OAUTH_PACKAGES / "node_modules" / ".meshnav-installed"
    wanted = lock_file.read_text()
    with (OAUTH_PACKAGES / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest worker may be installing them
        if stamp.is_file() and stamp.read_text() == wanted:
            return OAUTH_PACKAGES
        command = [npm, "ci", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error"]
        try:
            done = subprocess.run(
                command,
                cwd=OAUTH_PACKAGES,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"npm ci did not finish within {INSTALL_TIMEOUT_S} s", pytrace=False)
        if done.returncode != 0:
            pytest.fail(
                f"npm ci in {OAUTH_PACKAGES} failed (is the npm registry reachable?):\n"
                f"{done.stderr[-2000:]}",
                pytrace=False,
            )
        stamp.write_text(wanted)
    return OAUTH_PACKAGES


@dataclass
class AuthorizationServer:
    issuer: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/jwks"

    @property
    def token_url(self) -> str:
        return self.issuer + "/token"

    def token(self, client_id: str, secret: str, *, resource: str | None, scope: str = "") -> str:
        """An access token by the client credentials grant (RFC 6749 §4.4), for ``resource``."""
        form = {"grant_type": "client_credentials", "scope": scope}
        if resource is not None:
            form["resource"] = resource
        answer = httpx.post(self.token_url, data=form, auth=(client_id, secret), timeout=30)
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token


@contextlib.contextmanager
def authorization_server(
    root: Path,
    *,
    clients: list[dict[str, Any]],
    scopes: list[str],
    short_lived: list[str] = (),  # type: ignore[assignment]
    name: str = "as",
) -> Iterator[AuthorizationServer]:
    """oidc-provider on a free loopback port with ``clients`` pre-registered, until the block
    ends."""
    packages = node_packages()
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    config = root / f"{name}.json"
    config.write_text(
        json.dumps(
            {
                "issuer": issuer,
                "port": port,
                "scopes": scopes,
                "clients": clients,
                "shortLived": list(short_lived),
            }
        )
    )
    config.chmod(0o600)
    log = root / f"{name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            ["node", str(packages / "authorization_server.mjs"), str(config)],
            stdout=subprocess.PIPE,
            stderr=out,
            cwd=packages,
        )
    try:
        assert process.stdout is not None
        # "ready", or nothing once it died; a server that neither does within the deadline is
        # named by its log, not left to hold the test until pytest-timeout ends it
        answered, _, _ = select.select([process.stdout], [], [], START_TIMEOUT_S)
        line = process.stdout.readline() if answered else b""
        if line.strip() != b"ready":
            pytest.fail(f"oidc-provider did not start:\n{log.read_text()[-2000:]}", pytrace=False)
        yield AuthorizationServer(issuer, process, log)
    finally:
        stop(process)
        if process.stdout is not None:
            process.stdout.close()
