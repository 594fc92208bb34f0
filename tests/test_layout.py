"""The house's layout (issue 32): modules small enough to hold one thing, a navigator whose top
level a newcomer reads at a glance, and no two modules of one package tree under the same name.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ("navigator", "registry", "mesh", "meshnav")

#: A module past this many lines holds more than one concept (migrations are data, not code).
MODULE_LINES = 400
#: The navigator's top level: the application, its settings, errors, limits and a few shared
#: names; everything else sits in the package of its layer.
NAVIGATOR_TOP_LEVEL = 10


def _modules(tree: str) -> list[Path]:
    return sorted(path for path in (ROOT / tree).rglob("*.py") if "migrations" not in path.parts)


def test_no_module_is_longer_than_the_bound() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for tree in TREES
        for path in _modules(tree)
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}


def test_the_navigators_top_level_holds_few_modules() -> None:
    top = sorted(path.name for path in (ROOT / "navigator").glob("*.py"))
    assert len(top) <= NAVIGATOR_TOP_LEVEL, top


def test_each_navigator_layer_has_a_map() -> None:
    """Each package says what each of its modules holds, in the docstring of its ``__init__``."""
    for package in sorted(p.parent for p in (ROOT / "navigator").glob("*/__init__.py")):
        mapped = (package / "__init__.py").read_text()
        missing = [
            path.stem
            for path in package.glob("*.py")
            if path.stem != "__init__" and path.stem not in mapped
        ]
        assert missing == [], package.name


def test_no_two_modules_of_one_tree_share_a_name() -> None:
    """``service.py`` beside ``services.py`` was one thing; three ``nodes.py`` in one tree made a
    reader open each to learn which was meant."""
    for tree in TREES:
        where: dict[str, list[str]] = defaultdict(list)
        for path in _modules(tree):
            if path.name != "__init__.py":
                where[path.stem].append(path.relative_to(ROOT).as_posix())
        assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}, tree


#: What each of the navigator's packages may import of the others, at run time: a layer the
#: ones below it, never one above (imports for annotations alone, under ``TYPE_CHECKING``, make
#: no dependency). The faces (``mcp``, ``api``, ``console``) stand on all of them; ``app``,
#: ``services`` and ``settings`` at the top level put them together.
LAYERS: dict[str, frozenset[str]] = {
    "operations": frozenset({"access", "catalog", "nodes", "search", "validation", "http"}),
    "walker": frozenset({"access", "catalog", "nodes", "search", "validation", "http"}),
    "access": frozenset({"catalog"}),
    "catalog": frozenset({"nodes", "search", "validation", "http"}),
    "nodes": frozenset({"http"}),
    "search": frozenset(),
    "validation": frozenset(),
    "http": frozenset(),
}
#: The top-level modules every layer may import: the names the whole navigator shares.
SHARED = frozenset({"errors", "limits", "metrics", "addresses", "caches", "settings"})


def _runtime_imports(source: str) -> Iterator[str]:
    """The absolute modules ``source`` imports, but for those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(source)
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_the_layer_reader_leaves_annotations_out() -> None:
    sample = """
from typing import TYPE_CHECKING
from navigator.errors import UnknownTool
if TYPE_CHECKING:
    from navigator.services import Services
def late():
    import navigator.nodes.probes
"""
    assert list(_runtime_imports(sample)) == [
        "typing",
        "navigator.errors",
        "navigator.nodes.probes",
    ]


def test_each_layer_imports_only_the_ones_below_it() -> None:
    found = []
    for layer, allowed in LAYERS.items():
        for path in sorted((ROOT / "navigator" / layer).rglob("*.py")):
            for module in _runtime_imports(path.read_text()):
                parts = module.split(".")
                if parts[0] != "navigator" or len(parts) < 2 or parts[1] in (layer, *allowed):
                    continue
                if parts[1] not in SHARED:
                    found.append(f"{path.relative_to(ROOT)}: {module}")
    assert found == []
