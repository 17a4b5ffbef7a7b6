"""Frequency sources. Each reader returns candidate rows (unranked) with the word-list columns.

- SUBTLEX-US (xlsx): score = ln(max(FREQcount, 1)) * ln(max(CDcount, 1)).
- BCCWJ short-unit-word list (tsv): score = pmw; the lemma is what is matched in text (lForm is
  only the katakana reading), and the part of speech is kept so a match can require it.
- wordfreq: the built-in default, offline; score = frequency per million words.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from evalpipe.errors import InputError
from evalpipe.params_schema import default_of
from evalpipe.words.rank import rank_words

SOURCES = {"english": ("wordfreq", "subtlex"), "japanese": ("wordfreq", "bccwj")}

SUBTLEX_COLUMNS = ("Word", "FREQcount", "CDcount")
BCCWJ_COLUMNS = ("lForm", "lemma", "pos", "pmw", "frequency")

# Words worth perturbing: letters (an inner apostrophe as in "don't"), or Japanese script.
_ENGLISH_WORD = re.compile(r"^[a-z]+(?:'[a-z]+)?$")
_JAPANESE_WORD = re.compile(r"^[\u3041-\u309f\u30a0-\u30ff\u4e00-\u9fff\u3400-\u4dbf々〆ヶ]+$")


# Why a source row is not a target word (the ``skip`` column of candidates; None = a target).
NOT_A_WORD = "not_a_word"  # a note, a number, punctuation, a BCCWJ placeholder (■)
CONTRACTION_FRAGMENT = "contraction_fragment"  # SUBTLEX-US split "don't" into "don" and "t"

# The halves of English contractions that SUBTLEX-US lists as words. The English finder keeps
# "don't" whole, so these can never match a token: they are skipped and counted, never targets.
# Fragments that are also words on their own (can, won, i, we) stay targets.
CONTRACTION_FRAGMENTS = frozenset(
    [
        "don",
        "didn",
        "doesn",
        "isn",
        "wasn",
        "weren",
        "aren",
        "couldn",
        "wouldn",
        "shouldn",
        "hasn",
        "haven",
        "hadn",
        "ain",
        "mustn",
        "needn",
        "mightn",
        "shan",
        "re",
        "ll",
        "ve",
        "s",
        "t",
        "m",
        "d",
    ]
)


def skip_reason_english(word: str) -> str | None:
    """Why an English source word (lower case) is not a target, or None when it is one."""
    if not _ENGLISH_WORD.match(word):
        return NOT_A_WORD
    if word in CONTRACTION_FRAGMENTS:
        return CONTRACTION_FRAGMENT
    return None


def skip_reason_japanese(word: str) -> str | None:
    """Why a Japanese source lemma is not a target (placeholder ■, punctuation, Latin, digits)."""
    return None if _JAPANESE_WORD.match(word) else NOT_A_WORD


def _candidates(rows: dict[str, list]) -> pd.DataFrame:
    return pd.DataFrame(
        rows,
        columns=["word", "lemma", "pos", "score", "freq_count", "cd_count", "source", "skip"],
    )


def _count(value: object, path: Path, row: int, column: str) -> int:
    if isinstance(value, bool) or value is None or value == "":
        raise InputError(f"{path}, row {row}, column {column!r}: expected a count, found {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(
            f"{path}, row {row}, column {column!r}: expected a non-negative number, found {value!r}"
        ) from None
    if math.isnan(number) or number < 0:
        raise InputError(
            f"{path}, row {row}, column {column!r}: expected a non-negative number, found {value!r}"
        )
    return int(number)


def read_subtlex(path: str | Path) -> pd.DataFrame:
    """Read SUBTLEX-US (``Word``, ``FREQcount``, ``CDcount``) from its xlsx release."""
    import openpyxl

    path = Path(path)
    if not path.exists():
        raise InputError(
            f"{path}: SUBTLEX-US file not found (words.english.source is 'subtlex'); place "
            "SUBTLEX-US.xlsx there or set words.english.source: wordfreq"
        )
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several unrelated types for a bad file
        raise InputError(f"{path}: not a readable .xlsx workbook ({exc})") from exc
    try:
        sheet = book.worksheets[0]
        rows = sheet.iter_rows(values_only=True)
        header = next(rows, None)
        if header is None:
            raise InputError(f"{path}, sheet {sheet.title!r}: the sheet is empty")
        names = [str(h).strip() if h is not None else "" for h in header]
        missing = [c for c in SUBTLEX_COLUMNS if c not in names]
        if missing:
            raise InputError(
                f"{path}, sheet {sheet.title!r}, row 1: missing column(s) {missing}; expected "
                f"{list(SUBTLEX_COLUMNS)}, found {names}"
            )
        iw, ifreq, icd = (names.index(c) for c in SUBTLEX_COLUMNS)
        width = max(iw, ifreq, icd) + 1
        words: list[str] = []
        scores: list[float] = []
        freqs: list[int | None] = []
        cds: list[int | None] = []
        skips: list[str | None] = []
        for excel_row, values in enumerate(rows, start=2):
            if values is None or all(v is None for v in values):
                continue
            # a sheet without a <dimension> element yields short tuples for short rows
            values = tuple(values) + (None,) * (width - len(values))
            raw = values[iw]
            word = "" if raw is None else str(raw).strip().lower()
            reason = skip_reason_english(word)
            if values[ifreq] is None and values[icd] is None:
                reason = NOT_A_WORD  # a row without counts is a note, not a data row
            if reason == NOT_A_WORD:  # e.g. a trailing note: no counts to check
                words.append(f"row {excel_row}: {str(raw)[:40]!r}")
                freqs.append(None)
                cds.append(None)
                scores.append(0.0)
                skips.append(reason)
                continue
            freq = _count(values[ifreq], path, excel_row, "FREQcount")
            cd = _count(values[icd], path, excel_row, "CDcount")
            words.append(word)
            freqs.append(freq)
            cds.append(cd)
            scores.append(math.log(max(freq, 1)) * math.log(max(cd, 1)))
            skips.append(reason)
    finally:
        book.close()
    if not any(reason is None for reason in skips):
        raise InputError(f"{path}: the sheet has a header but no data rows holding a word")
    n = len(words)
    return _candidates(
        {
            "word": words,
            "lemma": [None] * n,
            "pos": [None] * n,
            "score": scores,
            "freq_count": freqs,
            "cd_count": cds,
            "source": ["subtlex-us"] * n,
            "skip": skips,
        }
    )


def read_bccwj(path: str | Path) -> pd.DataFrame:
    """Read the BCCWJ short-unit-word frequency list (tab-separated, ``lemma``, ``pos``, ``pmw``)."""
    path = Path(path)
    if not path.exists():
        raise InputError(
            f"{path}: BCCWJ short-unit-word list not found (words.japanese.source is 'bccwj'); "
            "place BCCWJ_frequencylist_suw_ver1_0.tsv there or set words.japanese.source: wordfreq"
        )
    try:
        table = pd.read_csv(
            path, sep="\t", dtype=str, keep_default_na=False, quoting=3, encoding="utf-8"
        )
    except pd.errors.EmptyDataError:
        raise InputError(
            f"{path}: the file is empty; expected a tab-separated header with {list(BCCWJ_COLUMNS)}"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc})") from exc
    if len(table.columns) == 1:
        only = table.columns[0]
        hint = " (the file looks comma-separated)" if "," in only else ""
        raise InputError(
            f"{path}, row 1: expected tab-separated columns {list(BCCWJ_COLUMNS)}, found a single "
            f"column {only!r}{hint}"
        )
    missing = [c for c in ("lemma", "pos", "pmw") if c not in table.columns]
    if missing:
        raise InputError(
            f"{path}, row 1: missing column(s) {missing}; expected "
            f"{list(BCCWJ_COLUMNS)}, found {list(table.columns)}"
        )
    if table.empty:
        raise InputError(f"{path}: the file has a header but no data rows")
    pmw = pd.to_numeric(table["pmw"], errors="coerce")
    bad = pmw.isna() | (pmw < 0)
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(
            f"{path}, row {i + 2}, column 'pmw': expected a non-negative number, "
            f"found {table['pmw'].iloc[i]!r}"
        )
    if "frequency" in table.columns:
        freq = pd.to_numeric(table["frequency"], errors="coerce")
        badf = freq.isna() | (freq < 0)
        if badf.any():
            i = int(badf.to_numpy().nonzero()[0][0])
            raise InputError(
                f"{path}, row {i + 2}, column 'frequency': expected a non-negative "
                f"count, found {table['frequency'].iloc[i]!r}"
            )
        freq_count = freq.astype("int64").tolist()
    else:
        freq_count = [None] * len(table)
    empty = table["lemma"].str.strip() == ""
    if empty.any():
        i = int(empty.to_numpy().nonzero()[0][0])
        raise InputError(
            f"{path}, row {i + 2}, column 'lemma': expected a lemma, found an empty cell"
        )
    n = len(table)
    lemma = table["lemma"].str.strip().tolist()
    return _candidates(
        {
            "word": lemma,
            "lemma": lemma,
            "pos": table["pos"].str.strip().tolist(),
            "score": pmw.astype("float64").tolist(),
            "freq_count": freq_count,
            "cd_count": [None] * n,
            "source": ["bccwj-suw"] * n,
            "skip": [skip_reason_japanese(w) for w in lemma],
        }
    )


def read_wordfreq(language: str) -> pd.DataFrame:
    """wordfreq's list for ``language``, keeping only words of that language's script."""
    import wordfreq

    code, pattern = {"english": ("en", _ENGLISH_WORD), "japanese": ("ja", _JAPANESE_WORD)}[language]
    freqs = wordfreq.get_frequency_dict(code, wordlist="best")
    words = [w for w in freqs if pattern.match(w)]  # wordfreq keeps "don't" whole: no fragments
    n = len(words)
    version = getattr(wordfreq, "__version__", None) or _wordfreq_version()
    return _candidates(
        {
            "word": words,
            "lemma": [None] * n,
            "pos": [None] * n,
            "score": [freqs[w] * 1e6 for w in words],
            "freq_count": [None] * n,
            "cd_count": [None] * n,
            "source": [f"wordfreq-{version}"] * n,
            "skip": [None] * n,
        }
    )


def _wordfreq_version() -> str:
    from importlib.metadata import version

    return version("wordfreq")


@dataclass(frozen=True)
class WordList:
    """A ranked word list and the source rows that were not allowed to become targets.

    ``skipped`` counts skipped rows by reason over the whole source; ``skipped_in_top`` lists,
    by reason, the entries that would have ranked within ``top_n`` had they not been skipped
    (for SUBTLEX-US: don, re, ll, ...), which is what changes the study's list.
    """

    words: pd.DataFrame
    skipped: dict[str, int]
    skipped_in_top: dict[str, list[str]]

    def summary(self) -> str:
        """One phrase for the stage line, e.g. ``skipped 2 rows: ...``; empty when none."""
        if not self.skipped:
            return ""
        parts = []
        for reason, n in sorted(self.skipped.items()):
            top = self.skipped_in_top.get(reason, [])
            shown = (
                f" ({len(top)} in the top: {', '.join(top[:8])}{', ...' if len(top) > 8 else ''})"
            )
            parts.append(
                f"{n} {reason.replace('_', ' ')}{'s' if n != 1 else ''}{shown if top else ''}"
            )
        return "skipped " + "; ".join(parts)


def build_word_list(
    language: str, source: str, *, raw_dir: str | Path, top_n: int, min_length: int
) -> WordList:
    """The ranked word list for ``language`` from ``source``, with what was skipped and why.

    Parameters
    ----------
    language : english | japanese.
    source : a source of that language (``SOURCES``).
    raw_dir : where the source file is looked up (``SUBTLEX-US.xlsx``,
        ``BCCWJ_frequencylist_suw_ver1_0.tsv``).
    top_n : how many words to keep.
    min_length : the shortest target, in characters (params ``words.{language}.min_length``).

    Returns
    -------
    WordList: the ranked words (``WORD_COLUMNS``) and the skipped rows by reason.
    """
    if language not in SOURCES:
        raise InputError(f"unknown language {language!r}; expected one of {list(SOURCES)}")
    if source not in SOURCES[language]:
        raise InputError(
            f"params.yaml: words.{language}.source is {source!r}; expected one of "
            f"{list(SOURCES[language])}"
        )
    raw_dir = Path(raw_dir)
    if source == "subtlex":
        candidates = read_subtlex(raw_dir / "SUBTLEX-US.xlsx")
    elif source == "bccwj":
        candidates = read_bccwj(raw_dir / "BCCWJ_frequencylist_suw_ver1_0.tsv")
    else:
        candidates = read_wordfreq(language)
    skip = candidates["skip"]
    kept = candidates[skip.isna()]
    words = rank_words(kept, top_n=top_n, min_length=min_length)
    skipped_rows = candidates[skip.notna()]
    counts = {str(k): int(v) for k, v in skipped_rows["skip"].value_counts().items()}
    in_top: dict[str, list[str]] = {}
    if counts:
        # rank everything that is long enough, then see which skipped rows land in the top
        words_only = skipped_rows["skip"] != NOT_A_WORD
        contenders = pd.concat([kept, skipped_rows[words_only]])
        would_be = rank_words(contenders, top_n=top_n, min_length=min_length)
        reasons = dict(zip(skipped_rows["word"], skipped_rows["skip"], strict=True))
        for word in would_be["word"]:
            if word in reasons:
                in_top.setdefault(reasons[word], []).append(str(word))
        bad_rows = skipped_rows.loc[~words_only, "word"].head(3).tolist()
        if bad_rows:  # row labels of non-word rows, for the summary
            in_top[NOT_A_WORD] = [str(w) for w in bad_rows]
    return WordList(words, counts, in_top)


def word_list(
    language: str, source: str, *, raw_dir: str | Path, top_n: int, min_length: int | None = None
) -> pd.DataFrame:
    """The ranked word list for ``language`` from ``source`` (``build_word_list(...).words``);
    ``min_length`` defaults to the language's ``words.<language>.min_length`` default."""
    if min_length is None:
        # an unknown language has no default: build_word_list names the problem
        min_length = default_of(f"words.{language}.min_length") if language in SOURCES else 0
    return build_word_list(
        language, source, raw_dir=raw_dir, top_n=top_n, min_length=min_length
    ).words
