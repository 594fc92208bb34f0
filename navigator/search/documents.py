"""What the search index holds and what it answers with.

A ``ToolDocument`` is one tool on one holder, as its ``tools/list`` entry describes it; a ``Hit`` is
one ranked result — a concrete tool, or one tool collapsed over the holders that offer it — and a
``SearchPage`` is one page of hits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import islice
from typing import Any, TypeGuard

from navigator.limits import LIMITS

__all__ = [
    "Hit",
    "SearchPage",
    "ToolDocument",
    "document_from_tool",
    "shown_holders",
    "slot_setters",
]


def slot_setters(cls: type) -> list[Callable[[Any, Any], None]]:
    """The setters of a slotted dataclass's fields, in field order: what a frozen dataclass's
    hand-written ``__init__`` sets its fields with."""
    return [cls.__dict__[field.name].__set__ for field in fields(cls)]


@dataclass(frozen=True, slots=True, init=False)
class ToolDocument:
    """One tool on one holder: the text search reads, and the address it answers with."""

    address: str  # "HOLDER/ROLE/TOOL", concrete
    holder: str  # "mesh" or a machine name
    role: str
    name: str  # the tool's own name
    title: str
    description: str
    # (parameter name, parameter description) for each top-level inputSchema property
    parameters: tuple[tuple[str, str], ...]
    # equal digest + equal role + equal name: the same tool on another holder
    contract_digest: str

    def __init__(
        self,
        address: str,
        holder: str,
        role: str,
        name: str,
        title: str,
        description: str,
        parameters: tuple[tuple[str, str], ...],
        contract_digest: str,
    ) -> None:
        # A frozen dataclass's own ``__init__`` sets each field through ``object.__setattr__``;
        # the slots' setters do the same for a third of the time (a load makes 100,000 of these).
        _SET_DOCUMENT[0](self, address)
        _SET_DOCUMENT[1](self, holder)
        _SET_DOCUMENT[2](self, role)
        _SET_DOCUMENT[3](self, name)
        _SET_DOCUMENT[4](self, title)
        _SET_DOCUMENT[5](self, description)
        _SET_DOCUMENT[6](self, parameters)
        _SET_DOCUMENT[7](self, contract_digest)


_SET_DOCUMENT = tuple(slot_setters(ToolDocument))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # ``Mapping``'s ABC check costs a microsecond; decoded JSON is a ``dict``, checked for less.
    return type(value) is dict or isinstance(value, Mapping)


def _described(spec: Any) -> str:
    """A parameter's description: its schema's ``description`` when that is a string."""
    if type(spec) is dict or isinstance(spec, Mapping):
        described = spec.get("description")
        return described if isinstance(described, str) else ""
    return ""


def document_from_tool(
    holder: str, role: str, tool: Mapping[str, Any], contract_digest: str
) -> ToolDocument:
    """The document for one MCP ``tools/list`` entry served by ``holder`` under ``role``.

    The title is the tool's ``title``, else its ``annotations.title``; parameters are the
    top-level ``inputSchema.properties`` in the schema's own order, each with its description
    (empty when it has none). Anything of the wrong type is read as absent.
    """
    name = _text(tool.get("name"))
    title = _text(tool.get("title"))
    if not title:
        annotations = tool.get("annotations")
        if _is_mapping(annotations):
            title = _text(annotations.get("title"))
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if _is_mapping(schema) else None
    parameters: tuple[tuple[str, str], ...] = ()
    if _is_mapping(properties):
        parameters = tuple(
            [(key, _described(spec)) for key, spec in properties.items() if isinstance(key, str)]
        )
    return ToolDocument(
        f"{holder}/{role}/{name}",
        holder,
        role,
        name,
        title,
        _text(tool.get("description")),
        parameters,
        contract_digest,
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result.

    A tool offered identically by two or more permitted holders is one collapsed hit, addressed
    ``*/ROLE/TOOL``, with 16 of those holders (``shown_holders``) and their count; any other
    hit is the concrete address of one tool (``holders`` empty, ``holder_count`` 1).
    """

    address: str  # concrete address, or "*/ROLE/TOOL" for a collapsed group
    document: ToolDocument  # a representative: the first permitted holder
    holders: tuple[str, ...]  # collapsed: 16 permitted holders, named ones first; single: ()
    holder_count: int  # collapsed: number of permitted holders (>= 2); single: 1
    score: float
    #: collapsed: every permitted holder, in order (a group's status is any one's); single: ()
    every_holder: tuple[str, ...] = field(default=(), compare=False, repr=False)


def shown_holders(holders: Sequence[str], first: Iterable[str] = ()) -> tuple[str, ...]:
    """The 16 of a collapsed hit's ``holders`` (holder order) it lists: ``first`` (some of them,
    in the order given), then the others in order. A search lists the holders its query names
    first: "uptime of web-420" on 900 machines lists web-420, which holder order leaves out."""
    listed = tuple(islice(first, LIMITS.collapsed_holders))
    if not listed:
        return tuple(holders[: LIMITS.collapsed_holders])
    rest = (holder for holder in holders if holder not in listed)
    return (*listed, *islice(rest, LIMITS.collapsed_holders - len(listed)))


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of ranked hits, and whether more remain after it."""

    hits: list[Hit]
    has_more: bool
