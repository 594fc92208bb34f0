"""The commands of ``meshnav``, one module a group (SPEC §13); ``meshnav.cli`` puts them together
under the root command. What several commands share is declared once: their options in
``options``, where their work goes in ``reach``, how they answer and end in ``outcome``."""

from __future__ import annotations

__all__: list[str] = []
