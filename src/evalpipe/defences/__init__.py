"""Defences against typos (docs/defences.md): input correctors (``spelling``, ``llm:<slug>``) that
rewrite the perturbable text word by word before the model reads it, and the typo warning
preamble. Each defence is one more arm (``condition``) of the outputs and the pairs table.

Like ``evalpipe.inference`` and ``evalpipe.scoring``, the package imports nothing here: import
the submodule you need (``arms``: the arm names; ``correct``: text-level correction; ``frame``:
a corrector over a perturbed set).
"""
