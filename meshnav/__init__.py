"""meshnav's command line: one entry point, ``meshnav``, on top of the three packages."""

from __future__ import annotations

__all__: list[str] = []
