"""The house's layout (issue 32): modules small enough to hold one thing, a navigator whose top
level a newcomer reads at a glance, and no two modules of one package tree under the same name.
"""

from __future__ import annotations

from collections import defaultdict
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
