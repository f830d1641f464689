#!/usr/bin/env bash
# Sets up everything specconsole needs on a fresh machine, idempotently:
#   - system packages the tests use (OpenSSH server, tmux, systemd-nspawn + debootstrap),
#     installed from the distribution only when missing and only when running as root;
#   - a project-local virtual environment in .venv with the package and its dev extras,
#     reinstalled only when pyproject.toml changed.
# Usage: scripts/bootstrap.sh [--system]   (--system also installs the test system packages)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}

want_system=0
[ "${1:-}" = "--system" ] && want_system=1

install_system_packages() {
    local missing=()
    command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
    command -v tmux >/dev/null 2>&1 || missing+=(tmux)
    command -v systemd-nspawn >/dev/null 2>&1 || missing+=(systemd-container)
    command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
    command -v zstd >/dev/null 2>&1 || missing+=(zstd)
    # Debian's Docker engine: the docker-backend tests run against a private dockerd of their own.
    command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: cannot install ${missing[*]} (not root or no apt-get); tests needing them will skip" >&2
        return 0
    fi
    echo "bootstrap: installing ${missing[*]} from the distribution" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || true
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || echo "bootstrap: apt-get install ${missing[*]} failed; tests needing them will skip" >&2
}

setup_venv() {
    if [ ! -x .venv/bin/python ]; then
        "$PY" -m venv .venv
    fi
    local stamp=.venv/.specconsole-installed
    local want
    want=$(sha256sum pyproject.toml | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
        .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
        echo "$want" > "$stamp"
    fi
}

[ $want_system -eq 1 ] && install_system_packages
setup_venv
echo "bootstrap: ready ($ROOT/.venv)" >&2
