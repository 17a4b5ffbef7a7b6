"""``tiny-random``: a deterministic smoke-test model built locally, so the pipeline runs offline.

It is a 2-layer Qwen2 with random weights (fixed torch seed) and a byte-level BPE tokenizer
trained with ``tokenizers`` on a small bundled corpus, plus a minimal chat template. Its accuracy
is chance: it exists to exercise the pipeline, never to measure anything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from evalpipe.errors import InputError

log = logging.getLogger(__name__)

TINY_RANDOM = "tiny-random"
TINY_RANDOM_NOTE = (
    "tiny-random is a smoke-test model with random weights: its accuracy is chance, "
    "use a real model for any measurement"
)
# Bump when the recipe changes: a new directory is built and the weights hash changes with it.
RECIPE_VERSION = "v2"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]
VOCAB_SIZE = 1024
HASH_FILE = "weights.sha256"
_HASHED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def default_model_cache(root: str | os.PathLike[str] | None = None) -> Path:
    """The directory locally built models live in.

    Parameters
    ----------
    root:
        Repository root used when ``EVALPIPE_MODEL_CACHE`` is unset (default: current directory).

    Returns
    -------
    Path
        ``$EVALPIPE_MODEL_CACHE`` or ``<root>/.cache/models``.
    """
    env = os.environ.get("EVALPIPE_MODEL_CACHE")
    if env:
        return Path(env)
    return Path(root or ".") / ".cache" / "models"


def weights_hash(model_dir: str | os.PathLike[str]) -> str:
    """SHA-256 over the files that define the tiny model (config, weights, tokenizer)."""
    digest = hashlib.sha256()
    for name in _HASHED_FILES:
        digest.update(name.encode())
        digest.update((Path(model_dir) / name).read_bytes())
    return digest.hexdigest()


def _corpus_lines() -> list[str]:
    text = resources.files("evalpipe.inference").joinpath("tiny_corpus.txt").read_text("utf-8")
    return [line for line in text.splitlines() if line.strip()]


def _build(dest: Path, seed: int = 0) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus_lines(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(dest)

    # Pad the vocabulary to a multiple of 64 so the embedding shape does not depend on how many
    # merges the trainer found.
    vocab = ((len(fast) + 63) // 64) * 64
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,  # vLLM's CPU attention rejects head_dim 16; 64 is supported
        max_position_embeddings=4096,
        # Untied: with tied embeddings a random model mostly repeats the prompt's last token
        # (always the chat template's newline), so every answer was empty. An independent output
        # matrix gives varied, prompt-dependent text that sometimes parses, as a smoke test should.
        tie_word_embeddings=False,
        bos_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=fast.convert_tokens_to_ids("<|end|>"),
        pad_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.save_pretrained(dest, safe_serialization=True)
    (dest / "README.md").write_text(
        f"# tiny-random ({RECIPE_VERSION}, seed {seed})\n\n{TINY_RANDOM_NOTE}.\n", encoding="utf-8"
    )


def tiny_random_seed(revision: object) -> int:
    """The weight seed a ``tiny-random`` revision names: null (seed 0) or ``seed<N>``.

    Two revisions are two different random models with the same tokenizer, which is what an
    offline test of a multi-model comparison needs.

    >>> tiny_random_seed(None), tiny_random_seed("seed3")
    (0, 3)
    """
    if revision is None:
        return 0
    text = str(revision)
    if text.startswith("seed") and text[4:].isdigit():
        return int(text[4:])
    raise InputError(
        f"revision {revision!r} of tiny-random: expected null or seed<N> (e.g. seed1), "
        "which builds the same architecture with other random weights"
    )


def build_tiny_random(
    cache_dir: str | os.PathLike[str] | None = None, *, seed: int = 0
) -> tuple[Path, str]:
    """Build (once) and locate the tiny-random model.

    Parameters
    ----------
    cache_dir:
        Model cache directory; default :func:`default_model_cache`.
    seed:
        The weights' random seed (0: the default model; see :func:`tiny_random_seed`).

    Returns
    -------
    tuple[Path, str]
        The model directory and its weights hash (the model identity used in cache keys).
    """
    root = Path(cache_dir) if cache_dir is not None else default_model_cache()
    dest = root / (f"tiny-random-{RECIPE_VERSION}" + (f"-seed{seed}" if seed else ""))
    hash_path = dest / HASH_FILE
    if hash_path.exists():
        return dest, hash_path.read_text(encoding="utf-8").strip()
    root.mkdir(parents=True, exist_ok=True)
    log.info("building %s into %s (%s)", TINY_RANDOM, dest, TINY_RANDOM_NOTE)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-random-", dir=root))
    try:
        _build(tmp, seed)
        digest = weights_hash(tmp)
        (tmp / HASH_FILE).write_text(digest + "\n", encoding="utf-8")
        try:
            os.replace(tmp, dest)
        except OSError:
            # Another process finished first; its build is identical, keep it.
            if not hash_path.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest, hash_path.read_text(encoding="utf-8").strip()


def describe(model_dir: str | os.PathLike[str]) -> dict[str, object]:
    """Small summary of a built model (for logs and docs)."""
    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    keys = ("num_hidden_layers", "hidden_size", "num_attention_heads", "head_dim", "vocab_size")
    return {k: config.get(k) for k in keys}
