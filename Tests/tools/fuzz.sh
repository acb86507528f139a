#!/usr/bin/env bash
# `make fuzz` and `make test-fuzz`: each libFuzzer harness (Fuzz/) for SECONDS from its committed seeds, as many at once
# as the machine has cores (a harness is one process on one core and shares nothing with the others), each one's
# summary printed in the order given. A finding is kept as Fuzz/crash-* and fails the run.
#   Tests/tools/fuzz.sh BIN_DIR SECONDS keep|discard NAME:SEEDS ...
# keep: each harness learns into Fuzz/corpus-NAME (kept); discard: into a scratch directory removed at the end.
set -uo pipefail
bin=$1 seconds=$2 mode=$3
shift 3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

run_one() {
    local name=${1%%:*} seeds=${1#*:} corpus
    if [ "$mode" = keep ]; then corpus=Fuzz/corpus-$name; else corpus=$scratch/corpus-$name; fi
    mkdir -p "$corpus"
    "$bin/Fuzz$name" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 -artifact_prefix=Fuzz/ \
        "$corpus" "Fuzz/$seeds" > "$scratch/$name.log" 2>&1
    echo $? > "$scratch/$name.status"
}

cores=$(nproc)
echo "fuzzing ${#@} harnesses for $seconds s each, $cores at a time"
for harness in "$@"; do
    run_one "$harness" &
    while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n; done
done
wait

failed=0
for harness in "$@"; do
    name=${harness%%:*}
    echo "fuzzing $name for $seconds s"
    grep -E '^(stat::(number|new|peak)|Done|==|SUMMARY)|ERROR|Fatal error|deadly signal|crash-' "$scratch/$name.log"
    if [ "$(cat "$scratch/$name.status" 2>/dev/null)" != 0 ]; then
        echo "Fuzz$name found a crash: Fuzz/crash-*"
        failed=1
    fi
done
exit "$failed"
