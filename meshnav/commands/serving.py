"""``meshnav navigator serve``: the navigator agents talk to, with its settings as options
(``meshnav node serve`` is ``node_serving``)."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from meshnav.commands.outcome import errors, run

__all__ = ["navigator_app"]

navigator_app = typer.Typer(
    rich_markup_mode=None,
    help="The navigator: the MCP server agents talk to.",
    no_args_is_help=True,
)


class ContractApproval(enum.StrEnum):
    """``MESHNAV_CONTRACT_APPROVAL`` (SPEC §14)."""

    FIRST_USE = "first-use"
    ALWAYS = "always"
    OFF = "off"


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
    pending_confirmations: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_PENDING_CONFIRMATIONS",
            min=1,
            max=4096,
            help="Questions one principal may have waiting on a person at once; past them a "
            "call gets a confirm token, an elicit-only one rate_limited (8).",
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
    search_relevance_floor: Annotated[
        float | None,
        typer.Option(
            envvar="MESHNAV_SEARCH_RELEVANCE_FLOOR",
            min=0.0,
            max=0.99,
            help="Search hits below this share of the best hit's score are not returned (0: off).",
        ),
    ] = None,
    contract_approval: Annotated[
        ContractApproval | None,
        typer.Option(
            envvar="MESHNAV_CONTRACT_APPROVAL",
            help="Which tool contracts wait for an operator's approval (first-use).",
        ),
    ] = None,
    max_description: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_MAX_DESCRIPTION",
            min=1,
            help="Characters a tool's description may hold; longer ones are refused (4096).",
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
        "pending_confirmations": pending_confirmations,
        "public_url": public_url,
        "audit_retention_days": audit_retention_days,
        "audit_jsonl": audit_jsonl,
        "instance": instance,
        "audit_flush_s": audit_flush_s,
        "audit_queue_max": audit_queue_max,
        "audit_refusal_window_s": audit_refusal_window_s,
        "audit_refusals_per_minute": audit_refusals_per_minute,
        "search_relevance_floor": search_relevance_floor,
        "contract_approval": None if contract_approval is None else contract_approval.value,
        "max_description": max_description,
    }
    if stdio and audit_jsonl == "-":  # standard output carries MCP there
        errors.print("meshnav: --audit-jsonl - would write where --stdio serves", markup=False)
        raise typer.Exit(1)
    # what serves: ``meshnav.serve``'s, or the one a caller of the CLI passes in as its ``obj``
    serve = ctx.obj or serve_navigator
    run(serve({k: v for k, v in given.items() if v is not None}, stdio=stdio))
