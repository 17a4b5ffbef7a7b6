"""Kana-kanji conversion slips: a word replaced by a different word with the same reading.

Japanese is typed as a reading that the input method converts; picking the wrong candidate
gives a real word with the right reading and the wrong meaning (以外 -> 意外, 機会 -> 機械, 関心 ->
感心). The candidates come from a fixed homophone table, ``homophones.tsv`` next to this module:
the Japanese words of wordfreq 3.1.1's list (top ``LEXICON_SIZE``) that UniDic (unidic-lite
1.0.8, through fugashi) reads as one token containing a kanji, grouped by the token's
orthographic kana reading (UniDic's ``kana`` field, e.g. は is ハ, not ワ), keeping readings shared
by at least two different lemmas. Like the kanji inventory, the table is written out rather than
computed at run time, so that upgrading wordfreq never changes a perturbed artifact; regenerate
it with ``python -m evalpipe.perturb.homophones``.

An occurrence's reading is the concatenated ``kana`` of the UniDic tokens of its text; its
candidates are the table's words with that reading whose lemma differs from every lemma of the
occurrence (子供 and 子ども share a lemma: one is a spelling of the other, not a slip). Only
occurrences containing a kanji are converted: choosing the wrong kanji is the slip modelled.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from evalpipe.errors import InputError
from evalpipe.perturb.scripts import char_class

LEXICON_SIZE = 50_000
TABLE_PATH = Path(__file__).with_name("homophones.tsv")


class ReadingAnalyser:
    """UniDic (unidic-lite) tokens of a text as ``(surface, kana reading, lemma)``.

    Unknown words (MeCab's unknown-word path) have an empty reading, so a text holding one has
    no reading and no homophone.
    """

    def __init__(self) -> None:
        try:
            import fugashi
            import unidic_lite

            dicdir = unidic_lite.DICDIR
            rc = os.path.join(dicdir, "mecabrc")
            self._tagger = fugashi.GenericTagger(f'-r "{rc}" -d "{dicdir}"')
        except Exception as exc:  # ImportError, or RuntimeError from MeCab
            raise InputError(
                f"kana-kanji conversion slips need fugashi with the unidic-lite dictionary "
                f"(pip install fugashi unidic-lite): {exc}"
            ) from exc

    @functools.lru_cache(maxsize=65_536)  # noqa: B019 - one analyser per run, texts repeat
    def tokens(self, text: str) -> tuple[tuple[str, str, str], ...]:
        out = []
        for node in self._tagger(text):
            feature = node.feature
            if len(feature) > 17:
                out.append((node.surface, feature[17], feature[7]))
            else:
                out.append((node.surface, "", node.surface))
        return tuple(out)

    def reading(self, text: str) -> str | None:
        """The kana reading of ``text`` (katakana), or None when a token has none."""
        toks = self.tokens(text)
        if not toks or any(not kana or kana == "*" for _, kana, _ in toks):
            return None
        return "".join(kana for _, kana, _ in toks)


def has_kanji(text: str) -> bool:
    return any(char_class(ch) == "kanji" for ch in text)


def build_table(words: Iterable[str], analyser: ReadingAnalyser) -> list[tuple[str, str, str]]:
    """``[(reading, surface, lemma), ...]``: the words read as one kanji-bearing token, grouped by
    reading (readings in code-point order, words in input order), readings with >= 2 lemmas."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for word in words:
        if not has_kanji(word):
            continue
        toks = analyser.tokens(word)
        if len(toks) != 1 or toks[0][0] != word:
            continue
        _, kana, lemma = toks[0]
        if not kana or kana == "*":
            continue
        lemma = lemma.split("-")[0]
        group = groups.setdefault(kana, [])
        if all(s != word for s, _ in group):
            group.append((word, lemma))
    return [
        (reading, surface, lemma)
        for reading in sorted(groups)
        if len({lem for _, lem in groups[reading]}) >= 2
        for surface, lemma in groups[reading]
    ]


def read_table(path: Path = TABLE_PATH) -> dict[str, tuple[tuple[str, str], ...]]:
    """reading -> ``((surface, lemma), ...)`` from a table file (see ``build_table``)."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise InputError(f"{path}, line {i}: expected reading<TAB>surface<TAB>lemma")
        groups.setdefault(parts[0], []).append((parts[1], parts[2]))
    return {k: tuple(v) for k, v in groups.items()}


class Homophones:
    """Homophone lookup for conversion slips.

    Parameters
    ----------
    analyser : a ReadingAnalyser (built on demand).
    table : reading -> ``((surface, lemma), ...)`` (default: the shipped ``homophones.tsv``).

    Examples
    --------
    >>> h = Homophones()
    >>> reading, candidates = h.lookup("以外")
    >>> reading, "意外" in candidates
    ('イガイ', True)
    """

    def __init__(
        self,
        *,
        analyser: ReadingAnalyser | None = None,
        table: dict[str, tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        self.analyser = analyser or ReadingAnalyser()
        self.table = read_table() if table is None else table
        self._cache: dict[str, tuple[str | None, tuple[str, ...]]] = {}

    def lookup(self, word: str) -> tuple[str | None, tuple[str, ...]]:
        """``(reading, candidates)``: the word's kana reading (None when UniDic has none) and the
        words with the same reading and another lemma (empty when there are none, or when the
        word holds no kanji)."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        reading = self.analyser.reading(word) if has_kanji(word) else None
        candidates: tuple[str, ...] = ()
        if reading is not None:
            own = {lemma.split("-")[0] for _, _, lemma in self.analyser.tokens(word)}
            candidates = tuple(
                s for s, lemma in self.table.get(reading, ()) if lemma not in own and s != word
            )
        result = (reading, candidates)
        self._cache[word] = result
        return result


def main() -> None:
    """Write the homophone table from wordfreq's Japanese list to stdout."""
    from importlib.metadata import version

    import wordfreq

    words = wordfreq.top_n_list("ja", LEXICON_SIZE)
    rows = build_table(words, ReadingAnalyser())
    out = sys.stdout
    out.write(
        f"# reading<TAB>surface<TAB>lemma: wordfreq {version('wordfreq')} ja top {LEXICON_SIZE}, "
        f"unidic-lite {version('unidic-lite')}: one-token kanji words grouped by UniDic kana "
        "reading, readings shared by >= 2 lemmas (python -m evalpipe.perturb.homophones)\n"
    )
    for row in rows:
        out.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()
