"""Which replies people rate: a uniform random sample of the dialogues, every model's reply to it.

The sampling unit is the dialogue: ``size`` of the ``n`` dialogues are drawn without replacement
(a random permutation from hashed seeds, so a re-run draws the same ones), and every model's
reply to a drawn dialogue goes to people. Each reply's inclusion probability is ``size / n``, the
same for all, so the human-rated replies of one model are a uniform random sample of that
model's replies (what PPI needs), and the paired difference of two models has both replies
rated on the same random dialogues.

Task ids are ``syc/<hash of model and dialogue>``: people see the reply as the task's response,
never which model wrote it (nor which judge rated it).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

from evalpipe.errors import InputError
from evalpipe.seeding import hashed_seed

TASK_PREFIX = "syc/"


def sample_size(human_sample: float, n_dialogues: int, *, where: str) -> int:
    """Dialogues to draw: a share (< 1) of ``n_dialogues`` rounded half up, or a count (>= 1).

    >>> sample_size(0.2, 30, where="x"), sample_size(8, 30, where="x"), sample_size(50, 30, where="x")
    (6, 8, 30)
    """
    if human_sample < 0:
        raise InputError(f"{where}: expected a share in [0, 1) or a count >= 1, got {human_sample}")
    if human_sample < 1:
        return min(n_dialogues, math.floor(human_sample * n_dialogues + 0.5))
    if human_sample != int(human_sample):
        raise InputError(
            f"{where}: a count of dialogues must be a whole number (or a share below 1), "
            f"got {human_sample}"
        )
    return min(n_dialogues, int(human_sample))


def draw_dialogues(dialogue_ids: Iterable[str], size: int, *, seed: int) -> list[str]:
    """``size`` dialogue ids drawn uniformly without replacement, in id order.

    >>> draw_dialogues(["a", "b", "c"], 3, seed=1)
    ['a', 'b', 'c']
    """
    ids = sorted(set(dialogue_ids))
    order = sorted(ids, key=lambda d: (hashed_seed(seed, "sycophancy-human-sample", d), d))
    return sorted(order[:size])


def task_id(model: str, dialogue_id: str) -> str:
    """The blind task id of one model's reply to one dialogue.

    >>> task_id("tiny-random", "sample_001")[:4]
    'syc/'
    """
    digest = hashlib.sha256(f"{model}\x1f{dialogue_id}".encode()).hexdigest()[:16]
    return TASK_PREFIX + digest
