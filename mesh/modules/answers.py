"""What bounds a database module's answer, shared by the ``sqlite`` and ``postgres`` modules:
the size of a query's rows, and how much of a database's own error message is passed on, and how.
Nothing here imports pydantic, so a SQLite worker process starts without it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["MAX_ANSWER_BYTES", "MAX_MESSAGE_CHARS", "TOO_LONG_ROW", "RowBudget", "database_message"]

#: A query's rows stop here: the answer carries them twice (structured and as text), and the
#: navigator passes at most 4 MiB.
MAX_ANSWER_BYTES = 3 << 19
TOO_LONG_ROW = (
    f"the first row is longer than this module's answer limit of {MAX_ANSWER_BYTES / 2**20:g} MiB;"
    " select fewer or shorter columns"
)

#: The most of a database's own error message an answer passes on. The message is about the
#: caller's own statement (``no such table: nosuchtable``, ``near "SELEC": syntax error``), on the
#: machine the caller may query: what an agent needs to fix it, and not the registry's storage
#: text that SPEC §9 keeps from answers.
MAX_MESSAGE_CHARS = 300


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
    """A pydantic model as its fields (without importing pydantic: a SQLite worker has none)."""
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise TypeError(type(value).__name__)
    return dump()


#: An absolute path (POSIX or Windows) of two parts or more.
_PATH = re.compile(r"(?:\b[A-Za-z]:)?(?:[/\\][^\s\"'`/\\,;()]+){2,}[/\\]?")


def database_message(
    message: str, known: dict[str, str] | None = None, hidden: Iterable[object] = ()
) -> str:
    """A database's own error message as an answer may carry it: each of ``known`` paths
    replaced by its name, any other absolute path by ``<path>``, each ``hidden`` value (the
    call's parameters: ``invalid input syntax for type integer: "VALUE"``) by ``<parameter>``,
    at most ``MAX_MESSAGE_CHARS``."""
    for path, name in sorted((known or {}).items(), key=lambda item: -len(item[0])):
        message = message.replace(path, name)
    for value in sorted({_text(v) for v in _flat(hidden)} - {""}, key=len, reverse=True):
        # a short value could be any part of the message: only where it stands quoted
        if len(value) > 3:
            message = message.replace(value, "<parameter>")
        else:
            message = message.replace(f'"{value}"', '"<parameter>"')
    message = _PATH.sub("<path>", " ".join(message.split()))
    if len(message) > MAX_MESSAGE_CHARS:
        return message[: MAX_MESSAGE_CHARS - 1] + "\u2026"
    return message


def _flat(values: Iterable[object]) -> Iterator[object]:
    for value in values:
        if isinstance(value, list | tuple):
            yield from _flat(value)
        elif value is not None and not isinstance(value, bool):
            yield value


def _text(value: object) -> str:
    return value if isinstance(value, str) else str(value)
