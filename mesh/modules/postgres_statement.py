"""The statement the ``postgres`` module's ``query`` sends, made from the caller's SQL and
parameters, and checked as sent (ADR 0047).

The caller writes psycopg's placeholders (``%s``, or ``%(name)s`` with an object, ``%%`` for a
literal ``%``); they become PostgreSQL's own ``$1``, ``$2`` … here, by psycopg's rules, and the
module runs the result on a raw server-side cursor, which sends it as it is after its ``DECLARE
… CURSOR FOR``. So the text that ``postgres_functions.check_statement`` reads is the text the
server parses: no later rewriting can turn a checked statement into another.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mesh.modules.postgres_errors import PARAMS_MISFIT
from mesh.modules.postgres_functions import StatementRefused, check_statement

__all__ = ["statement"]

# psycopg's own placeholder pattern (psycopg/_queries.py): not across a line end
_PLACEHOLDER = re.compile(r"%(?:\(([^)]+)\).|.)")


def statement(
    declare: str, sql: str, params: Sequence[object] | Mapping[str, object] | None
) -> tuple[str, list[object] | None]:
    """``sql`` with its placeholders as ``$n``, and the values to bind in that order;
    ``StatementRefused`` if the placeholders do not fit ``params``, or if the statement the
    server is sent — ``declare`` then this text — does not pass ``check_statement``."""
    text, values = (sql, None) if params is None else _numbered(sql, params)
    check_statement(declare + text)
    return text, values


def _numbered(
    sql: str, params: Sequence[object] | Mapping[str, object]
) -> tuple[str, list[object]]:
    parts: list[str] = []
    names: dict[str, int] = {}
    positional = 0
    end = 0
    for match in _PLACEHOLDER.finditer(sql):
        parts.append(sql[end : match.start()])
        end = match.end()
        found = match.group(0)
        if found == "%%":
            parts.append("%")
            continue
        if found[-1] not in "sbt":  # "%(" and "% " too
            raise StatementRefused(PARAMS_MISFIT)
        name = match.group(1)
        if name is None:
            positional += 1
            parts.append(f"${positional}")
        else:
            parts.append(f"${names.setdefault(name, len(names) + 1)}")
    parts.append(sql[end:])
    if isinstance(params, Mapping):
        if positional or not set(names) <= set(params):
            raise StatementRefused(PARAMS_MISFIT)
        return "".join(parts), [params[name] for name in names]
    if names or positional != len(params):
        raise StatementRefused(PARAMS_MISFIT)
    return "".join(parts), list(params)
