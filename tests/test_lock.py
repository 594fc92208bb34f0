"""What a fresh clone installs is what was tested: the locks, and the environment made from them.

``make`` installs ``requirements-dev.lock`` with ``--require-hashes``; the images install
``requirements.lock``; ``make lock`` moves both on purpose. A new release of any dependency must
change nothing until then.
"""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"

#: The libraries whose private names ``navigator/nodes/sdk.py`` and ``mesh/sdk.py`` use.
PRIVATE_NAME_LIBRARIES = ("fastmcp", "mcp", "mcp-types", "httpx2", "httpcore2")

PINNED = re.compile(
    r"^(?P<name>[A-Za-z0-9_.\-]+)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+))?"
)


def locked(path: Path) -> dict[str, tuple[str, str | None]]:
    """The lock's packages: canonical name → (version, environment marker or None)."""
    found: dict[str, tuple[str, str | None]] = {}
    for line in path.read_text().splitlines():
        match = PINNED.match(line)
        if match:
            marker = (match["marker"] or "").strip() or None
            found[canonicalize_name(match["name"])] = (match["version"], marker)
    return found


def test_every_locked_package_carries_its_hashes() -> None:
    for path in (LOCK, DEV_LOCK):
        entries = re.split(r"\n(?=[A-Za-z0-9])", path.read_text().strip())
        for entry in entries:
            if entry.startswith("#"):
                continue
            assert "==" in entry.splitlines()[0], entry.splitlines()[0]
            assert "--hash=sha256:" in entry, entry.splitlines()[0]


def test_the_development_lock_holds_the_runtime_lock_unchanged() -> None:
    runtime, development = locked(LOCK), locked(DEV_LOCK)
    assert runtime
    for name, (pinned, _) in runtime.items():
        assert development.get(name, (None,))[0] == pinned, name


def test_every_dependency_of_the_project_is_locked() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    development = locked(DEV_LOCK)
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    for line in wanted:
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in development, name
        assert requirement.specifier.contains(development[name][0], prereleases=True), name
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for line in build:
        assert canonicalize_name(Requirement(line).name) in locked(LOCK), line


@pytest.mark.parametrize("library", PRIVATE_NAME_LIBRARIES)
def test_the_private_name_libraries_are_pinned_exactly(library: str) -> None:
    """Their pins move only with a read of the SDK modules' warnings, never with the lock."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [Requirement(line) for line in project["dependencies"]]
    pin = next(r for r in pins if canonicalize_name(r.name) == library)
    (specifier,) = pin.specifier
    assert specifier.operator == "=="
    assert locked(LOCK)[library][0] == specifier.version


def test_the_installed_versions_are_the_locked_ones() -> None:
    """What this environment runs is what the lock says, package by package."""
    differing = {}
    for name, (pinned, marker) in locked(DEV_LOCK).items():
        if marker is not None and not Marker(marker).evaluate():
            continue
        try:
            installed = version(name)
        except PackageNotFoundError:
            installed = None
        if installed != pinned:
            differing[name] = (installed, pinned)
    assert not differing, f"installed ≠ locked (run `make` again, or `make lock`): {differing}"


def test_the_images_install_from_the_runtime_lock() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--require-hashes" in dockerfile
    assert "requirements.lock" in dockerfile
