"""Which annotation batches a run reads: the campaign's, or the bundled samples when it has none.

A campaign starts with ``data/raw/annotations/`` empty. The illustrative batches that come with
the project live apart (``data/samples/annotations/``) and are read only while no real batch
exists, so that the default pipeline still runs; every output then says it rests on sample data.
One real batch replaces them entirely: sample ratings never mix into a campaign's figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalpipe.errors import InputError

NOTE_SAMPLE_BATCHES = (
    "SAMPLE DATA: no annotation batch in the campaign folder, so these figures use the bundled "
    "illustrative batches (data/samples/annotations/); export or import a real batch to replace "
    "them"
)


@dataclass(frozen=True)
class BatchSet:
    """The batch files to read and whether they are the bundled samples.

    Attributes
    ----------
    paths:
        ``*.jsonl`` files, sorted by name.
    samples:
        True when ``paths`` are the bundled sample batches (no real batch exists).
    folder:
        Where ``paths`` were found.
    """

    paths: list[Path]
    samples: bool
    folder: Path

    @property
    def label(self) -> str:
        """``"batches"`` or ``"SAMPLE batches"``, for one-line summaries."""
        return "SAMPLE batches" if self.samples else "batches"


def _jsonl(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    # Raw CSV batches (the filtering protocol's input) count too.
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in {".jsonl", ".csv"})


def find_batches(raw_dir: str | Path, *, samples_dir: str | Path | None) -> BatchSet:
    """The real batches in ``raw_dir``, else the samples in ``samples_dir``.

    Parameters
    ----------
    raw_dir:
        The campaign's batch folder.
    samples_dir:
        The bundled sample batches, or None to require real batches.

    Returns
    -------
    BatchSet

    Raises
    ------
    InputError
        If neither folder holds a ``*.jsonl`` file.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     raw, samples = Path(d, "raw"), Path(d, "samples")
    ...     samples.mkdir()
    ...     _ = Path(samples, "batch_001.jsonl").write_text("")
    ...     first = find_batches(raw, samples_dir=samples).samples
    ...     raw.mkdir()
    ...     _ = Path(raw, "batch_001.jsonl").write_text("")
    ...     first, find_batches(raw, samples_dir=samples).samples
    (True, False)
    """
    raw = Path(raw_dir)
    real = _jsonl(raw)
    if real:
        return BatchSet(real, False, raw)
    if samples_dir is not None:
        samples = _jsonl(Path(samples_dir))
        if samples:
            return BatchSet(samples, True, Path(samples_dir))
    where = raw if samples_dir is None else f"{raw} (nor sample batches in {samples_dir})"
    raise InputError(f"{where}: no annotation batches (*.jsonl) found")
