"""The signing side of an authorization server, for tests that need JWTs no well-behaved one
would issue: its RSA key, published as a real JWKS over HTTP on loopback, and any token signed
with it — a subject holding control characters or a lone surrogate, an ``exp`` past the
calendar, any header ``typ``.

The navigator under test is given only the JWKS URL and the issuer (``MESHNAV_JWT_JWKS_URI``,
``MESHNAV_JWT_ISSUER``): it fetches the keys and verifies signatures as in a deployment, with
FastMCP's own verifier. ``tests/authorization_server.py`` is the whole server (sign-in flows) for
the tests that need one.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from joserfc import jws
from joserfc.jwk import RSAKey

__all__ = ["JwksIssuer", "jwks_issuer"]

KID = "test-rsa"


@dataclass(frozen=True)
class JwksIssuer:
    issuer: str
    key: RSAKey

    @property
    def jwks_uri(self) -> str:
        return self.issuer + "/jwks"

    def mint(
        self,
        audience: str,
        sub: str,
        *,
        scope: str = "",
        typ: str | None = "at+jwt",
        **claims: Any,
    ) -> str:
        """An RS256 token of this issuer for ``audience``, valid for a minute unless ``claims``
        say otherwise. The payload is written as Python's ``json`` writes it (``ensure_ascii``:
        a lone surrogate travels as ``\\udXXX``; ``Infinity`` allowed), as a hostile issuer
        could."""
        body = {
            "iss": self.issuer,
            "aud": audience,
            "sub": sub,
            "exp": int(time.time()) + 60,
            "scope": scope,
            **claims,
        }
        header: dict[str, Any] = {"alg": "RS256", "kid": KID}
        if typ is not None:
            header["typ"] = typ
        return jws.serialize_compact(header, json.dumps(body).encode(), self.key)


@contextlib.contextmanager
def jwks_issuer() -> Iterator[JwksIssuer]:
    """A fresh RSA key and its JWKS at ``http://127.0.0.1:PORT/jwks``, until the block ends."""
    key = RSAKey.generate_key(2048, parameters={"kid": KID, "use": "sig", "alg": "RS256"})
    document = json.dumps({"keys": [key.as_dict(private=False)]}).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/jwks"
            self.send_response(200 if found else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(document) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(document)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield JwksIssuer(f"http://127.0.0.1:{server.server_address[1]}", key)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
