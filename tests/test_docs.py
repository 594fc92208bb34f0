"""The walker tools' reference is generated from their definitions; a stale copy fails here."""

from __future__ import annotations

from pathlib import Path

from meshnav.docs import walker_reference

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "walker-tools.md"


def test_walker_reference_is_current() -> None:
    assert REFERENCE.read_text() == walker_reference(), "run `meshnav docs` (or `make docs`)"
