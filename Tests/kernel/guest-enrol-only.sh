#!/bin/sh
# The enrolment check alone, for working on it without the whole harness:
#   GUEST_SCRIPT=$PWD/Tests/kernel/guest-enrol-only.sh Tests/kernel/run.sh .build/debug/blegateway
. "$(dirname "$0")/guest-lib.sh"
. "$(dirname "$0")/guest-enrol.sh"

start_btvirt && { enrol_checks; enrol_asked_checks; enrol_shared_checks; }
kill $BTVIRT 2>/dev/null
log "done"
echo DONE
