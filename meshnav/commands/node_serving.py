"""``meshnav node serve``: the node agent on every machine, with its settings as options."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from meshnav.commands.options import DEFAULT_NAVIGATOR, NavigatorOpt, SeveralValues, TokenOpt
from meshnav.commands.outcome import errors, need, run
from meshnav.errors import CommandError

__all__ = ["node_app"]

node_app = typer.Typer(
    rich_markup_mode=None, help="The node agent that runs on every machine.", no_args_is_help=True
)

#: The variable a node's token is read from.
TOKEN_VARIABLE = "MESHNAV_TOKEN"  # noqa: S105  # a variable's name


def _the_node_command_alone() -> bool:
    """Whether this process is the ``meshnav`` command (``meshnav …`` or ``python -m meshnav
    …``), which a node may run anew in place to drop its secrets from its environment block
    (``mesh.handover``); not a program that calls the command in its own process."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return os.name == "posix" and (
        started.name == "meshnav"
        or (started.name == "__main__.py" and started.parent.name == "meshnav")
    )


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
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            envvar="MESHNAV_REPLACE",
            help="Take the machine over from a node that still serves it; that node stops.",
        ),
    ] = False,
    module_trace: Annotated[
        list[str],
        typer.Option(
            "--module-trace",
            help="ROLE: pass the mesh's trace context (traceparent) on to this http or stdio"
            " module's upstream (withheld otherwise).",
        ),
    ] = [],  # noqa: B006
    upstream_answer_bytes: Annotated[
        int | None,
        typer.Option(
            envvar="MESHNAV_UPSTREAM_ANSWER_BYTES",
            min=1024,
            help="The most of one http upstream's answer read (4194304).",
        ),
    ] = None,
    upstream_error_log: Annotated[
        float | None,
        typer.Option(
            envvar="MESHNAV_UPSTREAM_ERROR_LOG_S",
            min=0.0,
            help="Seconds between two log lines about one upstream's failures (60).",
        ),
    ] = None,
) -> None:
    """Run a node agent serving this machine's modules."""
    from pydantic import ValidationError

    from mesh import handover
    from mesh.agent import serve_node
    from mesh.modules import parse_module_spec, take_libpq_secrets
    from mesh.modules.credentials import read_credentials
    from mesh.settings import NodeSettings
    from mesh.tracing import HEADER_VARIABLES
    from meshnav.serve import listening_socket, mesh_failure, settings_error

    try:
        handed = handover.received()
    except handover.HandoverFailed as error:
        errors.print(f"meshnav: {error}", markup=False)
        raise typer.Exit(1) from None
    handover.keep_secrets_from_children()
    if not handed and any(arg == "--token" or arg.startswith("--token=") for arg in sys.argv):
        errors.print(
            "meshnav: warning: a token on the command line is visible to every user of this "
            "machine (ps); give it as MESHNAV_TOKEN",
            markup=False,
        )

    async def work() -> None:
        # every secret is read from here, and then kept out of the environment block
        source = {**os.environ, **handed}
        remaining = dict(source)
        try:
            specs = [parse_module_spec(text) for text in module]
            credentials = read_credentials(
                headers=module_header,
                environment=module_env,
                env_files=module_env_file,
                oauth=module_oauth,
                environ=remaining,
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
        libpq = take_libpq_secrets(remaining)
        secrets = {name: source[name] for name in source.keys() - remaining.keys()}
        for variable in (TOKEN_VARIABLE, *HEADER_VARIABLES):  # the token, a collector's headers
            if variable in source:
                secrets[variable] = source[variable]
        try:
            handover.keep_out_of_environment(
                secrets, sys.orig_argv, reexecute=_the_node_command_alone()
            )
        except handover.HandoverFailed as error:
            raise CommandError(str(error)) from None
        values: dict[str, Any] = {
            "name": name,
            "navigator_url": navigator or DEFAULT_NAVIGATOR,
            "listen": listen,
            "advertise": advertise,
            "token": need(
                token or secrets.get(TOKEN_VARIABLE), "the node's token (--token or MESHNAV_TOKEN)"
            ),
            "tls_cert": tls_cert,
            "tls_key": tls_key,
            "allow_privileged_role": allow_privileged_role,
            "replace": replace,
            "module_trace": module_trace,
        }
        for key, value in (
            ("heartbeat_s", heartbeat),
            ("upstream_answer_bytes", upstream_answer_bytes),
            ("upstream_error_log_s", upstream_error_log),
        ):
            if value is not None:
                values[key] = value
        try:
            settings = NodeSettings(**values)
        except ValidationError as error:
            raise settings_error(error) from None
        with listening_socket(settings.host, settings.port) as server_socket:
            try:
                await serve_node(
                    settings, specs, seats, server_socket, credentials, libpq, environ=source
                )
            except BaseException as error:
                failure = mesh_failure(error)
                if failure is None:
                    raise
                raise CommandError(str(failure)) from None

    run(work())
