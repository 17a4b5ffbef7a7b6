"""Target words: a word list read and checked for a benchmark's language, and the occurrence
finder that looks for them in a text."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import pandas as pd

from evalpipe.errors import InputError
from evalpipe.perturb.english import EnglishFinder
from evalpipe.perturb.japanese import JapaneseFinder, Tokenizer
from evalpipe.perturb.scripts import char_class


@dataclass(frozen=True)
class Target:
    rank: int
    word: str
    variant: str  # the row label; "word/pos" where one lemma appears with several POS
    lemma: str | None
    pos: str | None


def _script_language(word: str) -> str | None:
    for ch in word:
        cls = char_class(ch)
        if cls in ("hiragana", "katakana", "kanji", "halfwidth_katakana"):
            return "japanese"
    if any(ch.isascii() and ch.isalpha() for ch in word):
        return "english"
    return None


def read_targets(words: pd.DataFrame, *, language: str, source: str = "word list") -> list[Target]:
    """Validate a word list (columns ``rank, word``; ``lemma, pos`` optional) for ``language``.

    Parameters
    ----------
    words : the word-list frame, e.g. data/words/{language}.parquet.
    language : the benchmark's language; most words must be written in its script.
    source : the word list's file name, for error messages.

    Returns
    -------
    Targets in rank order.

    Raises
    ------
    InputError for a missing column, an empty list, a missing or non-integer rank or an empty
    word, or a list whose words are mostly in another language's script.
    """
    missing = [c for c in ("rank", "word") if c not in words.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {missing}; expected a word list with "
            f"columns rank, word, lemma, pos, score (run `python -m stages.words "
            f"--language {language}`)"
        )
    if len(words) == 0:
        raise InputError(
            f"{source}: the word list is empty; expected at least one target word "
            "(check words.top_n in params.yaml)"
        )
    frame = words.sort_values("rank", kind="mergesort").reset_index(drop=True)
    lemmas = frame["lemma"].tolist() if "lemma" in frame.columns else [None] * len(frame)
    poses = frame["pos"].tolist() if "pos" in frame.columns else [None] * len(frame)
    raw: list[tuple[int, str, str | None, str | None]] = []
    for i, (rank, word) in enumerate(
        zip(frame["rank"].tolist(), frame["word"].tolist(), strict=True)
    ):
        if not isinstance(word, str) or not word.strip():
            raise InputError(
                f"{source}, row {i + 1}, column 'word': expected a word, found {word!r}"
            )
        try:
            rank_int = int(rank)
        except (TypeError, ValueError):
            raise InputError(
                f"{source}, row {i + 1}, column 'rank': expected an integer, found {rank!r}"
            ) from None
        lemma = lemmas[i] if isinstance(lemmas[i], str) and lemmas[i] else None
        pos = poses[i] if isinstance(poses[i], str) and poses[i] else None
        raw.append((rank_int, word, lemma, pos))
    scripts = [_script_language(w) for _, w, _, _ in raw]
    foreign = [
        w for (_, w, _, _), s in zip(raw, scripts, strict=True) if s is not None and s != language
    ]
    if len(foreign) * 2 > len(raw):
        raise InputError(
            f"{source}: the target words are not {language} ({len(foreign)} of {len(raw)} are "
            f"written in another script, e.g. {foreign[:3]}); the benchmark's language is "
            f"{language}: use data/words/{language}.parquet (`python -m stages.words --language "
            f"{language}`)"
        )
    counts: dict[str, int] = {}
    for _, w, _, _ in raw:
        counts[w] = counts.get(w, 0) + 1
    return [Target(r, w, f"{w}/{p}" if counts[w] > 1 and p else w, lem, p) for r, w, lem, p in raw]


class Finder(Protocol):
    """Finds the target words' occurrences in a text."""

    # whether ``prepare`` does work ahead (the loops then hand it each batch's texts)
    batches: bool

    def find(self, text: str) -> list[tuple[int, int, int]]:
        """``[(target index, start, end), ...]``; ``text[start:end]`` is the occurrence."""
        ...

    def prepare(self, texts: Iterable[str]) -> None:
        """Find ``texts`` now, for the ``find`` calls that follow."""
        ...


def make_finder(
    targets: list[Target],
    language: str,
    *,
    source: str = "word list",
    tokenizer: Tokenizer | None = None,
) -> Finder:
    """The occurrence finder for ``language``."""
    if language == "english":
        return EnglishFinder([t.word for t in targets], source=source)
    return JapaneseFinder([(t.word, t.lemma, t.pos) for t in targets], tokenizer=tokenizer)
