"""Log-likelihood scoring between the specs and the score stage: which benchmarks it applies to,
the continuation each spec scores, the ``ll_*`` outputs columns, the scored frame the reports
read, and the agreement with generation scoring. The last test runs the tiny model on the vLLM
CPU build."""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe import atomic
from evalpipe.benchmarks import build_prompts, get_spec, list_specs, load_benchmark, load_spec
from evalpipe.errors import InputError
from evalpipe.inference.loglikelihood import (
    LL_COLUMNS,
    loglikelihood_columns,
    loglikelihood_requests,
    not_applicable_reason,
)
from evalpipe.inference.types import Loglikelihood
from evalpipe.scoring.loglikelihood import cohen_kappa, method_agreement, score_loglikelihood
from evalpipe.scoring.pairs import build_pairs
from evalpipe.scoring.scorer import score_frame
from evalpipe.scoring.summaries import ClassificationSetup, build_reports
from tests.scoring_fixtures import make_outputs

REPO = Path(__file__).resolve().parents[1]
LOCAL = REPO / "data" / "raw" / "benchmarks"
APPLICABLE = {
    "mmlu", "imdb", "jamp", "jnli", "jcommonsenseqa", "ja_sentiment", "lawqa", "lawqa_orders",
    "my_mc",
}  # fmt: skip


def _sample_prompts(name: str, style: str, n: int | None = None) -> tuple[pd.DataFrame, list[str]]:
    spec = get_spec(name, LOCAL)
    rows, pool = load_benchmark(spec, source="sample")
    rows = rows.head(n) if n else rows
    return rows, build_prompts(spec, rows, pool, style=style, n_shots=2)


# --- which benchmarks ------------------------------------------------------------------------


def test_applies_exactly_to_the_benchmarks_with_a_fixed_label_space() -> None:
    reasons = {s.name: not_applicable_reason(s) for s in list_specs(LOCAL)}
    assert {n for n, r in reasons.items() if r is None} == APPLICABLE
    for name in ("gsm8k", "niilc", "jsquad"):
        assert reasons[name].startswith(f"{name}: answer type ")
        assert "free-form" in reasons[name] and "generation only" in reasons[name]
    # BBH's reason is declared in its spec, not derived
    assert reasons["bbh"].startswith("bbh: BBH has no fixed label space")
    for name in ("gsm8k", "bbh"):
        requests, reason = loglikelihood_requests(get_spec(name), ["Q: 1+1?\nA:"])
        assert requests is None and reason == reasons[name]


def test_chain_of_thought_prompts_are_not_applicable() -> None:
    requests, reason = loglikelihood_requests(get_spec("mmlu"), ["Q"], style="cot")
    assert requests is None and "chain-of-thought" in reason
    assert not_applicable_reason(get_spec("mmlu"), style="few_shot") is None


# --- which continuations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cue", "continuations"),
    [
        ("mmlu", "", [" A", " B", " C", " D"]),
        ("jnli", "", ["entailment", "contradiction", "neutral"]),
        ("jamp", "", ["entailment", "contradiction", "neutral"]),
        ("jcommonsenseqa", "", ["0", "1", "2", "3", "4"]),
        ("lawqa", "", ["a", "b", "c", "d"]),
        ("imdb", "\nSentiment:", [" positive", " negative"]),
        ("ja_sentiment", '\n出力: {"label": "', ["positive", "neutral", "negative"]),
    ],
)
def test_each_spec_scores_its_labels_right_after_the_raw_prompt(
    name: str, cue: str, continuations: list[str]
) -> None:
    _, prompts = _sample_prompts(name, "zero_shot", 3)
    requests, reason = loglikelihood_requests(get_spec(name), prompts)
    assert reason == "" and requests is not None and len(requests) == len(prompts)
    for prompt, row in zip(prompts, requests, strict=True):
        assert [r.context for r in row] == [prompt + cue] * len(continuations)
        assert [r.continuation for r in row] == continuations


@pytest.mark.parametrize("name", ["mmlu", "jnli", "jamp", "jcommonsenseqa", "imdb", "ja_sentiment"])
def test_the_continuation_is_written_as_the_few_shot_demonstrations_answer(name: str) -> None:
    """A demonstration's answer, in the few-shot prompt, reads exactly like the end of the
    scored context followed by the gold's continuation: the model is asked to continue the
    pattern it was shown."""
    _, prompts = _sample_prompts(name, "few_shot", 4)
    spec = get_spec(name)
    requests, _ = loglikelihood_requests(spec, prompts)
    _, pool = load_benchmark(spec, source="sample")
    targets = set(pool["target"].astype(str))
    for prompt, row in zip(prompts, requests, strict=True):
        tail = row[0].context[-6:]
        shown = [
            r.continuation
            for r, label in zip(row, spec.labels, strict=True)
            if label in targets and tail + r.continuation in prompt
        ]
        assert shown, (name, tail, prompt[-300:])


def _spec_file(tmp_path: Path, block: str) -> Path:
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "test.jsonl").write_text("", encoding="utf-8")
    path = folder / "spec.yaml"
    path.write_text(
        "include: [english, local]\ntask_type: mc\nlabels: [A, B, C, D]\n"
        "sources:\n  files: {reader: json, test: [test.jsonl]}\n"
        "mapping: {fields: {Question: q}, choices: choices, answer: answer}\n"
        "answer: {type: choice_letter}\n" + block,
        encoding="utf-8",
    )
    return path


def test_choice_texts_as_continuations_and_rows_with_fewer_choices(tmp_path: Path) -> None:
    spec = load_spec(_spec_file(tmp_path, 'loglikelihood: {choice: "{{ choice }}"}\n'))
    requests, _ = loglikelihood_requests(
        spec, ["Q1\nAnswer:", "Q2\nAnswer:"], choices=[["4/12", "7/8", "1/2"], ["yes", "no"]]
    )
    assert [r.continuation for r in requests[0]] == [" 4/12", " 7/8", " 1/2"]
    assert [r.continuation for r in requests[1]] == [" yes", " no"]
    columns = loglikelihood_columns(
        spec, requests, [Loglikelihood(-1.0 * i, 1, False) for i in range(1, 6)]
    )
    assert columns["ll_choices"].tolist() == [["A", "B", "C"], ["A", "B"]]
    with pytest.raises(InputError, match="5 choices for the 4 labels"):
        loglikelihood_requests(spec, ["Q"], choices=[["1", "2", "3", "4", "5"]])
    with pytest.raises(InputError, match="give the same continuation"):
        loglikelihood_requests(spec, ["Q"], choices=[["same", "same"]])
    with pytest.raises(InputError, match=r"loglikelihood\.choice.*needs the rows' choices"):
        loglikelihood_requests(spec, ["Q"])


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("loglikelihood: {sep: ' '}\n", r"loglikelihood: unknown key\(s\) \['sep'\]"),
        ("loglikelihood: {separator: 1}\n", r"loglikelihood.separator: expected a string"),
        ("loglikelihood: {choice: '{{ label '}\n", r"loglikelihood.choice: not a valid template"),
        ("loglikelihood: {not_applicable: ''}\n", r"not_applicable: expected the reason"),
        ("loglikelihood: [1]\n", r"loglikelihood: expected a mapping"),
    ],
)
def test_a_bad_loglikelihood_block_names_the_file_and_key(
    tmp_path: Path, block: str, message: str
) -> None:
    path = _spec_file(tmp_path, block)
    with pytest.raises(InputError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_a_spec_may_declare_itself_not_applicable(tmp_path: Path) -> None:
    spec = load_spec(_spec_file(tmp_path, "loglikelihood: {not_applicable: options vary}\n"))
    assert loglikelihood_requests(spec, ["Q"]) == (None, "toy: options vary")


# --- engine results -> columns -> scored frame ---------------------------------------------------


def _with_ll(frame: pd.DataFrame, logprobs: list[list[float] | None], conts=None) -> pd.DataFrame:
    spec = get_spec(frame["benchmark"].iloc[0])
    requests, _ = loglikelihood_requests(spec, frame["prompt"].tolist())
    results = [
        Loglikelihood(lp, 1 + j, j == 0)
        for row in logprobs
        for j, lp in enumerate(row or [0.0] * len(spec.labels))
    ]
    columns = loglikelihood_columns(spec, requests, results)
    if conts is not None:
        columns["ll_continuations"] = conts
    for i, row in enumerate(logprobs):
        if row is None:  # a row the engine never scored
            for c in LL_COLUMNS:
                columns.at[i, c] = None
    return pd.concat([frame.reset_index(drop=True), columns], axis=1)


def test_columns_hold_one_entry_per_choice() -> None:
    frame = make_outputs("jnli", n_examples=2).head(2)
    out = _with_ll(frame, [[-1.0, -2.0, -3.0], [-3.0, -2.0, -1.0]])
    assert out.loc[0, "ll_choices"] == ["entailment", "contradiction", "neutral"]
    assert out.loc[0, "ll_continuations"] == ["entailment", "contradiction", "neutral"]
    assert out.loc[1, "ll_logprobs"] == [-3.0, -2.0, -1.0]
    assert out.loc[1, "ll_tokens"] == [1, 2, 3]
    assert out.loc[1, "ll_greedy"] == [True, False, False]
    with pytest.raises(InputError, match="2 log-likelihood results for 6 requests"):
        loglikelihood_columns(
            get_spec("jnli"),
            loglikelihood_requests(get_spec("jnli"), ["a", "b"])[0],
            [Loglikelihood(-1.0, 1, True)] * 2,
        )


def test_acc_picks_the_argmax_and_acc_norm_the_best_per_character() -> None:
    frame = make_outputs("mmlu", n_examples=4).query("variant == 'original'").head(3)
    # golds A, B, C; row 0: the gold has the highest total
    # row 1: " D" wins the total, but the gold's continuation is longer and better per character
    conts = [[" A", " B", " C", " D"], [" A", " B, seven eighths", " C", " D"], None]
    logprobs = [[-0.5, -2.0, -3.0, -4.0], [-9.0, -3.4, -9.0, -0.5], [-2.0, -1.0, -3.0, -4.0]]
    ll = _with_ll(frame, logprobs)
    ll.at[1, "ll_continuations"] = conts[1]
    spec = get_spec("mmlu")
    acc = score_loglikelihood(ll, spec, normalised=False, source="mmlu.parquet")
    norm = score_loglikelihood(ll, spec, normalised=True, source="mmlu.parquet")
    assert acc["gold"].tolist() == ["A", "B", "C"]
    assert acc["prediction"].tolist() == ["A", "D", "B"]
    assert norm["prediction"].tolist() == ["A", "B", "B"]
    assert acc["correct"].tolist() == [True, False, False]
    assert norm["correct"].tolist() == [True, True, False]
    assert acc["score"].tolist() == [1.0, 0.0, 0.0]
    assert set(acc["parse_status"]) == {"strict"}
    extra = json.loads(acc.loc[1, "parse_extra"])
    assert extra == {
        "acc": "D", "acc_norm": "B", "gold_choices": [1], "greedy": False,
        "method": "loglikelihood", "normalised": False,
    }  # fmt: skip
    assert json.loads(norm.loc[1, "parse_extra"])["normalised"] is True


def test_rows_without_log_probabilities_are_unparsed_never_dropped() -> None:
    frame = make_outputs("jnli", n_examples=6).query("variant == 'original'").head(5)
    ll = _with_ll(
        frame,
        [
            [-1.0, -2.0, -3.0],
            None,  # never scored
            [-1.0, float("nan"), -3.0],
            [-math.inf] * 3,
            [-3.0, -2.0, -1.0],
        ],
    )
    ll.at[4, "ll_logprobs"] = [-3.0, -2.0]  # fewer scores than choices
    scored = score_loglikelihood(ll, get_spec("jnli"), normalised=False)
    assert len(scored) == 5
    assert scored["parse_status"].tolist() == ["strict"] + ["unparsed"] * 4
    assert scored["prediction"].tolist()[1:] == [None] * 4
    assert not scored["correct"].iloc[1:].any()
    reasons = [json.loads(x).get("reason") for x in scored["parse_extra"]]
    assert reasons == [
        None,
        "no log-probabilities",
        "a log-probability is NaN",
        "no finite log-probability",
        "2 log-probabilities, 3 continuations for 3 choices",
    ]


def test_gold_goes_through_the_specs_normaliser() -> None:
    frame = pd.DataFrame(
        {
            "benchmark": ["lawqa", "lawqa"],
            "example_id": ["q1", "q2"],
            "variant": ["original", "original"],
            "word_rank": [0, 0],
            "prompt": ["p1\n\n### 応答:\n", "p2\n\n### 応答:\n"],
            # full-width and a 1-based digit, as lawqa's publisher writes them
            "answer": ["Ｃ", "2"],
        }
    )
    ll = _with_ll(frame, [[-4.0, -3.0, -1.0, -2.0], [-4.0, -1.0, -3.0, -2.0]])
    scored = score_loglikelihood(ll, get_spec("lawqa"), normalised=False)
    assert scored["gold"].tolist() == ["c", "b"]
    assert scored["prediction"].tolist() == ["c", "b"]
    assert scored["correct"].all()
    assert scored["output"].isna().all()  # no generation: the column is there, empty


def _ll_outputs(name: str, seed: int = 0) -> pd.DataFrame:
    """make_outputs rows with log-probabilities: the gold is favoured on ~70% of rows."""
    frame = make_outputs(name, n_examples=12, seed=seed)
    labels = get_spec(name).labels
    rng = np.random.default_rng(seed + 1)
    logprobs = []
    for gold in frame["answer"]:
        values = rng.normal(-5.0, 1.0, size=len(labels))
        if rng.random() < 0.7:
            values[labels.index(gold)] = values.max() + 1.0
        logprobs.append([float(v) for v in values])
    logprobs[3] = None
    return _with_ll(frame, logprobs)


def test_scored_frame_has_score_frames_schema_and_build_reports_reads_it(tmp_path: Path) -> None:
    reports_in, classification = {}, {}
    for name in ("mmlu", "jnli", "imdb"):
        spec = get_spec(name)
        outputs = _ll_outputs(name)
        # the generate stage writes the ll_* lists to Parquet: read back, they are arrays
        path = tmp_path / f"{name}.parquet"
        atomic.write_parquet(path, outputs)
        outputs = pd.read_parquet(path)
        assert isinstance(outputs.loc[0, "ll_logprobs"], np.ndarray)
        generated = score_frame(
            outputs, parser=spec.parser, metric=spec.metric, parser_options=spec.parser_options
        )
        scored = score_loglikelihood(outputs, spec, normalised=False, source=str(path))
        assert scored.columns.tolist() == generated.columns.tolist()
        assert scored.dtypes.astype(str).tolist() == generated.dtypes.astype(str).tolist()
        assert scored[["example_id", "variant"]].equals(generated[["example_id", "variant"]])
        assert (scored["finish_reason"] == "loglikelihood").all()
        reports_in[name] = scored
        classification[name] = ClassificationSetup(labels=list(spec.labels))
    reports = build_reports(reports_in, build_pairs(reports_in, model="m"),
                            classification=classification, level=0.95, margin=0.02)  # fmt: skip
    for name, scored in reports_in.items():
        originals = scored.loc[scored["variant"] == "original"]
        robustness = reports.robustness[name]
        assert robustness["accuracy_original"] == pytest.approx(
            originals["correct"].mean(), abs=1e-4
        )
        # a chosen label is a committed answer: strict and flexible accuracy agree
        assert robustness["accuracy_strict"] == robustness["accuracy_flexible"]
        assert robustness["truncated_rate"] == 0.0
        assert robustness["unparsed_rate"] == pytest.approx(1 / len(scored), abs=1e-4)
        assert reports.classification[name]["unparsed"] == int(
            (originals["parse_status"] == "unparsed").sum()
        )
        assert reports.classification[name]["accuracy"] == pytest.approx(
            originals["correct"].mean(), abs=1e-4
        )


def test_scoring_a_free_form_benchmark_or_outputs_without_scores_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"gsm8k.parquet: log-likelihood scoring does not apply"):
        score_loglikelihood(make_outputs("gsm8k"), get_spec("gsm8k"), normalised=False,
                            source="gsm8k.parquet")  # fmt: skip
    with pytest.raises(InputError, match=r"mmlu.parquet: no log-likelihood scores .*ll_choices"):
        score_loglikelihood(make_outputs("mmlu"), get_spec("mmlu"), normalised=False,
                            source="mmlu.parquet")  # fmt: skip


# --- agreement -------------------------------------------------------------------------------


def test_method_agreement_and_kappa_match_scikit_learn() -> None:
    spec = get_spec("mmlu")
    outputs = _ll_outputs("mmlu", seed=3)
    generated = score_frame(
        outputs, parser=spec.parser, metric=spec.metric, parser_options=spec.parser_options
    )
    ll = score_loglikelihood(outputs, spec, normalised=False)
    # the ll frame in another row order: rows are matched on their keys
    result = method_agreement(generated, ll.iloc[::-1])
    pred_g = generated["prediction"].tolist()
    pred_l = ll["prediction"].tolist()
    same = [a is not None and a == b for a, b in zip(pred_g, pred_l, strict=True)]
    assert result["n"] == len(outputs)
    assert result["agreement"] == pytest.approx(np.mean(same))
    assert 0 < result["generate_unparsed"] == int((generated["parse_status"] == "unparsed").sum())
    assert result["loglikelihood_unparsed"] == 1
    assert result["accuracy_generate"] == pytest.approx(generated["correct"].mean())
    assert result["accuracy_loglikelihood"] == pytest.approx(ll["correct"].mean())
    both = [a is not None and b is not None for a, b in zip(pred_g, pred_l, strict=True)]
    assert result["n_both_parsed"] == sum(both)
    assert result["agreement_both_parsed"] == pytest.approx(
        np.mean([s for s, b in zip(same, both, strict=True) if b])
    )
    reference = cohen_kappa_score(
        ["none" if p is None else p for p in pred_g], ["none" if p is None else p for p in pred_l]
    )
    assert result["kappa"] == pytest.approx(reference, abs=1e-12)
    assert -1.0 <= result["kappa"] <= 1.0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (["A", "B", "A", "B", "C"], ["A", "B", "B", "B", "C"]),
        (["A", "A", "A", "B"], ["B", "B", "B", "A"]),  # worse than chance
        (["x", "y", None, None], ["x", None, None, "y"]),
    ],
)
def test_cohen_kappa_matches_scikit_learn(a: list, b: list) -> None:
    ref = cohen_kappa_score(
        ["-" if x is None else x for x in a], ["-" if x is None else x for x in b]
    )
    assert cohen_kappa(a, b) == pytest.approx(ref, abs=1e-12)


def test_kappa_is_none_where_it_is_undefined_and_rows_must_match() -> None:
    assert cohen_kappa(["A", "A"], ["A", "A"]) is None
    assert cohen_kappa([], []) is None
    spec = get_spec("jnli")
    outputs = _ll_outputs("jnli")
    ll = score_loglikelihood(outputs, spec, normalised=False)
    generated = score_frame(
        outputs, parser=spec.parser, metric=spec.metric, parser_options=spec.parser_options
    )
    with pytest.raises(InputError, match="2 only in the generate scores, 0 only in"):
        method_agreement(generated, ll.iloc[2:])
    with pytest.raises(InputError, match="duplicate rows"):
        method_agreement(pd.concat([generated, generated.head(1)]), ll)


# --- the tiny model on the vLLM CPU build ------------------------------------------------------

MODEL_CFG = {
    "name": "tiny-random",
    "backend": "vllm",
    "dtype": "float32",
    "max_model_len": 2048,
    "gpu_memory_utilization": 0.1,
}


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_tiny_model_scores_real_prompts_and_picks_the_argmax(tmp_path: Path) -> None:
    from evalpipe.inference.engine import make_engine
    from evalpipe.inference.tiny import build_tiny_random, default_model_cache
    from evalpipe.inference.vllm_engine import VLLMBackend

    model_dir, _ = build_tiny_random(default_model_cache(REPO))
    plans = []
    for name, style in (("jnli", "zero_shot"), ("mmlu", "few_shot"), ("imdb", "zero_shot")):
        rows, prompts = _sample_prompts(name, style, 3)
        spec = get_spec(name)
        requests, reason = loglikelihood_requests(spec, prompts, style=style)
        assert reason == ""
        outputs = rows[["benchmark", "example_id", "answer", "answers", "subtask"]].assign(
            variant="original", word_rank=0, prompt=prompts
        )
        plans.append((spec, outputs, requests))
    flat = [r for _, _, reqs in plans for row in reqs for r in row]
    engine = make_engine(MODEL_CFG, cache_dir=tmp_path / "cache", model_cache=model_dir.parent)
    try:
        results = engine.loglikelihood(flat, progress=False)
    finally:
        engine.close()
        VLLMBackend.shutdown_all()
        gc.collect()
    assert all(r.logprob < 0 and r.n_tokens >= 1 for r in results)
    offset = 0
    for spec, outputs, requests in plans:
        n = sum(len(row) for row in requests)
        columns = loglikelihood_columns(spec, requests, results[offset : offset + n])
        offset += n
        frame = pd.concat([outputs.reset_index(drop=True), columns], axis=1)
        acc = score_loglikelihood(frame, spec, normalised=False)
        norm = score_loglikelihood(frame, spec, normalised=True)
        for i, row in frame.iterrows():
            values = np.asarray(row["ll_logprobs"])
            lengths = np.asarray([len(c) for c in row["ll_continuations"]])
            assert acc.loc[i, "prediction"] == spec.labels[int(np.argmax(values))]
            assert norm.loc[i, "prediction"] == spec.labels[int(np.argmax(values / lengths))]
            assert acc.loc[i, "parse_status"] == "strict"
            assert acc.loc[i, "correct"] == (acc.loc[i, "prediction"] == acc.loc[i, "gold"])
        if spec.name == "jnli":
            # labels of 10, 13 and 7 characters: acc_norm divides by these lengths
            assert sorted(set(lengths)) == [7, 10, 13]
