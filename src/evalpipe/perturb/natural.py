"""Model ``natural``: the operation mix of human typos, and real misspellings where known.

**Operation mix.** The GitHub Typo Corpus (Hagiwara & Mita, LREC 2020), after the filtering of
the typo-robustness follow-up study (138,037 single-character edits), has deletions 40.2%,
substitutions 23.2%, insertions 22.9% and transpositions 13.7%. Under ``model: natural`` the sum
of ``replace_prob + insert_prob + delete_prob + transpose_prob`` is the chance that an
occurrence gets a typo, and that total is shared out in these proportions
(``natural_probabilities``); ``conversion_prob`` (Japanese kana-kanji slips, a kind the corpus
does not have) is kept as configured.

**Position in the word.** The follow-up study's analysis of the same filtered corpus puts 9.7%
of the edits on a word's first letter, 67.2% inside it and 23.2% on its last letter
(:data:`POSITION_PROFILE`; the corpus's own terms are those of the repositories its commits
come from, and only these three published shares are shipped). For English words the keyboard
mechanics' choices of the drawn kind are reweighted so that, among the classes the word offers,
the shares of first / middle / last are these (:func:`position_class` says which an edit is;
:func:`profiled`); within a class the keyboard weights (QWERTY neighbours, hands) still choose.
Substitution confusions stay the QWERTY neighbours of the keyboard model: no per-character
confusion table of the corpus is published to follow. Real misspellings keep the positions
they have.

**Real misspellings.** ``misspellings_en.tsv`` is an excerpt of codespell 2.4.3's
``dictionary.txt`` (codespell-project/codespell; the dictionary files are derived from English
Wikipedia's lists of common misspellings and released under CC BY-SA 3.0, see
``misspellings_en.LICENSE``): the entries with exactly one correction that is one of the 5,000
most frequent English words of wordfreq 3.1.1, where the misspelling is one character edit of the
correction, labelled with the edit's kind. When an English word has entries of the kind drawn,
the typo is one of them (rule ``dictionary``), in the word's case; otherwise the keyboard model
makes it. Japanese: no public dictionary of Japanese typing errors can be shipped here (the
Japanese Wikipedia Typo Dataset is not downloadable from this machine), so Japanese words get the
corpus mix through the keyboard model's IME mechanics.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from pathlib import Path

from evalpipe.perturb.records import Operation

HUMAN_MIX = {"delete": 0.402, "replace": 0.232, "insert": 0.229, "transpose": 0.137}
"""GitHub Typo Corpus shares of single-character edits (they sum to 1)."""
POSITION_PROFILE = {"first": 97, "middle": 672, "last": 232}
"""Per mille of GitHub Typo Corpus edits by position in the word (9.7%, 67.2%, 23.2%, as
published; they sum to 100.1% by rounding, and only their ratios are used)."""
MISSPELLINGS_PATH = Path(__file__).with_name("misspellings_en.tsv")
TOP_WORDS = 5_000


def natural_probabilities(
    replace: float, insert: float, delete: float, transpose: float
) -> dict[str, float]:
    """The four kinds' probabilities under the human mix at the same total rate.

    Examples
    --------
    >>> natural_probabilities(0.2, 0.2, 0.2, 0.0)["delete"]
    0.2412
    """
    total = replace + insert + delete + transpose
    return {kind: round(total * share, 12) for kind, share in HUMAN_MIX.items()}


def position_class(op: Operation, word: str) -> str:
    """``first``, ``middle`` or ``last``: where in ``word`` the edit falls.

    A replacement or deletion at ``i``, a transposition of ``i, i + 1`` (by its later letter
    for ``last``) and an insertion at slot ``i`` (0 before the first letter, ``len(word)``
    after the last) are ``first`` at 0, ``last`` at the word's end, ``middle`` otherwise; a
    one-letter word's edit is ``first``.

    Examples
    --------
    >>> ops = [Operation("replace", 0, "c", "x", "xat", "qwerty"),
    ...        Operation("transpose", 1, "at", "ta", "cta", "adjacent"),
    ...        Operation("insert", 3, None, "s", "cats", "qwerty")]
    >>> [position_class(op, "cat") for op in ops]
    ['first', 'last', 'last']
    """
    i, n = op.position, len(word)
    if i == 0:
        return "first"
    end = {"transpose": i + 1, "insert": i - 1}.get(op.op, i)
    return "last" if end >= n - 1 else "middle"


def profiled(choices: Sequence[tuple[Operation, int]], word: str) -> list[tuple[Operation, int]]:
    """``choices`` reweighted so that the classes of :func:`position_class` present share the
    draw as :data:`POSITION_PROFILE` says, each choice keeping its share of its class.

    Integer weights (the draw is ``r % total``): a choice of class c weighs ``w * P_c * prod of
    the other present classes' totals``, so class c's share is ``P_c / sum of present P``.

    Examples
    --------
    >>> ops = [Operation("delete", i, "abc"[i], None, "abc"[:i] + "abc"[i + 1:], "keyboard")
    ...        for i in range(3)]
    >>> weights = [w for _, w in profiled([(ops[0], 1), (ops[1], 6), (ops[2], 6)], "abc")]
    >>> weights, [round(w / sum(weights), 4) for w in weights]
    ([3492, 24192, 8352], [0.0969, 0.6713, 0.2318])
    """
    totals: dict[str, int] = {}
    classes = []
    for op, w in choices:
        c = position_class(op, word)
        classes.append(c)
        totals[c] = totals.get(c, 0) + w
    out = []
    for (op, w), c in zip(choices, classes, strict=True):
        scale = POSITION_PROFILE[c]
        for other, total in totals.items():
            if other != c:
                scale *= total
        out.append((op, w * scale))
    return out


def edit_kind(correct: str, typo: str) -> tuple[str, int] | None:
    """``(kind, position)`` when ``typo`` is one character edit of ``correct``, else None.

    Examples
    --------
    >>> edit_kind("the", "teh"), edit_kind("and", "adn"), edit_kind("which", "wich")
    (('transpose', 1), ('transpose', 1), ('delete', 1))
    """
    lc, lt = len(correct), len(typo)
    if lt == lc - 1:
        for i in range(lc):
            if correct[:i] + correct[i + 1 :] == typo:
                return "delete", i
    elif lt == lc + 1:
        for i in range(lt):
            if typo[:i] + typo[i + 1 :] == correct:
                return "insert", i
    elif lt == lc:
        diff = [i for i in range(lc) if correct[i] != typo[i]]
        if len(diff) == 1:
            return "replace", diff[0]
        if (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and correct[diff[0]] == typo[diff[1]]
            and correct[diff[1]] == typo[diff[0]]
        ):
            return "transpose", diff[0]
    return None


@functools.cache
def misspellings() -> dict[tuple[str, str], tuple[str, ...]]:
    """``(correct word, kind) -> misspellings`` from the shipped excerpt."""
    out: dict[tuple[str, str], list[str]] = {}
    for line in MISSPELLINGS_PATH.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        correct, typo, kind = line.split("\t")
        out.setdefault((correct, kind), []).append(typo)
    return {k: tuple(v) for k, v in out.items()}


def _in_case_of(word: str, typo: str) -> str:
    if len(word) > 1 and word.isupper():
        return typo.upper()
    if word[:1].isupper():
        return typo[:1].upper() + typo[1:]
    return typo


def dictionary_typo(word: str, kind: str, r: int) -> Operation | None:
    """A real misspelling of ``word`` of the given kind (chosen by ``r``), or None.

    Examples
    --------
    >>> misspellings()[("the", "transpose")]
    ('hte', 'teh')
    >>> dictionary_typo("The", "transpose", 1).perturbed
    'Teh'
    """
    if not (word.isascii() and word.isalpha()):
        return None
    found = misspellings().get((word.lower(), kind))
    if not found:
        return None
    typo = _in_case_of(word, found[r % len(found)])
    _, i = edit_kind(word.lower(), typo.lower())  # type: ignore[misc]
    if kind == "replace":
        return Operation(kind, i, word[i], typo[i], typo, "dictionary")
    if kind == "insert":
        return Operation(kind, i, None, typo[i], typo, "dictionary")
    if kind == "delete":
        return Operation(kind, i, word[i], None, typo, "dictionary")
    return Operation(kind, i, word[i : i + 2], typo[i : i + 2], typo, "dictionary")


def build(dictionary_txt: str, top: int = TOP_WORDS) -> list[tuple[str, str, str]]:
    """``[(correct, misspelling, kind), ...]`` from a codespell ``dictionary.txt``."""
    import wordfreq

    frequent = set(wordfreq.top_n_list("en", top))
    rows = []
    for line in Path(dictionary_txt).read_text(encoding="utf-8").splitlines():
        if "->" not in line:
            continue
        typo, fixes = line.split("->", 1)
        corrections = [f.strip() for f in fixes.split(",") if f.strip()]
        if len(corrections) != 1:
            continue
        correct = corrections[0]
        if not (correct.isascii() and correct.isalpha() and correct.islower()):
            continue
        if not (typo.isascii() and typo.isalpha()) or correct not in frequent:
            continue
        kind = edit_kind(correct, typo.lower())
        if kind is not None:
            rows.append((correct, typo.lower(), kind[0]))
    return sorted(set(rows))


def main() -> None:
    """``python -m evalpipe.perturb.natural DICTIONARY_TXT > misspellings_en.tsv``"""
    from importlib.metadata import version

    rows = build(sys.argv[1])
    sys.stdout.write(
        "# correct<TAB>misspelling<TAB>kind: excerpt of codespell 2.4.3 dictionary.txt "
        f"(CC BY-SA 3.0, see misspellings_en.LICENSE): one-correction entries whose correction "
        f"is among wordfreq {version('wordfreq')}'s top {TOP_WORDS} English words and whose "
        "misspelling is one character edit (python -m evalpipe.perturb.natural DICTIONARY_TXT)\n"
    )
    for row in rows:
        sys.stdout.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()
