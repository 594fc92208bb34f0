"""Values in a query: the parts that name a thing rather than say what to do with it.

An agent's query often carries the value it will pass: a path ("/srv/site/assets/main.css"), a
URL, an e-mail address, a quoted string ("'Order confirmed'"), an id or a resource's own name
("vm-test-07", "7c9e6679-7425-…", "help.kusto.windows.net"). Their words are words of the query
too — "site", "assets", "css", "order" — and would pull in every tool that says them, against
the few words that say the intent. ``value_spans`` finds them by their shape alone; their words
count at a small weight (``RankingSettings.value_weight``, ADR 0054).
"""

from __future__ import annotations

import re

__all__ = ["query_segments"]

_VALUE = re.compile(
    r"""
    '[^'\n]{1,200}'(?![\w'])          # a quoted string: 'x', "x", `x`, “x”, «x», 「x」
    | "[^"\n]{1,200}"
    | `[^`\n]{1,200}`
    | “[^”\n]{1,200}”
    | «[^»\n]{1,200}»
    | 「[^」\n]{1,200}」
    | \b[a-z][a-z0-9+.-]*://\S+          # a URL
    | [^\s@'"]+@[^\s@'"]+\.\w+           # an e-mail address
    | (?<![\w/\\])(?:~|\.{1,2})?/[^\s'"]+   # a path: /srv/x, ./build/x, ~/x
    | \b[A-Za-z]:\\[^\s'"]*              # a Windows path: C:\Users\x
    | (?<!\S)(?=[^\s]*\d)[\w.:+-]*[\w]-[\w.:+-]*[\w](?!\S)      # an id: letters, digits, hyphens
    | (?<!\S)(?=[^\s]*\d)(?=[^\s]*[A-Za-z_])[\w]*_[\w]*(?!\S)   # a_name_with_digits_1
    | (?<!\S)[\w-]+(?:\.[\w-]+){2,}(?!\S)   # a host name: a.b.c
    | (?<!\S)(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}(?!\S)   # a hexadecimal id
    | (?<!\S)\+?\d[\d()+-]{4,}(?!\S)     # a long number: an id, a phone number
    """,
    re.VERBOSE | re.IGNORECASE,
)


def query_segments(query: str) -> list[tuple[str, bool]]:
    """The query cut into its parts, in order, each with whether it is a value."""
    segments: list[tuple[str, bool]] = []
    start = 0
    for found in _VALUE.finditer(query):
        if found.start() > start:
            segments.append((query[start : found.start()], False))
        segments.append((found.group(), True))
        start = found.end()
    if start < len(query):
        segments.append((query[start:], False))
    return segments
