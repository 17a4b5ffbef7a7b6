"""Ranked lists of a language's most frequent words, from SUBTLEX-US, BCCWJ or wordfreq."""

from evalpipe.languages import LANGUAGES
from evalpipe.words.rank import WORD_COLUMNS, rank_words
from evalpipe.words.sources import (
    SOURCES,
    WordList,
    build_word_list,
    read_bccwj,
    read_subtlex,
    read_wordfreq,
    word_list,
)

__all__ = [
    "LANGUAGES",
    "SOURCES",
    "WORD_COLUMNS",
    "WordList",
    "build_word_list",
    "rank_words",
    "read_bccwj",
    "read_subtlex",
    "read_wordfreq",
    "word_list",
]
