#!/bin/sh
# The shared-mode peripheral checks alone, for working on them without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-peripheral-shared-only.sh Tests/kernel/run.sh .build/debug/blegateway
BIN=$1
OUT=$2
CHECKS=$OUT/checks
: > "$CHECKS"
pass() { echo "PASS $1" >> "$CHECKS"; }
fail() { echo "FAIL $1: $2" >> "$CHECKS"; }
skip() { echo "SKIP $1: $2" >> "$CHECKS"; }
check() { if [ "$2" = ok ]; then pass "$1"; else fail "$1" "$2"; fi; }
log() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }
. "$(dirname "$0")/guest-peripheral-shared.sh"

btvirt -l2 > "$OUT/btvirt.log" 2>&1 &
BTVIRT=$!
for i in $(seq 1 20); do [ -e /sys/class/bluetooth/hci1 ] && break; sleep 0.5; done
if [ -e /sys/class/bluetooth/hci1 ]; then shared_peripheral_checks; else fail btvirt "hci0/hci1 did not appear"; fi
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
