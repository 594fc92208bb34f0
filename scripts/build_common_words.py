"""Build navigator/search/data/common-words.tsv from wordfreq's English word list.

    .venv/bin/python scripts/build_common_words.py [--wheel FILE]

The list comes from the ``wordfreq==3.1.1`` wheel on PyPI (its ``large_en`` list, the one
``wordfreq.zipf_frequency`` reads for English); pass ``--wheel`` to read a downloaded wheel
instead. The table is written once and committed: the navigator never reads wordfreq itself.

It holds every word commoner in general English than ``RARE_ZIPF`` (one word in about 30,000),
with its Zipf frequency (log10 of its occurrences per billion words): the words a query's
weight depends on (ADR 0020). An entry is read by the navigator's own analyser
(``TextAnalyzer.query_words``) and kept when it reads as one query word of ASCII letters, under
that word: "Weather" as "weather", "let's" as "let", "everything" as itself (its parts every and
thing follow it in a query, weighed by the whole); stopwords ("the", "don't"), numbers and entries
that read as several words ("e-mail", "u.s") never reach the weighting and are left out. Two
entries that read as the same word keep the commoner frequency. Lines are sorted by word.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import msgpack

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from navigator.search.commonness import RARE_ZIPF  # noqa: E402
from navigator.search.text import QueryWord, TextAnalyzer  # noqa: E402

OUTPUT = ROOT / "navigator" / "search" / "data" / "common-words.tsv"
LICENSE = ROOT / "navigator" / "search" / "data" / "WORDFREQ-LICENSE"
SOURCE = "wordfreq==3.1.1"
WORD_LIST = "wordfreq/data/large_en.msgpack.gz"
# A cB list gives word buckets in order of frequency: bucket i holds the words at -i centibels,
# a frequency of 10 ** (-i / 100), which is Zipf 9 - i / 100.
TOP_ZIPF = 9.0

LICENSE_TEXT = """\
common-words.tsv is derived from the English word frequencies of wordfreq 3.1.1
(https://github.com/rspeer/wordfreq, Robyn Speer), whose data is licensed under the Creative
Commons Attribution-ShareAlike 4.0 license (https://creativecommons.org/licenses/by-sa/4.0/).
It is distributed under the same license. wordfreq's English list is built from Wikipedia,
OpenSubtitles, SUBTLEX, NewsCrawl, GlobalVoices, Google Books Ngrams, Reddit, Twitter and the
OSCAR web corpus; see wordfreq's README for their credits.

The table keeps the words commoner than Zipf 4.5, with their Zipf frequencies rounded to two
decimals, as meshnav's query analyser reads them: stopwords, numbers and words of other letters
than ASCII left out (scripts/build_common_words.py).
"""


def _downloaded_wheel() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="wordfreq-"))
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(folder), SOURCE],
        check=True,
    )
    return next(folder.glob("wordfreq-*.whl"))


def _one_word(read: list[QueryWord]) -> bool:
    """Whether an entry reads as one query word: alone, or followed by its own parts (a closed
    compound, "everything": every, thing), which a query weighs by the whole word."""
    whole, *parts = read
    if not parts:
        return True
    joined = "".join(part.surface for part in parts)
    whole_then_parts = not whole.correctable and all(part.correctable for part in parts)
    return whole_then_parts and joined == whole.surface


def common_words(buckets: list[list[str]]) -> dict[str, float]:
    """Words commoner than ``RARE_ZIPF`` and their Zipf frequencies, from a cB list's buckets."""
    analyzer = TextAnalyzer()
    words: dict[str, float] = {}
    for index, bucket in enumerate(buckets):
        zipf = round(TOP_ZIPF - index / 100, 2)
        if zipf <= RARE_ZIPF:
            break
        for entry in bucket:
            read = analyzer.query_words(entry)
            if not read or not _one_word(read):
                continue
            word = read[0].surface
            if word.isascii() and word.isalpha() and word not in words:
                words[word] = zipf  # buckets come commonest first
    return words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a downloaded wordfreq 3.1.1 wheel")
    args = parser.parse_args()
    wheel = args.wheel or _downloaded_wheel()
    with zipfile.ZipFile(wheel) as archive:
        header, *buckets = msgpack.loads(gzip.decompress(archive.read(WORD_LIST)), raw=False)
    if header != {"format": "cB", "version": 1}:
        raise SystemExit(f"unexpected word list format: {header}")
    words = common_words(buckets)
    OUTPUT.write_text("".join(f"{word}\t{words[word]:.2f}\n" for word in sorted(words)))
    LICENSE.write_text(LICENSE_TEXT, encoding="utf-8")
    print(f"{len(words)} words, {OUTPUT.stat().st_size:,} bytes -> {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
