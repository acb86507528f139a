#!/bin/sh
# Kernel VM harness: boots the installed Debian kernel under qemu (TCG; KVM is not assumed), with a
# busybox initramfs built here, the host's / shared read-only over 9p, and a writable share for the
# results. Inside, BlueZ's btvirt creates two virtual LE controllers (hci0, hci1) through /dev/vhci and
# Tests/kernel/guest-checks.sh drives `blegateway` against them.
#
# Usage: Tests/kernel/run.sh BLEGATEWAY_BINARY
# Prints one line per check and ends with "N passed, N failed"; exits non-zero on any failure.
set -eu

BIN=${1:?usage: run.sh BLEGATEWAY_BINARY}
BIN=$(readlink -f "$BIN")
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST_SCRIPT=${GUEST_SCRIPT:-"$HERE/guest-checks.sh"}
VM_TIMEOUT=${VM_TIMEOUT:-600}   # whole VM run, seconds (TCG is slow; the checks themselves take ~2 min)

command -v btvirt >/dev/null || { echo "kernel harness: btvirt not found (install bluez-test-tools)"; echo "0 passed, 1 failed"; exit 1; }

WORK=$(mktemp -d /tmp/blegw-kernel.XXXXXX)
QEMU_PID=
cleanup() {
    [ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

fail_setup() { echo "kernel harness: $*"; echo "0 passed, 1 failed"; exit 1; }
. "$HERE/vm-lib.sh"
vm_preflight
vm_kernel
# The random number generator first: ecdh_generic's self-test generates a key when it registers, and an ECDH that
# failed its test leaves the kernel without a Security Manager ("Unable to create ECDH crypto context"). drbg seeds
# itself from the kernel's pool; jitterentropy_rng, its optional extra source, refuses to load under TCG's timer.
vm_initramfs "drbg ctr virtio_pci 9pnet_virtio 9p bluetooth hci_vhci rfkill af_alg algif_hash algif_skcipher cmac ecb ecdh_generic"
vm_env "$GUEST_SCRIPT"

# --- boot ----------------------------------------------------------------------------------------
T0=$(date +%s)
vm_qemu "file:$WORK/console.log" &
QEMU_PID=$!
wait "$QEMU_PID" || echo "kernel harness: qemu exited with status $? (124 = timed out after ${VM_TIMEOUT}s)"
QEMU_PID=
T1=$(date +%s)

if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS"; cp "$WORK/console.log" "$WORK"/results/* "$KEEP_LOGS/" 2>/dev/null || true; fi
grep '^\[init\]' "$WORK/console.log" || true
[ -n "${VERBOSE:-}" ] && cat "$WORK/results/guest.log" 2>/dev/null
RESULTS=$WORK/results/checks
if [ ! -s "$RESULTS" ]; then
    echo "kernel harness: the guest produced no results; console log follows"
    tail -n 40 "$WORK/console.log"
    tail -n 40 "$WORK/results/guest.log" 2>/dev/null || true
    echo "0 passed, 1 failed"
    exit 1
fi
cat "$RESULTS"
PASSED=$(grep -c '^PASS' "$RESULTS" || true)
FAILED=$(grep -c '^FAIL' "$RESULTS" || true)
grep -q '^DONE' "$WORK/results/guest.log" || { echo "FAIL guest script did not finish (timeout?)"; FAILED=$((FAILED + 1)); }
echo "kernel harness: VM ran $((T1 - T0)) s"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
