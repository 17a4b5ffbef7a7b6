"""How long `benchmarks.source: files` takes to read and map each benchmark at full size.
Prints figures; asserts nothing.

Run: python perf/publisher_files_speed.py [FOLDER]

FOLDER holds `<name>/` folders of the publishers' files (default: data/raw/benchmarks); the
benchmarks whose folder is absent are skipped. IMDB is the one reader whose cost grows with the
number of files (25,000 reviews, one file each), so when its folder is absent it is timed on
25,000 generated reviews in the archive's layout.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from evalpipe.benchmarks import REGISTRY, get_spec, load_benchmark


def _time(name: str, folder: Path) -> None:
    start = time.perf_counter()
    examples, fewshot = load_benchmark(
        get_spec(name), source="files", max_samples=None, seed=42, files_dir=folder
    )
    elapsed = time.perf_counter() - start
    info = examples.attrs["evalpipe"]
    missing = f", missing {', '.join(info['fewshot_missing'])}" if info["fewshot_missing"] else ""
    print(
        f"{name:15s} {len(examples):6d} examples + {len(fewshot):3d} few-shot "
        f"{elapsed:6.2f} s  [{info['dataset_version']}{missing}]"
    )


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "data/raw/benchmarks")
    for name in REGISTRY:
        if (folder / name).is_dir():
            _time(name, folder)
        elif name != "imdb":
            print(f"{name:15s} skipped: no folder {folder / name}")
    if not (folder / "imdb").is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            for polarity, rating in (("pos", 8), ("neg", 3)):
                sub = Path(tmp) / "imdb" / "test" / polarity
                sub.mkdir(parents=True)
                for i in range(12500):
                    text = f"Review {i}: " + "a fairly long sentence about the film. " * 30
                    (sub / f"{i}_{rating}.txt").write_text(text, encoding="utf-8")
            print("imdb: 25,000 generated reviews in the aclImdb layout")
            _time("imdb", Path(tmp))


if __name__ == "__main__":
    main()
