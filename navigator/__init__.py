"""The navigator: the MCP server agents talk to, and everything behind its four walker tools.

Import the submodule you need (``navigator.app.build_app``, ``navigator.validation.verdict``,
``navigator.addresses.parse_address``); this package keeps its import light on purpose, since the
CLI and the node agent's tests load pieces of it without the server.
"""

from __future__ import annotations

from navigator.errors import NavigatorError
from navigator.settings import NavigatorSettings

__all__ = ["NavigatorError", "NavigatorSettings"]
