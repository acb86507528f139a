# The guest harness's vocabulary, sourced (inside the VM) by guest-checks.sh and the guest-*-only.sh scripts with
# their arguments: BIN (the blegateway binary) and OUT (the results directory); each check appends one line to
# $OUT/checks, "PASS name", "FAIL name: why" or "SKIP name: why", which run.sh counts.
BIN=$1
OUT=$2
CHECKS=$OUT/checks
: > "$CHECKS"
pass() { echo "PASS $1" >> "$CHECKS"; }
fail() { echo "FAIL $1: $2" >> "$CHECKS"; }
skip() { echo "SKIP $1: $2" >> "$CHECKS"; }
check() { if [ "$2" = ok ]; then pass "$1"; else fail "$1" "$2"; fi; }
log() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }

# btvirt -l2: two virtual LE controllers on one virtual radio (hci0, hci1); BTVIRT is its pid. HCI0_AT is the
# guest's uptime when hci0 was first seen (to a tenth of a second): a check that times the gateway's reaction to the
# adapter's return counts from there, not from btvirt's own start, which under TCG alone can take seconds. Fails the
# check `btvirt` and returns 1 when they do not appear.
start_btvirt() {
    btvirt -l2 > "$OUT/btvirt.log" 2>&1 &
    BTVIRT=$!
    HCI0_AT=
    for i in $(seq 1 100); do
        [ -n "$HCI0_AT" ] || [ ! -e /sys/class/bluetooth/hci0 ] || HCI0_AT=$(cut -d' ' -f1 /proc/uptime)
        [ -e /sys/class/bluetooth/hci1 ] && return 0
        sleep 0.1
    done
    fail btvirt "hci0/hci1 did not appear"
    return 1
}
