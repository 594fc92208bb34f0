"""The index's tool texts and their members: documents by address, grouped into texts.

Documents with the same role, tool name and contract digest are one *tool text* however many
holders offer them: the text is indexed once (taken from the member whose address sorts first) and
the holders are its members, kept in holder order. ``Members`` keeps them findable by slot (the
text's place in the postings), by role, by tool name and by holder, and answers which of a text's
members a caller may call; the postings themselves are ``postings.PostingIndex``'s.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from navigator.addresses import Pattern
from navigator.search.audience import Audience
from navigator.search.documents import ToolDocument
from navigator.search.text import TextAnalyzer, split_identifier

__all__ = [
    "Analysed",
    "GroupKey",
    "Members",
    "Text",
    "ToolText",
    "permitted_members",
    "position",
    "text_of",
    "text_terms",
]

# (role, tool name, contract digest): the tools that are the same tool on another holder
GroupKey = tuple[str, str, str]
# (title, description, parameters): what of a document is indexed besides its role and name
Text = tuple[str, str, tuple[tuple[str, str], ...]]
# (name, title, description, parameters, role): what the analyzer reads of one text
Analysed = tuple[str, str, str, tuple[tuple[str, str], ...], str]


def text_of(document: ToolDocument) -> Text:
    return (document.title, document.description, document.parameters)


def text_fields(analyzer: TextAnalyzer, key: GroupKey, text: Text) -> tuple[list[str], ...]:
    """A text's terms per field."""
    role, name, _ = key
    title, description, parameters = text
    return analyzer.tool_terms(name, title, description, parameters, role)


def text_terms(analyzer: TextAnalyzer, key: GroupKey, text: Text) -> list[str]:
    """The distinct terms of a text."""
    return list(dict.fromkeys(t for field in text_fields(analyzer, key, text) for t in field))


def holder_words(holder: str) -> set[str]:
    """The words that name a holder in a query: its whole name and its parts."""
    words = {holder.casefold()}
    words.update(part for part in split_identifier(holder) if len(part) > 1)
    return words


def position(ordered: Sequence[Any], value: Any) -> int | None:
    """Where ``value`` stands in the ascending ``ordered``, if it does (by bisection)."""
    at = bisect_left(ordered, value)
    return at if at < len(ordered) and ordered[at] == value else None


@dataclass(slots=True)
class ToolText:
    """One indexed text and the addresses of the documents that share it, with their holders
    beside them (a holder has at most one member: its tool of this key). Members are kept in
    holder order, as ``seats`` lists holders — "web" before "web-1", which address order puts
    after it.

    Its words are not kept: unindexing analyses the text again, which costs a removal what adding
    cost, and saves the index a copy of every text's words.
    """

    key: GroupKey
    text: Text
    slot: int
    members: list[str]
    holders: list[str]

    def add(self, address: str, holder: str) -> None:
        """Add a member in holder order."""
        holders = self.holders
        at = len(holders) if not holders or holder > holders[-1] else bisect_left(holders, holder)
        self.members.insert(at, address)
        holders.insert(at, holder)

    def discard(self, holder: str) -> None:
        at = self.position(holder)
        if at is not None:
            del self.members[at], self.holders[at]

    def position(self, holder: str) -> int | None:
        """Where the member on ``holder`` is, if it has one."""
        return position(self.holders, holder)


def permitted_members(
    tool_text: ToolText, audience: Audience, permits: Callable[[str], bool]
) -> Sequence[int]:
    """The positions of the members the caller may call, ascending: a ``range`` when it may call
    all of them. Where the grants decide a tool alike on every holder but a few
    (``holder_exceptions``), only the members on those few are asked: a module on 500 machines
    costs a few lookups, not 500 decisions."""
    members = tool_text.members
    everyone = range(len(members))
    if len(members) == 1:
        return everyone if permits(members[0]) else ()
    role, name, _ = tool_text.key
    every = audience.permits_every_holder(role, name)
    if every is not None:
        return everyone if every else ()
    exceptions = audience.holder_exceptions(role, name)
    if exceptions is None or len(exceptions[1]) >= len(members):
        return [at for at in everyone if permits(members[at])]
    answer, named = exceptions
    asked = sorted(at for holder in named if (at := tool_text.position(holder)) is not None)
    if not answer:
        return [at for at in asked if permits(members[at])]
    refused = {at for at in asked if not permits(members[at])}
    return [at for at in everyone if at not in refused] if refused else everyone


class Members:
    """The documents of an index and their tool texts, findable by address, key, slot, role,
    tool name and holder. Its dictionaries are read by the index's other parts (the caller's own
    part, holders' bonuses, a build); they change only through these methods."""

    __slots__ = (
        "by_holder",
        "by_slot",
        "documents",
        "holders_by_word",
        "slots_by_name",
        "slots_by_role",
        "texts",
    )

    def __init__(self) -> None:
        self.documents: dict[str, ToolDocument] = {}
        self.texts: dict[GroupKey, ToolText] = {}
        self.by_slot: dict[int, ToolText] = {}
        self.slots_by_role: dict[str, set[int]] = {}
        # most names are one text's: a list costs a quarter of a set
        self.slots_by_name: dict[str, list[int]] = {}
        self.by_holder: dict[str, set[str]] = {}
        self.holders_by_word: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self.documents)

    # -- changes -------------------------------------------------------------------------------

    def attach(
        self, document: ToolDocument, touched: dict[GroupKey, None], pending: list[ToolText]
    ) -> None:
        """Add a document; a text new to the index waits in ``pending`` for its slot."""
        key = (document.role, document.name, document.contract_digest)
        self.documents[document.address] = document
        self.by_holder.setdefault(document.holder, set()).add(document.address)
        if len(self.by_holder[document.holder]) == 1:
            for word in holder_words(document.holder):
                self.holders_by_word.setdefault(word, set()).add(document.holder)
        tool_text = self.texts.get(key)
        if tool_text is None:
            tool_text = ToolText(key, text_of(document), -1, [], [])
            self.texts[key] = tool_text
            pending.append(tool_text)
        tool_text.add(document.address, document.holder)
        touched[key] = None

    def attach_placed(self, document: ToolDocument, slot: int) -> tuple[ToolText, bool]:
        """Add a document not yet indexed, as a build does: a text new to the index takes
        ``slot`` at once. Its text, and whether it is new."""
        address, holder = document.address, document.holder
        self.documents[address] = document
        on_holder = self.by_holder.get(holder)
        if on_holder is None:
            on_holder = self.by_holder[holder] = set()
            for word in holder_words(holder):
                self.holders_by_word.setdefault(word, set()).add(holder)
        on_holder.add(address)
        key = (document.role, document.name, document.contract_digest)
        tool_text = self.texts.get(key)
        if tool_text is None:
            text = (document.title, document.description, document.parameters)
            self.texts[key] = tool_text = ToolText(key, text, slot, [address], [holder])
            self.place(tool_text, slot)
            return tool_text, True
        tool_text.add(address, holder)
        return tool_text, False

    def detach(self, document: ToolDocument, touched: dict[GroupKey, None]) -> None:
        key = (document.role, document.name, document.contract_digest)
        del self.documents[document.address]
        on_holder = self.by_holder[document.holder]
        on_holder.discard(document.address)
        if not on_holder:
            del self.by_holder[document.holder]
            for word in holder_words(document.holder):
                holders = self.holders_by_word[word]
                holders.discard(document.holder)
                if not holders:
                    del self.holders_by_word[word]
        self.texts[key].discard(document.holder)
        touched[key] = None

    def place(self, text: ToolText, slot: int) -> None:
        """Give an indexed text its slot, findable by its role and by its tool name."""
        text.slot = slot
        self.by_slot[slot] = text
        self.slots_by_role.setdefault(text.key[0], set()).add(slot)
        self.slots_by_name.setdefault(text.key[1], []).append(slot)

    def unplace(self, slot: int, text: ToolText) -> None:
        """Forget a stale text's slot (its postings are the index's to remove)."""
        del self.by_slot[slot]
        _discard(self.slots_by_role, text.key[0], slot)
        _discard(self.slots_by_name, text.key[1], slot)

    # -- lookups -------------------------------------------------------------------------------

    def slot_of(self, document: ToolDocument) -> int:
        return self.texts[(document.role, document.name, document.contract_digest)].slot

    def named_slots(self, pattern: Pattern) -> list[Collection[int]]:
        """The texts of the role and of the tool name ``pattern`` names (none, one or both)."""
        return [
            slots.get(segment, ())
            for slots, segment in ((self.slots_by_role, pattern.role),
                                   (self.slots_by_name, pattern.tool))
            if segment is not None
        ]  # fmt: skip

    def pattern_slots(self, pattern: Pattern) -> set[int] | None:
        """The slots with a member ``pattern`` may match, when it names a segment: a holder's
        tools, or the texts of a role and of a tool name, the fewer first."""
        if pattern.holder is not None:
            slots: set[int] = set()
            for address in self.by_holder.get(pattern.holder, ()):
                document = self.documents[address]
                if pattern.matches(document.holder, document.role, document.name):
                    slots.add(self.slot_of(document))
            return slots
        named = self.named_slots(pattern)
        if not named:
            return None
        fewer, *more = sorted(named, key=len)
        return set(fewer).intersection(*more)

    def slots_matching(self, patterns: Sequence[Pattern]) -> Collection[int] | None:
        """The slots with a member one of ``patterns`` may match; ``None`` when one of them names
        no segment (every slot)."""
        slots: set[int] = set()
        for pattern in patterns:
            matched = self.pattern_slots(pattern)
            if matched is None:
                return None
            slots |= matched
        return slots

    def narrowed_slots(self, within: Callable[[str], bool] | None) -> list[int] | None:
        """The slots that can hold a match of ``within``, when it is the navigator's parsed
        pattern (``Pattern.matches_address``) naming a segment; else ``None``.

        Only a shortcut: ``within`` is still asked of every member of what is left.
        """
        pattern = getattr(within, "__self__", None)
        if not isinstance(pattern, Pattern) or getattr(within, "__func__", None) is not (
            Pattern.matches_address
        ):
            return None
        slots = self.pattern_slots(pattern)
        return None if slots is None else sorted(slots)


def _discard(slots_by: dict[str, set[int]] | dict[str, list[int]], segment: str, slot: int) -> None:
    slots = slots_by[segment]
    slots.remove(slot)
    if not slots:
        del slots_by[segment]
