#!/bin/sh
# The adapter lifecycle checks alone, for working on them without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-adapter-only.sh Tests/kernel/run.sh .build/debug/blegateway
. "$(dirname "$0")/guest-lib.sh"
HERE=$(dirname "$0")
# The payloads and advertising helpers of the full harness, taken from it rather than copied.
eval "$(sed -n '/^# --- advertising payloads/,/^reports_with/p' "$HERE/guest-checks.sh")"
eval "$(sed -n '/^advertise_with_btmgmt() {/,/^}/p' "$HERE/guest-checks.sh")"
. "$HERE/guest-adapter.sh"

if start_btvirt; then
    adapter_exclusive_checks
    adapter_event_checks exclusive
    mkdir -p /run/dbus
    timeout 10 dbus-daemon --system --fork --nopidfile
    bluetoothd -n > "$OUT/bluetoothd.log" 2>&1 &
    BLUETOOTHD=$!
    for i in $(seq 1 20); do
        timeout 5 btmgmt -i hci0 info 2>/dev/null | grep -q "current settings: powered" && break
        sleep 0.5
    done
    adapter_shared_checks
    adapter_event_checks shared
    kill $BLUETOOTHD 2>/dev/null
fi
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
