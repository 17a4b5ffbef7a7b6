"""The languages evalpipe has word lists, perturbation rules and prompt layouts for."""

LANGUAGES = ("english", "japanese")
