"""Data-parallel generation on Ray: N replicas of a backend, each a Ray actor holding its own
engine (a ``vllm.LLM``, with ``tensor_parallel_size`` GPUs inside it).

The engine (``evalpipe.inference.engine.Engine``) cuts the cache misses into the same chunks of
``checkpoint_every`` prompts as with one engine; chunk ``j`` goes to replica ``j % N``
(:func:`chunk_owners`), and every finished chunk comes back to the stage's process, which writes
it to the generation cache before anything else. So each chunk is the batch one engine would
have run (the same prompts in the same order: see "Repeatable generation" in docs/inference.md),
the cache ends with the same keys and bytes as a single-engine run, and a replica killed mid-run
loses only the chunk it was running: Ray restarts the actor and runs that chunk again.

``RAY_ADDRESS`` set: join that cluster (``ray start --head`` on one node, ``ray start
--address=<head>:6379`` on the others). Unset: start a local cluster with this node's CPUs and
GPUs for the run, and stop it at :meth:`RayBackend.close`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from evalpipe.inference.models import is_cpu_build
from evalpipe.inference.types import Backend, EngineError, ModelIdentity

log = logging.getLogger(__name__)

T = TypeVar("T")

RESTARTS = 3
"""How often Ray restarts a dead replica (and re-runs the chunk it held) before the run fails."""
IN_FLIGHT = 2
"""Chunks queued on a replica at once: the next one is waiting when the current one ends, and no
more than that sits in Ray's object store."""


def replica_count(value: Any, *, cluster: dict[str, float], per_replica: dict[str, float]) -> int:
    """The number of replicas ``data_parallel_size`` asks for.

    Parameters
    ----------
    value:
        A positive integer, or ``"auto"``: as many replicas as the cluster has room for (its GPUs
        over ``tensor_parallel_size`` on the GPU build, its CPUs over the CPUs of a replica on
        the CPU build), at least one.
    cluster:
        The cluster's resources (``ray.cluster_resources()``).
    per_replica:
        What one replica takes (``{"CPU": 1, "GPU": 2}``).

    Returns
    -------
    int

    Examples
    --------
    >>> replica_count("auto", cluster={"CPU": 64, "GPU": 8}, per_replica={"CPU": 1, "GPU": 2})
    4
    >>> replica_count(3, cluster={}, per_replica={"CPU": 1})
    3
    """
    if check_data_parallel_size(value) == "auto":
        fits = [int(cluster.get(name, 0) // need) for name, need in per_replica.items() if need > 0]
        return max(1, min(fits)) if fits else 1
    return int(value)


def check_data_parallel_size(value: Any) -> int | str:
    """``data_parallel_size`` checked: a positive integer or ``"auto"``.

    >>> check_data_parallel_size(2), check_data_parallel_size("auto")
    (2, 'auto')
    """
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise EngineError(
        f"params.yaml: model.data_parallel_size: expected a positive integer or auto, got {value!r}"
    )


def chunk_owners(n_chunks: int, replicas: int) -> list[int]:
    """The replica that runs each chunk: round robin, so chunk ``j`` always goes to ``j % N``.

    >>> chunk_owners(5, 2)
    [0, 1, 0, 1, 0]
    """
    return [j % replicas for j in range(n_chunks)]


def contiguous_shards(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into at most ``parts`` contiguous, non-empty pieces of near-equal size
    (the first ``n % parts`` one longer), so neighbouring prompts (shared prefixes) stay together.

    >>> contiguous_shards(7, 3)
    [range(0, 3), range(3, 5), range(5, 7)]
    >>> contiguous_shards(1, 4)
    [range(0, 1)]
    """
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + size + (i < extra)
        if stop > start:
            out.append(range(start, stop))
        start = stop
    return out


def reassemble(pieces: dict[int, list[T]], n_pieces: int) -> list[T]:
    """The pieces' results joined in piece order (the order they were cut in).

    >>> reassemble({1: ["c"], 0: ["a", "b"]}, 2)
    ['a', 'b', 'c']
    """
    missing = [i for i in range(n_pieces) if i not in pieces]
    if missing:
        raise EngineError(f"results of pieces {missing} are missing")
    return [item for i in range(n_pieces) for item in pieces[i]]


class Replica:
    """What runs inside one Ray actor: a backend (not started) and the calls the driver makes.

    Parameters
    ----------
    factory:
        Builds the single-engine backend inside the actor (Ray calls it again when it restarts
        a dead replica); ``make_backend`` passes the driver's resolved model and settings, so
        every replica loads exactly the model the driver resolved.
    """

    def __init__(self, factory: Callable[[], Backend]) -> None:
        self.backend = factory()

    def start(self) -> int:
        """Start the engine (a backend without ``start`` starts on its first call); the pid."""
        start = getattr(self.backend, "start", None)
        if start is not None:
            start()
        return os.getpid()

    def call(self, method: str, requests: list[Any], kwargs: dict[str, Any]) -> list[Any]:
        """``backend.<method>(requests, **kwargs)``: ``generate`` or ``loglikelihood``."""
        return getattr(self.backend, method)(requests, **kwargs)


class RayBackend:
    """``replicas`` copies of ``inner`` on a Ray cluster (started lazily, on the first call).

    Parameters
    ----------
    inner:
        The single-engine backend each replica runs (only its identity is used here).
    factory:
        A picklable callable building that backend in each replica.
    replicas:
        A positive integer or ``"auto"`` (``models.<slug>.data_parallel_size``).
    resources:
        What one replica reserves, e.g. ``{"CPU": 1, "GPU": 2}`` (:func:`replica_resources`).
    """

    caches_refusals = True
    """``prompt_too_long`` depends on ``max_model_len``, which is part of the model identity."""

    def __init__(
        self,
        inner: Backend,
        factory: Callable[[], Backend],
        *,
        replicas: Any,
        resources: dict[str, float],
    ) -> None:
        self.identity: ModelIdentity = inner.identity
        self.factory = factory
        self.replicas_setting = replicas
        self.resources = dict(resources)
        self.started = False
        self.start_seconds = 0.0
        self.pids: list[int] = []
        self._actors: list[Any] = []
        self._group: Any = None
        self._owns_cluster = False

    def start(self) -> None:
        """Join or start the cluster, create the replicas and start their engines in parallel."""
        if self.started:
            return
        t0 = time.perf_counter()
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise EngineError(
                "model.data_parallel_size > 1 runs replicas on Ray, which is not installed: "
                "pip install -e '.[ray]'"
            ) from exc
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS") or "local"
            log.info("Ray: %s", "joining " + address if address != "local" else "local cluster")
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            except Exception as exc:
                raise EngineError(f"Ray could not start or join a cluster ({exc})") from exc
            self._owns_cluster = address == "local"
        total = dict(ray.cluster_resources())
        n = replica_count(self.replicas_setting, cluster=total, per_replica=self.resources)
        short = {k: v * n for k, v in self.resources.items() if v * n > total.get(k, 0)}
        if short:
            raise EngineError(
                f"model.data_parallel_size: {n} replicas of {self.identity.label} need "
                f"{short} but the Ray cluster has {total}; lower data_parallel_size (or auto)"
            )
        # All replicas' resources are reserved at once (a placement group) or not at all: two
        # models sharing a cluster never each hold part of what both need and wait for ever.
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        bundle = {k: v for k, v in self.resources.items() if v > 0}
        self._group = placement_group([bundle] * n, strategy="PACK")
        log.info("waiting for %d x %s on Ray for %s", n, bundle, self.identity.label)
        ray.get(self._group.ready())
        self._actors = [
            ray.remote(Replica)
            .options(
                num_cpus=self.resources.get("CPU", 0),
                num_gpus=self.resources.get("GPU", 0),
                max_restarts=RESTARTS,
                max_task_retries=RESTARTS,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    self._group, placement_group_bundle_index=i
                ),
            )
            .remote(self.factory)
            for i in range(n)
        ]
        log.info("starting %d replicas of %s on Ray", n, self.identity.label)
        try:
            self.pids = ray.get([a.start.remote() for a in self._actors])
        except Exception as exc:
            self.close()
            raise EngineError(
                f"Ray replicas of {self.identity.label} did not start: {exc}"
            ) from exc
        self.start_seconds = time.perf_counter() - t0
        self.started = True

    @property
    def replicas(self) -> int:
        """How many replicas run (known once started)."""
        return len(self._actors)

    def map_chunks(
        self, method: str, chunks: Sequence[list[Any]], **kwargs: Any
    ) -> Iterator[tuple[int, list[Any]]]:
        """Run ``method`` on every chunk, chunk ``j`` on replica ``j % N``; yield ``(j, results)``
        as chunks finish (the caller checkpoints each before the next is taken).

        A replica keeps :data:`IN_FLIGHT` chunks queued, in order. A replica that dies is
        restarted by Ray, which re-runs the chunk it held (up to :data:`RESTARTS` times).
        """
        if not chunks:
            return
        self.start()
        import ray

        owners = chunk_owners(len(chunks), len(self._actors))
        queues: list[collections.deque[int]] = [collections.deque() for _ in self._actors]
        for j, owner in enumerate(owners):
            queues[owner].append(j)
        running: dict[Any, tuple[int, int]] = {}

        def submit(replica: int) -> None:
            if queues[replica]:
                j = queues[replica].popleft()
                ref = self._actors[replica].call.remote(method, chunks[j], kwargs)
                running[ref] = (j, replica)

        for replica in range(len(self._actors)):
            for _ in range(IN_FLIGHT):
                submit(replica)
        try:
            while running:
                done, _ = ray.wait(list(running), num_returns=1)
                j, replica = running.pop(done[0])
                try:
                    results = ray.get(done[0])
                except ray.exceptions.RayActorError as exc:
                    raise EngineError(
                        f"Ray replica {replica} of {self.identity.label} died {RESTARTS + 1} "
                        f"times running chunk {j}; the finished chunks are in the generation "
                        f"cache, run again to resume ({exc})"
                    ) from exc
                submit(replica)
                yield j, results
        finally:
            # a failed or abandoned run: chunks still queued are not wanted any more
            for ref in running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    def _sharded(self, method: str, requests: list[Any], **kwargs: Any) -> list[Any]:
        if not requests:
            return []
        self.start()
        shards = contiguous_shards(len(requests), len(self._actors))
        pieces = dict(
            self.map_chunks(method, [[requests[i] for i in shard] for shard in shards], **kwargs)
        )
        return reassemble(pieces, len(shards))

    def generate(self, requests: list[Any], *, progress: bool = False) -> list[Any]:
        """Every request, split in contiguous shards over the replicas, in request order."""
        return self._sharded("generate", requests)

    def loglikelihood(self, requests: list[Any], *, unsupported_ok: bool = False) -> list[Any]:
        """Every request's score, split in contiguous shards over the replicas, in order."""
        return self._sharded("loglikelihood", requests, unsupported_ok=unsupported_ok)

    def close(self) -> None:
        """Stop the replicas, and the local cluster when this backend started it."""
        if self._actors:
            import ray

            for a in self._actors:
                ray.kill(a, no_restart=True)
            self._actors = []
            if self._group is not None:
                ray.util.remove_placement_group(self._group)
                self._group = None
            if self._owns_cluster:
                ray.shutdown()
                self._owns_cluster = False
        self.started = False


def replica_resources(settings: dict[str, Any]) -> dict[str, float]:
    """What one replica reserves on the cluster: one CPU and ``tensor_parallel_size`` GPUs on
    the GPU build; on the CPU build its ``cpu_threads`` CPUs (one when ``auto``) and no GPU.
    """
    threads = settings.get("cpu_threads")
    if is_cpu_build():
        cpus = threads if isinstance(threads, int) and not isinstance(threads, bool) else 1
        return {"CPU": float(cpus), "GPU": 0.0}
    return {"CPU": 1.0, "GPU": float(settings["tensor_parallel_size"])}
