"""The ``--module`` grammar: what parses, what is refused, and that no message repeats a DSN."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastmcp import FastMCP

from mesh.errors import ModuleSpecError
from mesh.modules import ModuleSpec, build_module, parse_module_spec

SECRET = "s3cret-pw"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("node", ModuleSpec("node", "node", "")),
        ("host-facts=node", ModuleSpec("node", "host-facts", "")),
        ("sqlite:/var/db", ModuleSpec("sqlite", "sqlite", "/var/db")),
        ("sqlite:/a.db,/b", ModuleSpec("sqlite", "sqlite", "/a.db,/b")),
        ("shop=sqlite:/srv/shop.db", ModuleSpec("sqlite", "shop", "/srv/shop.db")),
        (
            "postgres:postgresql://app@db/shop",
            ModuleSpec("postgres", "postgres", "postgresql://app@db/shop"),
        ),
        (
            "postgres-replica=postgres:postgresql://app@replica/shop",
            ModuleSpec("postgres", "postgres-replica", "postgresql://app@replica/shop"),
        ),
        (  # a key=value DSN: its '=' is not a role prefix
            "postgres:host=db dbname=shop",
            ModuleSpec("postgres", "postgres", "host=db dbname=shop"),
        ),
        (
            "stdio:files=npx -y @modelcontextprotocol/server-filesystem /srv",
            ModuleSpec("stdio", "files", "npx -y @modelcontextprotocol/server-filesystem /srv"),
        ),
        ("stdio:a_b=python -m x --flag=1", ModuleSpec("stdio", "a_b", "python -m x --flag=1")),
        ("  node  ", ModuleSpec("node", "node", "")),
        ("a" * 63 + "=node", ModuleSpec("node", "a" * 63, "")),
        ("0=node", ModuleSpec("node", "0", "")),
    ],
)
def test_spec_parses(text: str, expected: ModuleSpec) -> None:
    assert parse_module_spec(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "nodes",
        "mysql:db",
        "node:extra",
        "sqlite:",
        "sqlite:/a,,/b",
        "postgres:",
        "postgres:   ",
        "stdio:",
        "stdio:name",
        "stdio:name=",
        "stdio:name=   ",
        'stdio:name=python "unbalanced',
        "stdio:Name=cmd",
        "stdio:mesh=cmd",
        "role=stdio:name=cmd",  # stdio's NAME is its role
        "mesh=node",
        "Upper=node",
        "-lead=node",
        "trail-=node",
        "a" * 64 + "=node",
        "dot.ted=node",
        "ünïcode=node",
    ],
)
def test_bad_spec_is_refused(text: str) -> None:
    with pytest.raises(ModuleSpecError):
        parse_module_spec(text)


def test_spec_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown module"):
        parse_module_spec("mysql:db")


@pytest.mark.parametrize(
    "text",
    [
        f"Replica=postgres:postgresql://app:{SECRET}@db/shop",
        f"password={SECRET}",
        f"{SECRET}:postgresql://x",
        f"mesh=postgres:postgresql://app:{SECRET}@db/shop",
    ],
)
def test_spec_errors_never_repeat_the_spec(text: str) -> None:
    with pytest.raises(ModuleSpecError) as caught:
        parse_module_spec(text)
    assert SECRET not in str(caught.value)


def test_repr_hides_the_dsn() -> None:
    spec = parse_module_spec(f"postgres:postgresql://app:{SECRET}@db/shop")
    assert SECRET not in repr(spec)
    assert SECRET not in str(spec)


def test_bad_dsn_is_refused_without_repeating_it() -> None:
    spec = ModuleSpec("postgres", "postgres", f"host=db password={SECRET} = =")
    with pytest.raises(ModuleSpecError) as caught:
        build_module(spec)
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None  # not even chained


def test_build_module_serves_each_module(tmp_path: Path) -> None:
    (tmp_path / "shop.db").touch()
    specs = {
        "node": "node",
        "sqlite": f"sqlite:{tmp_path}",
        "postgres": "postgres:postgresql://app@127.0.0.1:1/shop",
        "tools": "stdio:tools=python -m some_server",
    }
    for name, text in specs.items():
        server = build_module(parse_module_spec(text))
        assert isinstance(server, FastMCP)
        assert server.name == name  # nothing started: stdio starts on first use, and a postgres
        # server that does not answer is checked at each call


def test_sqlite_spec_with_a_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModuleSpecError, match="neither a file nor a directory"):
        build_module(parse_module_spec(f"sqlite:{tmp_path / 'missing.db'}"))
