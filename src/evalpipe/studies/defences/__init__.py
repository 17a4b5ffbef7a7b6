"""Defences (params.yaml ``defences``; docs/defences.md): the typo warning and input correctors
as arms beside the plain prompts, and their figures."""
