"""How fast the benchmark registry loads sets and renders prompts. Prints figures; asserts nothing.

Run: python perf/registry_speed.py
"""

from __future__ import annotations

import time

import pandas as pd

from evalpipe.benchmarks import REGISTRY, build_prompts, get_spec, load_benchmark, select_examples


def main() -> None:
    total = 0.0
    sets = {}
    for name in REGISTRY:
        start = time.perf_counter()
        sets[name] = load_benchmark(get_spec(name), source="sample", max_samples=20, seed=42)
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"load sample {name:15s} {elapsed * 1000:7.1f} ms ({len(sets[name][0])} examples)")
    print(f"load all nine sample sets: {total:.2f} s")

    for name in ("mmlu", "jnli"):
        examples, fewshot = sets[name]
        rows = pd.concat([examples] * 500, ignore_index=True)  # 10,000 rows, like a perturbed set
        for style in ("zero_shot", "few_shot"):
            start = time.perf_counter()
            prompts = build_prompts(get_spec(name), rows, fewshot, style=style, n_shots=3)
            elapsed = time.perf_counter() - start
            print(f"build_prompts {name} {style:9s}: {len(prompts) / elapsed:9.0f} prompts/s")

    ids = pd.DataFrame({"example_id": [f"imdb/test/{i}" for i in range(25000)]})
    start = time.perf_counter()
    select_examples(ids, 100, seed=42)
    print(f"select 100 of 25,000 ids: {(time.perf_counter() - start) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
