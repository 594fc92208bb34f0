"""Which clients are asked: only those that can show a person a form."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as mt
import pytest

from navigator.elicitation import elicitor_for


def _context(elicitation: mt.ElicitationCapability | None, *, modern: bool) -> Any:
    capabilities = mt.ClientCapabilities(elicitation=elicitation)
    return SimpleNamespace(
        session=SimpleNamespace(client_capabilities=capabilities),
        _is_modern_protocol=lambda: modern,
    )


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize(
    ("declared", "asked"),
    [
        (None, False),
        (mt.ElicitationCapability(), True),  # no mode: forms, from before modes
        (mt.ElicitationCapability(form=mt.FormElicitationCapability()), True),
        (
            mt.ElicitationCapability(
                form=mt.FormElicitationCapability(), url=mt.UrlElicitationCapability()
            ),
            True,
        ),
        # a client that can only open a URL is not sent a form it would never answer: it gets
        # a confirm token instead
        (mt.ElicitationCapability(url=mt.UrlElicitationCapability()), False),
    ],
)
def test_only_a_client_that_shows_forms_is_asked(
    declared: mt.ElicitationCapability | None, asked: bool, modern: bool
) -> None:
    assert (elicitor_for(_context(declared, modern=modern)) is not None) is asked
