#!/usr/bin/env bash
# Fuzz the C input readers for a while and say how it went.
#
#   fuzz/readers/run.sh TARGET|all SECONDS
#
# TARGET: pcap, csv or arrow (all: each in turn, SECONDS each; one job at a
# time).  Builds the harnesses (build.sh) into $BUILD (default
# /tmp/gsqlc-fuzz-readers), fuzzes from a copy of corpus/TARGET (the repo's
# corpus is left alone unless MERGE=1: then the inputs that add coverage
# are merged into it with -merge=1), and prints per target: executions,
# exec/s, coverage at start and end (new coverage), corpus size and
# crashes.  Crash, leak, timeout and OOM inputs are left in
# $BUILD/artifacts/TARGET/ with their logs beside them.  Exits 1 when any
# target crashed, 2 on a usage or build error.  SEED=N fixes libFuzzer's seed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/gsqlc-fuzz-readers}
if [ $# -ne 2 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 pcap|csv|arrow|all SECONDS" >&2
    exit 2
fi
case "$1" in
all) TARGETS=(pcap csv arrow) ;;
pcap | csv | arrow) TARGETS=("$1") ;;
*) echo "$0: unknown target '$1' (pcap, csv, arrow, all)" >&2; exit 2 ;;
esac
SECS=$2

"$HERE/build.sh" "$BUILD" "${TARGETS[@]}" >/dev/null || exit 2

status=0
printf '%-6s %12s %9s %9s %9s %8s %7s %8s\n' target executions exec/s cov_start cov_end new_cov corpus crashes
for t in "${TARGETS[@]}"; do
    work=$BUILD/work/$t
    arts=$BUILD/artifacts/$t
    log=$BUILD/logs/$t.log
    rm -rf "$work"
    mkdir -p "$work" "$arts" "$(dirname "$log")" "$HERE/corpus/$t"
    cp "$HERE/corpus/$t"/. "$work"/ -r
    before=$(find "$arts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    rc=0
    (cd "$BUILD" && "$BUILD/fuzz_$t" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$arts/" ${SEED:+-seed=$SEED} "$work") >"$log" 2>&1 || rc=$?
    after=$(find "$arts" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | wc -l)
    crashes=$((after - before))
    if [ $rc -ne 0 ] && [ $crashes -eq 0 ]; then
        crashes=1 # died without an artifact: count it
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov0=$(grep -m1 -E '#[0-9]+[[:space:]]*INITED' "$log" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    cov1=$(grep -E '#[0-9]+[[:space:]]*(DONE|NEW|REDUCE|pulse|INITED)' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    corp=$(find "$work" -type f | wc -l)
    printf '%-6s %12s %9s %9s %9s %8s %7s %8s\n' "$t" "${execs:-?}" "${eps:-?}" "${cov0:-?}" "${cov1:-?}" \
        "$(( ${cov1:-0} - ${cov0:-0} ))" "$corp" "$crashes"
    if [ $crashes -ne 0 ]; then
        status=1
        cp "$log" "$arts/$(date +%Y%m%d-%H%M%S).log"
        grep -m3 -E 'ERROR: |runtime error|SUMMARY' "$log" | sed 's/^/    /' || true
        echo "    artifacts and log: $arts" >&2
    elif [ "${MERGE:-0}" = 1 ]; then
        "$BUILD/fuzz_$t" -merge=1 "$HERE/corpus/$t" "$work" >>"$log" 2>&1
        echo "    merged into $HERE/corpus/$t: $(find "$HERE/corpus/$t" -type f | wc -l) files"
    fi
done
exit $status
