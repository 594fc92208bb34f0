"""Log configuration for every meshnav process (navigator, node, CLI): one format, one line per
event, times in UTC ISO 8601 — ``2026-12-05T02:26:34.123Z WARNING meshnav.node message`` — or a
JSON object a line with ``MESHNAV_LOG_FORMAT=json``. The libraries' records come the same way:
FastMCP's own handler (rich, several lines, local US-style dates) and uvicorn's are taken off, and
their records reach the one handler here.

Our loggers log at the chosen level, the libraries' at WARNING — FastMCP logs call arguments at
DEBUG, and nothing of a call's content may reach a log (SPEC §10). Our own lines carry addresses,
principal ids, error codes and timings only.

Every record's message, whoever logs it and whatever handler writes it, is escaped as it is
formatted (``mesh.text.escaped``): a field that came from outside — a JWT's subject, a name a
client sent — cannot start a line of its own or drive the terminal. A traceback, formatted apart
from the message, keeps its lines in the text format and is one field of the JSON object."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime

from mesh.text import escaped

__all__ = ["FORMATS", "EscapedRecord", "configure_logging", "log_formatter"]

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
#: Loggers a library gives handlers of its own (FastMCP's rich one, uvicorn's): theirs are taken
#: off, so that their records are written as every other.
OWN_HANDLERS = ("fastmcp", "uvicorn", "uvicorn.error", "uvicorn.access")
#: ``MESHNAV_LOG_FORMAT``: text (the default) or json.
FORMATS = ("text", "json")


class EscapedRecord(logging.LogRecord):
    """A log record whose message is written with its control characters escaped."""

    def getMessage(self) -> str:
        return escaped(super().getMessage())


def _utc(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER MESSAGE``, the time in UTC ISO 8601."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _utc(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``at``, ``level``, ``logger``, ``message`` (and ``exception``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "at": _utc(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def log_formatter(chosen: str | None = None) -> logging.Formatter:
    """The formatter of ``chosen`` (``MESHNAV_LOG_FORMAT`` when not given): text or json."""
    name = (chosen or os.environ.get("MESHNAV_LOG_FORMAT") or "text").lower()
    if name not in FORMATS:
        raise ValueError(f"MESHNAV_LOG_FORMAT is text or json, not {name!r}")
    if name == "json":
        return JsonFormatter()
    return TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")


def configure_logging(level: str | None = None, log_format: str | None = None) -> None:
    """Our loggers at ``level``, every record written by one handler in ``log_format`` (the
    ``MESHNAV_LOG_LEVEL`` and ``MESHNAV_LOG_FORMAT`` settings when not given)."""
    # FastMCP adds its rich handler as it is imported, unless told not to: told here, for an
    # import to come; one that came before loses its handler below
    os.environ.setdefault("FASTMCP_LOG_ENABLED", "false")
    logging.setLogRecordFactory(EscapedRecord)
    chosen = (level or os.environ.get("MESHNAV_LOG_LEVEL") or "INFO").upper()
    handler = logging.StreamHandler()
    handler.setFormatter(log_formatter(log_format))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    logging.getLogger("meshnav").setLevel(chosen)
    for name in OWN_HANDLERS:
        library = logging.getLogger(name)
        for own in library.handlers[:]:
            library.removeHandler(own)
        library.propagate = True
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
