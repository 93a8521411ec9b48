#!/usr/bin/env bash
# One-shot, idempotent set-up for a fresh Debian/Ubuntu machine: OS packages,
# kernel headers for bcc, tracefs, and a venv that can see the OS's bcc.
# `make demo` and `make test` both run it; it does nothing that is already done.
set -euo pipefail

VENV=${VENV:-.venv}
PY=/usr/bin/python3          # bcc (python3-bpfcc) is packaged for the OS python only
# postgresql: a real database for the commit-fidelity test and bench (tests/test_commits.py,
# bench/commit_fidelity.py); they run their own clusters, never the packaged one.
# openjdk-17-jre-headless: the Java runtime pyspark runs (iofp fleet, tests/test_fleet.py).
APT_PKGS=(fio python3-bpfcc bpfcc-tools python3-venv linux-perf bpftrace bpftool util-linux chromium fdisk lvm2 postgresql
          openjdk-17-jre-headless)

log() { printf 'setup: %s\n' "$*" >&2; }
# The newest existing directory among the arguments (unmatched globs stay literal and are skipped).
newest_dir() { local d; for d in "$@"; do if [ -d "$d" ]; then echo "$d"; fi; done | sort -V | tail -n1; }

need_apt=()
for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$p")
done

if [ "$(id -u)" = 0 ]; then
    if [ ${#need_apt[@]} -gt 0 ]; then
        log "installing ${need_apt[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    fi

    # bcc compiles its C against the running kernel's headers.  Prefer the exact
    # package; when the distro has none for this kernel (custom/cloud kernels),
    # fall back to the distro's generic headers: tracepoint programs only need
    # the stable tracepoint/UAPI parts, and iofp checks every struct offset it
    # reads against BTF at load time.
    kdir=/lib/modules/$(uname -r)
    if [ ! -e "$kdir/build/include" ]; then
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y -qq "linux-headers-$(uname -r)" >/dev/null 2>&1; then
            log "no linux-headers-$(uname -r) package; using the distro's generic headers"
            apt-get install -y -qq linux-headers-amd64 >/dev/null 2>&1 || apt-get install -y -qq linux-headers-generic >/dev/null
            hdr=$(newest_dir /usr/src/linux-headers-*-amd64 /usr/src/linux-headers-*-generic)
            common=$(newest_dir /usr/src/linux-headers-*-common)
            [ -n "$hdr" ] || { log "no kernel headers could be installed; bcc cannot compile"; exit 1; }
            mkdir -p "$kdir"
            ln -sfn "$hdr" "$kdir/build"
            ln -sfn "${common:-$hdr}" "$kdir/source"
        fi
    fi

    # bcc attaches tracepoints through tracefs, which a fresh machine may not mount.
    if [ ! -e /sys/kernel/tracing/events ]; then
        mount -t tracefs nodev /sys/kernel/tracing
    fi
elif [ ${#need_apt[@]} -gt 0 ]; then
    log "not root: cannot install ${need_apt[*]}; live capture and replay tests will be skipped"
fi

if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV (with system site-packages, for bcc)"
    "$PY" -m venv --system-site-packages "$VENV"
fi
stamp="$VENV/.iofp-installed"
if [ ! -e "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e '.[dev,fleet]'
    touch "$stamp"
fi
log "ready: $VENV/bin/iofp"
