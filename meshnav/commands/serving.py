"""``meshnav navigator serve`` and ``meshnav node serve``: the two long-running processes, the
navigator agents talk to and the node agent on every machine, each with its settings as options."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated, Any

import typer

from meshnav.commands.options import DEFAULT_NAVIGATOR, NavigatorOpt, SeveralValues, TokenOpt
from meshnav.commands.outcome import errors, need, run
from meshnav.errors import CommandError

__all__ = ["navigator_app", "node_app"]

navigator_app = typer.Typer(
    help="The navigator: the MCP server agents talk to.", no_args_is_help=True
)
node_app = typer.Typer(
    rich_markup_mode=None, help="The node agent that runs on every machine.", no_args_is_help=True
)


@navigator_app.command("serve")
def navigator_serve(
    ctx: typer.Context,
    listen: Annotated[
        str | None,
        typer.Option(envvar="MESHNAV_LISTEN", help="HOST:PORT to serve on (127.0.0.1:7700)."),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            envvar="MESHNAV_DATABASE_URL",
            help="The registry: sqlite:/// or postgresql://.",
        ),
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
    audit_flush_s: Annotated[
        float | None,
        typer.Option(
            "--audit-flush",
            envvar="MESHNAV_AUDIT_FLUSH_S",
            min=0.01,
            help="Seconds between audit batches: what a killed navigator loses at most (1).",
        ),
    ] = None,
    audit_queue_max: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_AUDIT_QUEUE_MAX",
            min=1,
            help="Audit events held while the registry is down; more are dropped (100000).",
        ),
    ] = None,
    audit_refusal_window_s: Annotated[
        float | None,
        typer.Option(
            "--audit-refusal-window",
            envvar="MESHNAV_AUDIT_REFUSAL_WINDOW_S",
            min=0.01,
            help="Seconds refusals of one route and address are counted on one event (60).",
        ),
    ] = None,
    audit_refusals_per_minute: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_AUDIT_REFUSALS_PER_MINUTE",
            min=1,
            help="Refusal events a minute at most; more are counted on one (120).",
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
        "audit_flush_s": audit_flush_s,
        "audit_queue_max": audit_queue_max,
        "audit_refusal_window_s": audit_refusal_window_s,
        "audit_refusals_per_minute": audit_refusals_per_minute,
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
    listen: Annotated[
        str, typer.Option(envvar="MESHNAV_NODE_LISTEN", help="HOST:PORT the node serves on.")
    ] = "127.0.0.1:7801",
    advertise: Annotated[
        str | None,
        typer.Option(
            envvar="MESHNAV_ADVERTISE", help="The URL the navigator reaches this node at."
        ),
    ] = None,
    token: TokenOpt = None,
    heartbeat: Annotated[
        float | None,
        typer.Option(
            "--heartbeat", envvar="MESHNAV_HEARTBEAT_S", help="Seconds between heartbeats."
        ),
    ] = None,
    tls_cert: Annotated[
        str | None, typer.Option("--tls-cert", help="A PEM certificate: serve HTTPS.")
    ] = None,
    tls_key: Annotated[
        str | None, typer.Option("--tls-key", help="The PEM key of --tls-cert.")
    ] = None,
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
            "token": need(token, "the node's token (--token or MESHNAV_TOKEN)"),
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
