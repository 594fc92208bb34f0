"""One shape for a table's column, so an agent reads ``describe_table`` the same way on SQLite
and PostgreSQL."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["Column"]


class Column(BaseModel):
    name: str
    type: str
    notnull: bool
    default: str | None = Field(description="The default as an SQL expression, if any.")
    pk: int = Field(description="1-based position in the primary key; 0 when not in it.")
