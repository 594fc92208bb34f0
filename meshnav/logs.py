"""Log configuration for every meshnav process: our loggers at the chosen level, and the libraries'
held at WARNING — FastMCP logs call arguments at DEBUG, and nothing of a call's content may reach
a log (SPEC §10). Our own lines carry addresses, principal ids, error codes and timings only.

Every record's message, whoever logs it and whatever handler writes it (FastMCP's own among
them), is escaped as it is formatted (``mesh.text.escaped``): a field that came from outside — a
JWT's subject, a name a client sent — cannot start a line of its own or drive the terminal. A
traceback, formatted apart from the message, keeps its lines."""

from __future__ import annotations

import logging
import os

from mesh.text import escaped

__all__ = ["EscapedRecord", "configure_logging"]

QUIET = (
    "fastmcp",
    "mcp",
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "uvicorn.access",
    "sse_starlette",
    "docket",
)


class EscapedRecord(logging.LogRecord):
    """A log record whose message is written with its control characters escaped."""

    def getMessage(self) -> str:
        return escaped(super().getMessage())


def configure_logging(level: str | None = None) -> None:
    logging.setLogRecordFactory(EscapedRecord)
    chosen = (level or os.environ.get("MESHNAV_LOG_LEVEL") or "INFO").upper()
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    logging.getLogger("meshnav").setLevel(chosen)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
