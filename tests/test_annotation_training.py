"""Training examples and the qualification test: content checks and scoring."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from evalpipe.annotation.guidelines import examples
from evalpipe.annotation.qualification import (
    qualification_items,
    qualification_reference,
    qualification_tasks,
    score_qualification,
)
from evalpipe.annotation.quality import check_consistency
from evalpipe.annotation.schema import (
    AXES,
    LABELS,
    Annotation,
    DialoguePair,
    read_tasks,
    sample_tasks_path,
    task_to_dict,
    validate_task,
)
from evalpipe.errors import InputError


def _annotation(item: dict, key: str) -> Annotation:
    return Annotation(item["id"], "reference", "2025-01-01T00:00:00Z", item[key], {})


def test_twenty_worked_examples_five_per_axis_spanning_the_scale():
    exs = examples()
    assert len(exs) == 20
    assert len({e["id"] for e in exs}) == 20
    by_axis = Counter(e["focus_axis"] for e in exs)
    assert by_axis == dict.fromkeys(AXES, 5)
    for axis in AXES:
        # Each axis's five examples show the five anchors, one each.
        levels = sorted(e["gold"][axis] for e in exs if e["focus_axis"] == axis)
        assert levels == list(LABELS), axis
    for e in exs:
        assert validate_task(e, where=e["id"]) == []
        assert set(e["gold"]) == set(AXES) and all(e["gold"][a] in LABELS for a in AXES)
        assert e["rationale"]["ja"].strip() and e["rationale"]["en"].strip()
        assert check_consistency(_annotation(e, "gold"), _pair(e)) == [], e["id"]


def _pair(item: dict) -> DialoguePair:
    return DialoguePair(item["id"], item["user"], item["response"], item["context"])


def test_both_languages_in_examples_and_qualification():
    for items in (examples(), qualification_items()):
        japanese = sum(any(ord(c) > 0x3000 for c in i["response"]) for i in items)
        assert 0.3 < japanese / len(items) < 0.7


def test_qualification_set_is_thirty_valid_tasks_with_reference(tmp_path):
    items = qualification_items()
    assert len(items) == 30
    ids = [i["id"] for i in items]
    assert len(set(ids)) == 30
    # Readable by the project's own task reader (the task format).
    path = tmp_path / "qual.jsonl"
    path.write_text(
        "".join(
            json.dumps(task_to_dict(t), ensure_ascii=False) + "\n" for t in qualification_tasks()
        ),
        encoding="utf-8",
    )
    assert [t.id for t in read_tasks(path)] == ids
    # Not the sample tasks nor the worked examples (training must not leak the test).
    sample_responses = {t.response for t in read_tasks(sample_tasks_path())}
    example_responses = {e["response"] for e in examples()}
    assert not ({i["response"] for i in items} & (sample_responses | example_responses))
    for item in items:
        assert check_consistency(_annotation(item, "reference"), _pair(item)) == [], item["id"]
    ref = qualification_reference()
    for axis in AXES:
        # Every axis needs at least three distinct levels, or kappa against it is degenerate.
        assert len({r[axis] for r in ref.values()}) >= 3, axis


def test_perfect_ratings_pass_with_kappa_one():
    ref = qualification_reference()
    result = score_qualification(ref, ref)
    assert result["passed"] is True
    assert result["overall"] == 1.0
    assert all(result["axes"][a]["kappa"] == 1.0 and result["axes"][a]["n"] == 30 for a in AXES)
    assert result["reason"] is None and result["missing"] == []


def test_per_axis_kappa_matches_sklearn_quadratic_with_fixed_labels():
    ref = qualification_reference()
    rng = np.random.default_rng(7)
    ratings = {
        i: {a: int(np.clip(r[a] + rng.integers(-1, 2), 1, 5)) for a in AXES} for i, r in ref.items()
    }
    result = score_qualification(ratings, ref)
    for axis in AXES:
        ids = sorted(ref)
        expected = cohen_kappa_score(
            [ratings[i][axis] for i in ids],
            [ref[i][axis] for i in ids],
            labels=list(LABELS),
            weights="quadratic",
        )
        assert result["axes"][axis]["kappa"] == pytest.approx(expected, abs=1e-4)
    kappas = [result["axes"][a]["kappa"] for a in AXES]
    assert result["overall"] == pytest.approx(np.mean(kappas), abs=1e-4)
    assert result["passed"] is (result["overall"] >= 0.60)


def test_straight_lining_fails_and_shows_per_axis_result():
    ref = qualification_reference()
    ones = {i: dict.fromkeys(AXES, 1) for i in ref}
    result = score_qualification(ones, ref)
    assert result["passed"] is False
    for axis in AXES:
        assert result["axes"][axis]["kappa"] == 0.0
        assert result["axes"][axis]["passed"] is False
    assert "below 0.60" in result["reason"]


def test_threshold_is_inclusive_and_configurable():
    ref = qualification_reference()
    ratings = {i: dict(r) for i, r in ref.items()}
    ratings["qual_002"]["social"] = 1  # one large miss lowers social below 1
    result = score_qualification(ratings, ref, threshold=0.0)
    assert result["passed"] is True
    exact = score_qualification(ratings, ref, threshold=result["overall"])
    assert exact["passed"] is True
    above = score_qualification(ratings, ref, threshold=result["overall"] + 1e-3)
    assert above["passed"] is False


def test_missing_items_do_not_pass_even_when_kappa_is_high():
    ref = qualification_reference()
    partial = {i: dict(r) for i, r in list(ref.items())[:20]}
    result = score_qualification(partial, ref)
    assert result["axes"]["social"]["n"] == 20
    assert result["passed"] is False
    assert len(result["missing"]) == 10 and result["n_rated"] == 20
    assert "10 of 30" in result["reason"]


def test_undefined_kappa_is_none_with_a_reason_not_zero():
    ref = {f"q{i}": dict.fromkeys(AXES, 1) for i in range(5)}
    result = score_qualification(ref, ref)
    for axis in AXES:
        assert result["axes"][axis]["kappa"] is None
        assert "constant" in result["axes"][axis]["undefined_reason"]
    assert result["overall"] is None and result["passed"] is False
    empty = score_qualification({}, qualification_reference())
    assert empty["axes"]["self"]["kappa"] is None
    assert empty["axes"]["self"]["undefined_reason"] == "no rated items"
    assert empty["passed"] is False


@pytest.mark.parametrize("bad", [0, 6, "3", 2.5, True, None])
def test_invalid_rating_is_an_input_error_naming_item_and_axis(bad):
    ref = qualification_reference()
    ratings = {i: dict(r) for i, r in ref.items()}
    ratings["qual_005"]["avoidant"] = bad
    with pytest.raises(InputError, match=r"qual_005.*avoidant.*integer 1-5"):
        score_qualification(ratings, ref)
