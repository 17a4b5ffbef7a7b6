"""The names of a row's place in a study, declared once for every layer.

A benchmark example runs as its clean prompt (``variant`` :data:`ORIGINAL`) and as perturbed
prompts; ``condition`` names the arm a row belongs to. Every arm holds its own clean row and its
own perturbed rows, so the pairs table (:mod:`evalpipe.scoring.pairs`) pairs each perturbed row
with the clean row of the same example *and arm*:

- :data:`TYPO`: the plain prompts of the perturbed sets (the clean prompt and its typo'd
  versions). Every headline figure, word table and impact table is made of this arm only.
- :data:`CONTROL`: the same typos put into matched random words instead of the target word.
- :data:`WARNED`: the prompts with a typo-warning preamble.
- :func:`corrected`: the prompts after an input corrector (``corrected:spelling``,
  ``corrected:llm:<slug>``).
- :data:`REPEAT`, :data:`FEWSHOT_DRAW`: the clean prompt again at another seed or with other
  demonstrations (:mod:`evalpipe.studies.repeats`).
- :func:`format_condition`: a choice benchmark's prompts in another option order, label set or
  asking for an incorrect option (``format:order=1-2-3-0``, ``format:labels=circled``,
  ``format:incorrect``; :mod:`evalpipe.benchmarks.formats`).
- :func:`template_arm`: the clean prompt under another instruction template
  (``template:<name>``, ``prompt.templates``; :mod:`evalpipe.studies.repeats`).

An arm compared with the plain clean prompt (a defence "won back" accuracy) is a join of its
perturbed answers with the :data:`TYPO` arm's clean answers on the pair key, inside one table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pandas is not imported at run time: this layer stays light
    import numpy as np
    import pandas as pd

# ``variant`` of a benchmark example's clean prompt.
ORIGINAL = "original"
# ``condition`` of the plain perturbed sets' rows.
TYPO = "typo"
# ``condition`` of the matched-control rows.
CONTROL = "control"
# ``condition`` of the rows run with the typo-warning preamble.
WARNED = "warned"
# Prefix of a corrector's ``condition``.
CORRECTED = "corrected"
# ``condition`` of the clean prompt answered again at another sampling seed
# (``sampling.repeats``) and with another selection of demonstrations (``prompt.fewshot_draws``):
# the run-to-run spread the typo effect is read against, never a defence.
REPEAT = "repeat"
FEWSHOT_DRAW = "fewshot_draw"
SPREAD_ARMS = (REPEAT, FEWSHOT_DRAW)
# Prefix of a format arm's ``condition``.
FORMAT = "format"
# The label sets a format arm may show (``formats.labels``), each up to five options long; the
# last two are for Japanese benchmarks only.
FORMAT_LABELS = {
    "letters": ("A", "B", "C", "D", "E"),
    "lowercase": ("a", "b", "c", "d", "e"),
    "digits": ("1", "2", "3", "4", "5"),
    "symbols": ("!", "@", "#", "$", "%"),
    "katakana": ("ア", "イ", "ウ", "エ", "オ"),
    "circled": ("①", "②", "③", "④", "⑤"),
}
# Prefix of the ``condition`` of a prompt template's arm (``prompt.templates``): the clean
# prompt with the spec's instruction against the same example under template <name>'s wording,
# part of the spread too.
TEMPLATE = "template"


def template_arm(name: str) -> str:
    """The ``condition`` (and perturbed ``variant``) of prompt template ``name``'s arm.

    >>> template_arm("terse")
    'template:terse'
    """
    return f"{TEMPLATE}:{name}"


def is_spread_arm(condition: str) -> bool:
    """True for the arms of the run-to-run and wording spread (never a defence).

    >>> is_spread_arm("repeat"), is_spread_arm("template:terse"), is_spread_arm("warned")
    (True, True, False)
    """
    return condition in SPREAD_ARMS or condition.startswith(f"{TEMPLATE}:")


# ``variant`` prefix of the count design's rows (``perturb.design: count``): "k=2" is the row with
# exactly 2 edited words, its ``word_rank`` is k (not a target word's rank), its condition TYPO.
COUNT_PREFIX = "k="
# ``condition`` prefixes of the targeting study's rows (``perturb.targeting: importance``): the k
# words a model leans on most (or least) edited, and r of a k-typo row's words restored.
TARGETED = "targeted"
RESTORED = "restored"


def corrected(corrector: str) -> str:
    """The ``condition`` of the rows a corrector rewrote.

    >>> corrected("spelling"), corrected("llm:qwen2-7b")
    ('corrected:spelling', 'corrected:llm:qwen2-7b')
    """
    return f"{CORRECTED}:{corrector}"


def format_condition(variant: str) -> str:
    """The ``condition`` of a format arm's rows.

    >>> format_condition("order=1-2-3-0"), format_condition("labels=circled")
    ('format:order=1-2-3-0', 'format:labels=circled')
    """
    return f"{FORMAT}:{variant}"


def format_variant(condition: str) -> str | None:
    """The format variant a ``condition`` names (None for another arm).

    >>> format_variant("format:incorrect"), format_variant("typo")
    ('incorrect', None)
    """
    prefix = f"{FORMAT}:"
    return condition[len(prefix) :] if condition.startswith(prefix) else None


def format_labels(condition: object) -> list[str] | None:
    """The label space of a format arm's rows when it shows its own labels (None otherwise: the
    benchmark's labels), ``n`` of them as the benchmark has choices (cut by the scorer).

    >>> format_labels("format:labels=circled")[:2], format_labels("format:order=1-0")
    (['①', '②'], None)
    """
    variant = format_variant(condition) if isinstance(condition, str) else None
    if variant is None or not variant.startswith("labels="):
        return None
    return list(FORMAT_LABELS[variant[len("labels=") :]])


@dataclass(frozen=True)
class FormatVariant:
    """One format arm: ``order[j]`` is the original option shown at position ``j``."""

    name: str
    family: str  # order | labels | incorrect
    order: tuple[int, ...]
    labels: tuple[str, ...] | None = None  # None: the benchmark's own
    asks_incorrect: bool = False  # the prompt asks for an option that is not correct

    @property
    def condition(self) -> str:
        return format_condition(self.name)


def original_choice(
    prediction: Any, *, variant: FormatVariant | None, labels: Sequence[str]
) -> int | None:
    """The original option a parsed prediction names (None when unparsed or off the labels).

    ``labels`` are the benchmark's; a label variant's prediction is in its own label space.

    >>> v = FormatVariant("order=1-2-3-0", "order", (1, 2, 3, 0))
    >>> original_choice("A", variant=v, labels="ABCD"), original_choice(None, variant=v, labels="ABCD")
    (1, None)
    """
    if prediction is None or (isinstance(prediction, float) and prediction != prediction):
        return None
    shown = list(variant.labels) if variant and variant.labels else [str(x) for x in labels]
    if str(prediction) not in shown:
        return None
    at = shown.index(str(prediction))
    order = variant.order if variant and variant.order else tuple(range(len(shown)))
    return order[at] if at < len(order) else None


def parse_format_variant(name: str) -> FormatVariant:
    """The :class:`FormatVariant` a condition's variant name describes (``order=1-0-2``,
    ``labels=digits``, ``incorrect``), its labels at full length.

    >>> parse_format_variant("order=2-0-1").order
    (2, 0, 1)
    """
    if name.startswith("order="):
        return FormatVariant(name, "order", tuple(int(x) for x in name[6:].split("-")))
    if name.startswith("labels="):
        return FormatVariant(name, "labels", (), FORMAT_LABELS[name[7:]])
    if name == "incorrect":
        return FormatVariant(name, "incorrect", (), asks_incorrect=True)
    raise ValueError(f"condition format:{name}: not a format variant")


def targeted(order: str) -> str:
    """The ``condition`` of the rows whose k edited words are the k most (``"most"``) or least
    (``"least"``) important to the model.

    >>> targeted("most")
    'targeted:most'
    """
    return f"{TARGETED}:{order}"


def restored(order: str, r: int) -> str:
    """The ``condition`` of the rows where r of a k-typo row's words are put back, most
    important first (``"most"``), in the random order (``"random"``) or least first.

    >>> restored("most", 2)
    'restored:most:2'
    """
    return f"{RESTORED}:{order}:{r}"


def count_variant(k: int) -> str:
    """The ``variant`` of the count design's rows with k edited words.

    >>> count_variant(2)
    'k=2'
    """
    return f"{COUNT_PREFIX}{k}"


@overload
def is_count_variant(variant: str) -> bool: ...
@overload
def is_count_variant(variant: pd.Series) -> np.ndarray: ...
def is_count_variant(variant: str | pd.Series) -> bool | np.ndarray:
    """True where a ``variant`` (a string, or a pandas Series: a boolean array) names a
    count-design row, whose pairs belong to the dose table, not to a target word's.

    >>> is_count_variant("k=2"), is_count_variant("the")
    (True, False)
    """
    if isinstance(variant, str):
        return variant.startswith(COUNT_PREFIX)
    return variant.astype(str).str.startswith(COUNT_PREFIX).to_numpy()


def typo_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the typo arm (``condition`` :data:`TYPO`) of a scored view or a pairs table:
    what every headline figure, word table and impact table is made of.

    >>> import pandas as pd
    >>> typo_rows(pd.DataFrame({"condition": ["typo", "warned", "typo"], "x": [1, 2, 3]}))["x"].tolist()
    [1, 3]
    """
    keep = (frame["condition"] == TYPO).to_numpy()
    return frame if keep.all() else frame.loc[keep].reset_index(drop=True)
