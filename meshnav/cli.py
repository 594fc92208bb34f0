"""``meshnav``: the one command line (SPEC §13)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand

from meshnav.errors import CREDENTIAL_FLAG, CommandError
from meshnav.logs import configure_logging

if TYPE_CHECKING:
    from meshnav.access import Access

__all__ = ["SeveralValues", "app", "spread_values"]

T = TypeVar("T")

app = typer.Typer(
    name="meshnav",
    help="Find and call the one tool an agent needs across a mesh of machines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
navigator_app = typer.Typer(
    help="The navigator: the MCP server agents talk to.", no_args_is_help=True
)
node_app = typer.Typer(help="The node agent that runs on every machine.", no_args_is_help=True)
principal_app = typer.Typer(help="Principals and their tokens.", no_args_is_help=True)
grant_app = typer.Typer(help="Who may call what.", no_args_is_help=True)
seat_app = typer.Typer(help="Where each mesh seat is served.", no_args_is_help=True)
app.add_typer(navigator_app, name="navigator")
app.add_typer(node_app, name="node")
app.add_typer(principal_app, name="principal")
app.add_typer(grant_app, name="grant")
app.add_typer(seat_app, name="seat")
audit_app = typer.Typer(help="Who called what, decided by which grant (ADR 0039).")
app.add_typer(audit_app, name="audit")


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


console = Console()
# One line however long: scripts read the first line of an error (a confirm token ends it).
errors = Console(stderr=True, soft_wrap=True, highlight=False)

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


def _per_minute(text: str | None) -> int | None:
    """A rate as an operator writes it — ``600/min``, ``10/s`` or ``600`` (a minute's) — in calls
    per minute (ADR 0041)."""
    if text is None:
        return None
    count, _, unit = text.strip().partition("/")
    seconds = {"": 60, "min": 60, "m": 60, "s": 1, "sec": 1}.get(unit.strip().lower())
    if not count.strip().isdigit() or seconds is None or int(count) < 1:
        raise typer.BadParameter("a rate is calls per minute or second: e.g. 600/min or 10/s")
    return int(count) * (60 // seconds)


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
DEFAULT_DATABASE = "sqlite:///./meshnav.db"
DEFAULT_NAVIGATOR = "http://127.0.0.1:7700"


def run(work: Awaitable[T], as_json: bool = False) -> T:
    """Run a command's work; a ``CommandError`` is one line on stderr and exit status 1: with
    ``as_json``, the navigator's §9 error body as JSON when it answered one (a confirm token is
    then a field to read, not a line to scrape), or a node's own error answer."""
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except CommandError as error:
        if as_json and error.body is not None:
            sys.stderr.write(json.dumps(error.body, ensure_ascii=False) + "\n")
        else:
            errors.print(f"meshnav: {error}", markup=False, highlight=False)
        raise typer.Exit(1) from None


def emit(value: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    else:
        console.print_json(json.dumps(value, ensure_ascii=False))


def _need(value: str | None, what: str) -> str:
    if not value:
        raise CommandError(f"{what} is missing")
    return value


# --- serving -------------------------------------------------------------------------------


@navigator_app.command("serve")
def navigator_serve(
    ctx: typer.Context,
    listen: Annotated[str | None, typer.Option(envvar="MESHNAV_LISTEN")] = None,
    database: Annotated[
        str | None, typer.Option("--database", envvar="MESHNAV_DATABASE_URL")
    ] = None,
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve MCP on stdin/stdout.")] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token", envvar="MESHNAV_TOKEN", help="With --stdio: the principal served as."
        ),
    ] = None,
    call_deadline: Annotated[
        float | None,
        typer.Option(
            "--call-deadline",
            envvar="MESHNAV_CALL_DEADLINE_S",
            min=0.001,
            help="Seconds a forwarded call may take.",
        ),
    ] = None,
    heartbeat: Annotated[
        float | None,
        typer.Option(
            "--heartbeat",
            envvar="MESHNAV_HEARTBEAT_S",
            min=0.001,
            help="Heartbeat period, s: the registry is re-read every fifth of it (0.2-1 s).",
        ),
    ] = None,
    node_ca: Annotated[
        str | None,
        typer.Option(
            "--node-ca",
            envvar="MESHNAV_NODE_CA",
            help="CA bundle (PEM) trusted for https nodes, beside the system's.",
        ),
    ] = None,
    endpoint_networks: Annotated[
        str | None,
        typer.Option(
            "--endpoint-networks",
            envvar="MESHNAV_ENDPOINT_NETWORKS",
            help="Networks endpoints and nodes may be in (default 0.0.0.0/0,::/0).",
        ),
    ] = None,
    node_max_assignments: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_NODE_MAX_ASSIGNMENTS",
            min=1,
            help="Assignments a node's machine may hold, retired ones counted (64).",
        ),
    ] = None,
    node_max_tools: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_NODE_MAX_TOOLS",
            min=1,
            help="Tools a node's machine may hold, retired ones counted (16384).",
        ),
    ] = None,
    retired_retention_days: Annotated[
        float | None,
        typer.Option(
            envvar="MESHNAV_RETIRED_RETENTION_DAYS",
            min=0.0,
            help="Days a retired assignment is kept before it is pruned (7).",
        ),
    ] = None,
    node_concurrency: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_NODE_CONCURRENCY",
            min=1,
            max=4096,
            help="Calls sent to one node at once; more wait their turn or are rate_limited (64).",
        ),
    ] = None,
    navigators: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_NAVIGATORS",
            min=1,
            max=64,
            help="Navigators sharing the registry: each holds its share of every quota (1).",
        ),
    ] = None,
    public_url: Annotated[
        str | None,
        typer.Option(
            "--public-url",
            envvar="MESHNAV_PUBLIC_URL",
            help="External base URL (https://nav.example.com): the OAuth resource is its /mcp.",
        ),
    ] = None,
    audit_retention_days: Annotated[
        float | None,
        typer.Option(
            envvar="MESHNAV_AUDIT_RETENTION_DAYS",
            min=0.001,
            help="Days an audit event is kept before it is pruned (30).",
        ),
    ] = None,
    audit_jsonl: Annotated[
        str | None,
        typer.Option(
            envvar="MESHNAV_AUDIT_JSONL",
            help="Also write every audit event as a JSON line to this file ('-': stdout).",
        ),
    ] = None,
    instance: Annotated[
        str | None,
        typer.Option(
            envvar="MESHNAV_INSTANCE",
            help="This navigator's name in the audit trail (its host and listen address).",
        ),
    ] = None,
) -> None:
    """Run the navigator (streamable HTTP at /mcp, or stdio)."""
    from meshnav.serve import serve_navigator

    given = {
        "listen": listen,
        "database_url": database,
        "token": token,
        "call_deadline_s": call_deadline,
        "heartbeat_s": heartbeat,
        "node_ca": node_ca,
        "endpoint_networks": endpoint_networks,
        "node_max_assignments": node_max_assignments,
        "node_max_tools": node_max_tools,
        "retired_retention_days": retired_retention_days,
        "node_concurrency": node_concurrency,
        "navigators": navigators,
        "public_url": public_url,
        "audit_retention_days": audit_retention_days,
        "audit_jsonl": audit_jsonl,
        "instance": instance,
    }
    if stdio and audit_jsonl == "-":  # standard output carries MCP there
        errors.print("meshnav: --audit-jsonl - would write where --stdio serves", markup=False)
        raise typer.Exit(1)
    # what serves: ``meshnav.serve``'s, or the one a caller of the CLI passes in as its ``obj``
    serve = ctx.obj or serve_navigator
    run(serve({k: v for k, v in given.items() if v is not None}, stdio=stdio))


@node_app.command("serve", cls=SeveralValues)
def node_serve(
    name: Annotated[
        str, typer.Option("--name", envvar="MESHNAV_NAME", help="This machine's name.")
    ],
    module: Annotated[
        list[str],
        typer.Option(
            "--module",
            help="node | sqlite:PATH[,PATH] | postgres:DSN | stdio:NAME=COMMAND | http:NAME=URL",
        ),
    ] = [],  # noqa: B006
    module_header: Annotated[
        list[str],
        typer.Option(
            "--module-header",
            help="ROLE:NAME=VALUE, a header for an http module; ${VAR} from the node's "
            "environment, @FILE for a file's contents.",
        ),
    ] = [],  # noqa: B006
    module_env: Annotated[
        list[str],
        typer.Option(
            "--module-env", help="ROLE:NAME or ROLE:NAME=${VAR}: a variable for a stdio module."
        ),
    ] = [],  # noqa: B006
    module_env_file: Annotated[
        list[str],
        typer.Option("--module-env-file", help="ROLE:PATH: NAME=VALUE lines for a stdio module."),
    ] = [],  # noqa: B006
    module_oauth: Annotated[
        list[str],
        typer.Option(
            "--module-oauth",
            help="ROLE:TOKEN_URL,CLIENT_ID,@SECRET_FILE[,SCOPE]: an http module's OAuth client.",
        ),
    ] = [],  # noqa: B006
    seat: Annotated[list[str], typer.Option("--seat", help="SEAT=SPEC: serve a mesh seat.")] = [],  # noqa: B006
    navigator: NavigatorOpt = None,
    listen: Annotated[str, typer.Option(envvar="MESHNAV_NODE_LISTEN")] = "127.0.0.1:7801",
    advertise: Annotated[str | None, typer.Option(envvar="MESHNAV_ADVERTISE")] = None,
    token: TokenOpt = None,
    heartbeat: Annotated[
        float | None, typer.Option("--heartbeat", envvar="MESHNAV_HEARTBEAT_S")
    ] = None,
    tls_cert: Annotated[str | None, typer.Option("--tls-cert")] = None,
    tls_key: Annotated[str | None, typer.Option("--tls-key")] = None,
    allow_privileged_role: Annotated[
        bool,
        typer.Option(
            "--allow-privileged-role",
            envvar="MESHNAV_ALLOW_PRIVILEGED_ROLE",
            help="Serve a postgres module whose role is a superuser or may run programs or"
            " touch the server's files (refused otherwise).",
        ),
    ] = False,
) -> None:
    """Run a node agent serving this machine's modules."""
    from pydantic import ValidationError

    from mesh.agent import keep_secrets_from_children, serve_node
    from mesh.modules import parse_module_spec
    from mesh.modules.credentials import read_credentials
    from mesh.settings import NodeSettings
    from meshnav.serve import listening_socket, mesh_failure, settings_error

    keep_secrets_from_children()
    if any(arg == "--token" or arg.startswith("--token=") for arg in sys.argv):
        errors.print(
            "meshnav: warning: a token on the command line is visible to every user of this "
            "machine (ps); give it as MESHNAV_TOKEN",
            markup=False,
        )

    async def work() -> None:
        try:
            specs = [parse_module_spec(text) for text in module]
            credentials = read_credentials(
                headers=module_header,
                environment=module_env,
                env_files=module_env_file,
                oauth=module_oauth,
            )
            seats = []
            for text in seat:
                seat_name, _, spec_text = text.partition("=")
                seats.append(
                    (seat_name, dataclasses.replace(parse_module_spec(spec_text), role=seat_name))
                )
        except ValueError as error:
            raise CommandError(str(error)) from None
        if not specs and not seats:
            raise CommandError("give at least one --module or --seat")
        values: dict[str, Any] = {
            "name": name,
            "navigator_url": navigator or DEFAULT_NAVIGATOR,
            "listen": listen,
            "advertise": advertise,
            "token": _need(token, "the node's token (--token or MESHNAV_TOKEN)"),
            "tls_cert": tls_cert,
            "tls_key": tls_key,
            "allow_privileged_role": allow_privileged_role,
        }
        if heartbeat is not None:
            values["heartbeat_s"] = heartbeat
        try:
            settings = NodeSettings(**values)
        except ValidationError as error:
            raise settings_error(error) from None
        with listening_socket(settings.host, settings.port) as server_socket:
            try:
                await serve_node(settings, specs, seats, server_socket, credentials)
            except BaseException as error:
                failure = mesh_failure(error)
                if failure is None:
                    raise
                raise CommandError(str(failure)) from None

    run(work())


@app.command("migrate")
def migrate_command(database: DatabaseOpt = DEFAULT_DATABASE, as_json: JsonOpt = False) -> None:
    """Make the registry, or upgrade it to the newest schema; safe to repeat."""
    from registry import HEAD_REVISION, RegistryError, migrate, shown_url

    try:
        before = migrate(database)
    except RegistryError as error:
        errors.print(f"meshnav: {error}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    shown = shown_url(database)  # a relative sqlite:///tmp/x.db is ./tmp/x.db: said in full
    if as_json:
        emit({"revision": HEAD_REVISION, "database": shown, "created": before is None}, True)
    elif before is None:
        console.print(
            f"made a new registry at {shown}, at the newest schema; it holds no principals: "
            "meshnav principal add NAME --scopes mesh:admin makes the first administrator",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"the registry at {shown} is at the newest schema",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@app.command("demo")
def demo_command(
    listen: Annotated[
        str, typer.Option(help="Navigator address; nodes take the next three ports.")
    ] = "127.0.0.1:7700",
    data: Annotated[
        Path, typer.Option(help="Where the demo keeps its registry and databases.")
    ] = Path(".meshnav-demo"),
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Start over: a new registry, new data and a new token in DIR."
        ),
    ] = False,
) -> None:
    """The whole mesh on one machine: a navigator, three nodes, a mesh seat, a demo principal."""
    from meshnav.demo import run_demo

    # SIGTERM (``kill``, a service manager) stops the demo as Ctrl-C does, nodes included: left
    # to its default, it ended the process before the nodes were told, and they kept the ports
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    run(run_demo(listen, data, fresh=fresh))


# --- principals and grants -----------------------------------------------------------------


def _access(navigator: str | None, token: str | None, database: str) -> Access:
    from meshnav.access import Access

    return Access(database_url=database, navigator_url=navigator, token=token)


@principal_app.command("add", cls=SeveralValues)
def principal_add(
    name: str,
    scopes: Annotated[
        list[str], typer.Option("--scopes", help="Scopes, e.g. mesh:admin mesh:node.")
    ] = [],  # noqa: B006
    machine: Annotated[
        str | None, typer.Option(help="Bind a node principal to this machine.")
    ] = None,
    expires: Annotated[float | None, typer.Option(help="Days until the token expires.")] = None,
    rate: RateOpt = None,
    concurrency: ConcurrencyOpt = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Add a principal; its token is printed once and only its hash is kept."""
    from registry import Quota

    scopes = [s for text in scopes for s in text.replace(",", " ").split()]
    quota = Quota(_per_minute(rate), concurrency)
    made = run(
        _access(navigator, token, database).add_principal(name, scopes, machine, expires, quota),
        as_json,
    )
    if as_json:
        emit({"principal": made["principal"]["name"], "token": made["token"]}, True)
    else:
        console.print(f"principal {name} added; its token (shown once):", markup=False)
        sys.stdout.write(made["token"] + "\n")


@principal_app.command("quota")
def principal_quota(
    name: str,
    rate: RateOpt = None,
    concurrency: ConcurrencyOpt = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Set a principal's quota: what is not given is no limit. Every navigator holds it to the
    quota from its next request; a call over it is rate_limited."""
    from registry import Quota

    quota = Quota(_per_minute(rate), concurrency)
    row = run(_access(navigator, token, database).set_quota(name, quota), as_json)
    if as_json:
        emit(row, True)
        return
    said = ", ".join(
        f"{value} {unit}"
        for value, unit in ((row["ratePerMinute"], "calls/min"), (row["concurrency"], "at once"))
        if value is not None
    )
    console.print(f"principal {name}: {said or 'no limit'}", markup=False, highlight=False)


@principal_app.command("list")
def principal_list(
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """List principals (never their tokens): a table, or JSON with --json."""
    rows = run(_access(navigator, token, database).list_principals(), as_json)
    if as_json:
        emit(rows, True)
        return
    from meshnav.render import principals_table

    console.print(principals_table(rows))


@principal_app.command("rotate")
def principal_rotate(
    name: str,
    expires: Annotated[float | None, typer.Option(help="Days until the new token expires.")] = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Replace a principal's token; the old one stops working at once."""
    made = run(_access(navigator, token, database).rotate_principal(name, expires), as_json)
    if as_json:
        emit({"principal": made["principal"]["name"], "token": made["token"]}, True)
    else:
        sys.stdout.write(made["token"] + "\n")


@principal_app.command("revoke")
def principal_revoke(
    name: str,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Revoke a principal: its token stops working."""
    run(_access(navigator, token, database).revoke_principal(name), as_json)
    if as_json:
        emit({"principal": name, "revoked": True}, True)
    else:
        console.print(f"principal {name} revoked", markup=False, highlight=False)


@seat_app.command("place")
def seat_place(
    seat: str,
    machine: str,
    role: str,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Place a mesh seat on MACHINE's ROLE (moving it if held): the only place a node serves it."""
    placed = run(_access(navigator, token, database).place_seat(seat, machine, role), as_json)
    if as_json:
        emit(placed, True)
    else:
        console.print(f"{placed['seat']} placed on {machine}/{role}", markup=False)


def _grant(
    effect: str,
    principal: str,
    target: str,
    scopes: list[str],
    force: bool,
    navigator: str | None,
    token: str | None,
    database: str,
    as_json: bool,
) -> None:
    scopes = [s for text in scopes for s in text.replace(",", " ").split()]
    access = _access(navigator, token, database)
    row = run(access.grant(effect, principal, target, scopes, force=force), as_json)
    if as_json:
        emit(row, True)
    else:
        console.print(
            f"grant {row['id']}: {effect} {target} for {principal} (revision {row['revision']})",
            markup=False,
            highlight=False,
        )


@grant_app.command("allow", cls=SeveralValues)
def grant_allow(
    principal: str,
    target: str,
    scopes: Annotated[
        list[str], typer.Option("--scopes", help="The row applies only to holders of these.")
    ] = [],  # noqa: B006
    force: ForceOpt = False,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Allow PRINCIPAL (or *) to call TARGET (an address or pattern such as db1/*/*)."""
    _grant("allow", principal, target, scopes, force, navigator, token, database, as_json)


@grant_app.command("deny", cls=SeveralValues)
def grant_deny(
    principal: str,
    target: str,
    scopes: Annotated[
        list[str], typer.Option("--scopes", help="The row applies only to holders of these.")
    ] = [],  # noqa: B006
    force: ForceOpt = False,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Deny PRINCIPAL (or *) TARGET; an explicit deny stops administrators too."""
    _grant("deny", principal, target, scopes, force, navigator, token, database, as_json)


@grant_app.command("list")
def grant_list(
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """List grant rows."""
    rows = run(_access(navigator, token, database).list_grants(), as_json)
    if as_json:
        emit(rows, True)
        return
    from meshnav.render import grants_table

    console.print(grants_table(rows))


@grant_app.command("revoke")
def grant_revoke(
    grant_id: int,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Remove a grant row."""
    run(_access(navigator, token, database).revoke_grant(grant_id), as_json)
    if as_json:
        emit({"grant": grant_id, "revoked": True}, True)
    else:
        console.print(f"grant {grant_id} revoked")


@grant_app.command("check")
def grant_check(
    principal: str,
    address: str,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Explain which grant row decides whether PRINCIPAL may call ADDRESS."""
    verdict = run(_access(navigator, token, database).check(principal, address), as_json)
    if as_json:
        emit(verdict, True)
    else:
        line = Text(f"{verdict['principal']} → {verdict['address']}: ")
        line.append(*(("allowed", "green") if verdict["allowed"] else ("denied", "red")))
        line.append(f" — {verdict['reason']}")
        console.print(line)


# --- operators changing the mesh -----------------------------------------------------------


@app.command("register")
def register_command(
    machine: str,
    role: str,
    endpoint: Annotated[
        str | None, typer.Option(help="URL of a running MCP server (streamable HTTP).")
    ] = None,
    tools_file: Annotated[
        Path | None, typer.Option("--tools-file", help="A tools/list result as JSON.")
    ] = None,
    module: Annotated[str | None, typer.Option(help="Module name (defaults to the role).")] = None,
    scopes: Annotated[list[str], typer.Option("--scopes", help="Scopes the module declares.")] = [],  # noqa: B006
    grant_scope_holders: Annotated[
        bool,
        typer.Option(
            "--grant-scope-holders",
            help="Add * rows granting its tools to holders of the scopes it declares.",
        ),
    ] = False,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Register an assignment live: by endpoint (its tools are pulled) or by a tools file."""

    from meshnav.client import admin_request

    async def work() -> Any:
        if endpoint is None and tools_file is None:
            raise CommandError("give --endpoint URL or --tools-file FILE")
        if endpoint is not None and tools_file is not None:
            raise CommandError("give --endpoint URL or --tools-file FILE, not both")
        body: dict[str, Any] = {
            "machine": machine,
            "role": role,
            "module": module or role,
            "scopes": [s for text in scopes for s in text.replace(",", " ").split()],
            "grantScopeHolders": grant_scope_holders,
        }
        if endpoint:
            body["endpoint"] = endpoint
        if tools_file:
            try:
                text = tools_file.read_bytes()  # json reads UTF-8, -16 and -32; else not JSON
            except OSError as error:
                reason = error.strerror or "it cannot be read"
                raise CommandError(f"cannot read the tools file: {reason.lower()}") from None
            try:
                listing = json.loads(text)
            except ValueError:
                raise CommandError("the tools file is not JSON") from None
            if not isinstance(listing, dict) or not isinstance(listing.get("tools"), list):
                raise CommandError('the tools file must hold {"tools": [...]}')
            body["tools"] = listing["tools"]
        url = navigator or DEFAULT_NAVIGATOR
        return await admin_request(url, _need(token, CREDENTIAL_FLAG), "POST", "/assignments", body)

    answer = run(work(), as_json)
    if as_json:
        emit(answer, True)
        return
    from meshnav.render import registration_view

    console.print(registration_view(answer))


@app.command("retire")
def retire_command(
    address: str, navigator: NavigatorOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """Retire a machine (db1), an assignment (db1/postgres) or a seat (mesh/backup)."""
    from meshnav.client import admin_request

    url = navigator or DEFAULT_NAVIGATOR

    async def work() -> Any:
        return await admin_request(
            url, _need(token, CREDENTIAL_FLAG), "POST", "/retire", {"address": address}
        )

    body = run(work(), as_json)
    if as_json:
        emit(body, True)
    else:
        console.print(f"retired {address}", markup=False, highlight=False)


# --- an agent's view -----------------------------------------------------------------------


def _walker(
    tool: str,
    arguments: dict[str, Any],
    navigator: str | None,
    token: str | None,
    as_json: bool = False,
) -> Any:
    from meshnav.walker import walker_call

    url = navigator or DEFAULT_NAVIGATOR

    async def work() -> Any:
        return await walker_call(url, _need(token, CREDENTIAL_FLAG), tool, arguments)

    return run(work(), as_json)


@app.command("mesh")
def mesh_command(
    address: Annotated[str | None, typer.Argument()] = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Draw the mesh (or one machine or assignment) as the caller may see it."""
    from meshnav.walker import mesh_listing

    url = navigator or DEFAULT_NAVIGATOR

    async def work() -> Any:
        return await mesh_listing(url, _need(token, CREDENTIAL_FLAG), address)

    listing = run(work(), as_json)
    if as_json:
        emit(listing, True)
        return
    from meshnav.render import mesh_tree

    console.print(mesh_tree(listing))


@app.command("search")
def search_command(
    query: str,
    limit: Annotated[int, typer.Option(min=1, max=16)] = 8,
    within: Annotated[str | None, typer.Option()] = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the mesh for tools, as an agent would."""
    arguments: dict[str, Any] = {"query": query, "limit": limit}
    if within:
        arguments["within"] = within
    found = _walker("search", arguments, navigator, token, as_json)
    if as_json:
        emit(found, True)
        return
    from meshnav.render import search_table

    console.print(search_table(found))


@app.command("describe")
def describe_command(
    address: str, navigator: NavigatorOpt = None, token: TokenOpt = None, as_json: JsonOpt = False
) -> None:
    """Show one tool's full contract."""
    contract = _walker("describe", {"address": address}, navigator, token, as_json)
    if as_json:
        emit(contract, True)
        return
    from meshnav.render import contract_view

    console.print(contract_view(contract))


@app.command("call")
def call_command(
    address: str,
    args: Annotated[
        str, typer.Option("--args", help="The tool's arguments as a JSON object.")
    ] = "{}",
    confirm: Annotated[
        str | None, typer.Option(help="The token from confirmation_required.")
    ] = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Call a tool by its address."""
    try:
        parsed = json.loads(args)
    except ValueError:
        errors.print("meshnav: --args is not valid JSON", markup=False)
        raise typer.Exit(1) from None
    arguments: dict[str, Any] = {"address": address, "args": parsed}
    if confirm:
        arguments["confirm"] = confirm
    result = _walker("call", arguments, navigator, token, as_json)
    if as_json or not result.get("content"):
        emit(result, True)
        return
    structured = result.get("structuredContent")
    if structured is not None and structured != {"content": result["content"]}:
        emit(structured, False)
    else:
        for block in result["content"]:
            console.print(block.get("text", block), markup=False)


@app.command("docs")
def docs_command(
    out: Annotated[Path, typer.Option(help="Where to write the reference.")] = Path(
        "docs/reference/walker-tools.md"
    ),
) -> None:
    """Write the walker tools' reference from their own definitions."""
    from meshnav.docs import walker_reference

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(walker_reference())
    console.print(f"wrote {out}")


@app.callback()
def _setup(
    log_level: Annotated[
        str | None, typer.Option("--log-level", envvar="MESHNAV_LOG_LEVEL")
    ] = None,
) -> None:
    """Find and call the one tool an agent needs across a mesh of machines."""
    configure_logging(log_level)


def main() -> None:
    """The ``meshnav`` command. A usage error (an unknown option, a value of the wrong type) is
    one line on stderr and exit status 2, as every other error is one line (SPEC §13)."""
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except Exception as error:
        # Click's usage errors (Typer vendors Click, so they are known by their shape): the
        # message and a pointer to --help, never the boxed usage text
        exit_code = getattr(error, "exit_code", None)
        if not (hasattr(error, "format_message") and isinstance(exit_code, int)):
            raise
        message = error.format_message()  # type: ignore[attr-defined]  # Click's, by shape
        if type(error).__name__ == "NoArgsIsHelpError":  # no command given: the help, as asked
            errors.print(message, markup=False, highlight=False)
        else:
            context = getattr(error, "ctx", None)
            hint = f" (see {context.command_path} --help)" if context is not None else ""
            errors.print(f"meshnav: {message}{hint}", markup=False, highlight=False)
        sys.exit(exit_code)
    sys.exit(code if isinstance(code, int) else 0)


# --- the audit trail -----------------------------------------------------------------------


@audit_app.callback(invoke_without_command=True)
def audit_list(
    ctx: typer.Context,
    principal: Annotated[str | None, typer.Option(help="Only this principal's events.")] = None,
    address: Annotated[
        str | None, typer.Option(help="Only these addresses or targets: '*' for any text.")
    ] = None,
    action: Annotated[
        str | None, typer.Option(help="call, confirm, describe, sign-in, grant.add, …")
    ] = None,
    outcome: Annotated[str | None, typer.Option(help="ok, tool_error, or a SPEC §9 code.")] = None,
    since: Annotated[str | None, typer.Option(help="90s, 30m, 1h, 7d, or an ISO time.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many events (100).")] = None,
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Audit events, newest first: on the registry directly, or through a navigator's API."""
    if ctx.invoked_subcommand is not None:
        return
    given = {
        "principal": principal,
        "address": address,
        "action": action,
        "outcome": outcome,
        "since": since,
        "limit": None if limit is None else str(limit),
    }
    page = run(_access(navigator, token, database).audit(given), as_json)
    if as_json:
        emit(page["events"], True)
        return
    from meshnav.render import audit_table

    console.print(audit_table(page["events"]))


@audit_app.command("verify")
def audit_verify(
    navigator: NavigatorOpt = None,
    token: TokenOpt = None,
    database: DatabaseOpt = DEFAULT_DATABASE,
    as_json: JsonOpt = False,
) -> None:
    """Check every navigator's chain of audit events: exit 1 when a row was altered."""
    found = run(_access(navigator, token, database).audit_verify(), as_json)
    if as_json:
        emit(found, True)
    else:
        for instance, count in found["instances"].items():
            console.print(f"{instance}: {count} events", markup=False, highlight=False)
        for problem in found["problems"]:
            errors.print(f"meshnav: audit chain broken at {problem}", markup=False)
        if found["ok"]:
            console.print("the audit chains are intact")
    if not found["ok"]:
        raise typer.Exit(1)
