"""What changed between a tool's approved contract and the one it holds now (SPEC §14), as an
operator reads it before approving: the description as a word difference, each schema's
properties added, removed and changed, and the annotations — a new ``readOnlyHint: true`` or a
dropped ``destructiveHint`` called out, since confirmation follows them (SPEC §3 step 4)."""

from __future__ import annotations

import difflib
from typing import Any

__all__ = ["contract_difference"]

#: Annotation changes that make a call ask for less confirmation: each is called out.
_LOOSER = {
    ("readOnlyHint", True): "readOnlyHint became true: calls no longer ask for confirmation",
    ("destructiveHint", False): "destructiveHint became false: calls no longer ask for "
    "confirmation",
    ("destructiveHint", None): "destructiveHint was dropped",
    ("idempotentHint", True): "idempotentHint became true",
    ("openWorldHint", False): "openWorldHint became false",
}


def word_difference(old: str, new: str) -> str:
    """``new`` beside ``old`` a word at a time: removed words as ``[-…-]``, added as ``{+…+}``."""
    before, after = old.split(), new.split()
    parts: list[str] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            parts.append(" ".join(before[a0:a1]))
            continue
        if a1 > a0:
            parts.append("[-" + " ".join(before[a0:a1]) + "-]")
        if b1 > b0:
            parts.append("{+" + " ".join(after[b0:b1]) + "+}")
    return " ".join(parts)


def _properties(schema: Any) -> dict[str, Any]:
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return dict(schema["properties"])
    return {}


def _schema_difference(old: Any, new: Any) -> dict[str, Any] | None:
    if old == new:
        return None
    before, after = _properties(old), _properties(new)
    changes: dict[str, Any] = {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changed": sorted(n for n in set(before) & set(after) if before[n] != after[n]),
    }
    rest = [
        {k: v for k, v in (s or {}).items() if k != "properties"} if isinstance(s, dict) else s
        for s in (old, new)
    ]
    if rest[0] != rest[1]:
        changes["other"] = {"from": rest[0], "to": rest[1]}
    return changes


def _annotation_difference(old: Any, new: Any) -> dict[str, Any] | None:
    before = old if isinstance(old, dict) else {}
    after = new if isinstance(new, dict) else {}
    changed = {
        key: {"from": before.get(key), "to": after.get(key)}
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    }
    if not changed:
        return None
    notes = [
        note
        for (key, value), note in _LOOSER.items()
        if key in changed and after.get(key) == value and (value is not None or key in before)
    ]
    return {"changed": changed, "notes": notes}


def contract_difference(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """What ``new`` changes of ``old`` (``None``: a tool never approved, shown whole)."""
    if old is None:
        return {
            "new": True,
            "title": new.get("title"),
            "description": new.get("description") or "",
            "inputSchema": {"added": sorted(_properties(new.get("inputSchema")))},
            "annotations": new.get("annotations"),
        }
    changes: dict[str, Any] = {"new": False}
    for field in ("name", "title"):
        if old.get(field) != new.get(field):
            changes[field] = {"from": old.get(field), "to": new.get(field)}
    old_text, new_text = str(old.get("description") or ""), str(new.get("description") or "")
    if old_text != new_text:
        changes["description"] = word_difference(old_text, new_text)
    for field in ("inputSchema", "outputSchema"):
        schema = _schema_difference(old.get(field), new.get(field))
        if schema is not None:
            changes[field] = schema
    annotations = _annotation_difference(old.get("annotations"), new.get("annotations"))
    if annotations is not None:
        changes["annotations"] = annotations
    return changes
