"""One log format everywhere: one line per event, UTC ISO times, the libraries' warnings too
(FastMCP's rich handler wrote several lines with US-style local dates), or JSON lines with
``MESHNAV_LOG_FORMAT=json``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

SCRIPT = """
import logging
from meshnav.logs import configure_logging
configure_logging("INFO")
import fastmcp  # its own handler, had it one, would write this warning its way
logging.getLogger("fastmcp.server.auth").warning("Bearer token rejected for %s", "a\\\\nb")
logging.getLogger("meshnav.node").info("registered %s", "web1")
logging.getLogger("uvicorn.error").warning("port taken")
"""


def _run(**env: str) -> list[str]:
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("MESHNAV_", "FASTMCP_"))
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env={**environment, "COLUMNS": "80", **env},
        timeout=60,
        check=True,
    )
    return done.stderr.splitlines()


def test_every_record_is_one_line_with_a_utc_iso_time() -> None:
    lines = _run()
    assert len(lines) == 3, lines
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert re.fullmatch(
        stamp + r" WARNING fastmcp\.server\.auth Bearer token rejected for .+", lines[0]
    )
    assert re.fullmatch(stamp + r" INFO meshnav\.node registered web1", lines[1])
    assert re.fullmatch(stamp + r" WARNING uvicorn\.error port taken", lines[2])


def test_json_lines_when_asked() -> None:
    records = [json.loads(line) for line in _run(MESHNAV_LOG_FORMAT="json")]
    assert [(r["level"], r["logger"]) for r in records] == [
        ("WARNING", "fastmcp.server.auth"),
        ("INFO", "meshnav.node"),
        ("WARNING", "uvicorn.error"),
    ]
    assert all(r["at"].endswith("Z") for r in records)


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(subprocess.CalledProcessError):
        _run(MESHNAV_LOG_FORMAT="xml")
