#!/bin/sh
# The kernel L2CAP checks alone, for working on them without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-l2cap-only.sh Tests/kernel/run.sh .build/debug/blegateway
. "$(dirname "$0")/guest-lib.sh"
. "$(dirname "$0")/guest-l2cap.sh"

start_btvirt && l2cap_checks
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
