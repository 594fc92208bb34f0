"""Where a command's work goes, as the options each such command takes say: a navigator
(``--navigator``, called with ``--token``) or, for principals, grants, seats and the audit trail,
the registry directly (``--database``) while no navigator is given; ``--json`` for how it answers.

Those options are declared once, here: a command names a ``reach`` parameter and one of the two
decorators gives it the options in its place, after its own (where ``--help`` has always shown
them). Typer reads a command's parameters from its signature, so the decorator writes them there.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from meshnav.commands.options import (
    DEFAULT_DATABASE,
    DEFAULT_NAVIGATOR,
    DatabaseOpt,
    JsonOpt,
    NavigatorOpt,
    TokenOpt,
)
from meshnav.commands.outcome import need
from meshnav.errors import CREDENTIAL_FLAG

if TYPE_CHECKING:
    from meshnav.access import Access

__all__ = ["Reach", "RegistryReach", "takes_navigator_options", "takes_registry_options"]

Command = Callable[..., None]


@dataclass(frozen=True)
class Reach:
    """A navigator, as ``--navigator`` and ``--token`` give it, and whether to answer in JSON."""

    navigator: str | None
    token: str | None
    as_json: bool

    @property
    def url(self) -> str:
        return self.navigator or DEFAULT_NAVIGATOR

    def credential(self) -> str:
        """The token the navigator is called with, or the ``CommandError`` that says none was
        given: asked for inside the work ``run`` runs, so that it is the command's one line."""
        return need(self.token, CREDENTIAL_FLAG)


@dataclass(frozen=True)
class RegistryReach(Reach):
    """A navigator's admin API when ``--navigator`` is given, else the registry at
    ``--database``: how the first administrator is made before any navigator runs."""

    database: str

    def access(self) -> Access:
        from meshnav.access import Access  # the registry's and navigator's code: loaded to run

        return Access(database_url=self.database, navigator_url=self.navigator, token=self.token)


def _option(name: str, declared: Any, default: object) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=declared
    )


_NAVIGATOR = _option("navigator", NavigatorOpt, None)
_TOKEN = _option("token", TokenOpt, None)
_DATABASE = _option("database", DatabaseOpt, DEFAULT_DATABASE)
_JSON = _option("as_json", JsonOpt, False)


def _taking(
    options: tuple[inspect.Parameter, ...], reach: type[Reach]
) -> Callable[[Command], Command]:
    """A decorator: the command's ``reach`` parameter becomes ``options``, and the command is
    called with the ``reach`` they make."""
    names = [option.name for option in options]

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "reach"]
        parameters = [*own, *options]

        @functools.wraps(command)
        def with_options(*args: Any, **values: Any) -> None:
            given = reach(**{name: values.pop(name) for name in names})
            command(*args, reach=given, **values)

        with_options.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in parameters}
        with_options.__annotations__["return"] = signature.return_annotation
        return with_options

    return decorate


#: ``--navigator``, ``--token`` and ``--json``, for a command whose ``reach`` is a ``Reach``.
takes_navigator_options = _taking((_NAVIGATOR, _TOKEN, _JSON), Reach)
#: The same and ``--database``, for a command whose ``reach`` is a ``RegistryReach``.
takes_registry_options = _taking((_NAVIGATOR, _TOKEN, _DATABASE, _JSON), RegistryReach)
