#!/bin/sh
# The adapter lifecycle checks alone, for working on them without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-adapter-only.sh Tests/kernel/run.sh .build/debug/blegateway
BIN=$1
OUT=$2
CHECKS=$OUT/checks
: > "$CHECKS"
pass() { echo "PASS $1" >> "$CHECKS"; }
fail() { echo "FAIL $1: $2" >> "$CHECKS"; }
skip() { echo "SKIP $1: $2" >> "$CHECKS"; }
check() { if [ "$2" = ok ]; then pass "$1"; else fail "$1" "$2"; fi; }
log() { echo "[guest $(cut -d' ' -f1 /proc/uptime)s] $*"; }
HERE=$(dirname "$0")
# The payloads and advertising helpers of the full harness, taken from it rather than copied.
eval "$(sed -n '/^# --- advertising payloads/,/^reports_with/p' "$HERE/guest-checks.sh")"
eval "$(sed -n '/^advertise_with_btmgmt() {/,/^}/p' "$HERE/guest-checks.sh")"
. "$HERE/guest-adapter.sh"

btvirt -l2 > "$OUT/btvirt.log" 2>&1 &
BTVIRT=$!
for i in $(seq 1 20); do [ -e /sys/class/bluetooth/hci1 ] && break; sleep 0.5; done
if [ -e /sys/class/bluetooth/hci1 ]; then
    adapter_exclusive_checks
    mkdir -p /run/dbus
    timeout 10 dbus-daemon --system --fork --nopidfile
    bluetoothd -n > "$OUT/bluetoothd.log" 2>&1 &
    BLUETOOTHD=$!
    for i in $(seq 1 20); do
        timeout 5 btmgmt -i hci0 info 2>/dev/null | grep -q "current settings: powered" && break
        sleep 0.5
    done
    adapter_shared_checks
    kill $BLUETOOTHD 2>/dev/null
else
    fail btvirt "hci0/hci1 did not appear"
fi
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
