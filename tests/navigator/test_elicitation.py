"""Which clients are asked: only those that can show a person a form."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as mt
import pytest
from fastmcp.server.elicitation import handle_elicit_accept, parse_elicit_response_type

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


@pytest.mark.parametrize(("answer", "allowed"), [(True, True), ("yes", False), (1, False)])
async def test_only_a_strict_yes_allows_a_legacy_call(answer: object, allowed: bool) -> None:
    """The answer read as FastMCP reads it for the form asked: pydantic's lax bool took "yes",
    1 or "on" for true."""

    async def elicit(message: str, response_type: Any) -> Any:
        config = parse_elicit_response_type(response_type)
        (field,) = config.schema["properties"]
        return handle_elicit_accept(config, {field: answer})

    capabilities = mt.ElicitationCapability(form=mt.FormElicitationCapability())
    context = _context(capabilities, modern=False)
    context.elicit = elicit
    elicitor = elicitor_for(context)
    assert elicitor is not None
    assert await elicitor.ask("Allow?", "binding") is allowed
