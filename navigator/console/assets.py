"""The console's static assets — its stylesheet, script and icon — served by the navigator itself.

A fixed list of files read once from the package; each page asks for them by a URL that carries
the file's digest, so browsers may keep them for a year and still never run a stale script.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["asset_url", "serve_asset"]

STATIC_URL = "/console/static/"
#: How long a browser may keep an asset; its URL changes when its content does.
CACHE_S = 365 * 24 * 3600

_TYPES = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


@cache
def _asset(name: str) -> Asset:
    body = files("navigator.console").joinpath("static", name).read_bytes()
    return Asset(body, _TYPES[name], '"' + hashlib.sha256(body).hexdigest()[:16] + '"')


def asset_url(name: str) -> str:
    """The URL of a static asset, versioned by its content."""
    return f"{STATIC_URL}{name}?v={_asset(name).etag.strip(chr(34))}"


async def serve_asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _TYPES:
        return Response("Not found.", status_code=404, media_type="text/plain")
    asset = _asset(name)
    headers = {"etag": asset.etag, "cache-control": f"public, max-age={CACHE_S}, immutable"}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)
