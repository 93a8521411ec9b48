#!/usr/bin/env bash
# Regenerates samples/ (as root): two traces captured here with `iofp capture` from fio-driven
# workloads on a scratch RAM loop device, one imported production trace, and their fingerprints.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
trap scratch_cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || { echo "make_samples.sh: needs root (eBPF capture, loop devices)" >&2; exit 2; }
SAMPLES=samples/traces
FPS=samples/fingerprints
mkdir -p "$SAMPLES" "$FPS"
rm -rf "$SAMPLES/market-open" "$SAMPLES/market-open-q2" "$SAMPLES/commit-heavy" "$SAMPLES/mysql-1and1"

scratch 256; DEV=$SCRATCH_DEV
capture_workload "$DEV" "$SAMPLES/market-open" 34 samples/workloads/market-open.fio --label service=order-router \
    --label workload=market-open
scratch_cleanup
# The same service a quarter later, moved to a SATA-class volume: a direct-I/O loop device over a
# file on the VM disk (fsync ~270 us instead of ~40 us). Same demand, slower device.
scratch 256 /tmp --direct-io=on; DEV=$SCRATCH_DEV
capture_workload "$DEV" "$SAMPLES/market-open-q2" 34 samples/workloads/market-open.fio --label service=order-router \
    --label workload=market-open
scratch_cleanup
scratch 256; DEV=$SCRATCH_DEV
capture_workload "$DEV" "$SAMPLES/commit-heavy" 24 samples/workloads/commit-heavy.fio --label service=order-router \
    --label workload=commit-heavy
rm -f "$SAMPLES"/*.capture.json "$SAMPLES"/*.capture.err

# One hour of a production MySQL server at 1&1 (blkreplay project's example load, GNU all-permissive).
run "$IOFP" import blkreplay ../shared/traces/linux-mysql.load.gz -o "$SAMPLES/mysql-1and1"

for t in "$SAMPLES"/*/; do
    name=$(basename "$t")
    run "$IOFP" fingerprint "$t" --json "$FPS/$name.fp.json" --force >/dev/null
done
du -sh "$SAMPLES"/*
