#!/bin/sh
# The shared-mode peripheral checks alone, for working on them without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-peripheral-shared-only.sh Tests/kernel/run.sh .build/debug/blegateway
. "$(dirname "$0")/guest-lib.sh"
. "$(dirname "$0")/guest-peripheral-shared.sh"

start_btvirt && shared_peripheral_checks
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
