"""What the database modules share: one shape for a table's column, so an agent reads
``describe_table`` the same way on SQLite and PostgreSQL, and one bound on a query's answer."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

__all__ = ["MAX_ANSWER_BYTES", "TOO_LONG_ROW", "Column", "RowBudget"]

#: A query's rows stop here: the answer carries them twice (structured and as text), and the
#: navigator passes at most 4 MiB.
MAX_ANSWER_BYTES = 3 << 19
TOO_LONG_ROW = (
    f"the first row is longer than this module's answer limit of {MAX_ANSWER_BYTES / 2**20:g} MiB;"
    " select fewer or shorter columns"
)


class RowBudget:
    """What is left of ``MAX_ANSWER_BYTES`` for a query's rows, counted as JSON sends them: a
    character outside ASCII is two to four bytes, a control character six."""

    def __init__(self) -> None:
        self.left = MAX_ANSWER_BYTES

    def past(self, row: Iterable[Any]) -> bool:
        """Whether a row's text alone (its strings and bytes) is past what is left: known before
        a byte of it is encoded."""
        return sum(len(value) for value in row if isinstance(value, str | bytes)) > self.left

    def admits(self, cells: list[Any]) -> bool:
        """Charge a row; False once the rows so far no longer fit."""
        text = json.dumps(cells, ensure_ascii=False, default=_model)
        self.left -= len(text.encode("utf-8", "surrogatepass"))
        return self.left >= 0


def _model(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    raise TypeError(type(value).__name__)


class Column(BaseModel):
    name: str
    type: str
    notnull: bool
    default: str | None = Field(description="The default as an SQL expression, if any.")
    pk: int = Field(description="1-based position in the primary key; 0 when not in it.")
