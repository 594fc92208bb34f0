"""The docs stay true: the walker tools' reference is generated from their definitions (a stale
copy fails here), and every ``meshnav`` command the README and the operator's reference show
parses as the command line would parse it."""

from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup

from meshnav.cli import app
from meshnav.docs import walker_reference

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "walker-tools.md"


def test_walker_reference_is_current() -> None:
    assert REFERENCE.read_text() == walker_reference(), "run `meshnav docs` (or `make docs`)"


# ---- every meshnav command the README and the operator's reference show is one the CLI takes ----

DOCS = [
    Path(__file__).resolve().parents[1] / name
    for name in ("README.md", "docs/operating.md", "docs/identity.md")
]


def _shown_commands(page: Path) -> list[list[str]]:
    """The ``meshnav …`` command lines of a page's ``sh`` blocks, continuation lines joined, the
    comment and any ``VAR=value`` prefix dropped, split as the shell would."""
    commands: list[list[str]] = []
    in_block = False
    pending = ""
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_block = line.strip() == "```sh" and not in_block
            continue
        if not in_block:
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if line.rstrip().endswith("\\"):
            continue
        words = shlex.split(pending, comments=True)
        pending = ""
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words.pop(0)
        if words and words[0] in {"meshnav", ".venv/bin/meshnav"}:
            commands.append(words[1:])
    return commands


class Refused(Exception):
    """The command line parser's refusal (Typer vendors Click: its errors are known by shape)."""


def _parse(arguments: list[str]) -> object:
    """Parse a command line as ``meshnav`` would, down to its last subcommand, without running it:
    an unknown command or option, a missing argument or a value of the wrong type raises."""
    try:
        return _parse_down(arguments)
    except Exception as error:
        if not hasattr(error, "format_message"):
            raise
        raise Refused(error.format_message()) from None


def _parse_down(arguments: list[str]) -> object:
    command = typer.main.get_command(app)
    context = command.make_context("meshnav", list(arguments))
    while isinstance(command, TyperGroup):
        rest = [*context._protected_args, *context.args]
        if not rest:  # a group that runs itself (``meshnav audit --since 1h``)
            break
        name, found, rest = command.resolve_command(context, rest)
        assert found is not None and name is not None
        command = found
        context = command.make_context(name, rest, parent=context)
    return command


@pytest.mark.parametrize("page", DOCS, ids=lambda page: page.name)
def test_every_command_shown_parses(page: Path) -> None:
    commands = _shown_commands(page)
    assert len(commands) >= 5, f"{page.name} shows fewer commands than it should"
    for arguments in commands:
        try:
            _parse(arguments)
        except Refused as error:
            pytest.fail(f"{page.name}: `meshnav {shlex.join(arguments)}`: {error}")


def test_a_command_that_does_not_exist_is_caught() -> None:
    with pytest.raises(Refused):
        _parse(["principal", "add", "alice", "--scopess", "mesh:admin"])
    with pytest.raises(Refused):
        _parse(["grant", "allow"])


# ---- ADRs are decisions, the README a front door (ADR 0001) ----

ROOT = Path(__file__).resolve().parents[1]


def test_every_adr_is_at_most_120_lines_and_carries_no_addenda() -> None:
    records = sorted((ROOT / "docs" / "adr").glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert len(records) >= 28
    for record in records:
        text = record.read_text()
        assert text.count("\n") <= 120, f"{record.name} is longer than 120 lines"
        assert "## Addendum" not in text, f"{record.name} carries an addendum: write a new ADR"
        for heading in ("## Context", "## Decision", "## Consequences"):
            assert heading in text, f"{record.name} has no {heading!r}"


def test_the_readme_is_at_most_150_lines() -> None:
    assert (ROOT / "README.md").read_text().count("\n") <= 150


# ---- every module, file and name of the project the docs point at is where they say ----

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PROJECT_FILE = re.compile(
    r"(?<![\w./-])((?:navigator|registry|mesh|meshnav|tests|benchmarks)/[\w/]+\.py)"
)
PROJECT_NAME = re.compile(r"(?<![\w./-])((?:navigator|registry|mesh|meshnav)(?:\.\w+)+)")


def _module_reference(dotted: str) -> bool:
    """Whether ``dotted`` is meant as a module or a name in one: every ``navigator.`` and
    ``registry.`` name is; ``mesh.`` and ``meshnav.`` also begin JSON-RPC methods
    (``mesh.tools.discover``), span attributes (``meshnav.tool``) and logger names
    (``meshnav.navigator.calls``), so theirs are only when they go on from one of its modules."""
    tree, second = dotted.split(".")[:2]
    if tree in ("navigator", "registry"):
        return True
    return (ROOT / tree / second).is_dir() or (ROOT / tree / f"{second}.py").is_file()


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module of the project, or a name one of them defines."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_the_reference_finder_sees_both_forms() -> None:
    text = "see `navigator/mcp/server.py` and ``navigator.errors.from_registry``; meshnav.tool"
    assert PROJECT_FILE.findall(text) == ["navigator/mcp/server.py"]
    names = PROJECT_NAME.findall(text)
    assert [name for name in names if _module_reference(name)] == ["navigator.errors.from_registry"]
    assert _module_reference("mesh.modules.gone") and not _module_reference("mesh.tools.discover")
    assert _resolves("navigator.errors.from_registry")
    assert not _resolves("navigator.catalog.gone")


def test_every_module_and_name_the_docs_point_at_exists() -> None:
    """A module moved or a name renamed leaves the ADRs and the reference pointing nowhere."""
    missing = sorted(
        f"{page.relative_to(ROOT)}: {found}"
        for page in PAGES
        for text in [page.read_text()]
        for found in {
            *PROJECT_FILE.findall(text),
            *filter(_module_reference, PROJECT_NAME.findall(text)),
        }
        if not ((ROOT / found).exists() if found.endswith(".py") else _resolves(found))
    )
    assert missing == []
