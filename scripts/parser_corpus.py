"""Build and measure the parser corpus: varied model outputs with the answer each one commits to.

The corpus (tests/test_scoring_parsers_corpus.jsonl) holds the forms real chat and base models write
for GSM8K (chain of thought, "####", answer cues with parentheticals, a new "Q:" after the answer),
BBH (CoT ending in "So the answer is (X).", hedges, binary subtasks), MMLU / A-E multiple choice
(answer lines, leading labels, articles after a cue, mentions before the conclusion, hedges) and
Japanese answers (digit-labelled sets, 回答 / 答えは cues). Every row is built from templates with a
seeded random generator, so the file is reproducible; each row names its class.

    python scripts/parser_corpus.py build      # (re)write the corpus fixture
    python scripts/parser_corpus.py measure    # per class: rows, mis-scored, unparsed

``measure`` counts a row as mis-scored when the parser's prediction differs from the expected one
(a hedge must be unparsed: its expected prediction is null). Run it with ``PYTHONPATH`` pointing at
another checkout's ``src`` to measure that version's parsers on the same rows.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "test_scoring_parsers_corpus.jsonl"
PER_CLASS = 40

MMLU = {"labels": ["A", "B", "C", "D"], "digit_map": None}
AE = {"labels": ["A", "B", "C", "D", "E"], "digit_map": None}
LOCAL_0_4 = {
    "labels": ["0", "1", "2", "3", "4"],
    "digit_map": {str(i + 1): str(i) for i in range(5)},
}
LOCAL_1_4 = {"labels": ["1", "2", "3", "4"], "digit_map": {str(i): str(i) for i in range(1, 5)}}
LOCAL_A_D = {"labels": ["a", "b", "c", "d"], "digit_map": {str(i + 1): "abcd"[i] for i in range(4)}}
JCQA = {"labels": ["0", "1", "2", "3", "4"]}

NAMES = ["Janet", "Tom", "Aiko", "Marcus", "Priya", "Lena", "Carlos", "Mei"]
ITEMS = ["apples", "eggs", "marbles", "stickers", "books", "cupcakes", "pencils"]
NOUNS = ["library", "mitochondrion", "catalyst", "tariff", "sonnet", "glacier", "protein"]
REASONS = [
    "it is the only option consistent with the definition",
    "the other options contradict the passage",
    "this follows directly from the premises",
    "it matches the standard textbook account",
]
BBH_MC_TASKS = ["date_understanding", "logical_deduction_three_objects", "snarks", "ruin_names",
                "tracking_shuffled_objects_three_objects", "hyperbaton"]  # fmt: skip
BBH_BINARY_TASKS = ["boolean_expressions", "navigate", "sports_understanding", "web_of_lies"]


def _bbh_options(subtask: str) -> dict[str, Any]:
    """The parser options of a BBH subtask, as bbh.yaml declares its answer format."""
    from evalpipe.benchmarks import get_spec

    return get_spec("bbh").parser_options(subtask)


def _steps(rng: random.Random, answer: int) -> str:
    """A few lines of arithmetic with intermediate numbers different from the answer."""
    a, b = rng.randint(2, 30), rng.randint(2, 12)
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    lines = [
        f"{name} starts with {a} {item} and buys {b} more, so {a} + {b} = {a + b}.",
        f"Each box holds {b} {item}, and there are {rng.randint(2, 9)} boxes.",
        f"Putting it together gives {answer} after the last step.",
    ]
    rng.shuffle(lines[:2])
    return " ".join(lines)


def _next_question(rng: random.Random) -> str:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    return (
        f"Q: {name} has {rng.randint(2, 9)} {item} and buys {rng.randint(2, 9)} more. "
        f"How many {item} does {name} have?"
    )


def _gsm8k(rng: random.Random) -> Iterator[tuple[str, str, str | None]]:
    for _ in range(PER_CLASS):
        n = rng.randint(10, 5000)
        steps = _steps(rng, n)
        yield "gsm8k_hash", f"{steps}\n#### {n:,}", str(n)
        yield "gsm8k_answer_is", f"{steps} The answer is {n}.", str(n)
        unit = rng.choice(["in dollars", "in minutes", "in cm", "number of eggs"])
        yield (
            "gsm8k_cue_parenthetical_then_new_q",
            f"{steps}\nSo the final answer ({unit}) is {n}.\n\n{_next_question(rng)}",
            str(n),
        )
        weeks = rng.randint(2, 9)
        verb = rng.choice(["saved", "spent", "earned", "collected"])
        yield (
            "gsm8k_cue_then_prose",
            f"{steps}\nThe answer is: {rng.choice(NAMES)} {verb} ${n} over {weeks} weeks.",
            str(n),
        )
        suffix = rng.choice(["%", " km/h", " dollars per day", " cm", "%."])
        yield "gsm8k_cue_with_unit", f"{steps} Final answer: {n}{suffix}", str(n)
        yield "gsm8k_no_cue_last_number", f"{steps} So in total she has {n} left.", str(n)
        yield (
            "gsm8k_new_q_without_cue",
            f"{steps} Altogether that makes {n}.\n{_next_question(rng)}",
            str(n),
        )
        yield "gsm8k_boxed", rng.choice([
            f"{steps}\nTherefore, the final answer is $\\boxed{{{n}}}$.",
            f"{steps}\nFinal Answer: The final answer is ${n}$. I hope it is correct.",
        ]), str(n)  # fmt: skip
        check = f"Check: {n} - 4 = {n - 4}, and {n - 4} + 4 = {n}. Correct."
        yield "gsm8k_answer_then_check", f"The answer is {n}.\n{check}", str(n)
        yield (
            "gsm8k_japanese",
            f"{rng.choice(NAMES)}さんは合計で計算します。答えは{n}個です。",
            str(n),
        )


def _mc_forms(rng: random.Random, labels: list[str]) -> Iterator[tuple[str, str, str | None]]:
    for _ in range(PER_CLASS):
        x, y, z = rng.sample(labels, 3)
        reason = rng.choice(REASONS)
        yield "mc_answer_line", rng.choice([
            f"ANSWER: {x}", f"Answer: {x}", f"**Answer:** {x}", f"The answer is ({x}).",
            f"The correct answer is {x}.", f"{reason.capitalize()}.\n\nAnswer: {x}",
        ]), x  # fmt: skip
        yield (
            "mc_leading_label",
            rng.choice([f"{x}. {rng.choice(NOUNS)}", f"({x}) {rng.choice(NOUNS)}", x]),
            x,
        )
        noun = rng.choice(NOUNS)
        yield (
            "mc_article_after_cue",
            f"The answer is a {noun}, because {reason}. Therefore, the answer is {x}.",
            x,
        )
        yield (
            "mc_mention_then_conclusion",
            rng.choice([
                f"We can rule out answer choice ({y}) since {reason}. So the answer is ({x}).",
                f"Answer: {y} looks plausible at first, but {reason}.\nTherefore the correct answer is {x}.",
                f"Let's consider answer choice ({y}) and answer choice ({z}). Neither fits. The answer is ({x}).",
            ]),
            x,
        )  # fmt: skip
        yield (
            "mc_hedge",
            rng.choice([
                f"the answer is {x} or {y}", f"({x}) or ({y})", f"probably {x}, {y}, or {z}",
                f"The answer is either ({x}) or ({y}).", f"I think it is {x}/{y}.",
                f"After checking each option, none of the above fits. {reason.capitalize()}.",
            ]),
            None,
        )  # fmt: skip
        yield (
            "mc_answer_and_rejection",
            rng.choice([
                f"The answer is {x}, and {y} is incorrect because {reason}.",
                f"The answer is {x} because {reason}; {y} or {z} would be wrong.",
            ]),
            x,
        )  # fmt: skip
        yield (
            "mc_answer_then_explanation",
            f"Answer: {x}\n\nExplanation: {y} or {z} might look right, but {reason}.",
            x,
        )
        yield "mc_cot_fallback", f"Looking at the options, {y} is too broad and {z} is unrelated; ({x}) fits because {reason}.", x  # fmt: skip


def _bbh(rng: random.Random) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
    letters = list("ABCDE")
    for _ in range(PER_CLASS):
        task = rng.choice(BBH_MC_TASKS)
        x, y = rng.sample(letters, 2)
        opts = _bbh_options(task)
        yield (
            "bbh_cot",
            (
                f"Let's think step by step.\nOption ({y}) does not match because {rng.choice(REASONS)}. "
                f"Option ({x}) does. So the answer is ({x})."
            ),
            f"({x})",
            opts,
        )
        yield (
            "bbh_conditional_then_conclusion",
            (
                f"If the answer is ({y}), then the third object would be first, which is impossible. "
                f"So the answer is ({x})."
            ),
            f"({x})",
            opts,
        )
        yield "bbh_hedge", rng.choice([
            f"So the answer is ({x}) or ({y}).", f"The answer is ({x}) and ({y}).",
            f"({x}) or ({y}), I cannot decide.",
        ]), None, opts  # fmt: skip
        yield (
            "bbh_new_q_after_answer",
            (
                f"So the answer is ({x}).\n\nQ: Which sentence has the correct adjective order?\n"
                f"Options:\n(A) big old red car\n(B) old red big car\nA: So the answer is ({y})."
            ),
            f"({x})",
            opts,
        )
        task = rng.choice(BBH_BINARY_TASKS)
        opts = _bbh_options(task)
        yes, no = opts["words"]
        word = rng.choice([yes, no])
        yield "bbh_binary", f"Let's think step by step. {rng.choice(REASONS).capitalize()}. So the answer is {word}.", word, opts  # fmt: skip
        yield "bbh_binary_hedge", f"So the answer is {yes} or {no}.", None, opts
        total = rng.randint(3, 40)
        opts = _bbh_options("object_counting")
        yield "bbh_numeric", f"I have a piano, {rng.randint(2, 5)} flutes and a violin. So the answer is {total}.", str(total), opts  # fmt: skip


def _japanese(rng: random.Random) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
    for _ in range(PER_CLASS):
        digit = rng.choice("01234")
        form = rng.choice(["回答: {}", "答えは{}です。", "{}", "回答：{}\n理由: 最も自然だから。"])
        yield "ja_index_jcqa", form.format(digit), digit, ("mc_index", JCQA)
        yield "ja_local_labels_0_4", form.format(digit), digit, ("mc_letter", LOCAL_0_4)
        one = rng.choice("1234")
        yield "ja_local_labels_1_4", form.format(one), one, ("mc_letter", LOCAL_1_4)
        letter = rng.choice("abcd")
        yield "ja_local_labels_a_d", rng.choice([
            f"回答（1文字のみ）: {letter}", f"Answer: {letter}, 第4条", f"答えは{letter}です。",
            f"回答: {'abcd'.index(letter) + 1}",
        ]), letter, ("mc_letter", LOCAL_A_D)  # fmt: skip
        x, y = rng.sample("ABCD", 2)
        yield (
            "ja_hedge",
            rng.choice([f"答えは{x}か{y}です。", f"{x}または{y}"]),
            None,
            ("mc_letter", MMLU),
        )


def _corrections(rng: random.Random) -> Iterator[tuple[str, str, str | None]]:
    """Self-corrections after an answer cue and fractions after a cue (both seen in real output)."""
    for _ in range(PER_CLASS):
        wrong, n = rng.sample(range(10, 900), 2)
        steps = _steps(rng, n)
        unit = rng.choice(["", " apples", " dollars", " minutes"])
        yield "gsm8k_self_correction", rng.choice([
            f"{steps} The answer is {wrong}, wait, no, it is {n}.",
            f"{steps} The answer is {wrong}{unit}. Wait, no. It is {n}{unit}.",
            f"{steps}\nSo the answer is {wrong}. Sorry, I meant {n}.",
            f"{steps} Final answer: {wrong} — no wait, {n}.",
            f"{steps} The answer is {wrong}{unit}. Oops, I made a mistake: the correct answer is {n}{unit}.",
            f"{steps} The answer is ${wrong}. Correction: ${n}.",
            f"{steps}\n#### {wrong}\nWait, no, make that {n}.",
        ]), str(n)  # fmt: skip
        yield "gsm8k_self_correction_japanese", rng.choice([
            f"{rng.choice(NAMES)}さんの分を足します。答えは{wrong}、いや、{n}です。",
            f"答えは{wrong}です。いや、間違えました。{n}です。",
            f"計算すると、答えは{wrong}個ではなく{n}個です。",
            f"答えは{wrong}です。すみません、正しくは{n}です。",
            f"答え：{wrong}、訂正して{n}。",
        ]), str(n)  # fmt: skip
        num, den = rng.randint(1, 9), rng.choice([2, 4, 5, 8, 10, 20, 3, 6, 7])
        value = Fraction(num, den)
        # The fraction's exact value: a decimal when it has one, else the reduced fraction.
        expected = (
            f"{value.numerator}/{value.denominator}" if _repeating(value) else _decimal(value)
        )
        yield "gsm8k_fraction_after_cue", rng.choice([
            f"{steps} The answer as a fraction is {num}/{den}.",
            f"{steps} So the answer, as a fraction, is {num}/{den}.",
            f"{steps}\nThe final answer is $\\frac{{{num}}}{{{den}}}$.",
            f"{steps}\nTherefore, the final answer is $\\boxed{{\\dfrac{{{num}}}{{{den}}}}}$.",
            f"{steps} The answer in simplest form is {num}/{den} of the {rng.choice(ITEMS)}.",
            f"{steps} 答えは{num}/{den}です。",
        ]), expected  # fmt: skip


def _repeating(value: Fraction) -> bool:
    rest = value.denominator
    for factor in (2, 5):
        while rest % factor == 0:
            rest //= factor
    return rest != 1


def _decimal(value: Fraction) -> str:
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def build(seed: int = 13) -> list[dict[str, Any]]:
    """Every corpus row, deterministic for ``seed``."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []

    def add(cls: str, parser: str, options: dict[str, Any], output: str, expected: str | None):
        rows.append({"id": f"{cls}-{sum(r['class'] == cls for r in rows):03d}", "class": cls,
                     "parser": parser, "options": options, "output": output, "expected": expected})  # fmt: skip

    for cls, output, expected in _gsm8k(rng):
        add(cls, "numeric", {}, output, expected)
    for cls, output, expected in _mc_forms(rng, MMLU["labels"]):
        add(cls.replace("mc_", "mmlu_"), "mc_letter", MMLU, output, expected)
    for cls, output, expected in _mc_forms(rng, AE["labels"]):
        add(cls.replace("mc_", "ae_"), "mc_letter", AE, output, expected)
    for cls, output, expected, options in _bbh(rng):
        add(cls, "bbh", options, output, expected)
    for cls, output, expected, (parser, options) in _japanese(rng):
        add(cls, parser, options, output, expected)
    # Appended last, so the rows above keep their random draws.
    for cls, output, expected in _corrections(rng):
        add(cls, "numeric", {}, output, expected)
    return sorted(rows, key=lambda r: r["id"])


def measure(rows: list[dict[str, Any]]) -> dict[str, Counter]:
    """Per class: ``rows``, ``misscored`` (prediction != expected), ``unparsed``, ``strict``."""
    from evalpipe.answers.parsers import parse_answer

    counts: dict[str, Counter] = {}
    for row in rows:
        result = parse_answer(row["parser"], row["output"], **row["options"])
        c = counts.setdefault(row["class"], Counter())
        c["rows"] += 1
        c["misscored"] += result.prediction != row["expected"]
        c["unparsed"] += result.status == "unparsed"
        c["strict"] += result.status == "strict"
    return counts


def main(argv: list[str]) -> None:
    if argv[1:] == ["build"]:
        lines = [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in build()]
        CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{len(lines)} rows -> {CORPUS}")
        return
    if argv[1:] != ["measure"]:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    counts = measure(rows)
    print(f"{'class':40} {'rows':>5} {'mis-scored':>10} {'unparsed':>8} {'strict':>6}")
    total = Counter()
    for cls in sorted(counts):
        c = counts[cls]
        total.update(c)
        print(f"{cls:40} {c['rows']:5} {c['misscored']:10} {c['unparsed']:8} {c['strict']:6}")
    print(f"{'total':40} {total['rows']:5} {total['misscored']:10} {total['unparsed']:8} "
          f"{total['strict']:6}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv)
