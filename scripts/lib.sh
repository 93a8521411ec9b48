# Shell helpers shared by demo.sh and make_samples.sh (sourced, not run).
# Scratch loop devices are tracked in SCRATCH and removed by scratch_cleanup, which callers trap on EXIT.

IOFP=${IOFP:-.venv/bin/iofp}
SCRATCH=()
CAPTURE_PID=

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

# scratch SIZE_MIB [DIR [LOSETUP_ARGS...]]: a loop device over a fresh sparse file in DIR (/dev/shm),
# left in SCRATCH_DEV. (Not called as $(scratch ...): a subshell would lose the SCRATCH list.)
scratch() {
    local size=$1 dir=${2:-/dev/shm} img dev
    shift $(($# < 2 ? $# : 2))
    img=$(mktemp "$dir/iofp-scratch-XXXXXX.img")
    truncate -s "${size}M" "$img"
    dev=$(losetup -f --show "$@" "$img") || { rm -f "$img"; return 1; }
    SCRATCH+=("$dev")
    SCRATCH_DEV=$dev
}

scratch_cleanup() {
    set +e
    if [ -n "$CAPTURE_PID" ]; then
        kill -INT "$CAPTURE_PID" 2>/dev/null
        wait "$CAPTURE_PID" 2>/dev/null
    fi
    local dev backing
    for dev in "${SCRATCH[@]}"; do
        backing=$(losetup -n -O BACK-FILE "$dev" 2>/dev/null)
        losetup -d "$dev" 2>/dev/null
        [ -n "$backing" ] && rm -f "$backing"
    done
    SCRATCH=()
}

# capture_workload DEV OUTDIR SECONDS JOBFILE [capture args...]: capture DEV while fio runs JOBFILE on it.
capture_workload() {
    local dev=$1 out=$2 secs=$3 job=$4
    shift 4
    printf '$ %s\n' "$IOFP capture --device $(basename "$dev") --duration ${secs}s --output $out $*"
    "$IOFP" capture --device "$(basename "$dev")" --duration "${secs}s" --output "$out" --json - "$@" \
        >"$out.capture.json" 2>"$out.capture.err" &
    CAPTURE_PID=$!
    local i
    for i in $(seq 150); do  # start the workload once the probes are attached
        grep -q "recording" "$out.capture.err" 2>/dev/null && break
        kill -0 "$CAPTURE_PID" 2>/dev/null || break
        sleep 0.2
    done
    run env DEV="$dev" fio --output-format=terse "$job" >/dev/null
    local rc=0
    wait "$CAPTURE_PID" || rc=$?
    CAPTURE_PID=
    cat "$out.capture.err" >&2
    [ "$rc" = 0 ] || { echo "capture failed ($rc)" >&2; return "$rc"; }
    cat "$out.capture.json"
}
