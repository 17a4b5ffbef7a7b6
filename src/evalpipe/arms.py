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

An arm compared with the plain clean prompt (a defence "won back" accuracy) is a join of its
perturbed answers with the :data:`TYPO` arm's clean answers on the pair key, inside one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is not imported at run time: this layer stays light
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


def corrected(corrector: str) -> str:
    """The ``condition`` of the rows a corrector rewrote.

    >>> corrected("spelling"), corrected("llm:qwen2-7b")
    ('corrected:spelling', 'corrected:llm:qwen2-7b')
    """
    return f"{CORRECTED}:{corrector}"


def typo_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the typo arm (``condition`` :data:`TYPO`) of a scored view or a pairs table:
    what every headline figure, word table and impact table is made of.

    >>> import pandas as pd
    >>> typo_rows(pd.DataFrame({"condition": ["typo", "warned", "typo"], "x": [1, 2, 3]}))["x"].tolist()
    [1, 3]
    """
    keep = (frame["condition"] == TYPO).to_numpy()
    return frame if keep.all() else frame.loc[keep].reset_index(drop=True)
