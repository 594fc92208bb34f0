"""What the search index holds and what it answers with.

A ``ToolDocument`` is one tool on one holder, as its ``tools/list`` entry describes it; a ``Hit`` is
one ranked result — a concrete tool, or one tool collapsed over the holders that offer it — and a
``SearchPage`` is one page of hits. ``slot_init`` builds a ``ToolDocument`` (and a catalogue's
``CatalogTool``, made as many times) at a third of a frozen dataclass's cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from itertools import islice
from typing import Any, TypeGuard, TypeVar

from navigator.limits import LIMITS

__all__ = [
    "Hit",
    "SearchPage",
    "ToolDocument",
    "document_from_tool",
    "shown_holders",
    "slot_init",
]

T = TypeVar("T")


def slot_init(cls: type[T]) -> type[T]:
    """Give a frozen slotted dataclass an ``__init__`` that sets each field through its slot's
    own setter, for a third of the time of the one ``dataclass`` writes (which goes through
    ``object.__setattr__``, as a frozen class must): a load makes 100,000 tool documents and as
    many catalogue tools. Applied over ``@dataclass``, whose ``__init__`` it replaces with one of
    the same signature (all that type checkers read); the source is written, as ``dataclass``
    writes its own, from the field names alone. Fields with defaults, or a ``__post_init__``,
    are not ones it sets as ``dataclass`` would: such a class is refused."""
    fields_ = fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or any(
        not f.init or f.default is not MISSING or f.default_factory is not MISSING for f in fields_
    ):
        raise TypeError(f"slot_init sets required fields only: {cls.__qualname__}")
    names = [f.name for f in fields_]
    setters = {f"_set_{name}": cls.__dict__[name].__set__ for name in names}
    source = f"def __init__(self, {', '.join(names)}):\n" + "".join(
        f"    _set_{name}(self, {name})\n" for name in names
    )
    made: dict[str, Any] = {}
    exec(source, setters, made)  # noqa: S102 -- identifiers of the class's own fields only
    init = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    type.__setattr__(cls, "__init__", init)
    return cls


@slot_init
@dataclass(frozen=True, slots=True)
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
