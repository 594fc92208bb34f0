"""What a schema document says of itself: its ``$schema`` dialect, its ``$id``, its ``$ref``.

The compiler reads keywords; this module reads the document's references. A dialect is one of
the JSON Schema drafts the validator reads the same way; ``$id`` may only name the root (without
a fragment), so that ``$ref`` means one thing; ``$ref`` is a local JSON Pointer into ``#``,
``#/$defs`` or ``#/definitions``, resolved once the whole document is compiled, and a loop of
references and in-place applicators that consumes no instance is refused (it would never end).
"""

from __future__ import annotations

from string import hexdigits
from typing import Any, Final
from urllib.parse import unquote

from navigator.errors import ToolValidationUnavailable
from navigator.validation.evaluation import RefCell, SchemaNode

__all__ = ["References", "ref_pointer", "refuse_unknown_dialect"]

_DIALECTS: Final = frozenset(
    f"{scheme}://json-schema.org/{path}"
    for scheme in ("http", "https")
    for path in (
        "schema", "draft-04/schema", "draft-06/schema", "draft-07/schema",
        "draft/2019-09/schema", "draft/2020-12/schema",
    )
)  # fmt: skip

_BAD_REF = (
    "The tool's schema has a '$ref' that is not a local JSON Pointer into '#', "
    "'#/$defs' or '#/definitions' of the same document."
)
_REF_LOOP = "The tool's schema has a '$ref' loop that consumes no input, so it would never end."
_BAD_ID = "The tool's schema has an '$id' below its root or with a fragment; '$ref' is ambiguous."
_BAD_DIALECT = "The tool's schema names a '$schema' dialect the validator does not know."


def refuse_unknown_dialect(schema: dict[str, Any], pointer: tuple[str, ...]) -> None:
    """Refuse a ``$schema`` naming no known dialect, and an ``$id`` below the root or with a
    fragment (their JSON types are already checked)."""
    if "$schema" in schema and schema["$schema"].rstrip("#") not in _DIALECTS:
        raise ToolValidationUnavailable(_BAD_DIALECT)
    if "$id" in schema and (pointer or "#" in schema["$id"].rstrip("#")):
        raise ToolValidationUnavailable(_BAD_ID)


def ref_pointer(ref: Any) -> tuple[str, ...]:
    """The JSON Pointer tokens of a local ``$ref`` (percent-decoded, ``~1``/``~0`` unescaped)."""
    if type(ref) is not str or not ref.startswith("#"):
        raise ToolValidationUnavailable(_BAD_REF)
    fragment = ref[1:]
    for chunk in fragment.split("%")[1:]:
        if len(chunk) < 2 or not set(chunk[:2]) <= set(hexdigits):
            raise ToolValidationUnavailable(_BAD_REF)
    try:
        fragment = unquote(fragment, errors="strict")
    except UnicodeDecodeError:
        raise ToolValidationUnavailable(_BAD_REF) from None
    if not fragment:
        return ()
    tokens = fragment.split("/")
    if tokens[0] != "" or tokens[1] not in ("$defs", "definitions"):
        # a plain-name anchor, or a pointer outside the definitions
        raise ToolValidationUnavailable(_BAD_REF)
    if any("~" in token.replace("~0", "").replace("~1", "") for token in tokens):
        raise ToolValidationUnavailable(_BAD_REF)
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tokens[1:])


class References:
    """A document's references while it compiles: where each subschema sits, each ``$ref``'s
    cell and pointer, and the subschemas applied to the same instance as each node."""

    def __init__(self) -> None:
        self.positions: dict[tuple[str, ...], SchemaNode] = {}
        self.references: list[tuple[RefCell, tuple[str, ...]]] = []
        #: Subschemas applied to the same instance (in-place applicators and ``$ref``).
        self.in_place: dict[SchemaNode, list[SchemaNode | RefCell]] = {}

    def cell(self, ref: Any) -> RefCell:
        """The cell a ``$ref`` evaluates through, pointed at its target by ``resolve``."""
        cell = RefCell()
        self.references.append((cell, ref_pointer(ref)))
        return cell

    def resolve(self) -> None:
        """Point every ``$ref`` at its compiled target, then refuse loops that consume nothing."""
        for cell, pointer in self.references:
            target = self.positions.get(pointer)
            if target is None:
                raise ToolValidationUnavailable(_BAD_REF)
            cell.target = target
        self._refuse_loops()

    def _refuse_loops(self) -> None:
        """Depth-first search over same-instance edges; a back edge is a loop without progress."""

        def targets(node: SchemaNode) -> list[SchemaNode]:
            edges = self.in_place.get(node, ())
            return [edge.target if isinstance(edge, RefCell) else edge for edge in edges]

        done: set[SchemaNode] = set()
        for start in self.in_place:
            if start in done:
                continue
            open_nodes = {start}
            stack = [(start, iter(targets(start)))]
            while stack:
                node, pending = stack[-1]
                for child in pending:
                    if child in open_nodes:
                        raise ToolValidationUnavailable(_REF_LOOP)
                    if child not in done:
                        open_nodes.add(child)
                        stack.append((child, iter(targets(child))))
                        break
                else:
                    stack.pop()
                    open_nodes.discard(node)
                    done.add(node)
