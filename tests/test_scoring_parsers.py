"""Answer parsers: the golden cases (explicit answer forms, digits never scanned before letters),
per-parser behaviour, property tests."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalpipe.answers.parsers import (
    PARSERS,
    bbh,
    extractive,
    first_json_object,
    json_label,
    mc_index,
    mc_letter,
    nli,
    normalise_gold,
    numeric,
    parse_answer,
)
from evalpipe.benchmarks import get_spec
from evalpipe.errors import InputError
from evalpipe.scoring.scorer import score_frame

ABCD_LOWER = {"labels": ["a", "b", "c", "d"], "digit_map": {"1": "a", "2": "b", "3": "c", "4": "d"}}
MMLU = {"labels": ["A", "B", "C", "D"], "digit_map": None}
JCQA = {"labels": ["0", "1", "2", "3", "4"]}


def _bbh_options(subtask: str) -> dict:
    """A BBH subtask's parser options, as its spec (bbh.yaml) declares them."""
    return get_spec("bbh").parser_options(subtask)


# ----------------------------------------------------------------------------- golden cases


@pytest.mark.parametrize("options", [ABCD_LOWER, {"labels": ["a", "b", "c", "d"]}])
@pytest.mark.parametrize(
    ("raw", "expected"),
    [("回答（1文字のみ）: b", "b"), ("Answer: b, 第4条", "b"), ("Ｂ", "b")],
)
def test_four_choice_golden_cases_ignore_label_digits(raw, expected, options):
    assert parse_answer("mc_letter", raw, **options).prediction == expected


@pytest.mark.parametrize("raw", ["ANSWER: B", "B. 4", "The answer is (B)."])
def test_mmlu_answer_forms_all_parse_to_b(raw):
    result = parse_answer("mc_letter", raw, **MMLU)
    assert (result.prediction, result.status) == ("B", "strict")


@pytest.mark.parametrize(
    ("raw", "expected"), [("**Answer: $18 per day.**", "18"), ("1,234.", "1234")]
)
def test_gsm8k_golden_numbers(raw, expected):
    assert parse_answer("numeric", raw).prediction == expected


def test_jcommonsenseqa_twelve_is_wrong_when_gold_is_two():
    frame = _frame("jcommonsenseqa", ["12"], ["2"])
    scored = score_frame(frame, parser="mc_index", metric="exact_match", parser_options=JCQA)
    assert scored["correct"].tolist() == [False]


@pytest.mark.parametrize(
    ("parser", "options", "gold", "metric"),
    [
        ("mc_letter", MMLU, "A", "exact_match"),
        ("mc_index", JCQA, "0", "exact_match"),
        ("numeric", {}, "0", "exact_match"),
        ("bbh", {"format": "binary", "words": ["Yes", "No"]}, "No", "exact_match"),
        ("nli", {"labels": ["entailment", "contradiction", "neutral"]}, "neutral", "exact_match"),
        ("extractive", {}, "", "char_f1"),
        (
            "json_label",
            {"labels": ["positive", "negative"], "strict": False},
            "positive",
            "accuracy",
        ),
    ],
)
def test_empty_output_is_unparsed_and_wrong_for_every_parser(parser, options, gold, metric):
    assert parse_answer(parser, "", **options).status == "unparsed"
    assert parse_answer(parser, None, **options).prediction is None
    scored = score_frame(
        _frame("x", [""], [gold]), parser=parser, metric=metric, parser_options=options
    )
    assert scored.loc[0, "parse_status"] == "unparsed"
    assert not scored.loc[0, "correct"]
    assert scored.loc[0, "score"] == 0.0


def test_json_label_in_prose_aliases_and_clips_confidence():
    raw = 'Sure, here it is: {"label": "pos", "confidence": 1.7, "reason": "great"} Thanks!'
    result = parse_answer("json_label", raw, labels=["positive", "negative"])
    assert result.prediction == "positive"
    assert result.status == "strict"
    assert result.extra["confidence"] == 1.0
    assert result.extra["reason"] == "great"


# ----------------------------------------------------------------------------- multiple choice


def test_upstream_digit_first_bug_is_not_repeated():
    # Upstream scanned digits before letters: these came out as a and d.
    assert mc_letter("回答（1文字のみ）: b", **ABCD_LOWER).prediction == "b"
    assert mc_letter("Answer: b, 第4条", **ABCD_LOWER).prediction == "b"


def test_digits_map_to_letters_only_with_a_digit_map():
    assert mc_letter("4", **ABCD_LOWER).prediction == "d"
    assert mc_letter("4", labels=["a", "b", "c", "d"]).status == "unparsed"


def test_letter_case_follows_the_label_space():
    assert mc_letter("answer: c", **MMLU).prediction == "C"
    assert mc_letter("ANSWER: C", labels=["a", "b", "c", "d"]).prediction == "c"


def test_english_article_is_not_read_as_choice_a():
    result = mc_letter("A cat would choose (C) here", **MMLU)
    assert (result.prediction, result.status) == ("C", "fallback")


def test_letters_inside_words_are_not_choices():
    assert mc_letter("Because decades of data", **MMLU).status == "unparsed"
    assert mc_letter("I'd go with B", **MMLU).prediction == "B"


def test_markdown_answer_line_is_strict():
    assert mc_letter("**Answer:** D", **MMLU) == mc_letter("D", **MMLU)
    assert mc_letter("**Answer:** D", **MMLU).status == "strict"


def test_last_bracketed_choice_wins_in_fallback():
    assert mc_letter("Option (A) looks tempting but (C) is right", **MMLU).prediction == "C"


def test_mc_index_needs_a_standalone_digit():
    assert mc_index("回答：２", **JCQA).prediction == "2"
    assert mc_index("2. 椅子", **JCQA).prediction == "2"
    for raw in ["12", "2.5", "1,234", "選択肢は5つ"]:
        assert mc_index(raw, **JCQA).status == "unparsed", raw


def test_digit_map_must_point_at_labels():
    with pytest.raises(InputError, match="digit_map"):
        mc_letter("1", labels=["a", "b"], digit_map={"1": "z"})


# ----------------------------------------------------------------------------- numeric


def test_gsm8k_strict_hash_answer_beats_later_numbers():
    result = numeric("Work: 3 + 4 = 7\n#### 7\nNext question 99")
    assert (result.prediction, result.status) == ("7", "strict")


def test_gsm8k_flexible_takes_the_last_number():
    result = numeric("She pays 5 dollars, then 12 more, so 17.")
    assert (result.prediction, result.status) == ("17", "fallback")


def test_gsm8k_negative_and_decimal_numbers_are_canonical():
    assert numeric("The answer is -3.").prediction == "-3"
    assert numeric("It costs $18.00").prediction == "18"
    assert numeric("half: 0.50").prediction == "0.5"
    assert numeric("no numbers here").status == "unparsed"
    assert normalise_gold("numeric", "1,234") == "1234"


# ----------------------------------------------------------------------------- BBH


@pytest.mark.parametrize(
    ("subtask", "raw", "expected", "status"),
    [
        ("date_understanding", "So the answer is (C).", "(C)", "strict"),
        ("date_understanding", "(A)", "(A)", "strict"),
        ("snarks", "Option (A) is sarcastic... I pick (B)", "(B)", "fallback"),
        ("navigate", "No", "No", "strict"),
        ("navigate", "no, you do not return", "No", "fallback"),
        ("sports_understanding", "Yes.", "yes", "strict"),
        ("boolean_expressions", "the answer is true", "True", "strict"),
        ("formal_fallacies", "invalid", "invalid", "strict"),
        ("object_counting", "I count 3 + 2 = 5", "5", "fallback"),
        ("multistep_arithmetic_two", "The answer is -12.", "-12", "strict"),
        ("dyck_languages", ") ] }", ")]}", "fallback"),
        ("word_sorting", "apple  banana cherry\nmore", "apple banana cherry", "fallback"),
    ],
)
def test_bbh_parses_each_subtask_format(subtask, raw, expected, status):
    result = bbh(raw, **_bbh_options(subtask))
    assert (result.prediction, result.status) == (expected, status)


@pytest.mark.parametrize(
    ("subtask", "gold", "raw"),
    [
        ("snarks", "(A)", "the answer is (A)"),
        ("web_of_lies", "Yes", "yes"),
        ("dyck_languages", ") ] }", ")]}"),
        ("object_counting", "12", "twelve, i.e. 12"),
    ],
)
def test_bbh_prediction_matches_gold_in_canonical_form(subtask, gold, raw):
    assert bbh(raw, **_bbh_options(subtask)).prediction == normalise_gold(
        "bbh", gold, **_bbh_options(subtask)
    )


def test_bbh_format_comes_from_the_options_not_from_a_subtask_name():
    # the same output reads differently under each declared format
    raw = "So the answer is (B), 3 of them."
    assert bbh(raw, format="choice").prediction == "(B)"
    assert bbh(raw, format="integer").prediction == "3"
    assert (
        bbh("Right. So the answer is right.", format="binary", words=["Right", "Wrong"]).prediction
        == "Right"
    )
    assert normalise_gold("bbh", "wrong", format="binary", words=["Right", "Wrong"]) == "Wrong"


@pytest.mark.parametrize(
    "options",
    [
        {"format": "multiple_choice"},
        {"format": "binary"},
        {"format": "binary", "words": "Yes"},
        {"format": "binary", "words": ["Yes", "yes"]},
        {"format": "choice", "words": ["Yes", "No"]},
        {"subtask": "navigate"},
    ],
)
def test_bbh_bad_format_options_are_input_errors(options):
    with pytest.raises(InputError):
        parse_answer("bbh", "Yes", **options)


def test_bbh_valid_is_not_found_inside_invalid():
    assert bbh("It is invalid", **_bbh_options("formal_fallacies")).prediction == "invalid"


# ----------------------------------------------------------------------------- NLI, QA, JSON


@pytest.mark.parametrize(
    ("raw", "expected", "status"),
    [
        ("entailment", "entailment", "strict"),
        ("Contradiction.", "contradiction", "strict"),
        ("回答：含意", "entailment", "strict"),
        ("矛盾", "contradiction", "strict"),
        ("中立", "neutral", "strict"),
        ("The hypothesis is neutral to the premise", "neutral", "fallback"),
        ("no idea", None, "unparsed"),
    ],
)
def test_nli_labels_in_english_and_japanese(raw, expected, status):
    result = nli(raw)
    assert (result.prediction, result.status) == (expected, status)


def test_nli_parser_serves_any_closed_label_set():
    result = nli("I would say Sports.", labels=["politics", "sports"])
    assert result.prediction == "sports"


def test_extractive_keeps_first_paragraph_and_drops_answer_cue():
    result = extractive("回答：徳川家康\n\n理由：江戸幕府を開いた")
    assert (result.prediction, result.status) == ("徳川家康", "strict")
    assert extractive("\n\n答え: 東京").status == "fallback"
    assert extractive("ＡＢＣ１２３").prediction == "ABC123"


def test_first_json_object_stops_at_the_first_object():
    assert first_json_object('x {"label": "neg"} y {"label": "pos"}') == {"label": "neg"}
    assert first_json_object('{not json} then {"a": 1}') == {"a": 1}
    assert first_json_object("no braces") is None


def test_json_label_outside_label_set_is_unparsed_not_neutral():
    raw = '{"label": "neutral", "confidence": 0.5}'
    result = json_label(raw, labels=["positive", "negative"])
    assert result.prediction is None
    assert result.status == "unparsed"
    assert result.extra["raw_label"] == "neutral"


def test_json_label_strict_mode_refuses_prose_labels():
    raw = "The review is clearly positive."
    assert json_label(raw, labels=["positive", "negative"], strict=True).status == "unparsed"
    lenient = json_label(raw, labels=["positive", "negative"], strict=False)
    assert (lenient.prediction, lenient.status) == ("positive", "fallback")
    both = json_label("positive or negative", labels=["positive", "negative"], strict=False)
    assert both.status == "unparsed"


@pytest.mark.parametrize(
    ("value", "expected"), [(-0.3, 0.0), ("0.4", 0.4), ("high", None), (True, None)]
)
def test_json_label_confidence_is_clipped_or_none(value, expected):
    import json

    raw = json.dumps({"label": "negative", "confidence": value})
    assert json_label(raw).extra["confidence"] == expected


def test_unknown_parser_and_bad_options_are_input_errors():
    with pytest.raises(InputError, match="known parsers"):
        parse_answer("nope", "x")
    with pytest.raises(InputError, match="bad options"):
        parse_answer("numeric", "1", labels=["a"])
    assert set(PARSERS) == {
        "mc_letter",
        "mc_index",
        "numeric",
        "bbh",
        "nli",
        "extractive",
        "json_label",
    }


# ----------------------------------------------------------------------------- properties

LETTERS = st.sampled_from(["A", "B", "C", "D"])
FULL_WIDTH = {chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)}
# Noise that contains no standalone letter or digit: Japanese prose, punctuation, spaces.
NOISE = st.text(alphabet=st.sampled_from(list("ぁあいうえおかきくけこ、。 \n!?…")), max_size=20)


def _full_width(text: str) -> str:
    return "".join(FULL_WIDTH.get(ch, ch) for ch in text)


@settings(max_examples=200, deadline=None)
@given(
    letter=LETTERS,
    lower=st.booleans(),
    cue=st.sampled_from(["Answer: ", "回答：", "The answer is (", ""]),
)
def test_full_width_forms_parse_like_ascii(letter, lower, cue):
    raw = cue + (letter.lower() if lower else letter)
    wide = _full_width(raw)
    assert unicodedata.normalize("NFKC", wide) == unicodedata.normalize("NFKC", raw)
    assert mc_letter(wide, **MMLU).prediction == mc_letter(raw, **MMLU).prediction == letter


@settings(max_examples=200, deadline=None)
@given(letter=LETTERS, before=NOISE, after=NOISE)
def test_answer_line_survives_noise_around_it(letter, before, after):
    raw = f"{before}\nAnswer: {letter}\n{after}"
    assert mc_letter(raw, **MMLU).prediction == letter


@settings(max_examples=200, deadline=None)
@given(number=st.integers(-(10**6), 10**6), before=NOISE, after=NOISE)
def test_number_with_thousands_separators_survives_noise(number, before, after):
    raw = f"{before} #### {number:,} {after}"
    assert numeric(raw).prediction == str(number)
    assert numeric(_full_width(f"{number:,}")).prediction == str(number)


@settings(max_examples=100, deadline=None)
@given(digit=st.sampled_from(list("01234")), before=NOISE, after=NOISE)
def test_index_answer_survives_noise_but_not_longer_numbers(digit, before, after):
    assert mc_index(f"{before}回答: {digit}{after}", **JCQA).prediction == digit
    assert mc_index(f"{before}{digit}{digit}{after}", **JCQA).prediction is None


@settings(max_examples=100, deadline=None)
@given(
    label=st.sampled_from(["positive", "negative"]),
    conf=st.floats(-5, 5),
    before=NOISE,
    after=NOISE,
)
def test_json_answer_survives_prose_around_it(label, conf, before, after):
    import json

    raw = before + json.dumps({"label": label.upper(), "confidence": conf}) + after
    result = json_label(raw)
    assert result.prediction == label
    assert 0.0 <= result.extra["confidence"] <= 1.0


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=40))
def test_every_parser_returns_a_valid_status_on_arbitrary_text(text):
    for name, options in [("mc_letter", MMLU), ("mc_index", JCQA), ("numeric", {}),
                          ("bbh", {"format": "choice"}), ("nli", {}), ("extractive", {}),
                          ("json_label", {"strict": False})]:  # fmt: skip
        result = parse_answer(name, text, **options)
        assert result.status in ("strict", "fallback", "unparsed")
        assert (result.prediction is None) == (result.status == "unparsed")


def _frame(benchmark: str, outputs: list[str], golds: list[str]):
    import pandas as pd

    return pd.DataFrame(
        {
            "benchmark": benchmark,
            "example_id": [str(i) for i in range(len(outputs))],
            "variant": "original",
            "output": outputs,
            "answer": golds,
        }
    )


def test_json_label_with_raw_control_character_in_reason_parses():
    result = parse_answer(
        "json_label",
        '{"label": "neg", "confidence": 0.4, "reason": "bad\x03film"}',
        labels=["positive", "negative"],
        strict=True,
    )
    assert (result.prediction, result.status) == ("negative", "strict")


# ----------------------------------------------------------------------------------- real output

JCQA_LOCAL_0_4 = {
    "labels": ["0", "1", "2", "3", "4"],
    # What benchmarks.local builds by default: 1-based digits onto the labels.
    "digit_map": {"1": "0", "2": "1", "3": "2", "4": "3", "5": "4"},
}
LOCAL_1_4 = {"labels": ["1", "2", "3", "4"], "digit_map": {"1": "1", "2": "2", "3": "3", "4": "4"}}
AE = {"labels": ["A", "B", "C", "D", "E"]}


def test_article_after_an_answer_cue_is_not_a_choice():
    raw = "The answer is a library, because it lends books. Therefore, the answer is D."
    assert mc_letter(raw, **MMLU) == mc_letter("The answer is D.", **MMLU)
    assert mc_letter(raw, **MMLU).prediction == "D"
    # A lone article after the cue names no choice at all.
    assert mc_letter("The answer is a library.", **MMLU).status == "unparsed"
    # A real choice followed by its reason is still a committed answer.
    assert mc_letter("The answer is A because the rest are wrong.", **MMLU).prediction == "A"


def test_conclusion_wins_over_an_earlier_mention():
    raw = "We can rule out answer choice (A) since it is too small. So the answer is (C)."
    assert (mc_letter(raw, **MMLU).prediction, mc_letter(raw, **MMLU).status) == ("C", "strict")
    raw = "Answer: A looks right at first.\nOn reflection, the correct answer is (B)."
    assert mc_letter(raw, **MMLU).prediction == "B"


@pytest.mark.parametrize(
    "raw",
    [
        "the answer is B or D",
        "(A) or (C)",
        "probably A, C, or E",
        "The answer is either (B) or (E).",
        "A/C",
        "答えはBかDです。",
        "After checking each option, none of the above fits.",
        "The answer is none of the above.",
    ],
)
def test_hedges_and_none_of_the_above_are_unparsed(raw):
    result = mc_letter(raw, **AE)
    assert (result.prediction, result.status) == (None, "unparsed")
    assert result.extra["reason"] in ("hedge", "none_of_the_above")


def test_answer_line_then_explanation_mentioning_other_choices_is_the_answer():
    raw = "Answer: A\n\nExplanation: B or C might look right, but the passage rules them out."
    assert (mc_letter(raw, **MMLU).prediction, mc_letter(raw, **MMLU).status) == ("A", "strict")


def test_a_comma_after_the_answer_is_not_a_hedge():
    assert mc_letter("Answer: b, 第4条", **ABCD_LOWER).prediction == "b"
    assert mc_letter("The answer is (B), not (A) or (C).", **MMLU).prediction == "B"


@pytest.mark.parametrize(
    ("subtask", "raw"),
    [
        ("snarks", "So the answer is (A) or (C)."),
        ("date_understanding", "(A) and (B) both fit the date."),
        ("navigate", "So the answer is Yes or No."),
        ("logical_deduction_three_objects", "So the answer is none of the above."),
    ],
)
def test_bbh_hedges_are_unparsed(subtask, raw):
    assert bbh(raw, **_bbh_options(subtask)).status == "unparsed"


def test_bbh_last_answer_statement_wins_and_new_questions_are_ignored():
    raw = "At first the answer is (A), but (A) is Monday. So the answer is (C)."
    assert bbh(raw, **_bbh_options("date_understanding")).prediction == "(C)"
    raw = "So the answer is (B).\n\nQ: Today is Christmas Eve. So the answer is (D)."
    assert bbh(raw, **_bbh_options("date_understanding")).prediction == "(B)"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "So the final answer (in dollars) is 42.\n\nQ: A farmer has 7 cows and buys 3 more.",
            "42",
        ),
        ("The answer is: she saved $250 over 5 weeks.", "250"),
        ("Final answer: 45% of the class, i.e. 9 of 20 students", "45"),
        ("The answer is 5 + 3 = 8 apples, since 2 were eaten.", "8"),
        ("答えは42個です。残りは3個。", "42"),
        ("The answer is 12 km/h. She drove 3 hours.", "12"),
    ],
)
def test_number_after_an_answer_cue_wins_over_the_last_number(raw, expected):
    result = numeric(raw)
    assert (result.prediction, result.status) == (expected, "strict")


def test_numbers_after_a_new_question_are_not_the_answer():
    result = numeric("Total: 6 + 7 = 13 apples.\nQ: A farmer has 7 cows and buys 3 more.")
    assert (result.prediction, result.status) == ("13", "fallback")


@pytest.mark.parametrize(
    ("options", "expected"),
    [(JCQA_LOCAL_0_4, "2"), (LOCAL_1_4, "2"), (ABCD_LOWER, "b"), (JCQA, "2")],
)
def test_digit_maps_never_chain(options, expected):
    for raw in ["回答: 2", "2", "答えは2です"]:
        result = mc_letter(raw, **options)
        assert (result.prediction, result.status) == (expected, "strict"), raw
    assert normalise_gold("mc_letter", "2", **options) == expected


def test_digit_labelled_local_set_scores_each_answer_as_itself():
    frame = _frame("local", ["回答: 0", "回答: 1", "回答: 2", "回答: 3", "回答: 4"], list("01234"))
    scored = score_frame(
        frame, parser="mc_letter", metric="exact_match", parser_options=JCQA_LOCAL_0_4
    )
    assert scored["prediction"].tolist() == list("01234")
    assert scored["correct"].all()


# ----------------------------------------------------------------------------- built corpus


def _corpus_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "parser_corpus.py"
    spec = importlib.util.spec_from_file_location("parser_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_corpus_fixture_is_what_the_generator_builds():
    import json

    corpus = _corpus_module()
    rows = [json.loads(line) for line in corpus.CORPUS.read_text(encoding="utf-8").splitlines()]
    assert rows == corpus.build()
    assert len({r["class"] for r in rows}) >= 30


def test_every_corpus_output_parses_to_the_answer_it_commits_to():
    corpus = _corpus_module()
    counts = corpus.measure(corpus.build())
    misscored = {cls: c["misscored"] for cls, c in counts.items() if c["misscored"]}
    assert misscored == {}
    # Hedge classes are counted as unparsed, every other class parses.
    for cls, c in counts.items():
        assert c["unparsed"] == (c["rows"] if "hedge" in cls else 0), cls


# ----------------------------------------------------------------------------- corrections, fractions


@pytest.mark.parametrize(
    "raw",
    [
        "The answer is 12, wait, no, it is 14.",
        "The answer is 12 apples. Wait, no. It is 14 apples.",
        "So the answer is 12. Sorry, I meant 14.",
        "Final answer: 12 — no wait, 14.",
        "#### 12\nWait, no, make that 14.",
        "答えは12、いや、14です",
        "答えは12です。いや、間違えました。14です。",
        "計算すると、答えは12個ではなく14個です。",
        "答えは12です。すみません、正しくは14です。",
    ],
)
def test_a_self_correction_after_the_answer_reads_the_corrected_value(raw):
    assert (numeric(raw).prediction, numeric(raw).status) == ("14", "strict")


@pytest.mark.parametrize(
    "raw",
    [
        "The answer is 12.\nCheck: 12 - 4 = 8, and 8 + 4 = 12. Correct.",
        "The answer is 12. No other value works with 5 people.",
        "The answer is 12. Wait, let me check the steps again: she had 5 + 7 = 12.",
        "The answer is 12 km/h. She drove 3 hours, not 4.",
    ],
)
def test_a_check_or_a_later_number_is_not_a_correction(raw):
    assert numeric(raw).prediction == "12"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The answer as a fraction is 1/4.", "0.25"),
        ("So the answer, as a fraction, is 1/4.", "0.25"),
        ("The answer in simplest form is 3/4 of the cake.", "0.75"),
        ("The final answer is $\\frac{3}{4}$.", "0.75"),
        ("Final answer: $\\boxed{\\dfrac{1}{4}}$", "0.25"),
        ("The answer is 1 1/2 cups.", "1.5"),
        ("The answer is 2/6.", "1/3"),
        ("The answer is 8/4.", "2"),
        ("答えは1/4です。", "0.25"),
    ],
)
def test_a_fraction_after_a_cue_reads_as_its_value_never_its_numerator(raw, expected):
    assert (numeric(raw).prediction, numeric(raw).status) == (expected, "strict")


def test_a_fraction_without_a_cue_is_read_whole_as_the_last_number():
    assert numeric("So she ate 1/4 of the pie").prediction == "0.25"
    assert numeric("The answer is 1/0.").status == "unparsed"
