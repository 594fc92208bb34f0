"""The house's rules that a reader of one file cannot see (issue 32), read from the source with
``ast``: tests reach the project's behaviour through its settings and collaborators, never by
replacing its names in place; the node agent (``mesh/``) stands on its own; and the private names
of the pinned MCP libraries are used in one module per side (``navigator/nodes/sdk.py``,
``mesh/sdk.py``), beside their warning.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = frozenset({"navigator", "registry", "mesh", "meshnav"})

#: Tests whose patches of the project are being replaced on another branch at the same time (the
#: search index's): allowed until that branch is merged, then this set is emptied.
PATCHES_BEING_REMOVED: frozenset[str] = frozenset()


def _imported_names(tree: ast.AST) -> dict[str, str]:
    """Each name a module's imports bind (anywhere in it, a function's own imports included), to
    the dotted path of what it is bound to."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:  # ``import a.b`` binds ``a``
                    root = alias.name.split(".")[0]
                    names[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """The dotted path an expression names, through the imports; None for anything else (a
    local object, a call's result)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value, names)
        return f"{owner}.{node.attr}" if owner else None
    return None


PATCHERS = frozenset(
    {"unittest.mock.patch", "unittest.mock.patch.object", "mock.patch", "mock.patch.object"}
)


def _is_patch(call: ast.Call, names: dict[str, str]) -> bool:
    """``<monkeypatch>.setattr(...)``, ``mock.patch(...)``, ``mock.patch.object(...)`` however
    ``patch`` was imported, or pytest-mock's ``mocker.patch(...)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "setattr":
        return not (isinstance(func.value, ast.Name) and func.value.id == "object")
    if (_dotted(func, names) or "") in PATCHERS:
        return True
    while isinstance(func, ast.Attribute) and func.attr in ("patch", "object"):
        func = func.value
    return isinstance(func, ast.Name) and func.id == "mocker" and func is not call.func


def project_patches(source: str) -> Iterator[tuple[int, str]]:
    """The line and target of each patch in ``source`` that replaces a name of the project."""
    tree = ast.parse(source)
    names = _imported_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and _is_patch(node, names):
            target = _dotted(node.args[0], names)
            if target and target.split(".")[0] in PROJECT:
                yield node.lineno, target


def _python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_patch_finder_sees_both_forms_and_only_the_projects() -> None:
    sample = """
import sys
import fastmcp
import navigator.walker.operations
import navigator.catalog.view as catalog
from navigator.mcp import elicitation
from mesh.modules import postgres
from unittest import mock
from unittest.mock import patch

def test(monkeypatch):
    import registry.database
    monkeypatch.setattr("mesh.agent.LIST_DEADLINE_S", 2.0)
    monkeypatch.setattr(navigator.walker.operations, "walk", len)
    monkeypatch.setattr(catalog, "short_read", len)
    monkeypatch.setattr(elicitation.time, "time", len)
    monkeypatch.setattr(postgres, "DEADLINE_SLACK_S", 1.0)
    monkeypatch.setattr(registry.database, "make_engine", len)
    mock.patch("meshnav.serve.serve_navigator")
    patch.object(postgres, "DEADLINE_SLACK_S", 1.0)
    mocker.patch("navigator.limits.LIMITS")
    monkeypatch.setattr("sys.argv", [])
    monkeypatch.setattr(sys, "argv", [])
    monkeypatch.setattr(fastmcp.settings, "json_response", True)
    monkeypatch.setenv("MESHNAV_TOKEN", "x")
"""
    found = [target for _, target in project_patches(sample)]
    assert found == [
        "mesh.agent.LIST_DEADLINE_S",
        "navigator.walker.operations",
        "navigator.catalog.view",
        "navigator.mcp.elicitation.time",
        "mesh.modules.postgres",
        "registry.database",
        "meshnav.serve.serve_navigator",
        "mesh.modules.postgres",
        "navigator.limits.LIMITS",
    ]


def test_no_test_patches_the_projects_own_modules() -> None:
    """A test that replaces a module's name in place tests that path, and breaks when the name
    moves though nothing it checks did: settings, collaborators passed in, or the real thing."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for path in _python_files("tests")
        if path.relative_to(ROOT).as_posix() not in PATCHES_BEING_REMOVED
        for line, target in project_patches(path.read_text())
    ]
    assert found == []


def imported_modules(source: str) -> Iterator[tuple[int, str]]:
    """The line and absolute module of each import in ``source``, wherever it is (in a function,
    under ``TYPE_CHECKING``); relative ones stay inside."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def test_the_import_reader_sees_every_form() -> None:
    sample = """
import navigator
from registry.errors import NotFound
from . import spec

def late():
    import navigator.limits as limits

if TYPE_CHECKING:
    from mcp_types import CallToolResult
"""
    assert [module for _, module in imported_modules(sample)] == [
        "navigator",
        "registry.errors",
        "navigator.limits",
        "mcp_types",
    ]


def test_the_node_agent_imports_neither_the_navigator_nor_the_registry() -> None:
    """``mesh/`` is what runs on every machine: it carries neither the navigator nor the
    registry's database layer with it."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in _python_files("mesh")
        for line, module in imported_modules(path.read_text())
        if module.split(".")[0] in ("navigator", "registry")
    ]
    assert found == []


#: What the walker must not import: MCP's types and FastMCP (``navigator.mcp`` is where they are
#: met), and the caller's authentication, which hands it ``Caller.renew`` instead.
WALKER_MUST_NOT_IMPORT = (
    "mcp",
    "mcp_types",
    "fastmcp",
    "navigator.mcp",
    "navigator.access.authentication",
    "navigator.console",
)


def _reached(source: str) -> Iterator[str]:
    """Each module ``source`` imports, and the dotted path of each name its imports bind: a name
    imported from a package (``from navigator import mcp``) counts as its module does."""
    yield from (module for _, module in imported_modules(source))
    yield from _imported_names(ast.parse(source)).values()


def test_the_walker_imports_no_mcp_types() -> None:
    """``navigator.walker`` is the four operations apart from MCP: the MCP face calls in, and
    what a node answered is named by ``navigator.nodes.connections`` (``NodeAnswer``)."""
    found = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in sorted((ROOT / "navigator" / "walker").glob("*.py"))
        for module in _reached(path.read_text())
        if any(
            module == forbidden or module.startswith(f"{forbidden}.")
            for forbidden in WALKER_MUST_NOT_IMPORT
        )
    }
    assert found == set()


def test_the_navigator_imports_no_statement_of_the_registry() -> None:
    """The registry's SQL stays the registry's: the navigator calls its functions and stores and
    gets records back, never a statement to run through ``Registry.rows`` itself."""
    import importlib

    from sqlalchemy.sql import ClauseElement

    found = []
    for path in _python_files("navigator"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and not node.level):
                continue
            if node.module.split(".")[0] != "registry":
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if isinstance(getattr(module, alias.name, None), ClauseElement):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name}")
    assert found == []


def test_no_error_is_named_alike_in_two_packages() -> None:
    """One errors tree: the registry's errors are the registry's, and the navigator's answers for
    them (``navigator.errors.from_registry``) are named apart, as is every other package's."""
    defined: dict[str, list[str]] = {}
    for package in sorted(PROJECT):
        path = ROOT / package / "errors.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(package)
    assert {name: where for name, where in defined.items() if len(where) > 1} == {}


# ---- private names of the pinned MCP libraries are used in two modules only ----

#: The libraries whose private names only the SDK modules may use: FastMCP, the MCP SDK and its
#: types, and the HTTP pair FastMCP's client brings.
SDK_LIBRARIES = frozenset({"fastmcp", "mcp", "mcp_types", "httpx2", "httpcore2"})
#: The one module of each side that may use them, and the distributions whose pinned versions
#: its warning names.
SDK_MODULES = {
    "navigator/nodes/sdk.py": ("fastmcp", "mcp", "mcp-types", "httpx2", "httpcore2"),
    "mesh/sdk.py": ("fastmcp", "mcp", "mcp-types"),
}
#: Underscored names that are no MCP library's private one: ``os._exit`` is the standard
#: library's own way out of a forked child, and the uvicorn protocol method ``mesh.lifecycle``
#: calls is outside these libraries.
NOT_SDK_PRIVATE = frozenset({"_exit", "_unset_keepalive_if_required"})
#: FastMCP's settings object, its documented configuration: set in place, not replaced.
SDK_SETTINGS = "fastmcp.settings."


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_attributes(source: str) -> Iterator[tuple[int, str]]:
    """The line and name of each ``_``-prefixed attribute ``source`` reads or writes, on any
    object, ``self`` included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            yield node.lineno, node.attr


def own_private_names(source: str) -> set[str]:
    """The ``_``-prefixed names ``source`` defines itself: functions, classes, variables, and
    attributes it stores on ``self`` or ``cls``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
    return {name for name in names if _is_private(name)}


def sdk_private_uses(source: str, *, wrapped: frozenset[str], own: set[str]) -> list[str]:
    """Where ``source`` uses a private name of an MCP library, by line: an import of a private
    module or name of one, an assignment into one's modules, an attribute that an SDK module
    wraps (on any object: a subclass's ``self`` too), or one the project does not define.
    FastMCP's settings are set in place (``SDK_SETTINGS``), as its documentation says."""
    tree = ast.parse(source)
    names = _imported_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(
                (node.lineno, f"import {alias.name}")
                for alias in node.names
                if alias.name.split(".")[0] in SDK_LIBRARIES
                and any(_is_private(part) for part in alias.name.split("."))
            )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if parts[0] in SDK_LIBRARIES:
                found.extend(
                    (node.lineno, f"import {node.module}.{alias.name}")
                    for alias in node.names
                    if any(_is_private(part) for part in parts) or _is_private(alias.name)
                )
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                dotted = _dotted(target, names) if isinstance(target, ast.Attribute) else None
                if (
                    dotted
                    and dotted.split(".")[0] in SDK_LIBRARIES
                    and not dotted.startswith(SDK_SETTINGS)
                ):
                    found.append((node.lineno, f"{dotted} ="))
    found.extend(
        (line, f".{name}")
        for line, name in private_attributes(source)
        if name in wrapped or (name not in own and name not in NOT_SDK_PRIVATE)
    )
    return [f"{line}: {use}" for line, use in sorted(found)]


def wrapped_names() -> frozenset[str]:
    """The private attribute names the SDK modules reach for, read from them."""
    return frozenset(
        name
        for module in SDK_MODULES
        for _, name in private_attributes((ROOT / module).read_text())
    )


def test_the_private_name_finder_sees_each_form() -> None:
    """``session._stamp(...)`` anywhere but an SDK module is found, as are a private module's
    import and a library's global replaced; the project's own private names, and FastMCP's
    documented settings, are not."""
    sample = """
import os
import mcp.client.stdio
import httpx2._transports.default
from fastmcp import settings
from httpcore2 import _backends
from mcp.shared._httpx_utils import stream_within_origin
from navigator.search.text import _ascii_runs

class Mine:
    def __init__(self):
        self._held = {}

    def use(self, session, other):
        session._stamp({}, {})
        self._tools_cache = None
        other._held.clear()
        session._brand_new_private()
        os._exit(0)

mcp.client.stdio.TextReceiveStream = object
settings.json_response = True
"""
    assert {"_stamp", "_tools_cache"} <= wrapped_names()
    found = sdk_private_uses(sample, wrapped=wrapped_names(), own=own_private_names(sample))
    assert found == [
        "4: import httpx2._transports.default",
        "6: import httpcore2._backends",
        "7: import mcp.shared._httpx_utils.stream_within_origin",
        "15: ._stamp",
        "16: ._tools_cache",
        "18: ._brand_new_private",
        "21: mcp.client.stdio.TextReceiveStream =",
    ]


def test_only_the_sdk_modules_use_private_names_of_the_mcp_libraries() -> None:
    """The call path leans on a few private names of FastMCP, the MCP SDK and httpx2, pinned:
    each is used in one module per side, beside its warning, so that an upgrade reads two
    modules rather than the whole tree. Everywhere else calls the small functions they wrap."""
    wrapped = wrapped_names()
    own = set().union(
        *(
            own_private_names(path.read_text())
            for folder in PROJECT
            for path in _python_files(folder)
        )
    )
    found = [
        f"{path.relative_to(ROOT)}:{use}"
        for folder in ("navigator", "mesh")
        for path in _python_files(folder)
        if path.relative_to(ROOT).as_posix() not in SDK_MODULES
        for use in sdk_private_uses(path.read_text(), wrapped=wrapped, own=own)
    ]
    assert found == []


@pytest.mark.parametrize("module", sorted(SDK_MODULES))
def test_each_sdk_module_warns_of_the_versions_and_names_it_relies_on(module: str) -> None:
    """An upgrade of a pinned library fails here until the warning is read again: the docstring
    names the installed version of each library, and every private name the module uses."""
    source = (ROOT / module).read_text()
    warning = ast.get_docstring(ast.parse(source)) or ""
    assert "private" in warning
    for distribution in SDK_MODULES[module]:
        assert version(distribution) in warning, distribution
    for _, name in private_attributes(source):
        assert name in warning, name
