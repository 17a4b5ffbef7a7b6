"""Which GPUs each model's generate process gets when several models run at once
(``evalpipe generate``): pure functions, no processes.

A model's offline vLLM engine takes ``tensor_parallel_size`` GPUs, times ``data_parallel_size``
when it runs replicas on a local Ray cluster (``auto``: every GPU). Its process is started with
``CUDA_VISIBLE_DEVICES`` set to GPUs no other running process holds; a model that needs more
GPUs than are free waits for one to finish. Models on a server (``backend: openai``) need none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalpipe.errors import InputError


def devices_needed(cfg: Mapping[str, Any], *, total: int, ray_cluster: bool) -> int:
    """GPUs one model's generate process holds on this node.

    Parameters
    ----------
    cfg:
        The model's settings (an entry of ``models`` over ``model_defaults``).
    total:
        The GPUs of this node.
    ray_cluster:
        ``RAY_ADDRESS`` is set: replicated models run on that cluster, which places them.

    Returns
    -------
    int
        0 for a server model, a replicated model on a shared cluster, or a machine without GPUs.

    Examples
    --------
    >>> devices_needed({"backend": "vllm", "tensor_parallel_size": 2, "data_parallel_size": 3},
    ...                total=8, ray_cluster=False)
    6
    >>> devices_needed({"backend": "vllm", "tensor_parallel_size": 1, "data_parallel_size": "auto"},
    ...                total=8, ray_cluster=False)
    8
    """
    if cfg["backend"] != "vllm" or total == 0:
        return 0
    replicas = cfg["data_parallel_size"]
    if replicas != 1 and ray_cluster:
        return 0
    tp = int(cfg["tensor_parallel_size"])
    if replicas == "auto":
        return max(tp, total - total % tp)
    return tp * int(replicas)


def take_devices(free: Sequence[str], need: int) -> tuple[list[str], list[str]] | None:
    """The first ``need`` free devices and the rest, or None when fewer are free.

    >>> take_devices(["0", "1", "2"], 2)
    (['0', '1'], ['2'])
    >>> take_devices(["3"], 2) is None
    True
    """
    if need > len(free):
        return None
    return list(free[:need]), list(free[need:])


def check_fits(needs: Mapping[str, int], devices: Sequence[str]) -> None:
    """InputError when a model needs more GPUs than the node has (it would wait for ever)."""
    for slug, need in needs.items():
        if need > len(devices):
            raise InputError(
                f"models.{slug}: needs {need} GPUs (tensor_parallel_size x data_parallel_size) "
                f"but this node has {len(devices)} ({', '.join(devices) or 'none'}); lower them "
                "or set RAY_ADDRESS to run its replicas on a cluster"
            )
