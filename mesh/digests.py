"""SHA-256 over RFC 8785 canonical JSON: the one place digests are computed (SPEC §5).

Both ends of the wire use it — the navigator for contract, catalogue and argument digests, the node
to check that a call token names exactly the arguments it received.

Most values a digest covers hold strings, booleans, integers within JSON's exact range, fractions
written without an exponent, and ASCII object keys. For those, RFC 8785's output is exactly what
the standard library's C encoder writes with sorted keys, no whitespace and no ASCII escaping (the
same escapes, the same key order, the same shortest digits that ``rfc8785`` itself takes from
``repr``), so they take that path, several times faster, whole-number floats written as integers
first; anything else — a fraction ``repr`` writes with an exponent, a larger integer, a non-ASCII
key, any other type — goes through the reference implementation. ``tests/mesh/test_digests.py``
holds the two to the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import rfc8785

__all__ = ["arguments_digest", "canonical_json", "contract_digest", "digest"]

#: The parts of a tool's ``tools/list`` entry that make its contract; anything else is metadata.
CONTRACT_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

#: RFC 8785 refuses integers a double cannot hold exactly.
_SAFE_INTEGER = 2**53 - 1

#: Fractions ``repr`` writes without an exponent, as RFC 8785 does (1e-05 it writes 0.00001).
_FIXED_LOW, _FIXED_HIGH = 1e-4, 1e16

_ENCODE = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode


class _NeedsReference(Exception):
    """A value only the reference implementation writes as RFC 8785 says."""


def _prepared(value: Any) -> Any:
    """``value`` made ready for the standard encoder to write it the RFC 8785 way (whole-number
    floats as integers); ``_NeedsReference`` for anything it would write otherwise."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
            return value
        raise _NeedsReference
    if kind is float:
        if value.is_integer():
            if abs(value) <= _SAFE_INTEGER:
                return int(value)  # 3.0 is written 3
        elif _FIXED_LOW <= abs(value) < _FIXED_HIGH:
            return value  # ``repr``'s shortest digits, no exponent: as RFC 8785 writes them
        raise _NeedsReference
    if kind is dict:
        prepared = {}
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                raise _NeedsReference  # RFC 8785 orders keys by UTF-16 code units
            prepared[key] = _prepared(item)
        return prepared
    if kind is list or kind is tuple:
        return [_prepared(item) for item in value]
    raise _NeedsReference


def canonical_json(value: Any) -> bytes:
    """``value`` as RFC 8785 writes it; ``rfc8785.CanonicalizationError`` (a ``ValueError``) for
    what has no canonical form, and for a value nested deeper than Python recurses: both
    writers recurse, and a caller is owed an error it can answer, not a ``RecursionError`` whose
    traceback runs a thousand frames (the navigator's validator refuses arguments nested that
    deep long before; a node's call token check gets here with whatever it was sent)."""
    try:
        return _canonical(value)
    except RecursionError:
        raise rfc8785.CanonicalizationError("input is nested too deeply") from None


def _canonical(value: Any) -> bytes:
    try:
        prepared = _prepared(value)
    except _NeedsReference:
        return bytes(rfc8785.dumps(value))
    try:
        return _ENCODE(prepared).encode("utf-8")
    except UnicodeEncodeError as error:  # a lone surrogate, which RFC 8785 refuses too
        raise rfc8785.CanonicalizationError("input contains non-UTF-8 codepoints") from error


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def contract_digest(tool: Mapping[str, Any]) -> str:
    """The digest of a tool's contract: equal digests mean the same tool on another holder."""
    return digest({key: tool[key] for key in CONTRACT_FIELDS if tool.get(key) is not None})


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    return digest(dict(arguments))
