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
                }
            )
    return pd.DataFrame(rows)
