"""The extension points' registries: the names each one accepts, read by the params table.

An extension point is a family of interchangeable implementations a user picks by name: a typo
model (``perturb.model``), an input corrector (``defences.correctors``), an inference backend
(``model_defaults.backend``) and an answer metric (a benchmark spec's ``metric``). Each name is
registered here, in the bottom layer, so the params table and the spec checks read their
choices without importing the packages above; the implementation is the module of the same name
in the registry's package (``Registry.module``), which that package loads by name::

    evalpipe/perturb/typo_models/ocr.py        MODEL = TypoModel(...)
    evalpipe/defences/correctors/spelling.py   CORRECTOR = Corrector(...)
    evalpipe/inference/backends/openai.py      BACKEND = BackendEntry(...)
    evalpipe/answers/metrics/char_f1.py        METRIC = AnswerMetric(...)

Adding one is that module and one name in its registry below (docs/extending.md); nothing else
compares the name.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalpipe.errors import InputError


@dataclass(frozen=True)
class Registry:
    """The names of one extension point.

    Attributes
    ----------
    kind : what an entry is, for messages ("typo model").
    package : the package holding one module per name (``package + "." + name``).
    names : the registered names, in the order messages list them.
    default : the name the params table defaults to (None: the key has no default).
    """

    kind: str
    package: str
    names: tuple[str, ...]
    default: str | None = None

    def check(self, name: object, *, where: str) -> str:
        """``name`` when it is registered; an InputError naming ``where`` and the choices.

        >>> INFERENCE_BACKENDS.check("openai", where="params.yaml: model_defaults.backend")
        'openai'
        """
        if not isinstance(name, str) or name not in self.names:
            raise InputError(
                f"{where}: expected a {self.kind}, one of {', '.join(self.names)}; found {name!r}"
            )
        return name

    def module(self, name: str) -> str:
        """The module implementing ``name``.

        >>> INFERENCE_BACKENDS.module("openai")
        'evalpipe.inference.backends.openai'
        """
        return f"{self.package}.{name}"


# How replaced and inserted characters are chosen (params.yaml perturb.model).
TYPO_MODELS = Registry(
    "typo model",
    "evalpipe.perturb.typo_models",
    ("uniform", "keyboard", "natural", "ocr"),
    default="uniform",
)
# Input correctors (defences.correctors): a name, or ``<name>:<argument>`` (llm:<slug>).
CORRECTORS = Registry("corrector", "evalpipe.defences.correctors", ("spelling", "llm"))
# Inference engines (model_defaults.backend, models.<slug>.backend, judge.backend).
INFERENCE_BACKENDS = Registry(
    "backend", "evalpipe.inference.backends", ("vllm", "openai"), default="vllm"
)
# How a parsed prediction is compared with the gold answers (a benchmark spec's ``metric``).
ANSWER_METRICS = Registry(
    "answer metric", "evalpipe.answers.metrics", ("exact_match", "accuracy", "char_f1")
)
