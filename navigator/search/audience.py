"""Who a search is for: the caller's grants, as the index asks them.

A search returns, ranks and counts only the tools its caller may call (SPEC §3), so it needs the
grants as a predicate over addresses, and — to avoid asking that predicate about every tool in the
mesh — what the grants say about whole sets of tools at once. The grant evaluator's
``Permissions`` is such an audience; ``Predicate`` makes one of any function over addresses, with
no shortcuts (every tool is asked about); ``EVERYONE`` may call every tool.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from navigator.addresses import Pattern

__all__ = ["EVERYONE", "Audience", "Predicate", "audience_of"]


class Audience(Protocol):
    """What a search asks of the caller's grants."""

    def permits(self, address: str) -> bool:
        """Whether the caller may call the tool at ``address``."""
        ...

    def permits_every_holder(self, role: str, tool: str) -> bool | None:
        """True or False when ``permits`` answers so for ``*/role/tool`` on every holder;
        ``None`` when the answer may depend on the holder."""
        ...

    def holder_exceptions(self, role: str, tool: str) -> tuple[bool, Collection[str]] | None:
        """What ``permits`` answers for ``*/role/tool`` on every holder but those named, and the
        holders named; ``None`` when unknown."""
        ...

    @property
    def reach(self) -> Sequence[Pattern] | None:
        """Patterns one of which every permitted tool matches; ``None``: no such bound."""
        ...

    @property
    def refusals(self) -> Sequence[Pattern] | None:
        """Patterns one of which every refused tool that ``reach`` covers matches; ``None``: no
        such bound. With ``reach`` ``None`` and no refusals, every tool is permitted."""
        ...

    @property
    def key(self) -> Hashable | None:
        """Equal for audiences whose ``permits`` give the same answers (the index keeps what it
        learnt of one under it); ``None``: never kept."""
        ...


@dataclass(frozen=True, slots=True)
class Predicate:
    """An audience of any predicate over addresses: every tool is asked about, nothing is kept."""

    predicate: Callable[[str], bool]

    def permits(self, address: str) -> bool:
        return self.predicate(address)

    def permits_every_holder(self, role: str, tool: str) -> bool | None:
        return None

    def holder_exceptions(self, role: str, tool: str) -> tuple[bool, Collection[str]] | None:
        return None

    @property
    def reach(self) -> Sequence[Pattern] | None:
        return None

    @property
    def refusals(self) -> Sequence[Pattern] | None:
        return None

    @property
    def key(self) -> Hashable | None:
        return None


@dataclass(frozen=True, slots=True)
class _Everyone:
    """An audience that may call every tool (benchmarks, and an index's own checks)."""

    def permits(self, address: str) -> bool:
        return True

    def permits_every_holder(self, role: str, tool: str) -> bool | None:
        return True

    def holder_exceptions(self, role: str, tool: str) -> tuple[bool, Collection[str]] | None:
        return True, ()

    @property
    def reach(self) -> Sequence[Pattern] | None:
        return None

    @property
    def refusals(self) -> Sequence[Pattern] | None:
        return ()

    @property
    def key(self) -> Hashable | None:
        return "everyone"


EVERYONE: Audience = _Everyone()


def audience_of(permits: Audience | Callable[[str], bool]) -> Audience:
    """``permits`` as an audience: a predicate over addresses becomes a ``Predicate``."""
    return Predicate(permits) if callable(permits) else permits
