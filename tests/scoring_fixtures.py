"""Hand-made outputs frames (the generate stage's contract) for the scoring tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

# benchmark -> (answer type, labels, how a right / wrong answer is written)
_SETUPS = {
    "mmlu": (["A", "B", "C", "D"], "The answer is ({})."),
    "jcommonsenseqa": (["0", "1", "2", "3", "4"], "{}"),
    "jnli": (["entailment", "contradiction", "neutral"], "{}"),
    "imdb": (["positive", "negative"], '{{"label": "{}", "confidence": 0.9, "reason": "r"}}'),
    "gsm8k": (None, "So the total is {} dollars."),
    "jsquad": (None, "回答：{}"),
}
WORDS = ("the", "of", "and")
LANGUAGES = {"mmlu": "english", "gsm8k": "english", "imdb": "english"}  # others: japanese
OPS = ("replace", "insert", "delete")


def make_outputs(
    name: str,
    *,
    n_examples: int = 12,
    p_correct: float = 0.7,
    p_flip: float = 0.3,
    p_garbage: float = 0.1,
    seed: int = 0,
) -> pd.DataFrame:
    """An outputs frame for ``name``: one original row per example and, for each of three target
    words, a perturbed row for about two thirds of the examples. Originals are right with
    probability ``p_correct``; a perturbed answer differs from its original with probability
    ``p_flip``; ``p_garbage`` of the outputs are unparseable text."""
    labels, template = _SETUPS[name]
    rng = np.random.default_rng(seed)
    rows = []
    golds = {}
    for i in range(n_examples):
        gold = (
            labels[i % len(labels)] if labels else (str(10 + i) if name == "gsm8k" else f"東京{i}")
        )
        golds[i] = gold

    def answer(gold: str, right: bool) -> str:
        if rng.random() < p_garbage:
            return "I am not sure." if name != "jsquad" else ""
        if right:
            value = gold
        elif labels:
            value = labels[(labels.index(gold) + 1) % len(labels)]
        elif name == "gsm8k":
            value = str(int(gold) + 1)
        else:
            value = "大阪"
        return template.format(value)

    right_original = {}
    for i in range(n_examples):
        right_original[i] = bool(rng.random() < p_correct)
        variants = [("original", 0, 0)]
        for rank, word in enumerate(WORDS, start=1):
            if (i + rank) % 3:
                variants.append((word, rank, 1 + (i + rank) % 2))
        for variant, rank, fired in variants:
            right = right_original[i]
            if variant != "original" and rng.random() < p_flip:
                right = not right
            prompt = f"Question {i} about {name} " + ("x" * (40 + 10 * i))
            rows.append(
                {
                    "benchmark": name,
                    "example_id": f"{name}-{i:03d}",
                    "variant": variant,
                    "word_rank": rank,
                    "prompt_hash": f"h{i}-{rank}",
                    "prompt": prompt,
                    "output": answer(golds[i], right),
                    "finish_reason": "stop",
                    "prompt_tokens": len(prompt) // 4,
                    "output_tokens": 5,
                    "model": "tiny-random",
                    "from_cache": False,
                    "subtask": None,
                    "task_type": "mc",
                    "answer": golds[i],
                    "answers": [golds[i]],
                    "labels": labels,
                    "occurrences": 2 if variant != "original" else 0,
                    "perturbed_occurrences": fired,
                    # what perturb writes per row and generate carries (docs/architecture.md)
                    "draw": 0,
                    "condition": "typo",
                    "language": LANGUAGES.get(name, "japanese"),
                    "n_typos": fired,
                    "n_edited_chars": fired,
                    "op": (OPS[(i + rank) % 3] if fired == 1 else "mixed") if fired else None,
                    "script": ("latin" if name in LANGUAGES else "hiragana") if fired else None,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- pairs

# evalpipe.perturb.scripts classes -> the coarse script classes of the rows (what perturb writes).
_SCRIPT_OF_CLASS = {
    "hiragana": "hiragana", "katakana": "katakana", "halfwidth_katakana": "katakana",
    "kanji": "kanji", "latin_lower": "latin", "latin_upper": "latin", "fullwidth_lower": "latin",
    "fullwidth_upper": "latin", "digit": "digit", "fullwidth_digit": "digit",
}  # fmt: skip


def _script(record: dict) -> str:
    from evalpipe.perturb.scripts import char_class

    ch = record.get("new_char") if record.get("op") == "insert" else record.get("original_char")
    return _SCRIPT_OF_CLASS.get(char_class(str(ch)[0]) or "", "other") if ch else "other"


def _kind(values: list[str]) -> str | None:
    unique = set(values)
    return None if not unique else unique.pop() if len(unique) == 1 else "mixed"


def with_contract_columns(
    scored: pd.DataFrame, *, language: str = "english", perturbed: pd.DataFrame | None = None
) -> pd.DataFrame:
    """A hand-made scored frame with the columns the generate stage carries (draw, language, typo
    kinds and counts, prompt, score, ...) filled in where the test left them out. ``perturbed``
    (``benchmark, example_id, word_rank, perturbations``; optional ``draw``) gives each row's
    ``op`` and ``script`` as the perturb stage writes them."""
    frame = scored.reset_index(drop=True).copy()
    fired = frame.get("perturbed_occurrences", 0)
    defaults = {
        "draw": 0, "condition": "typo", "subtask": None, "language": language, "occurrences": fired,
        "perturbed_occurrences": fired, "n_typos": fired, "n_edited_chars": fired, "prompt": "",
        "prediction": "", "finish_reason": "stop", "parse_status": "strict",
    }  # fmt: skip
    for column, value in defaults.items():
        if column not in frame:
            frame[column] = value
    if "word_rank" not in frame:  # one rank per target word, 0 for the original
        codes = pd.factorize(frame["variant"], sort=True)[0] + 1
        frame["word_rank"] = codes * (frame["variant"] != "original").to_numpy()
    if "score" not in frame:
        frame["score"] = frame["correct"].astype(float)
    for column in ("op", "script"):
        if column not in frame:
            frame[column] = None
    if perturbed is not None:
        key = ["benchmark", "example_id", "word_rank", "draw"]
        records = perturbed.assign(draw=perturbed.get("draw", 0))
        kinds = pd.DataFrame({
            **{c: records[c].to_numpy() for c in key},
            "_op": [_kind([r["op"] for r in ops]) for ops in records["perturbations"]],
            "_script": [_kind([_script(r) for r in ops]) for ops in records["perturbations"]],
        })  # fmt: skip
        kinds = kinds.astype({"word_rank": "int64", "draw": "int64"})
        frame = frame.astype({"word_rank": "int64", "draw": "int64"}).merge(
            kinds, on=key, how="left", validate="many_to_one"
        )
        frame["op"], frame["script"] = frame.pop("_op"), frame.pop("_script")
    return frame


def pairs_of(
    views: dict[str, pd.DataFrame],
    *,
    model: str = "m",
    language: str = "english",
    perturbed: dict[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """:func:`evalpipe.scoring.pairs.build_pairs` of hand-made scored views."""
    from evalpipe.scoring.pairs import build_pairs

    perturbed = perturbed or {}
    return build_pairs(
        {
            name: with_contract_columns(
                frame, language=language, perturbed=perturbed.get(frame["benchmark"].iloc[0])
            )
            for name, frame in views.items()
        },
        model=model,
    )


def impact_of(
    scored: dict[str, pd.DataFrame],
    perturbed: dict[str, pd.DataFrame],
    words: dict[str, pd.DataFrame],
    *,
    languages: dict[str, str],
    settings,
):
    """The impact tables of hand-made scored frames (benchmark -> rows of one or more models,
    column ``model``), through the pairs tables the score stage writes."""
    from evalpipe.scoring.word_impact import build_impact

    tables, counts = [], []
    models = sorted({str(m) for frame in scored.values() for m in frame["model"]})
    for model in models:
        views = {
            name: frame.loc[frame["model"] == model]
            for name, frame in scored.items()
            if (frame["model"] == model).any()
        }
        for name, frame in views.items():
            counts.append((model, name, int((frame["variant"] == "original").sum())))
            tables.append(
                pairs_of({name: frame}, model=model, language=languages[name], perturbed=perturbed)
            )
    # one table per model, as the score stage writes it: clusters numbered over the model's views
    from evalpipe.scoring.pairs import cluster_codes

    pairs = pd.concat(tables, ignore_index=True)
    for model in models:
        mask = (pairs["model"] == model).to_numpy()
        pairs.loc[mask, "cluster"] = cluster_codes(
            pairs.loc[mask, "benchmark"].to_numpy(), pairs.loc[mask, "example_id"].to_numpy()
        )
    n_base = pd.DataFrame(counts, columns=["model", "view", "n_base"])
    return build_impact(pairs, words, n_base=n_base, settings=settings)
