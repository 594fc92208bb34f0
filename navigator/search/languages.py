"""Words of scripts other than English: unspaced scripts cut into pieces, languages stemmed.

Chinese and Japanese write words without spaces between them: "查询城市天气" is one run of
letters to a word pattern, and a query "城市的天气" shares no whole run with it. Such a run (Han,
Hiragana, Katakana) is cut into its overlapping character bigrams ("查询", "询城", "城市", …), in
tool text and query alike, so that any two characters in a row that a query shares with a tool
meet — the usual lexical indexing of these scripts, with no dictionary. A run of one character is
kept as itself (and, like every one-letter word, left out of the index).

A word in Cyrillic is Russian to the stemmer; a text whose function words are German rather than
English (or that writes umlauts and no English function word) is German, and its Latin words are
stemmed as German. The languages are told apart by what is cheap to see, never by a model.
"""

from __future__ import annotations

import re

__all__ = [
    "GERMAN_STOPWORDS",
    "RUSSIAN_STOPWORDS",
    "STOPWORDS",
    "is_german",
    "is_russian",
    "maybe_german",
    "unspaced_pieces",
]

# NLTK's English stopword list: the standard list, nothing chosen for a particular catalogue.
# Apostrophes are dropped, as they are from the words of a text.
_STOPWORD_TEXT = """
    a about above after again against ain all am an and any are aren aren't as at be because been
    before being below between both but by can couldn couldn't d did didn didn't do does doesn
    doesn't doing don don't down during each few for from further had hadn hadn't has hasn hasn't
    have haven haven't having he her here hers herself him himself his how i if in into is isn
    isn't it it's its itself just ll m ma me mightn mightn't more most mustn mustn't my myself
    needn needn't no nor not now o of off on once only or other our ours ourselves out over own re
    s same shan shan't she she's should should've shouldn shouldn't so some such t than that
    that'll the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn wasn't we were weren weren't what when where which while who whom
    why will with won won't wouldn wouldn't y you you'd you'll you're you've your yours yourself
    yourselves
    """
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.replace("'", "").split())

# Han (with the iteration mark), Hiragana, Katakana (with the prolonged sound mark), and the
# compatibility ideographs.
_UNSPACED = re.compile(r"[\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")

# After NLTK's Russian stopword list (one-letter words are never terms anyway).
_RUSSIAN_STOPWORD_TEXT = """
    во не что он на как то все она так его но да ты же вы за бы по только ее мне было вот от меня
    еще нет из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять
    уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам
    чтоб без будто чего раз тоже себе под будет тогда кто этот того потому этого какой совсем ним
    здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при наконец
    два об другой хоть после над больше тот через эти нас про всего них какая много разве три эту
    моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно
    всю между со ко это мои мое мой
    """
RUSSIAN_STOPWORDS: frozenset[str] = frozenset(_RUSSIAN_STOPWORD_TEXT.split())

# After NLTK's German stopword list.
_GERMAN_STOPWORD_TEXT = """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
    anderm andern anders auch auf aus bei bin bis bist da damit dann der den des dem die das dass
    daß derselbe derselben denselben desselben demselben dieselbe dieselben dasselbe dazu dein
    deine deinem deinen deiner deines denn derer dessen dich dir du dies diese diesem diesen dieser
    dieses doch dort durch ein eine einem einen einer eines einig einige einigem einigen einiger
    einiges einmal er ihn ihm es etwas euer eure eurem euren eurer eures für gegen gewesen hab
    habe haben hat hatte hatten hier hin hinter ich mich mir ihr ihre ihrem ihren ihrer ihres euch
    im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann kein
    keine keinem keinen keiner keines können könnte machen man manche manchem manchen mancher
    manches mein meine meinem meinen meiner meines mit muss musste nach nicht nichts noch nun nur
    ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie ihnen sind so solche
    solchem solchen solcher solches soll sollte sondern sonst über um und uns unsere unserem
    unseren unser unseres unter viel vom von vor während war waren warst was weg weil weiter
    welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird wirst wo
    wollen wollte würde würden zu zum zur zwar zwischen gibt
    """
GERMAN_STOPWORDS: frozenset[str] = frozenset(_GERMAN_STOPWORD_TEXT.split())

_UMLAUTS = frozenset("äöüßÄÖÜ")
# What German text nearly always holds: a cheap look before its words are counted.
_GERMAN_HINT = re.compile(
    r"\b(?:der|die|das|und|ist|mit|von|den|des|zu|ein|eine|für|nicht|auf|im)\b|[äöüß]",
    re.IGNORECASE,
)


def maybe_german(text: str) -> bool:
    """Whether a text may be German (``is_german`` decides): it holds a common German function
    word or an umlaut."""
    return _GERMAN_HINT.search(text) is not None


def unspaced_pieces(word: str) -> list[str] | None:
    """The pieces of a word holding a run of an unspaced script: each such run as its
    overlapping character bigrams (a run of one character as itself), the word's other runs as
    they are; ``None`` for a word with no such run."""
    if word.isascii():
        return None
    runs = list(_UNSPACED.finditer(word))
    if not runs:
        return None
    pieces: list[str] = []
    start = 0
    for run in runs:
        if run.start() > start:
            pieces.append(word[start : run.start()])
        text = run.group()
        if len(text) == 1:
            pieces.append(text)
        else:
            pieces.extend(text[i : i + 2] for i in range(len(text) - 1))
        start = run.end()
    if start < len(word):
        pieces.append(word[start:])
    return pieces


def is_russian(word: str) -> bool:
    """Whether a word is Cyrillic (and so stemmed as Russian)."""
    return not word.isascii() and _CYRILLIC.search(word) is not None


def is_german(words: list[str]) -> bool:
    """Whether case-folded words are German: more German function words than English ones, or
    an umlaut and no English function word."""
    german = english = 0
    umlaut = False
    for word in words:
        in_german, in_english = word in GERMAN_STOPWORDS, word in STOPWORDS
        if in_german and not in_english:
            german += 1
        elif in_english and not in_german:
            english += 1
        if not umlaut and not word.isascii():
            umlaut = not _UMLAUTS.isdisjoint(word)
    return german > english or (umlaut and english == 0)
