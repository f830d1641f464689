#!/usr/bin/env bash
# Builds (once) the Debian root the systemd-backend tests boot with systemd-nspawn, and prints
# the path of a ready, unpacked copy of it.
#
# Why a script and a cache: debootstrap plus configuration takes ~80 s and ~300 MB, far too
# slow to repeat per test run. The finished root is cached as a zstd tarball under
# ~/.cache/specconsole/ (outside the repository) keyed by a hash of this script, so editing the
# recipe rebuilds it and reruns only unpack it (~5 s) — or reuse the unpacked tree directly,
# since the tests boot it with --volatile=overlay and never write to it.
#
# The root holds: systemd as PID 1, dbus, openssh-server, python3 (Debian 12's 3.11, the same
# as the host, so the checkout's .venv bind-mounted read-only runs inside), sudo, and two
# users: `tester` (passwordless sudo, and a user manager from boot for --user units) and
# `prompter` (sudo that asks for a password).
# Terminals are masked so the container never grabs one. Per-boot facts (sshd port, host
# key, authorized keys) are NOT baked in: the test fixture bind-mounts them.
#
# Usage: scripts/nspawn-root.sh            prints the unpacked root's path (builds if needed)
# Needs root, debootstrap, zstd and a reachable Debian mirror; exits 2 with a reason if not.
set -euo pipefail

SUITE=bookworm
MIRROR=${SPECCONSOLE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${SPECCONSOLE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specconsole}
RECIPE_HASH=$(sha256sum "$0" | cut -c1-12)
TARBALL="$CACHE/nspawn-root-$SUITE-$RECIPE_HASH.tar.zst"
UNPACKED="$CACHE/nspawn-root-$SUITE-$RECIPE_HASH"

fail() { echo "nspawn-root: $*" >&2; exit 2; }

[ "$(id -u)" = "0" ] || fail "needs root (debootstrap and systemd-nspawn)"
command -v zstd >/dev/null || fail "zstd is missing (scripts/bootstrap.sh --system installs it)"
mkdir -p "$CACHE"

# One builder at a time: concurrent test sessions wait for the first build.
exec 9>"$CACHE/nspawn-root.lock"
flock -w 600 9 || fail "timed out waiting for another build of the root"

if [ -f "$UNPACKED/.specconsole-root-ready" ]; then
    echo "$UNPACKED"
    exit 0
fi

build_tarball() {
    command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] \
        || fail "debootstrap is missing (scripts/bootstrap.sh --system installs it)"
    local work
    work=$(mktemp -d "$CACHE/build.XXXXXX")
    trap 'rm -rf "$work"' RETURN
    echo "nspawn-root: debootstrap $SUITE into $work (about 80 s, once)" >&2
    PATH=$PATH:/usr/sbin debootstrap --variant=minbase \
        --include=systemd,systemd-sysv,dbus,libpam-systemd,openssh-server,python3,sudo,procps \
        "$SUITE" "$work/root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; fail "debootstrap failed (mirror $MIRROR)"; }
    local r="$work/root"
    # Never take a terminal; nothing to log in on a console.
    for u in getty.target console-getty.service systemd-firstboot.service; do
        ln -sf /dev/null "$r/etc/systemd/system/$u"
    done
    echo specconsole-box >"$r/etc/hostname"
    # Host keys come from the fixture's bind-mounted drop-in; drop the baked ones.
    rm -f "$r"/etc/ssh/ssh_host_*
    chroot "$r" useradd --create-home --shell /bin/bash tester
    chroot "$r" useradd --create-home --shell /bin/bash prompter
    echo 'prompter:not-a-real-password-7d1c' | chroot "$r" chpasswd
    echo 'tester ALL=(ALL) NOPASSWD: ALL' >"$r/etc/sudoers.d/tester"
    echo 'prompter ALL=(ALL) ALL' >"$r/etc/sudoers.d/prompter"
    chmod 0440 "$r/etc/sudoers.d/tester" "$r/etc/sudoers.d/prompter"
    # tester's user manager runs from boot (lingering), for `systemctl --user` units.
    mkdir -p "$r/var/lib/systemd/linger"
    touch "$r/var/lib/systemd/linger/tester"
    # The fixture bind-mounts its sshd drop-in and keys here.
    mkdir -p "$r/etc/specconsole-test"
    rm -rf "$r/var/cache/apt/archives"/*.deb "$r/var/lib/apt/lists"/*
    tar -C "$r" --numeric-owner -cf - . | zstd -q -T0 -3 -o "$work/root.tar.zst"
    mv "$work/root.tar.zst" "$TARBALL"
    echo "nspawn-root: cached $TARBALL ($(du -h "$TARBALL" | cut -f1))" >&2
}

[ -f "$TARBALL" ] || build_tarball
# Older recipes' roots are dead weight.
for stale in "$CACHE"/nspawn-root-*; do
    case "$stale" in "$TARBALL" | "$UNPACKED" | "$UNPACKED.tmp") ;; *) rm -rf "$stale" ;; esac
done
rm -rf "$UNPACKED.tmp"
mkdir -p "$UNPACKED.tmp"
zstd -q -d -c "$TARBALL" | tar -C "$UNPACKED.tmp" --numeric-owner -xf -
touch "$UNPACKED.tmp/.specconsole-root-ready"
rm -rf "$UNPACKED"
mv "$UNPACKED.tmp" "$UNPACKED"
echo "$UNPACKED"
