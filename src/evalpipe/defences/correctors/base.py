"""What an input corrector is (:class:`Corrector`); the correctors are the modules beside it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from evalpipe.defences.correct import Correction

# edits(text, *, language) -> the corrector's proposed word-level edits of one field's text
Edits = Callable[..., Sequence[Correction]]


@dataclass(frozen=True)
class Corrector:
    """One kind of input corrector (``defences.correctors``: ``<name>`` or ``<name>:<slug>``).

    Exactly one of two ways of proposing edits:

    - ``local``: builds, once per run, ``edits(text, *, language)`` (a dictionary, a rule set);
    - ``prompt`` + ``from_answer``: a model of params.yaml ``models`` (the ``<slug>`` after the
      colon) answers ``prompt(text, *, language)``, and ``from_answer(text, answer, *,
      language)`` turns its answer into edits; the defend stage runs the engine.

    ``languages``: the languages it corrects (None: every one); a text in another language is
    left unchanged and counted as unsupported.
    """

    local: Callable[[], Edits] | None = None
    prompt: Callable[..., str] | None = None
    from_answer: Callable[..., Sequence[Correction]] | None = None
    languages: Collection[str] | None = None

    @property
    def uses_model(self) -> bool:
        """Whether the corrector is a model of ``models``, named after its colon."""
        return self.prompt is not None

    def supports(self, language: str) -> bool:
        return self.languages is None or language in self.languages
