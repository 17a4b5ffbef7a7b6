"""Human-like typos: the eligibility rules, the keyboard model's English and IME behaviour, the
delivered rate, and model ``natural`` (the GitHub Typo Corpus mix, real misspellings)."""

from __future__ import annotations

import functools
import json

import pandas as pd
import pytest

from evalpipe.benchmarks import get_spec, load_benchmark
from evalpipe.errors import InputError
from evalpipe.perturb import Probabilities, decide, occurrence_digest, perturb_frame
from evalpipe.perturb.control import add_controls
from evalpipe.perturb.count import perturb_count_frame
from evalpipe.perturb.eligibility import (
    Eligibility,
    RowContext,
    from_params,
    is_number_word,
)
from evalpipe.perturb.ime import ImeLexicon, JapaneseContext, keystroke_transpositions
from evalpipe.perturb.natural import HUMAN_MIX, misspellings
from evalpipe.perturb.ops import Skipped, validate_probabilities
from evalpipe.words import word_list

ENGLISH = ["gsm8k", "bbh", "mmlu", "imdb"]
JAPANESE = ["jamp", "jnli", "niilc", "jsquad", "jcommonsenseqa", "lawqa", "ja_sentiment"]


@functools.cache
def _words(language: str):
    return word_list(
        language, "wordfreq", raw_dir="/nonexistent", top_n=300,
        min_length=2 if language == "english" else 1,
    )  # fmt: skip


@functools.cache
def _bench(name: str):
    return load_benchmark(get_spec(name), source="sample")[0]


def _run(names, language, cfg, rules=None):
    probs = validate_probabilities(cfg)
    rules = from_params(cfg) if rules is None else rules
    return [
        perturb_frame(_bench(n), _words(language), probabilities=probs, seed=42, eligibility=rules)
        for n in names
    ]


def _records(results):
    return [p for res in results for row in res.table.to_pylist() for p in row["perturbations"]]


# ----------------------------------------------------------------------------- eligibility


def test_number_words_urls_maths_labels_and_gold_spans_are_never_edited():
    rules = Eligibility(frozenset(from_params({"model": "keyboard"}).exclude))
    row = RowContext(labels=("A", "B", "C", "D"), golds=("the capital",))
    text = (
        "Two of the cats saw www.the-site.com/to/the page; x = y + the; "
        "A. the one (B) the capital B"
    )
    blocked = rules.blocked_spans(text, row)
    words = {m: text.index(m) for m in ("Two", "cats", "page")}

    def why(word, at=None):
        start = text.index(word) if at is None else at
        return rules.reason(text, start, start + len(word), blocked, row, language="english")

    assert why("Two") == "number_words" and why("one", text.index("one")) == "number_words"
    assert why("to", text.index("/to/") + 1) == "urls"
    assert why("the", text.index("the; ")) == "maths"  # joined to "+"
    assert why("A", text.index("A.")) == "option_labels"
    assert why("B", text.index("(B)") + 1) == "option_labels"
    assert why("capital") == "gold_spans"
    assert why("cats") is None and why("page") is None and words


def test_prices_with_dollar_signs_are_text_and_tex_maths_is_maths():
    rules = Eligibility(frozenset({"maths"}))
    row = RowContext()
    for text in ("Pens cost $4 each and 2 pens for $", "It was $4 and then $5 for the pens"):
        assert rules.blocked_spans(text, row)["maths"] == [], text
        start = text.index("pens")
        blocked = rules.blocked_spans(text, row)
        assert rules.reason(text, start, start + 4, blocked, row, language="english") is None
    text = "Solve $x^2 + y$ for the value and $$a b$$ too"
    assert rules.blocked_spans(text, row)["maths"] == [(6, 15), (34, 41)]


def test_japanese_rules_use_the_unidic_part_of_speech():
    assert is_number_word("三", language="japanese") and is_number_word("一つ", language="japanese")
    assert not is_number_word("一般", language="japanese")
    reader = JapaneseContext()
    rules = Eligibility(frozenset({"function_words", "number_words"}))
    text = "三人が東京で本を読んだ。"
    for word, expected in (("三", "number_words"), ("が", "function_words"), ("本", None)):
        start = text.index(word)
        pos = reader.pos(text, start, start + len(word))
        got = rules.reason(text, start, start + len(word), {}, RowContext(), language="japanese",
                           pos=pos)  # fmt: skip
        assert got == expected, (word, pos)


def test_the_rules_come_from_params_with_auto_defaults_and_clear_errors():
    assert not from_params({"model": "uniform"}).active  # the uniform model keeps every occurrence
    assert "number_words" in from_params({"model": "keyboard"}).exclude
    count = from_params({"model": "uniform", "design": "count"})
    assert count.min_letters == 3 and "function_words" in count.exclude
    assert from_params({"model": "keyboard", "exclude": ["urls"], "min_letters": 2}) == (
        Eligibility(frozenset({"urls"}), 2)
    )
    with pytest.raises(InputError, match=r"params.yaml: perturb.exclude has unknown rule"):
        from_params({"exclude": ["numbers"]})
    with pytest.raises(InputError, match=r"perturb.min_letters must be auto or an integer"):
        from_params({"min_letters": -1})


@pytest.mark.parametrize("model", ["keyboard", "natural"])
def test_on_the_samples_no_number_word_url_label_or_gold_span_is_edited(model):
    cfg = {"model": model, "replace_prob": 0.3, "insert_prob": 0.3, "delete_prob": 0.3,
           "transpose_prob": 0.1}  # fmt: skip
    strict = from_params({**cfg, "design": "count"})  # every rule, and 3 letters
    for language, names in (("english", ENGLISH), ("japanese", JAPANESE)):
        results = _run(names, language, cfg, strict)
        reader = JapaneseContext()
        for name, res in zip(names, results, strict=True):
            bench = _bench(name).set_index("example_id")
            for row in res.table.to_pylist():
                src = bench.loc[row["example_id"]]
                ctx = RowContext.from_row(src.to_dict())
                fields = json.loads(src["fields"])
                for p in row["perturbations"]:
                    text = fields[p["field"]]
                    pos = reader.pos(text, p["start"], p["end"]) if language == "japanese" else None
                    blocked = strict.blocked_spans(text, ctx)
                    assert strict.reason(text, p["start"], p["end"], blocked, ctx,
                                         language=language, pos=pos) is None  # fmt: skip
                    assert not is_number_word(p["original"], language=language, pos=pos)
                    assert not any(c.isdigit() for c in p["original"])
                    for gold in ctx.golds:
                        at = text.find(gold)
                        while at >= 0:
                            assert p["end"] <= at or at + len(gold) <= p["start"]
                            at = text.find(gold, at + 1)
            assert sum(res.summary["eligibility"]["excluded"].values()) >= 0


# ----------------------------------------------------------------------------- keyboard model


def test_english_edits_rarely_touch_the_first_letter_and_shift_slips_look_like_the():
    probs = Probabilities(0.25, 0.25, 0.25, 0.25, model="keyboard")
    first = total = 0
    shifted = set()
    for k in range(4000):
        op = decide("Question", occurrence_digest(1, "b", str(k), "w", "q", 0), probs)
        total += 1
        first += op.perturbed[0] != "Q" or op.perturbed[1:2].isupper()
        if op.rule == "shift":
            shifted.add(op.perturbed)
        if op.op == "insert" and op.position >= 1:  # in the case of the letter after it
            assert op.new_char.islower()
    assert first / total < 0.08
    assert shifted == {"QUestion"}


def test_transpositions_prefer_keys_typed_by_different_hands():
    probs = Probabilities(0, 0, 0, 1, model="keyboard")
    pairs: dict[str, int] = {}
    for k in range(3000):
        op = decide("bread", occurrence_digest(1, "b", str(k), "w", "q", 0), probs)
        pairs[op.original_char] = pairs.get(op.original_char, 0) + 1
    # r-e, e-a, a-d: all left hand; b-r (left/left) too: "bread" has no cross-hand pair
    assert set(pairs) <= {"br", "re", "ea", "ad"}
    pairs = {}
    for k in range(3000):
        op = decide("often", occurrence_digest(1, "b", str(k), "w", "q", 0), probs)
        pairs[op.original_char] = pairs.get(op.original_char, 0) + 1
    # f-t (left/left) against t-e (left/left), e-n (left/right): the cross-hand pair wins
    assert pairs["en"] > 2.5 * pairs["te"]


def test_kana_transpositions_are_keystrokes_the_ime_reads_back_as_kana():
    got = {new: keys for new, keys, _ in keystroke_transpositions("ありがとう")}
    assert got["らいがとう"] == "arigatou->raigatou"
    assert keystroke_transpositions("す") == ()  # su -> us: the IME leaves "s" on screen


def test_a_word_ending_in_sokuon_is_typed_with_the_next_kana():
    # やっ|て is typed "yatte": a dropped "t" gives やて (the っ goes), never a slip of a lone
    # っ's keys ("yaltu" -> やつ, やぅ)
    lexicon = ImeLexicon()
    reader = JapaneseContext()
    text = "宿題をやってから寝た。"
    start = text.index("やっ")
    ctx = reader.occurrence(text, start, start + 2)
    assert ctx.after == "て"
    made = set()
    for k in range(60):
        op = decide("やっ", occurrence_digest(1, "b", str(k), "w", "q", 0),
                    Probabilities(0, 0, 1, 0, 0, model="keyboard"), homophones=lexicon,
                    context=ctx)  # fmt: skip
        made.add((op.perturbed, op.keys))
    assert made == {("や", "yatte->yate"), ("あっ", "yatte->atte")}
    # a kanji word whose reading ends in っ (行っ|て) slips on the same keys
    text = "学校に行ってから"
    start = text.index("行っ")
    ctx = reader.occurrence(text, start, start + 2)
    op = decide("行っ", occurrence_digest(1, "b", "0", "w", "q", 0),
                Probabilities(0, 0, 1, 0, 0, model="keyboard"), homophones=lexicon,
                context=ctx)  # fmt: skip
    assert "ltu" not in op.keys and op.keys.startswith("itte->")


@pytest.mark.parametrize(
    ("text", "word"),
    [("愛知県の人口", "県"), ("都道府県の数", "県"), ("業者等の責任", "等"), ("委託先で", "先"),
     ("安全性を高める", "安全"), ("お金を預ける", "金"), ("この薬を使用する。", "使用"),
     ("機械が使用される場合", "使用"), ("使用した結果", "使用")],
)  # fmt: skip
def test_no_conversion_of_a_compounds_part_an_affix_or_a_proper_noun(text, word):
    # the IME converts the compound (愛知県, 委託先, おかね) whole: no homophone of its part;
    # a verbal noun with its する (しようする) gets the verb's kanji (使用, never 仕様)
    lexicon = ImeLexicon()
    start = text.index(word)
    ctx = JapaneseContext().occurrence(text, start, start + len(word))
    assert ctx is not None and not ctx.unit
    for k in range(40):
        op = decide(word, occurrence_digest(1, "b", str(k), "w", "q", 0),
                    Probabilities(0, 0, 0, 0, 1, model="keyboard"), homophones=lexicon,
                    context=ctx)  # fmt: skip
        assert isinstance(op, Skipped), (text, op)  # nothing else has a probability


def test_a_verbal_noun_without_its_suru_is_still_converted():
    # 使用 before の is typed as しよう alone: the IME may offer 仕様 first
    text = "使用の方法"
    ctx = JapaneseContext().occurrence(text, 0, 2)
    assert ctx is not None and ctx.unit
    op = decide("使用", occurrence_digest(1, "b", "0", "w", "q", 0),
                Probabilities(0, 0, 0, 0, 1, model="keyboard"), homophones=ImeLexicon(),
                context=ctx)  # fmt: skip
    assert op.perturbed == "仕様" and op.op == "conversion"


def test_conversions_keep_the_part_of_speech_skip_proper_names_and_follow_frequency():
    lexicon = ImeLexicon()
    reader = JapaneseContext()
    text = "具体的な時代の機会が高い。"
    counts: dict[str, int] = {}
    start = text.index("機会")
    ctx = reader.occurrence(text, start, start + 2)
    for k in range(400):
        op = decide("機会", occurrence_digest(1, "b", str(k), "w", "q", 0),
                    Probabilities(0, 0, 0, 0, 1, model="keyboard"), homophones=lexicon,
                    context=ctx)  # fmt: skip
        counts[op.perturbed] = counts.get(op.perturbed, 0) + 1
    assert counts.get("機械", 0) > 300  # the frequent homophone, not 器械
    start = text.index("高い")
    ctx = reader.occurrence(text, start, start + 2)
    assert not lexicon.homophones(ctx.kana, ctx.pos, ctx.cform, ctx.lemmas, "高い")  # not 他界
    start = text.index("的")
    assert reader.occurrence(text, start, start + 1).kana == "テキ"  # read in context, not マト
    assert all("固有名詞" not in e.pos for es in lexicon.by_reading.values() for e in es)


@pytest.mark.parametrize("language", ["english", "japanese"])
def test_the_configured_rate_is_the_rate_delivered(language):
    cfg = {"model": "keyboard", "replace_prob": 0.2, "insert_prob": 0.1, "delete_prob": 0.1,
           "transpose_prob": 0.1, "conversion_prob": 0.2}  # fmt: skip
    results = _run(ENGLISH if language == "english" else JAPANESE, language, cfg)
    occ = sum(r.summary["occurrences"] for r in results)
    made = sum(r.summary["perturbed_occurrences"] for r in results)
    assert abs(made / occ - 0.7) < 0.02 + 2 * (0.21 / occ) ** 0.5
    records = _records(results)
    assert not any(p["rule"] == "uniform" for p in records)  # no random kanji


# Free-standing words with a homophone (者 -> 物, 女性 -> 助成, 用 -> 要, 使用 -> 仕様), one with
# none (申請), kana and a compound's part that take no conversion.
_CONVERTIBLE_TEXTS = [
    "許可を受けた者が申請する。",
    "この女性は台所で野菜を切っている。",
    "居住の用に供する建物。",
    "適正な使用を確保する。",
]


def _convertible_bench(n: int) -> pd.DataFrame:
    texts = [_CONVERTIBLE_TEXTS[i % 4] + _CONVERTIBLE_TEXTS[(i + 1) % 4] for i in range(n)]
    return pd.DataFrame({
        "benchmark": "syn", "example_id": [str(i) for i in range(n)], "subtask": None,
        "language": "japanese", "task_type": "mc",
        "fields": [json.dumps({"q": t}, ensure_ascii=False) for t in texts],
        "perturbable": [["q"]] * n, "choices": None, "answer": "A", "answers": [["A"]] * n,
        "labels": None,
    })  # fmt: skip


def test_conversions_are_delivered_at_the_configured_rate_among_eligible_occurrences():
    # Most occurrences cannot take a conversion (kana, compounds' parts, no homophone), so
    # over all occurrences the rate is far below conversion_prob; the summary names the
    # occurrences that can, and among them the configured rate is delivered.
    words = pd.DataFrame({
        "rank": range(1, 8), "word": ["者", "女性", "用", "使用", "申請", "台所", "する"],
        "lemma": None, "pos": None,
    })  # fmt: skip
    cfg = {"model": "keyboard", "replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2,
           "conversion_prob": 0.2}  # fmt: skip
    probs = validate_probabilities(cfg)
    s = perturb_frame(
        _convertible_bench(3000), words, probabilities=probs, seed=42, eligibility=from_params(cfg)
    ).summary
    eligible, converted = s["conversion_eligible"], s["operations"]["conversion"]
    assert 0 < eligible < s["occurrences"]  # 申請, 台所 and する are not eligible
    assert s["conversion_rate_eligible"] == round(converted / eligible, 6)
    assert abs(converted / eligible - 0.2) <= 0.02, (converted, eligible)
    assert converted / s["occurrences"] < 0.15
    # the uniform model's homophone table counts its own eligible occurrences
    uniform = validate_probabilities({**cfg, "model": "uniform"})
    s = perturb_frame(_convertible_bench(300), words, probabilities=uniform, seed=42).summary
    assert s["conversion_eligible"] > 0 and "conversion_rate_eligible" in s
    # no conversions configured: no conversion keys (the default summaries stay as they were)
    none = validate_probabilities({**cfg, "conversion_prob": 0.0})
    s = perturb_frame(_convertible_bench(10), words, probabilities=none, seed=42).summary
    assert "conversion_eligible" not in s and "conversion_rate_eligible" not in s


def test_count_and_control_designs_report_conversions_among_eligible_edits():
    # the words design's conversion_eligible / conversion_rate_eligible, for the edits the
    # count design makes (top level) and the control arm makes (under "control")
    words = pd.DataFrame({"rank": [1, 2], "word": ["者", "使用"], "lemma": None, "pos": None})
    cfg = {"model": "keyboard", "replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2,
           "conversion_prob": 0.2}  # fmt: skip
    probs = validate_probabilities(cfg)
    count = perturb_count_frame(_convertible_bench(400), probabilities=probs, seed=42,
                                counts=[1, 2], eligibility=from_params(cfg)).summary  # fmt: skip
    eligible, converted = count["conversion_eligible"], count["operations"]["conversion"]
    assert 0 < converted <= eligible < count["perturbed_occurrences"]
    assert count["conversion_rate_eligible"] == round(converted / eligible, 6)
    # every edit fires: a convertible word is converted with the conversion's share of the
    # forced draws (about 0.2 with this mix; 122 eligible edits, standard error 0.04)
    assert 0.1 < converted / eligible < 0.3, (converted, eligible)

    bench = _convertible_bench(200)
    result = perturb_frame(bench, words, probabilities=probs, seed=42)
    _, summary = add_controls(result.table, bench, words, probabilities=probs, seed=42)
    control = summary["control"]
    assert 0 < control["conversions"] <= control["conversion_eligible"]
    assert control["conversion_rate_eligible"] == round(
        control["conversions"] / control["conversion_eligible"], 6
    )

    none = validate_probabilities({**cfg, "conversion_prob": 0.0})
    count = perturb_count_frame(_convertible_bench(10), probabilities=none, seed=42,
                                counts=[1]).summary  # fmt: skip
    assert "conversion_eligible" not in count and "conversion_rate_eligible" not in count
    result = perturb_frame(bench, words, probabilities=none, seed=42)
    _, summary = add_controls(result.table, bench, words, probabilities=none, seed=42)
    assert "conversion_eligible" not in summary["control"]


# ----------------------------------------------------------------------------- natural model


def test_the_natural_model_takes_the_total_rate_and_the_human_mix():
    probs = validate_probabilities(
        {"model": "natural", "replace_prob": 0.2, "insert_prob": 0.2, "delete_prob": 0.2}
    )
    assert probs.delete == pytest.approx(0.6 * 0.402) and probs.total == pytest.approx(0.6)
    assert sum(HUMAN_MIX.values()) == pytest.approx(1.0)


def test_natural_typos_reproduce_the_human_mix_on_the_english_samples():
    cfg = {"model": "natural", "replace_prob": 0.3, "insert_prob": 0.3, "delete_prob": 0.3}
    records = _records(_run(ENGLISH, "english", cfg))
    shares = pd.Series([p["op"] for p in records]).value_counts(normalize=True)
    for kind, share in HUMAN_MIX.items():
        assert abs(shares[kind] - share) < 0.04, (kind, shares[kind], share)
    dictionary = [p for p in records if p["rule"] == "dictionary"]
    assert len(dictionary) > 0.2 * len(records)
    for p in dictionary:  # a real misspelling of the word, in its case
        assert p["perturbed"].lower() in misspellings()[(p["original"].lower(), p["op"])]
