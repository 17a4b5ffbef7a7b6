#!/usr/bin/env bash
# Refresh the dependency lock requirements/lock-cpu.txt (`make lock`): set up a scratch venv from
# the version ranges in pyproject.toml alone (no lock), exactly as scripts/setup.sh --dev does,
# and freeze what it got. Commit the new lock with the dvc.lock a fresh `dvc repro` then writes:
# the lock is what makes artifacts byte-identical across machines.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
EVALPIPE_LOCK=none EVALPIPE_VENV="$scratch/venv" bash scripts/setup.sh --dev
out="requirements/lock-cpu.txt"
{
  echo "# evalpipe dependency lock for the CPU build (pip constraints), written by \`make lock\`"
  echo "# (scripts/lock.sh) from the ranges in pyproject.toml; scripts/setup.sh installs with it."
  # the project itself and the CUDA-linked extras setup.sh removes are not part of the lock
  "$scratch/venv/bin/python" -m pip freeze --exclude-editable --all \
    | grep -viE '^(evalpipe|torchvision|torchaudio|torchcodec)==' | LC_ALL=C sort -f
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "lock: $(grep -vc '^#' "$out") packages -> $out"
