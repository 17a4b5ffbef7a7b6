"""Word lists: scores, ranks, filtering, ties, Japanese lemma/pos, the wordfreq default, bad input."""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
import yaml

from evalpipe.errors import InputError
from evalpipe.words import (
    WORD_COLUMNS,
    build_word_list,
    rank_words,
    read_bccwj,
    read_subtlex,
    word_list,
)


def write_subtlex(path, rows, header=("Word", "FREQcount", "CDcount", "SUBTLWF")):
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "subtlex"
    if header is not None:
        sheet.append(list(header))
    for row in rows:
        sheet.append(list(row))
    book.save(path)
    return path


BCCWJ_HEADER = "rank\tlForm\tlemma\tpos\tsubLemma\twType\tfrequency\tpmw\n"


def write_bccwj(path, rows, header=BCCWJ_HEADER):
    path.write_text(header + "".join("\t".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def subtlex(tmp_path):
    raw = tmp_path / "english"
    raw.mkdir()
    write_subtlex(
        raw / "SUBTLEX-US.xlsx",
        [
            ("the", 1501908, 8388, 29449.18),
            ("you", 2134713, 8381, 41857.12),
            ("a", 1041179, 8382, 20415.27),  # one character: dropped by min_length=2
            ("Zebra", 10, 5, 0.2),
            ("once", 1, 1, 0.0),  # ln(1) = 0
        ],
    )
    return raw


def test_subtlex_score_is_product_of_log_counts(subtlex):
    words = word_list("english", "subtlex", raw_dir=subtlex, top_n=10)
    you = words.set_index("word").loc["you"]
    assert you["score"] == pytest.approx(math.log(2134713) * math.log(8381))
    assert you["freq_count"] == 2134713 and you["cd_count"] == 8381
    assert words["word"].tolist() == ["you", "the", "zebra", "once"]
    assert words["rank"].tolist() == [1, 2, 3, 4]
    assert list(words.columns) == WORD_COLUMNS
    assert words["lemma"].isna().all() and words["pos"].isna().all()
    assert set(words["source"]) == {"subtlex-us"}


def test_min_length_and_top_n_filter(subtlex):
    words = word_list("english", "subtlex", raw_dir=subtlex, top_n=2, min_length=4)
    assert words["word"].tolist() == ["zebra", "once"]


def test_zero_counts_score_zero_not_error(tmp_path):
    write_subtlex(tmp_path / "SUBTLEX-US.xlsx", [("rare", 0, 0, 0)])
    words = word_list("english", "subtlex", raw_dir=tmp_path, top_n=5)
    assert words["score"].tolist() == [0.0]


def test_ties_are_broken_by_word_regardless_of_input_order():
    rows = {
        "word": ["beta", "alpha", "gamma"],
        "lemma": None,
        "pos": None,
        "score": [1.0, 1.0, 1.0],
        "freq_count": None,
        "cd_count": None,
        "source": "x",
    }
    a = rank_words(pd.DataFrame(rows), top_n=3, min_length=2)
    b = rank_words(pd.DataFrame(rows).iloc[::-1], top_n=3, min_length=2)
    assert a["word"].tolist() == ["alpha", "beta", "gamma"]
    pd.testing.assert_frame_equal(a, b)


def test_bccwj_keeps_lemma_and_pos_and_scores_by_pmw(tmp_path):
    write_bccwj(
        tmp_path / "BCCWJ_frequencylist_suw_ver1_0.tsv",
        [
            (1, "ノ", "の", "助詞-格助詞", "", "和", 5061558, 48383.9),
            (2, "ニ", "に", "助詞-格助詞", "", "和", 3576558, 34188.7),
            (3, "マス", "ます", "助動詞", "", "和", 1113054, 10639.09),
            (4, "スル", "為る", "動詞-非自立可能", "", "和", 3000000, 28675.3),
            (5, "コト", "事", "名詞-普通名詞-一般", "", "和", 1000000, 9558.4),
        ],
    )
    words = word_list("japanese", "bccwj", raw_dir=tmp_path, top_n=10, min_length=2)
    # single-character lemmas (の, に, 事) are below min_length=2
    assert words["word"].tolist() == ["為る", "ます"]
    assert words["lemma"].tolist() == ["為る", "ます"]
    assert words["pos"].tolist() == ["動詞-非自立可能", "助動詞"]
    assert words["score"].tolist() == [28675.3, 10639.09]
    assert words["freq_count"].tolist() == [3000000, 1113054]


def test_same_lemma_with_two_parts_of_speech_stays_two_entries(tmp_path):
    write_bccwj(
        tmp_path / "BCCWJ_frequencylist_suw_ver1_0.tsv",
        [
            (1, "ナイ", "ない", "助動詞", "", "和", 10, 100.0),
            (2, "ナイ", "ない", "形容詞-非自立可能", "", "和", 5, 50.0),
        ],
    )
    words = word_list("japanese", "bccwj", raw_dir=tmp_path, top_n=10)
    assert words[["word", "pos"]].values.tolist() == [
        ["ない", "助動詞"],
        ["ない", "形容詞-非自立可能"],
    ]


def test_wordfreq_default_english_is_alphabetic_and_ranked():
    words = word_list("english", "wordfreq", raw_dir="unused", top_n=20)
    assert len(words) == 20
    assert words["word"].str.fullmatch(r"[a-z]+(?:'[a-z]+)?").all()
    assert (words["word"].str.len() >= 2).all()
    assert words["score"].is_monotonic_decreasing
    assert "the" in words["word"].tolist()[:3]
    assert words["source"].iloc[0].startswith("wordfreq-")


def test_wordfreq_default_japanese_is_japanese_script():
    words = word_list("japanese", "wordfreq", raw_dir="unused", top_n=20, min_length=2)
    assert len(words) == 20
    assert words["word"].str.fullmatch(r"[\u3041-\u309f\u30a0-\u30ff\u4e00-\u9fff々]+").all()
    assert "ます" in words["word"].tolist()


def test_missing_licensed_file_names_path_and_alternative(tmp_path):
    with pytest.raises(InputError, match=r"SUBTLEX-US\.xlsx.*not found.*wordfreq"):
        word_list("english", "subtlex", raw_dir=tmp_path, top_n=5)
    with pytest.raises(InputError, match=r"BCCWJ_frequencylist_suw_ver1_0\.tsv.*not found"):
        word_list("japanese", "bccwj", raw_dir=tmp_path, top_n=5)


def test_renamed_subtlex_column_is_named(tmp_path):
    path = write_subtlex(tmp_path / "s.xlsx", [("the", 1, 1)], header=("Word", "FREQ", "CDcount"))
    with pytest.raises(InputError, match=r"s\.xlsx.*row 1.*missing column.*FREQcount"):
        read_subtlex(path)


def test_non_numeric_count_names_row_and_column(tmp_path):
    path = write_subtlex(tmp_path / "s.xlsx", [("the", 5, 3), ("you", "many", 3)])
    with pytest.raises(InputError, match=r"row 3, column 'FREQcount'.*'many'"):
        read_subtlex(path)


def test_empty_sheet_is_reported(tmp_path):
    path = write_subtlex(tmp_path / "s.xlsx", [], header=None)
    with pytest.raises(InputError, match="empty"):
        read_subtlex(path)
    path = write_subtlex(tmp_path / "h.xlsx", [])
    with pytest.raises(InputError, match="no data rows"):
        read_subtlex(path)


def test_not_an_xlsx_is_reported(tmp_path):
    path = tmp_path / "SUBTLEX-US.xlsx"
    path.write_text("Word,FREQcount\n")
    with pytest.raises(InputError, match=r"not a readable \.xlsx"):
        read_subtlex(path)


def test_comma_separated_bccwj_is_reported(tmp_path):
    path = tmp_path / "b.tsv"
    path.write_text("lForm,lemma,pos,pmw\nマス,ます,助動詞,1.0\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.tsv, row 1.*tab-separated.*comma-separated"):
        read_bccwj(path)


def test_bccwj_missing_column_and_bad_pmw(tmp_path):
    path = write_bccwj(
        tmp_path / "b.tsv", [(1, "マス", "ます", "1.0")], header="rank\tlForm\tlemma\tpmw\n"
    )
    with pytest.raises(InputError, match=r"missing column.*'pos'"):
        read_bccwj(path)
    path = write_bccwj(tmp_path / "c.tsv", [(1, "マス", "ます", "助動詞", "", "和", 3, "n/a")])
    with pytest.raises(InputError, match=r"c\.tsv, row 2, column 'pmw'.*'n/a'"):
        read_bccwj(path)


def test_unknown_source_is_reported():
    with pytest.raises(InputError, match=r"words\.english\.source.*'bccwj'"):
        word_list("english", "bccwj", raw_dir=".", top_n=5)


def test_bad_top_n_is_reported(subtlex):
    with pytest.raises(InputError, match="top_n"):
        word_list("english", "subtlex", raw_dir=subtlex, top_n=0)


# --- SUBTLEX-US as published, junk rows, contraction fragments, BCCWJ placeholders ---

SUBTLEX_US_HEADER = (
    "Word", "FREQcount", "CDcount", "FREQlow", "Cdlow", "SUBTLWF", "Lg10WF", "SUBTLCD", "Lg10CD",
)  # fmt: skip


def write_real_layout_subtlex(path, rows, trailer):
    """SUBTLEX-US's nine columns, a one-cell junk row at the end, and no <dimension> element in
    the sheet (as in files not written by Excel): openpyxl's read-only rows then come back as
    short as the row itself."""
    import re
    import zipfile

    tmp = path.with_suffix(".tmp.xlsx")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(list(SUBTLEX_US_HEADER))
    for word, freq, cd in rows:
        sheet.append([word, freq, cd, freq, cd, freq / 51.0, math.log10(freq + 1), cd / 84.0,
                      math.log10(cd + 1)])  # fmt: skip
    sheet.append([trailer])
    book.save(tmp)
    with zipfile.ZipFile(tmp) as zin, zipfile.ZipFile(path, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.startswith("xl/worksheets/"):
                data = re.sub(rb"<dimension ref=\"[^\"]*\" ?/>", b"", data)
            zout.writestr(item, data)
    tmp.unlink()
    return path


REAL_ROWS = [
    ("you", 2134713, 8381),
    ("I", 2038529, 8381),
    ("the", 1501908, 8388),
    ("to", 1156570, 8383),
    ("a", 1041179, 8382),
    ("s", 940000, 8300),
    ("t", 700000, 8200),
    ("don", 264032, 8000),
    ("re", 177934, 7900),
    ("ll", 123000, 7800),
    ("can", 300000, 8100),
    ("won", 9000, 2000),
    ("didn", 60000, 6000),
]


def test_real_layout_subtlex_with_a_junk_trailing_row_does_not_crash(tmp_path):
    # before: IndexError (tuple index out of range) on the one-cell trailing row
    write_real_layout_subtlex(
        tmp_path / "SUBTLEX-US.xlsx", REAL_ROWS, "Source: Brysbaert & New (2009)"
    )
    built = build_word_list("english", "subtlex", raw_dir=tmp_path, top_n=7, min_length=2)
    assert built.words["word"].tolist() == ["you", "the", "to", "can", "won"]
    assert built.skipped == {"contraction_fragment": 6, "not_a_word": 1}
    # those that would have ranked in the top 7 (min_length 2: s and t are too short anyway)
    assert built.skipped_in_top["contraction_fragment"] == ["don", "re", "ll"]
    assert "row 15" in built.skipped_in_top["not_a_word"][0]
    line = built.summary()
    assert "6 contraction fragments (3 in the top: don, re, ll)" in line
    assert "1 not a word" in line


def test_contraction_fragments_never_become_targets_whatever_top_n(tmp_path):
    write_real_layout_subtlex(tmp_path / "SUBTLEX-US.xlsx", REAL_ROWS, "junk")
    words = word_list("english", "subtlex", raw_dir=tmp_path, top_n=100, min_length=1)
    assert not set(words["word"]) & {"don", "re", "ll", "didn", "s", "t"}
    assert {"a", "i", "can", "won"} <= set(words["word"])  # real words, however short


def test_bccwj_placeholder_and_punctuation_lemmas_are_not_targets(tmp_path):
    write_bccwj(
        tmp_path / "BCCWJ_frequencylist_suw_ver1_0.tsv",
        [
            (1, "ノ", "の", "助詞-格助詞", "", "和", 5061558, 48383.9),
            (2, "", "、", "補助記号-読点", "", "記号", 4000000, 40000.0),
            (3, "", "■", "記号-一般", "", "記号", 3800000, 36000.0),
            (4, "ニ", "に", "助詞-格助詞", "", "和", 3576558, 34188.7),
            (5, "マス", "ます", "助動詞", "", "和", 1113054, 10639.09),
        ],
    )
    built = build_word_list("japanese", "bccwj", raw_dir=tmp_path, top_n=10, min_length=1)
    assert built.words["word"].tolist() == ["の", "に", "ます"]
    assert built.skipped == {"not_a_word": 2}


def test_default_min_length_keeps_japanese_particles_and_drops_english_letters():
    params = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))
    assert params["words"]["english"]["min_length"] == 2
    assert params["words"]["japanese"]["min_length"] == 1
    ja = word_list("japanese", "wordfreq", raw_dir=".", top_n=10, min_length=1)
    assert {"の", "に", "は"} <= set(ja["word"])


def test_a_word_list_without_min_length_takes_its_languages_schema_default():
    ja = word_list("japanese", "wordfreq", raw_dir=".", top_n=10)
    en = word_list("english", "wordfreq", raw_dir=".", top_n=10)
    assert (ja["word"].str.len() == 1).any()  # words.japanese.min_length: 1 keeps の, に, は
    assert (en["word"].str.len() >= 2).all()  # words.english.min_length: 2 drops a, I
