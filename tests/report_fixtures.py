"""Small inputs in the real artifact schemas for the report tests (the pairs-derived impact
tables' columns included). Built by hand so the tests know every expected value."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pandas as pd

from evalpipe.report import ReportData

MODEL = "tiny-random@ae468db6d094"

IMPACT_COLUMNS = [
    "model",
    "language",
    "source",
    "scope",
    "word",
    "lemma",
    "pos",
    "rank",
    "frequency_score",
    "occurrences",
    "perturbed_occurrences",
    "n",
    "accuracy_original",
    "accuracy_perturbed",
    "delta",
    "ci_low",
    "ci_high",
    "pdr",
    "flip_c2i",
    "flip_i2c",
    "n_c2i",
    "n_i2c",
    "mcnemar_p",
    "p_holm",
    "p_bh",
    "per_occurrence_impact",
    "unparsed_rate",
    "small_n",
]


def impact_row(**kw) -> dict:
    row = {
        "model": MODEL,
        "language": "english",
        "source": "wordfreq",
        "scope": "pooled",
        "word": "the",
        "lemma": None,
        "pos": None,
        "rank": 1,
        "frequency_score": 7.73,
        "occurrences": 40,
        "perturbed_occurrences": 22,
        "n": 30,
        "accuracy_original": 0.6,
        "accuracy_perturbed": 0.5,
        "delta": -0.1,
        "ci_low": -0.2,
        "ci_high": 0.0,
        "pdr": 0.1667,
        "flip_c2i": 0.1333,
        "flip_i2c": 0.0333,
        "n_c2i": 4,
        "n_i2c": 1,
        "mcnemar_p": 0.375,
        "p_holm": 1.0,
        "p_bh": 0.75,
        "per_occurrence_impact": 0.0045,  # stored positive = harm, as word_impact writes it
        "unparsed_rate": 0.05,
        "small_n": False,
    }
    row.update(kw)
    return row


def words_frame() -> pd.DataFrame:
    rows = [
        impact_row(word="the", rank=1, delta=-0.1, ci_low=-0.2, ci_high=0.0, unparsed_rate=0.2),
        impact_row(word="of", rank=2, delta=-0.25, ci_low=-0.4, ci_high=-0.1, p_holm=0.01),
        impact_row(word="and", rank=3, delta=0.05, ci_low=-0.05, ci_high=0.15),
        impact_row(word="to", rank=4, delta=None, ci_low=None, ci_high=None, n=0, small_n=True),
        impact_row(word="of", rank=2, scope="gsm8k", delta=-0.3, n=10, small_n=True),
        impact_row(
            language="japanese",
            word="する",
            lemma="為る",
            pos="動詞-非自立可能",
            rank=1,
            delta=-0.15,
            ci_low=-0.3,
            ci_high=-0.02,
        ),
        impact_row(
            language="japanese", word="の", lemma="の", pos="助詞-格助詞", rank=2, delta=-0.02
        ),
        impact_row(
            language="japanese", word="日本", rank=7, delta=-0.05, scope="jnli", n=3, small_n=True
        ),
    ]
    return pd.DataFrame(rows, columns=IMPACT_COLUMNS)


def keyed_frame(key: str, values: list[tuple[str, str, float]]) -> pd.DataFrame:
    rows = []
    for language, value, delta in values:
        row = impact_row(language=language, delta=delta, ci_low=delta - 0.1, ci_high=delta + 0.1)
        for col in ("word", "lemma", "pos", "rank", "frequency_score"):
            row.pop(col)
        row[key] = value
        rows.append(row)
    return pd.DataFrame(rows)


def scored_frame() -> pd.DataFrame:
    """jnli: two examples; e1 original right, perturbed (word 日本) wrong -> a flip."""
    fields_e1 = {"sentence1": "日本の首都は東京です。", "sentence2": "東京は日本にある。"}
    fields_e2 = {"sentence1": "猫が寝ている。", "sentence2": "犬が走る。"}
    edit = {
        "field": "sentence1",
        "occurrence": 0,
        "start": 0,
        "end": 2,
        "original": "日本",
        "perturbed": "日木",
        "op": "replace",
        "position": 1,
        "original_char": "本",
        "new_char": "木",
    }
    # As the generate stage writes them: the language and the typo draw ride along.
    base = {
        "benchmark": "jnli",
        "language": "japanese",
        "draw": 0,
        "condition": "typo",
        "task_type": "nli",
        "model": MODEL,
        "model_id": MODEL,
        "answer": "entailment",
        "gold": "entailment",
        "finish_reason": "stop",
        "seed": 1,
        "occurrences": 0,
        "perturbed_occurrences": 0,
    }
    perturbed_fields = dict(fields_e1, sentence1="日木の首都は東京です。")
    rows = [
        dict(
            base,
            example_id="e1",
            variant="original",
            word_rank=0,
            fields=json.dumps(fields_e1, ensure_ascii=False, sort_keys=True),
            perturbations=[],
            prompt="前提：日本の首都は東京です。\n仮説：東京は日本にある。",
            output="entailment",
            prediction="entailment",
            parse_status="strict",
            correct=True,
            score=1.0,
        ),
        dict(
            base,
            example_id="e1",
            variant="日本",
            word_rank=7,
            fields=json.dumps(perturbed_fields, ensure_ascii=False, sort_keys=True),
            perturbations=[edit],
            occurrences=1,
            perturbed_occurrences=1,
            prompt="前提：日木の首都は東京です。\n仮説：東京は日本にある。",
            output="矛盾 <script>alert(1)</script>",
            prediction="contradiction",
            parse_status="fallback",
            correct=False,
            score=0.0,
        ),
        dict(
            base,
            example_id="e2",
            variant="original",
            word_rank=0,
            answer="neutral",
            gold="neutral",
            fields=json.dumps(fields_e2, ensure_ascii=False, sort_keys=True),
            perturbations=[],
            prompt="前提：猫が寝ている。\n仮説：犬が走る。",
            output="",
            prediction=None,
            parse_status="unparsed",
            correct=False,
            score=0.0,
            finish_reason="length",
        ),
    ]
    return pd.DataFrame(rows)


PAIR_KEYS = ["model", "view", "method", "benchmark", "language", "example_id", "variant",
             "word_rank", "draw", "condition", "correct_original", "correct_perturbed"]  # fmt: skip


def pairs_frame(scored: pd.DataFrame) -> pd.DataFrame:
    """The report's columns of ``data/scored/<model>/pairs.parquet`` for a generated-answer view:
    each perturbed row beside its example's original row, per model (the ``model`` column)."""
    rows = []
    for (model, bench), group in scored.groupby(["model", "benchmark"], sort=False):
        is_original = group["variant"] == "original"
        originals = group[is_original].drop_duplicates("example_id").set_index("example_id")
        for _, row in group[~is_original].iterrows():
            if row["example_id"] not in originals.index:
                continue
            rows.append(
                {
                    "model": model,
                    "view": bench,
                    "method": "generate",
                    "benchmark": bench,
                    "language": row.get("language"),
                    "example_id": row["example_id"],
                    "variant": row["variant"],
                    "word_rank": int(row["word_rank"]),
                    "draw": int(row.get("draw", 0)),
                    "condition": "typo",
                    "correct_original": bool(originals.loc[row["example_id"], "correct"]),
                    "correct_perturbed": bool(row["correct"]),
                }
            )
    return pd.DataFrame(rows, columns=PAIR_KEYS)


def scored_view(perturbed: pd.DataFrame, *, model: str) -> pd.DataFrame:
    """A perturbed set as the model's scored view: every original answer right, every typo'd
    one wrong (so every perturbed row is a wrong-answer example)."""
    original = perturbed["variant"] == "original"
    return perturbed.assign(
        model=model, correct=original, score=original.astype(float), output="x", prediction="x",
        parse_status="strict", finish_reason="stop", gold="A",
    )  # fmt: skip


def write_typo_sets(paths, sets: dict, model: str) -> None:
    """Perturb output (``{benchmark: (frame, summary)}``) as the score stage passes it on: each
    frame as the model's scored view, the summaries in its ``perturbation.json``."""
    from evalpipe import atomic

    for name, (frame, _) in sets.items():
        atomic.write_parquet(paths.scored(name, model), frame)
    summaries = {name: summary for name, (_, summary) in sets.items()}
    atomic.write_json(paths.scored_dir(model) / "perturbation.json", summaries)


def robustness() -> dict:
    return {
        "jnli": {
            "accuracy_base": 0.5,
            "accuracy_original": 0.6,
            "accuracy_perturbed": 0.45,
            "ci_high": -0.05,
            "ci_low": -0.25,
            "delta": -0.15,
            "flip_c2i": 0.2,
            "flip_i2c": 0.05,
            "mcnemar_p": 0.0414,
            "n": 40,
            "n_c2i": 8,
            "n_i2c": 2,
            "pdr": 0.25,
            "unparsed": 3,
            "unparsed_rate": 0.05,
            "accuracy_strict": 0.4,
            "accuracy_flexible": 0.6,
            "truncated_rate": 0.025,
        },
        "gsm8k": {
            "accuracy_original": 0.0,
            "accuracy_perturbed": 0.0,
            "delta": 0.0,
            "ci_low": 0.0,
            "ci_high": 0.0,
            "n": 46,
            "pdr": None,
            "mcnemar_p": 1.0,
            "unparsed_rate": 0.65,
        },
    }


def classification() -> dict:
    return {
        "jnli": {
            "accuracy": 0.5,
            "n": 2,
            "f1_macro": 0.33,
            "invalid": 1,
            "unparsed": 1,
            "confusion": {
                "entailment": {"entailment": 1, "contradiction": 0, "neutral": 0},
                "contradiction": {"entailment": 0, "contradiction": 0, "neutral": 0},
                "neutral": {"entailment": 0, "contradiction": 0, "neutral": 0},
            },
        }
    }


def kappa_report() -> dict:
    return {
        "annotators": ["ann_001", "ann_002"],
        "axes": {
            "social": {
                "kappa": 0.9078,
                "kappa_ci": [0.8022, 0.9647],
                "alpha": 0.88,
                "alpha_ci": [0.74, 0.96],
                "ac2": 0.96,
                "ac2_ci": [0.91, 0.98],
                "n_items": 30,
            },
            "self": {
                "kappa": 0.62,
                "kappa_ci": [0.4, 0.8],
                "alpha": 0.6,
                "alpha_ci": [0.4, 0.8],
                "ac2": 0.9,
                "ac2_ci": [0.8, 0.95],
                "n_items": 30,
            },
        },
        "annotator_kappas": {
            "ann_001": {"social": 0.92, "self": 0.6, "overall": 0.8},
            "ann_002": {"social": 0.9, "self": 0.64, "overall": 0.81},
        },
        "bootstrap": {"samples": 1000, "confidence_level": 0.95},
        "judge_vs_consensus": {
            "llm:tiny-random": {
                "social": {
                    "kappa": 0.1,
                    "raw_agreement": 0.3,
                    "within_one_agreement": 0.6,
                    "n": 27,
                },
                "self": {"kappa": 0.0, "raw_agreement": 0.2, "within_one_agreement": 0.5, "n": 27},
            }
        },
        "markers_vs_consensus": {
            "markers": {
                "social": {"kappa": 0.7, "raw_agreement": 0.6, "within_one_agreement": 0.9, "n": 27}
            }
        },
        "excluded_annotators": [],
    }


def full_data() -> ReportData:
    return ReportData(
        provenance={
            "models": [MODEL],
            "params": {
                "models": {"tiny-random": {"name": "tiny-random"}},
                "prompt": {"style": "zero_shot"},
            },
            "inputs": {"metrics/robustness.json": "0123456789ab"},
        },
        robustness=robustness(),
        classification=classification(),
        agreement={"annotators": 2, "social": {"kappa": 0.9078, "judge_kappa": 0.1}},
        kappa_report=kappa_report(),
        rejected=[
            {"id": "sample_008", "reasons": ["low agreement on self: [1, 3]"], "ratings": {}}
        ],
        words=words_frame(),
        operations=keyed_frame(
            "op",
            [
                ("english", "replace", -0.1),
                ("english", "delete", -0.2),
                ("japanese", "insert", 0.0),
            ],
        ),
        scripts=keyed_frame(
            "script", [("japanese", "kanji", -0.12), ("japanese", "hiragana", -0.01)]
        ),
        scored={"jnli": scored_frame()},
        pairs=pairs_frame(scored_frame()),
        languages={"jnli": "japanese", "gsm8k": "english"},
    )


def study_frames(n_examples: int = 12) -> tuple[dict, dict, dict]:
    """A jnli run for the real impact tables: three target words, each typo'd in every example;
    the model loses the answer on 日本 for two thirds of the examples, never on の."""
    words = {
        "japanese": pd.DataFrame(
            {
                "rank": [1, 2, 3],
                "word": ["の", "日本", "する"],
                "lemma": ["の", "日本", "為る"],
                "pos": ["助詞-格助詞", "名詞-固有名詞", "動詞-非自立可能"],
                "score": [40000.0, 900.0, 800.0],
                "source": ["wordfreq"] * 3,
            }
        )
    }
    text = "日本の人が旅行する。"
    spans = {
        "の": (2, 3, "の", "な"),
        "日本": (0, 2, "日本", "日木"),
        "する": (7, 9, "する", "すろ"),
    }
    rows = []
    for i in range(n_examples):
        eid = f"e{i:02d}"
        base = {
            "benchmark": "jnli",
            "example_id": eid,
            "language": "japanese",
            "model": MODEL,
            "answer": "entailment",
            "gold": "entailment",
            "finish_reason": "stop",
            "prompt": f"前提：{text}",
        }
        rows.append(
            dict(
                base,
                variant="original",
                word_rank=0,
                fields=json.dumps({"premise": text}, ensure_ascii=False),
                perturbations=[],
                occurrences=0,
                perturbed_occurrences=0,
                output="entailment",
                prediction="entailment",
                parse_status="strict",
                correct=True,
            )
        )
        for rank, word in ((1, "の"), (2, "日本"), (3, "する")):
            start, end, orig, pert = spans[word]
            wrong = (word == "日本" and i % 3 != 0) or (word == "する" and i % 4 == 0)
            edit = {"field": "premise", "occurrence": 0, "start": start, "end": end,
                    "original": orig, "perturbed": pert, "op": "replace", "position": start,
                    "original_char": orig[-1], "new_char": pert[-1]}  # fmt: skip
            rows.append(
                dict(
                    base,
                    variant=word,
                    word_rank=rank,
                    fields=json.dumps(
                        {"premise": text[:start] + pert + text[end:]}, ensure_ascii=False
                    ),
                    perturbations=[edit],
                    occurrences=1,
                    perturbed_occurrences=1,
                    output="neutral" if wrong else "entailment",
                    prediction="neutral" if wrong else "entailment",
                    parse_status="strict",
                    correct=not wrong,
                )
            )
    scored = pd.DataFrame(rows)
    scored["score"] = scored["correct"].astype(float)
    perturbed = scored[["benchmark", "example_id", "word_rank", "variant", "perturbations"]]
    return {"jnli": scored}, {"jnli": perturbed}, words


def section_ids(page: str) -> list[str]:
    """The ids of the report's top-level sections, in page order."""
    return re.findall(r'<section id="([^"]+)"><h2>', page)


def section_body(page: str, section_id: str) -> str:
    """The HTML of one top-level section."""
    return page.split(f'<section id="{section_id}">', 1)[1].split("</section>", 1)[0]


class _Table(HTMLParser):
    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.depth = table_id, 0
        self.headers: list[str] = []
        self.titles: list[str | None] = []
        self.rows: list[list[tuple[str, str]]] = []
        self.cell: list[str] | None = None
        self.css = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and (self.depth or attrs.get("id") == self.table_id):
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("th", "td"):
            self.cell, self.css = [], attrs.get("class") or ""
            if tag == "th":
                self.titles.append(attrs.get("title"))

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth and tag in ("th", "td") and self.cell is not None:
            text = "".join(self.cell).strip()
            if tag == "th" and len(self.rows) == 1:
                self.headers.append(text)
            else:
                self.rows[-1].append((text, self.css))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def html_table(page: str, table_id: str) -> tuple[list[str], list[dict[str, str]], list[dict]]:
    """``(headers, rows, classes)`` of the table with ``table_id``: each row maps a header to its
    cell text (``classes`` to the cell's CSS classes); a repeated header keeps its first cell.
    Raises KeyError when the page has no such table."""
    parser = _Table(table_id)
    parser.feed(page)
    if not parser.headers:
        raise KeyError(table_id)
    rows, classes = [], []
    for cells in parser.rows[1:]:
        row: dict[str, str] = {}
        css: dict[str, str] = {}
        for header, (text, cls) in zip(parser.headers, cells, strict=True):
            row.setdefault(header, text)
            css.setdefault(header, cls)
        rows.append(row)
        classes.append(css)
    return parser.headers, rows, classes


def header_titles(page: str) -> list[tuple[str, str]]:
    """``(label, title)`` of every table header that has a title."""
    return [
        (label, title) for title, label in re.findall(r'<th title="([^"]*)">([^<]*)</th>', page)
    ]


# --- typo models: real perturb_frame output on two small benchmarks ---------------------------

TYPO_EN_WORDS = pd.DataFrame(
    {"rank": [1, 2, 3, 4], "word": ["the", "of", "and", "a"], "lemma": [None] * 4,
     "pos": [None] * 4, "score": [4.0, 3, 2, 1]}
)  # fmt: skip
# Words with homophones in the UniDic table (機会/機械/器械, 意外/以外) and a kana particle.
TYPO_JA_WORDS = pd.DataFrame(
    {"rank": [1, 2, 3], "word": ["機会", "意外", "の"], "lemma": [None] * 3, "pos": [None] * 3,
     "score": [3.0, 2, 1]}
)  # fmt: skip


def typo_benchmark(name: str, language: str, texts: list[str]) -> pd.DataFrame:
    """Benchmark rows in the contract's columns (docs/architecture.md), one question each."""
    n = len(texts)
    return pd.DataFrame(
        {
            "benchmark": [name] * n,
            "example_id": [f"q{i:02d}" for i in range(n)],
            "subtask": [None] * n,
            "language": [language] * n,
            "task_type": ["mc"] * n,
            "fields": [json.dumps({"question": t}, ensure_ascii=False) for t in texts],
            "perturbable": [["question"]] * n,
            "choices": [None] * n,
            "answer": ["A"] * n,
            "answers": [["A"]] * n,
            "labels": [["A", "B", "C", "D"]] * n,
        }
    )


def typo_sets(model: str = "keyboard", **probs: float) -> dict[str, tuple[pd.DataFrame, dict]]:
    """``{benchmark: (perturbed frame, summary)}`` as perturb@mmlu and perturb@jsquad make them
    with the typo model ``model`` (every kind likely, unless ``probs`` says otherwise)."""
    from evalpipe.perturb import Probabilities, perturb_frame

    p = {"replace": 0.2, "insert": 0.2, "delete": 0.2, "transpose": 0.2, "conversion": 0.2}
    p.update(probs)
    probabilities = Probabilities(
        p["replace"], p["insert"], p["delete"], p["transpose"], p["conversion"], model=model
    )
    english = typo_benchmark(
        "mmlu", "english", ["The cat and the dog of a house", "the a of and the"] * 4
    )
    japanese = typo_benchmark(
        "jsquad", "japanese", ["これは機会です。意外の話。", "日本の機会があります。"] * 5
    )
    out = {}
    for bench, words in ((english, TYPO_EN_WORDS), (japanese, TYPO_JA_WORDS)):
        result = perturb_frame(bench, words, probabilities=probabilities, seed=7)
        out[str(bench["benchmark"].iloc[0])] = (result.table.to_pandas(), result.summary)
    return out
