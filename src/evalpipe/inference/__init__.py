"""Inference: one engine interface (vLLM offline, OpenAI-compatible servers) behind a
content-addressed generation cache (:mod:`.engine`, :mod:`.cache`, :mod:`.types`), the
log-likelihood requests (:mod:`.loglikelihood`), and the locally built smoke-test model
``tiny-random`` (:mod:`.tiny`).

Import the submodule you need: the package itself loads nothing, so a stage that only builds
log-likelihood requests or reads generation types does not depend on the engines.

>>> from evalpipe.inference.engine import make_engine
>>> from evalpipe.inference.types import GenerationRequest
>>> engine = make_engine({"name": "tiny-random", "backend": "vllm"},
...                      cache_dir="data/cache/generations")  # doctest: +SKIP
>>> [g.output for g in engine.generate([GenerationRequest("2+2=", max_tokens=8)])]  # doctest: +SKIP
"""
