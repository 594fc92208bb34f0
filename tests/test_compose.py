"""compose.yaml, read as data: every command is a real ``meshnav`` command with real flags (checked
against the Typer app's own click tree), every variable is documented and the secret ones are
required, and the deployment has the shape SPEC §1 and §12 promise — a PostgreSQL registry, two
navigators with health checks, three nodes, db1 and db2 each on its own PostgreSQL, all after
``migrate``. No Docker engine is needed: nothing here runs a container.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml  # type: ignore[import-untyped]  # safe_load resolves anchors and `<<` as compose does
from typer.main import get_command

from mesh.modules import parse_module_spec
from meshnav.cli import app

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "compose.yaml"
ENV_EXAMPLE = ROOT / "deploy" / ".env.example"
BOOTSTRAP = ROOT / "deploy" / "bootstrap.sh"
DOCKERFILE = ROOT / "Dockerfile"

#: ``${NAME}``, ``${NAME:-default}``, ``${NAME:?message}`` ...; ``$$`` is compose's escaped dollar.
VARIABLE = re.compile(
    r"(?<!\$)\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}"
)
SECRET = re.compile(r"(PASSWORD|TOKEN)$")
MIGRATE_DONE = "service_completed_successfully"


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict), "compose.yaml is not a mapping"
    found = loaded["services"]
    assert isinstance(found, dict)
    return found


def _argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return command.split() if isinstance(command, str) else [str(part) for part in command]


MESHNAV_IMAGE = "${MESHNAV_IMAGE:-meshnav:local}"


def _runs_meshnav(service: dict[str, Any]) -> bool:
    """Runs the image this repository's Dockerfile makes, whose entrypoint is ``meshnav``."""
    return service.get("image") == MESHNAV_IMAGE


def _is_postgres(service: dict[str, Any]) -> bool:
    return str(service.get("image", "")).startswith("postgres:")


def _subcommand(service: dict[str, Any]) -> tuple[str, ...]:
    words = [word for word in _argv(service) if not word.startswith("-")]
    return tuple(words[:2])


def _options(service: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(flag, value) for every ``--flag=value`` or ``--flag value`` in the command."""
    argv = _argv(service)
    for index, word in enumerate(argv):
        if word.startswith("--"):
            flag, eq, value = word.partition("=")
            if not eq and index + 1 < len(argv):
                value = argv[index + 1]
            yield flag, value


def _option(service: dict[str, Any], flag: str) -> list[str]:
    return [value for name, value in _options(service) if name == flag]


def _depends(service: dict[str, Any]) -> dict[str, str]:
    depends = service.get("depends_on", {})
    if isinstance(depends, list):
        return dict.fromkeys(depends, "service_started")
    return {name: spec.get("condition", "service_started") for name, spec in depends.items()}


def _by_role(
    services: dict[str, dict[str, Any]], role: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in services.items() if _runs_meshnav(s) and _subcommand(s) == role}


def refusal(argv: list[str]) -> str | None:
    """Parse ``meshnav ARGV`` with the CLI's own click tree (typer's vendored click): the error
    message click gives when it refuses, or None when it accepts. Nothing runs."""
    command: Any = get_command(app)
    args, path = list(argv), ["meshnav"]
    while hasattr(command, "commands"):  # a group: its own options, then a subcommand
        group_options = {opt: param for param in command.params for opt in param.opts}
        while args and args[0].startswith("-"):
            flag, eq, _ = args.pop(0).partition("=")
            if flag not in group_options:
                return f"{' '.join(path)} has no option {flag}"
            if not eq and not getattr(group_options[flag], "is_flag", False) and args:
                args.pop(0)  # the option's value
        if not args or args[0] not in command.commands:
            return f"{' '.join(path)} has no command {args[0] if args else '(none given)'!r}"
        name = args.pop(0)
        command = command.commands[name]
        path.append(name)
    try:
        with command.make_context(" ".join(path), args):
            return None
    except Exception as error:
        message = getattr(error, "format_message", None)
        if message is None:
            raise
        return str(message())


@pytest.mark.parametrize(
    "argv",
    [
        ["navigator", "server"],
        ["navigator"],
        ["--verbose", "migrate"],
        ["--log-level", "migrate"],
        ["migrate", "--databse=sqlite:///x.db"],
        ["navigator", "serve", "--listen"],
        ["node", "serve", "--module=node"],
        ["node", "serve", "--name=db1", "--module=node", "--heartbeat=often"],
        ["principal", "add", "--scopes=mesh:node"],
    ],
)
def test_the_command_check_refuses_what_meshnav_refuses(argv: list[str]) -> None:
    assert refusal(argv) is not None


# --- commands --------------------------------------------------------------------------------


def test_every_meshnav_service_runs_a_real_command_with_real_flags(
    services: dict[str, dict[str, Any]],
) -> None:
    checked = 0
    for name, service in services.items():
        if not _runs_meshnav(service):
            continue
        assert "entrypoint" not in service, f"{name} replaces the image's meshnav entrypoint"
        argv = _argv(service)
        assert argv, f"{name} runs no command"
        refused = refusal(argv)
        assert refused is None, f"{name}: `meshnav {' '.join(argv)}` is refused: {refused}"
        checked += 1
    assert checked >= 6  # migrate, two navigators, three nodes


def test_the_image_entrypoint_is_meshnav_run_by_a_user_who_is_not_root() -> None:
    lines = [line.strip() for line in DOCKERFILE.read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert any(line.startswith("FROM python:3.11-slim") for line in instructions)
    assert 'ENTRYPOINT ["meshnav"]' in instructions
    users = [line.split()[1] for line in instructions if line.startswith("USER ")]
    assert users, "the image runs as root"
    assert users[-1] not in ("root", "0")


def test_nodes_are_given_module_and_seat_specs_the_node_parses(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in _by_role(services, ("node", "serve")).items():
        for spec in _option(service, "--module"):
            parse_module_spec(spec)
        for seat in _option(service, "--seat"):
            seat_name, eq, spec = seat.partition("=")
            assert eq and seat_name, f"{name}: --seat must be SEAT=SPEC"
            parse_module_spec(spec)


def test_healthcheck_commands_are_valid_python_or_pg_isready(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        if not test:
            continue
        if test[:2] == ["CMD", "python"]:
            assert test[2] == "-c"
            ast.parse(test[3])
        else:
            assert "pg_isready" in " ".join(test), name


# --- variables -------------------------------------------------------------------------------


def _variables() -> list[re.Match[str]]:
    return list(VARIABLE.finditer(COMPOSE.read_text()))


def _documented() -> set[str]:
    texts = [ENV_EXAMPLE.read_text()]
    readme = ROOT / "README.md"
    if readme.exists():
        texts.append(readme.read_text())
    return set(re.findall(r"\b([A-Z][A-Z0-9_]*)=", "\n".join(texts)))


def test_every_variable_compose_reads_is_documented() -> None:
    used = {match["name"] for match in _variables()}
    assert used
    assert used <= _documented(), f"undocumented: {sorted(used - _documented())}"


def test_env_example_lists_no_variable_compose_does_not_read() -> None:
    listed = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.MULTILINE))
    used = {match["name"] for match in _variables()}
    assert listed <= used, f"listed but unused: {sorted(listed - used)}"


def test_every_variable_is_required_or_has_a_default() -> None:
    for match in _variables():
        assert match["op"] in (":?", ":-"), f"{match[0]}: use ${{NAME:?why}} or ${{NAME:-default}}"
        assert match["arg"].strip(), f"{match[0]}: an empty default or message"


def test_passwords_and_tokens_are_required_everywhere_they_are_used() -> None:
    secrets = [match for match in _variables() if SECRET.search(match["name"])]
    assert {m["name"] for m in secrets} >= {"REGISTRY_PASSWORD", "MESHNAV_ADMIN_TOKEN"}
    for match in secrets:
        assert match["op"] == ":?", f"{match[0]} must fail loudly when unset"


def test_no_password_is_written_into_a_url_or_a_command(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        for word in _argv(service):
            assert "PASSWORD" not in word, f"{name}: a password on the command line"
        for key, value in (service.get("environment") or {}).items():
            if "://" in str(value):
                assert urlsplit(str(value)).password is None, f"{name}: {key} holds a password"


def test_bootstrap_writes_every_token_compose_requires(services: dict[str, dict[str, Any]]) -> None:
    script = BOOTSTRAP.read_text()
    tokens = {m["name"] for m in _variables() if m["name"].endswith("_TOKEN")}
    for token in tokens:
        assert f"set_var {token} " in script, f"bootstrap.sh does not write {token}"
    for node in _by_role(services, ("node", "serve")).values():
        machine = _option(node, "--name")[0]
        assert f"--scopes mesh:node --machine {machine}" in script


# --- shape -----------------------------------------------------------------------------------


def test_two_navigators_with_health_checks_on_one_postgresql_registry(
    services: dict[str, dict[str, Any]],
) -> None:
    navigators = _by_role(services, ("navigator", "serve"))
    replicas = sum(int(s.get("deploy", {}).get("replicas", 1)) for s in navigators.values())
    assert replicas == 2
    registries = set()
    for name, service in navigators.items():
        probe = " ".join(service["healthcheck"]["test"])
        assert "/readyz" in probe or "/healthz" in probe, name
        url = urlsplit(service["environment"]["MESHNAV_DATABASE_URL"])
        assert url.scheme == "postgresql"
        assert _is_postgres(services[str(url.hostname)]), f"{name}: the registry is not PostgreSQL"
        assert _depends(service).get(str(url.hostname)) == "service_healthy"
        registries.add(url.geturl())
    assert len(registries) == 1, "the navigators must share one registry"


def test_every_postgresql_has_a_pg_isready_health_check(
    services: dict[str, dict[str, Any]],
) -> None:
    postgres = {name: s for name, s in services.items() if _is_postgres(s)}
    assert len(postgres) == 3
    for name, service in postgres.items():
        assert service["image"] == "postgres:15", name
        assert "pg_isready" in " ".join(service["healthcheck"]["test"]), name


def test_every_service_up_starts_waits_for_migrate_to_complete(
    services: dict[str, dict[str, Any]],
) -> None:
    migrate = _by_role(services, ("migrate",))
    assert len(migrate) == 1
    ((migrate_name, migrate_service),) = migrate.items()
    assert migrate_service.get("restart", "no") == "no", "a one-shot service must not restart"
    for name, service in services.items():
        if name == migrate_name or _is_postgres(service) or service.get("profiles"):
            continue
        assert _depends(service).get(migrate_name) == MIGRATE_DONE, name


def test_the_cli_does_not_run_migrate_again_on_every_command(
    services: dict[str, dict[str, Any]],
) -> None:
    (migrate_name,) = _by_role(services, ("migrate",))
    cli = services["cli"]
    assert cli.get("profiles"), "the cli is started by `docker compose run` only"
    # Any dependency is brought up by `run` with its own, and so migrate would be started anew.
    assert migrate_name not in _depends(cli)
    assert _depends(cli) == {}


def test_the_image_is_built_once_and_run_by_name_everywhere(
    services: dict[str, dict[str, Any]],
) -> None:
    builders = [name for name, service in services.items() if "build" in service]
    assert builders == ["migrate"], "one service builds the image; the others run it by name"
    meshnav = [name for name, service in services.items() if _runs_meshnav(service)]
    assert len(meshnav) >= 7  # migrate, two navigators, three nodes, the cli
    others = {str(s.get("image")) for name, s in services.items() if name not in meshnav}
    assert others == {"postgres:15"}


def test_the_build_takes_an_extra_ca_bundle_as_a_secret(
    services: dict[str, dict[str, Any]],
) -> None:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert services["migrate"]["build"]["secrets"] == ["extra_ca"]
    assert loaded["secrets"]["extra_ca"]["file"] == "${MESHNAV_BUILD_CA:-/dev/null}"
    assert "--mount=type=secret,id=extra_ca" in DOCKERFILE.read_text()


def test_the_dockerfile_names_no_frontend_image() -> None:
    """``# syntax=`` makes BuildKit pull a frontend image before it builds: offline, it fails."""
    first = DOCKERFILE.read_text().splitlines()[0]
    assert not re.match(r"#\s*syntax\s*=", first, re.IGNORECASE), first


def test_env_is_kept_out_of_version_control() -> None:
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert ".env" in ignored
    assert ".env" in (ROOT / ".dockerignore").read_text().splitlines()


def test_depends_on_names_real_services_and_health_only_where_checked(
    services: dict[str, dict[str, Any]],
) -> None:
    for name, service in services.items():
        for other, condition in _depends(service).items():
            assert other in services, f"{name} depends on a missing {other}"
            if condition == "service_healthy":
                assert "healthcheck" in services[other], f"{other} has no health check"


def test_three_nodes_reach_the_navigators_and_advertise_themselves(
    services: dict[str, dict[str, Any]],
) -> None:
    nodes = _by_role(services, ("node", "serve"))
    assert {_option(s, "--name")[0] for s in nodes.values()} == {"db1", "db2", "web1"}
    navigators = _by_role(services, ("navigator", "serve"))
    for name, service in nodes.items():
        assert "node" in _option(service, "--module"), f"{name} lacks the node seat"
        assert service["environment"]["MESHNAV_TOKEN"], f"{name} has no token"
        reach = urlsplit(_option(service, "--navigator")[0]).hostname
        for navigator_name, navigator in navigators.items():
            aliases = navigator.get("networks", {}).get("default", {}).get("aliases", [])
            assert reach in (navigator_name, *aliases), f"{name} cannot reach {navigator_name}"
            assert _depends(service).get(navigator_name) == "service_healthy"
        advertise = urlsplit(_option(service, "--advertise")[0])
        listen_port = int(_option(service, "--listen")[0].rsplit(":", 1)[1])
        assert advertise.hostname in (name, service.get("hostname"))
        assert advertise.port == listen_port


def _created_databases(service: dict[str, Any]) -> set[str]:
    created: set[str] = set()
    for volume in service.get("volumes", []):
        source = str(volume).split(":", 1)[0]
        if source.endswith(".sql"):
            sql = (ROOT / source).read_text()
            created |= set(re.findall(r"CREATE DATABASE (\w+)", sql, re.IGNORECASE))
    return created


def test_db1_and_db2_each_serve_their_own_postgresql_with_different_databases(
    services: dict[str, dict[str, Any]],
) -> None:
    nodes = {_option(s, "--name")[0]: s for s in _by_role(services, ("node", "serve")).values()}
    servers: dict[str, str] = {}
    databases: dict[str, set[str]] = {}
    for machine in ("db1", "db2"):
        specs = [parse_module_spec(s) for s in _option(nodes[machine], "--module")]
        (postgres,) = [spec for spec in specs if spec.module == "postgres"]
        dsn = urlsplit(postgres.argument)
        assert dsn.password is None, f"{machine}: the DSN holds a password"
        host = str(dsn.hostname)
        assert _is_postgres(services[host]), f"{machine}: {host} is not a PostgreSQL service"
        assert _depends(nodes[machine]).get(host) == "service_healthy"
        servers[machine] = host
        databases[machine] = _created_databases(services[host])
        assert dsn.path.lstrip("/") in databases[machine], f"{machine}: its database is not made"
    assert servers["db1"] != servers["db2"]
    assert databases["db1"] and databases["db2"]
    assert databases["db1"].isdisjoint(databases["db2"])


def test_web1_holds_the_node_seat_and_one_mesh_seat(services: dict[str, dict[str, Any]]) -> None:
    nodes = {_option(s, "--name")[0]: s for s in _by_role(services, ("node", "serve")).values()}
    assert _option(nodes["web1"], "--module") == ["node"]
    assert len(_option(nodes["web1"], "--seat")) == 1
