"""The options several commands take, declared once, and how their values are read: a rate as an
operator writes it, a list option's words, several values after one option (SPEC §13)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperCommand

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_NAVIGATOR",
    "ConcurrencyOpt",
    "DatabaseOpt",
    "ForceOpt",
    "JsonOpt",
    "NavigatorOpt",
    "RateOpt",
    "SeveralValues",
    "TokenOpt",
    "per_minute",
    "spread_values",
    "words",
]

DEFAULT_DATABASE = "sqlite:///./meshnav.db"
DEFAULT_NAVIGATOR = "http://127.0.0.1:7700"

NavigatorOpt = Annotated[
    str | None, typer.Option("--navigator", envvar="MESHNAV_NAVIGATOR_URL", help="Navigator URL.")
]
TokenOpt = Annotated[
    str | None, typer.Option("--token", envvar="MESHNAV_TOKEN", help="Bearer token.")
]
DatabaseOpt = Annotated[
    str, typer.Option("--database", envvar="MESHNAV_DATABASE_URL", help="Registry URL.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
RateOpt = Annotated[
    str | None,
    typer.Option("--rate", help="Calls per minute it may make, e.g. 600/min or 10/s (no limit)."),
]
ConcurrencyOpt = Annotated[
    int | None, typer.Option("--concurrency", min=1, help="Calls it may make at once (no limit).")
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Grant a name no principal has yet: one made later, a JWT subject."
    ),
]


def per_minute(text: str | None) -> int | None:
    """A rate as an operator writes it — ``600/min``, ``10/s`` or ``600`` (a minute's) — in calls
    per minute (ADR 0041)."""
    if text is None:
        return None
    count, _, unit = text.strip().partition("/")
    seconds = {"": 60, "min": 60, "m": 60, "s": 1, "sec": 1}.get(unit.strip().lower())
    if not count.strip().isdigit() or seconds is None or int(count) < 1:
        raise typer.BadParameter("a rate is calls per minute or second: e.g. 600/min or 10/s")
    return int(count) * (60 // seconds)


def words(values: list[str]) -> list[str]:
    """A list option's values one a word: each value may also be several words ("a b") or a list
    with commas ("a,b"), as scopes were always written."""
    return [word for text in values for word in text.replace(",", " ").split()]


class SeveralValues(TyperCommand):
    """A command whose list options take several values each, as SPEC §13 writes them
    (``--scopes S...``, ``--module SPEC...``): Click gives an option one value, so ``--scopes a b``
    is read as ``--scopes a --scopes b``. An option's further values run to the next option, once
    the command's arguments are all given (``principal add --scopes a bob`` still names bob); a
    value can also be one argument of several words ("a b") or a list with commas, as before."""

    several = frozenset({"--scopes", "--module", "--seat"})

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Typer's own Click's Context
        options = [p for p in self.params if p.param_type_name == "option"]
        valued = frozenset(
            name for p in options if not getattr(p, "is_flag", False) for name in p.opts
        )
        positionals = sum(p.param_type_name == "argument" for p in self.params)
        spread = spread_values(args, self.several, valued=valued, positionals=positionals)
        return super().parse_args(ctx, spread)


def spread_values(
    args: list[str],
    several: frozenset[str],
    *,
    valued: frozenset[str] = frozenset(),
    positionals: int = 0,
) -> list[str]:
    """``args`` with each further value of one of ``several`` given its own option. A bare
    argument is a further value only once ``positionals`` bare arguments have been given (the
    values of the ``valued`` options are not counted among them)."""
    spread: list[str] = []
    option: str | None = None
    first = False  # the option's first value follows it as written
    given = 0  # positional arguments so far
    value_next = False  # the argument is another option's value
    for arg in args:
        if value_next:
            spread.append(arg)
            value_next = False
            continue
        if option is not None and not arg.startswith("-") and (first or given >= positionals):
            spread += [arg] if first else [option, arg]
            first = False
            continue
        option = arg if arg in several else None
        first = option is not None
        if option is None and arg in valued:
            value_next = True
        elif option is None and not arg.startswith("-"):
            given += 1
        spread.append(arg)
    return spread
