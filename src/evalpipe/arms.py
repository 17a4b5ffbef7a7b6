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
- :func:`template_arm`: the clean prompt under another instruction template
  (``template:<name>``, ``prompt.templates``; :mod:`evalpipe.studies.repeats`).

An arm compared with the plain clean prompt (a defence "won back" accuracy) is a join of its
perturbed answers with the :data:`TYPO` arm's clean answers on the pair key, inside one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

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


def corrected(corrector: str) -> str:
    """The ``condition`` of the rows a corrector rewrote.

    >>> corrected("spelling"), corrected("llm:qwen2-7b")
    ('corrected:spelling', 'corrected:llm:qwen2-7b')
    """
    return f"{CORRECTED}:{corrector}"


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
