#!/usr/bin/env bash
# The iofp demo, end to end. `make demo` runs it after setup.
#   (a) any user: fingerprint the bundled samples (steady/spike split and the bound), write an HTML
#       report and a fio iolog of the spike, and review two quarters in a catalog;
#   (b) as root: make two scratch loop devices over /dev/shm files, drive a market-open commit
#       workload on one while capturing it, fingerprint it, replay its spike on the other, print the
#       fidelity verdict, the device comparison and its HTML report; then probe both candidates and
#       sweep each for its headroom on the spike and on the commit-heavy sample, and rank them by it
#       (steps 10-12: about 2 min of the live part). Every scratch device is removed on exit, also
#       when interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/lib.sh
OUT=${OUT:-demo-out}
SAMPLES=samples/traces

rm -rf "$OUT"
mkdir -p "$OUT"

# ---------------------------------------------------------------- (a) the bundled samples
say "1. Fingerprint the bundled samples (steady-state vs spike, and what bounds each)"
for trace in "$SAMPLES"/*/; do
    name=$(basename "$trace")
    run "$IOFP" fingerprint "$trace" --json "$OUT/$name.fp.json"
done

say "2. A self-contained HTML report and a fio iolog of the market-open spike"
run "$IOFP" report "$SAMPLES/market-open" -o "$OUT/market-open.html"
run "$IOFP" iolog "$SAMPLES/market-open" --regime spike --target /dev/loop-candidate \
    --target-size 256MiB -o "$OUT/market-open-spike.iolog"
head -n 5 "$OUT/market-open-spike.iolog"

say "3. Quarterly review: the same order router a quarter later, on a SATA-class volume (exit 1 when
   drift is flagged, which the review reads as its answer)"
drift=0
COLUMNS=80 run "$IOFP" diff "$OUT/market-open.fp.json" "$OUT/market-open-q2.fp.json" || drift=$?
[ "$drift" -le 1 ] || exit "$drift"
echo "iofp diff exit status: $drift"
for q in market-open market-open-q2; do
    run "$IOFP" catalog add "$OUT/$q.fp.json" --service order-router --catalog "$OUT/catalog.duckdb"
done
drift=0
run "$IOFP" catalog trend --service order-router --catalog "$OUT/catalog.duckdb" || drift=$?
[ "$drift" -le 1 ] || exit "$drift"

if [ "${IOFP_DEMO_LIVE:-1}" = 0 ]; then
    say "IOFP_DEMO_LIVE=0: skipping the live part"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    say "Not root: the live part (capture a scratch device, replay on another) needs root; run: sudo make demo"
    exit 0
fi

# ---------------------------------------------------------------- (b) live: capture, replay, compare
trap scratch_cleanup EXIT
trap 'exit 130' INT TERM

say "4. Scratch devices: 'prod' and a candidate over /dev/shm files (RAM, ~40 us fsync), and a
   second candidate over a /tmp file with direct I/O (the VM disk, ~270 us fsync: a SATA-class SSD)"
scratch 256; PROD=$SCRATCH_DEV
scratch 256; CAND=$SCRATCH_DEV
scratch 256 /tmp --direct-io=on; DISK=$SCRATCH_DEV
echo "prod=$PROD candidate=$CAND candidate-disk=$DISK"

say "5. Capture prod while a market-open commit workload runs (30 s; the burst starts at 12 s)"
capture_workload "$PROD" "$OUT/live" 34 samples/workloads/market-open.fio --label service=order-router

say "6. Fingerprint the live capture"
run "$IOFP" fingerprint "$OUT/live" --json "$OUT/live.fp.json"

say "7. Replay the spike on prod itself (validates the replayer) and on each candidate"
for pair in "prod:$PROD" "candidate-ram:$CAND" "candidate-disk:$DISK"; do
    name=${pair%%:*} dev=${pair#*:}
    run "$IOFP" replay "$OUT/live" --target "$dev" --regime spike --label "device=$name" \
        --output "$OUT/replay-$name"
done

say "8. The comparison a procurement review needs (production's own capture as the baseline; exit 1
   when a candidate misses the SLO, which a review reads as its answer, not as the demo failing)"
slo=0
"$IOFP" compare "$OUT/replay-prod" "$OUT/replay-candidate-ram" "$OUT/replay-candidate-disk" \
    --baseline "$OUT/live" --slo 'p99<=2ms,commit.p99<=2ms' --json "$OUT/compare.json" --force >/dev/null || slo=$?
[ "$slo" -le 1 ] || exit "$slo"
COLUMNS=80 run "$IOFP" compare "$OUT/replay-prod" "$OUT/replay-candidate-ram" "$OUT/replay-candidate-disk" \
    --baseline "$OUT/live" --slo 'p99<=2ms,commit.p99<=2ms' || true
echo "iofp compare exit status: $slo"

say "9. One report of the comparison: per candidate, achieved vs demanded, latency over time and its
   CDFs, the commit latency, against the SLO"
run "$IOFP" report "$OUT/replay-prod" "$OUT/replay-candidate-ram" "$OUT/replay-candidate-disk" \
    --slo 'p99<=2ms,commit.p99<=2ms' -o "$OUT/comparison.html"

say "10. Probe each candidate: random reads at the workload's depths and the fsync-bounded commit rate
   (iofp probe --quick, two of its four cells: ~15 s each)"
for pair in "candidate-ram:$CAND" "candidate-disk:$DISK"; do
    name=${pair%%:*} dev=${pair#*:}
    COLUMNS=80 run "$IOFP" probe "$dev" --quick --cells randread,commit --like "$OUT/live.fp.json" \
        --label "device=$name" -o "$OUT/probe-$name"
done

say "11. Headroom: how many times today's load each candidate holds before the SLO breaks or the rate
   is not kept (each step a whole replay, judged by iofp's capture; 3 steps, ~25 s per sweep)"
for trace in "live:$OUT/live --regime spike" "commit-heavy:samples/traces/commit-heavy --between 5 7"; do
    tname=${trace%%:*} sel=${trace#*:}
    for pair in "candidate-ram:$CAND" "candidate-disk:$DISK"; do
        name=${pair%%:*} dev=${pair#*:}
        # shellcheck disable=SC2086  # $sel is the trace and its selection options
        COLUMNS=80 run "$IOFP" headroom $sel --target "$dev" --slo 'p99<=2ms,commit.p99<=1ms' \
            --scales 1,2,4 --max-scale 8 --precision 25% --budget 3 --label "device=$name" \
            -o "$OUT/headroom-$tname-$name" || echo "iofp headroom exit status: $? (1: below 1x or inconclusive)"
    done
done

say "12. The candidates ranked by their headroom on the market-open spike, with their probe cells"
COLUMNS=80 run "$IOFP" compare "$OUT/headroom-live-candidate-ram" "$OUT/headroom-live-candidate-disk" \
    "$OUT/probe-candidate-ram" "$OUT/probe-candidate-disk" --slo 'p99<=2ms,commit.p99<=1ms' || true

say "Done. Artifacts in $OUT/"
