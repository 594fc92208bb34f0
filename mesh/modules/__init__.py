"""The built-in modules a node serves, each a FastMCP server (SPEC §6).

``parse_module_spec`` reads a ``--module`` spec and ``build_module`` turns it into the server of
that assignment; the builders themselves (``mesh.modules.node`` and its siblings) are imported
only by ``build_module``, so a node loads only what it serves.
"""

from __future__ import annotations

from mesh.modules.spec import (
    ModuleOptions,
    ModuleSpec,
    UpstreamLimits,
    build_module,
    check_traced,
    parse_module_spec,
    take_libpq_secrets,
)

__all__ = [
    "ModuleOptions",
    "ModuleSpec",
    "UpstreamLimits",
    "build_module",
    "check_traced",
    "parse_module_spec",
    "take_libpq_secrets",
]
