"""The generation cache: content-addressed results stored as a few Parquet segment files.

Key = SHA-256 of (model identity, sampling params, structured-output schema, system message, exact
prompt). The model identity (backend, name, revision or weights hash, dtype, chat template) is in
the key because a cache keyed on the prompt alone silently returns another model's outputs
(lm-evaluation-harness issues #2715, #4063).

Layout: ``<dir>/seg-<hash>.parquet``, each sorted by key and named after its keys' hash. Every
checkpoint writes one new segment atomically (temporary file + rename), so a run killed half-way
keeps every finished chunk. At the end of a run the run's segments are merged into one, and when
more than ``max_segments`` remain everything is merged, so the directory stays a few files that
DVC hashes and pushes quickly.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evalpipe import atomic
from evalpipe.errors import InputError
from evalpipe.inference.types import (
    Generation,
    GenerationRequest,
    LoglikelihoodRequest,
    ModelIdentity,
    stable_hash,
)

SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("model", pa.string()),
        ("system", pa.string()),
        ("prompt", pa.string()),
        ("output", pa.string()),
        ("finish_reason", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
    ]
)
TOP_LOGPROBS = "first_token_logprobs"
"""An optional column (JSON ``[[token, logprob], ...]``), present only in segments holding a
generation asked with ``top_logprobs``: segments without one keep :data:`SCHEMA` exactly."""
WITH_TOP_LOGPROBS = SCHEMA.append(pa.field(TOP_LOGPROBS, pa.string()))


def _columns(table: pa.Table) -> list[str]:
    optional = [TOP_LOGPROBS] if TOP_LOGPROBS in table.column_names else []
    return [*SCHEMA.names, *optional]


def _top_json(top: tuple[tuple[str, float], ...] | None) -> str | None:
    # repr-exact floats through JSON: a cached distribution equals the computed one bit for bit
    return None if top is None else json.dumps([[t, v] for t, v in top], ensure_ascii=False)


def _top_tuple(text: object) -> tuple[tuple[str, float], ...] | None:
    if text is None:
        return None
    return tuple((str(t), float(v)) for t, v in json.loads(str(text)))


def cache_key(identity: ModelIdentity, request: GenerationRequest) -> str:
    """The content address of one generation.

    Parameters
    ----------
    identity:
        The model identity (its ``fields`` are hashed, not its label).
    request:
        The request; its prompt, system message and sampling params are hashed.

    Returns
    -------
    str
        64 hex characters.
    """
    return stable_hash(
        {
            "model": identity.fields,
            "sampling": request.sampling_key(),
            "system": request.system,
            "prompt": request.prompt,
        }
    )


def loglikelihood_key(identity: ModelIdentity, request: LoglikelihoodRequest) -> str:
    """The content address of one log-likelihood score (model identity, context, continuation).

    ``kind`` keeps it apart from every generation key, so the two share one cache safely.
    """
    return stable_hash(
        {
            "model": identity.fields,
            "kind": "loglikelihood",
            "context": request.context,
            "continuation": request.continuation,
        }
    )


@dataclass(frozen=True)
class CacheEntry:
    key: str
    model: str
    request: GenerationRequest
    generation: Generation


class GenerationCache:
    """A directory of Parquet segments mapping cache keys to generations.

    Parameters
    ----------
    directory:
        Where the segments live (``data/cache/generations`` in the pipeline).
    max_segments:
        Merge everything into one segment when a run ends with more segments than this.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segments: int = 8,
        read_also: Sequence[str | os.PathLike[str]] = (),
    ) -> None:
        self.directory = Path(directory)
        self.max_segments = max_segments
        # Other caches looked up but never written: each model's generate stage owns its own
        # directory (one DVC output each) and still finds what another stage generated for the
        # same model identity and request.
        self.read_also = [Path(d) for d in read_also if Path(d) != self.directory]
        self._entries: dict[str, dict[str, object]] | None = None
        self._run_segments: list[Path] = []

    def segments(self) -> list[Path]:
        """The segment files, sorted by name."""
        if not self.directory.exists():
            return []
        return sorted(self.directory.glob("seg-*.parquet"))

    def _load(self) -> dict[str, dict[str, object]]:
        if self._entries is None:
            entries: dict[str, dict[str, object]] = {}
            shared = [
                p for d in self.read_also if d.is_dir() for p in sorted(d.glob("seg-*.parquet"))
            ]
            own = self.segments()
            for path in [*shared, *own]:
                try:
                    table = pq.read_table(path)
                except Exception as exc:  # pyarrow raises several types for a damaged file
                    if isinstance(exc, FileNotFoundError) and path not in own:
                        # another model's stage running at the same time (`evalpipe generate`)
                        # merged it away; its rows are in the merged segment, written first
                        continue
                    raise InputError(
                        f"{path}: not a readable generation-cache segment ({exc}); delete the "
                        "file to regenerate its prompts"
                    ) from exc
                missing = [n for n in SCHEMA.names if n not in table.column_names]
                if missing:
                    raise InputError(f"{path}: generation-cache segment lacks columns {missing}")
                for row in table.select(_columns(table)).to_pylist():
                    entries[str(row["key"])] = row
            self._entries = entries
        return self._entries

    def __len__(self) -> int:
        return len(self._load())

    def lookup(self, keys: Iterable[str]) -> dict[str, Generation]:
        """Cached generations for the keys that are present (``from_cache=True``)."""
        entries = self._load()
        found: dict[str, Generation] = {}
        for key in keys:
            row = entries.get(key)
            if row is not None:
                found[key] = Generation(
                    output=str(row["output"]),
                    finish_reason=str(row["finish_reason"]),
                    prompt_tokens=int(row["prompt_tokens"]),  # type: ignore[call-overload]
                    output_tokens=int(row["output_tokens"]),  # type: ignore[call-overload]
                    from_cache=True,
                    first_token_logprobs=_top_tuple(row.get(TOP_LOGPROBS)),
                )
        return found

    def add(self, entries: Sequence[CacheEntry]) -> Path | None:
        """Checkpoint ``entries`` as one new segment, written atomically.

        Returns
        -------
        Path | None
            The segment written, or None when there was nothing new.
        """
        known = self._load()
        rows: dict[str, dict[str, object]] = {}
        for e in entries:
            if e.key in known or e.key in rows:
                continue
            rows[e.key] = {
                "key": e.key,
                "model": e.model,
                "system": e.request.system,
                "prompt": e.request.prompt,
                "output": e.generation.output,
                "finish_reason": e.generation.finish_reason,
                "prompt_tokens": int(e.generation.prompt_tokens),
                "output_tokens": int(e.generation.output_tokens),
            }
            if e.generation.first_token_logprobs is not None:
                rows[e.key][TOP_LOGPROBS] = _top_json(e.generation.first_token_logprobs)
        if not rows:
            return None
        path = self._write([rows[k] for k in sorted(rows)])
        known.update(rows)
        self._run_segments.append(path)
        return path

    def _write(self, rows: list[dict[str, object]]) -> Path:
        digest = hashlib.sha256("\n".join(str(r["key"]) for r in rows).encode()).hexdigest()
        path = self.directory / f"seg-{digest[:24]}.parquet"
        schema = WITH_TOP_LOGPROBS if any(r.get(TOP_LOGPROBS) for r in rows) else SCHEMA
        atomic.write_parquet(path, pa.Table.from_pylist(rows, schema=schema))
        return path

    def _merge(self, paths: list[Path]) -> None:
        if len(paths) < 2:
            return
        rows: dict[str, dict[str, object]] = {}
        for path in paths:
            table = pq.read_table(path)
            for row in table.select(_columns(table)).to_pylist():
                rows[str(row["key"])] = row
        merged = self._write([rows[k] for k in sorted(rows)])
        # The merged segment is on disk before the parts go: a crash here leaves duplicates,
        # which load to the same entries.
        for path in paths:
            if path != merged:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    def finish(self) -> None:
        """End of a run: merge this run's checkpoints, then everything if too many remain, and
        remove temporary files a killed writer left behind (one writer at a time is assumed)."""
        self._merge(self._run_segments)
        self._run_segments = []
        if self.directory.exists():
            for stale in self.directory.glob(".seg-*.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()
        segments = self.segments()
        if len(segments) > self.max_segments:
            self._merge(segments)
