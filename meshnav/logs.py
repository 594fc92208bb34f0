"""Log configuration for every meshnav process: our loggers at the chosen level, and the libraries'
held at WARNING — FastMCP logs call arguments at DEBUG, and nothing of a call's content may reach
a log (SPEC §10). Our own lines carry addresses, principal ids, error codes and timings only."""

from __future__ import annotations

import logging
import os

__all__ = ["configure_logging"]

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


def configure_logging(level: str | None = None) -> None:
    chosen = (level or os.environ.get("MESHNAV_LOG_LEVEL") or "INFO").upper()
    logging.basicConfig(
        level=logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        force=True,
    )
    logging.getLogger("meshnav").setLevel(chosen)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
