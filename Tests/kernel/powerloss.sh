#!/bin/bash
# The power-loss drill: the gateway runs inside the kernel VM with its spool on a virtio disk (ext4), fed by the
# simulator on the host (its controller socket reached over the VM's user network) and publishing to a mosquitto on
# the host; at a random moment of each boot the VM is cut off (qemu killed with SIGKILL: the guest's page cache and
# everything not yet handed to the virtual disk are lost, as at a power cut). The next boot mounts the disk and
# copies what it finds before the gateway starts again. powerloss-check.py then holds every boot to its own log:
# each seq the spool said was durable (its commit returned) is in the next boot's spool or was delivered, no seq is
# issued twice, the spool opened (or was salvaged) on its own. Every other gateway boot has no broker (its MQTT port
# refuses), so what it commits can only survive on the disk; the drill fails unless enough of it did. One control
# boot first writes a file with fsync, then goes on without: the cut must keep the first part and lose some of the
# rest, or the cut is not a power cut. Boots 6, 14, … damage the spool before their gateway starts and are cut while
# it salvages the file; the next boot must finish that salvage and lose none of the readings. Boots 10, 18, … grow the
# spool's write-ahead log past SQLite's checkpoint threshold before their gateway starts and are cut while its first
# commit checkpoints the log into the file.
#
# POWER_VARIANT=nofsync runs the same drill against a gateway that skips its commit fsync
# (BLEGATEWAY_TEST_SPOOL_WITHOUT_FSYNC=1) and passes only if the drill catches it: a reading confirmed durable
# lost within the cuts. It stops at the first cut that loses one.
#
# Usage: Tests/kernel/powerloss.sh BLEGATEWAY_BINARY   (POWER_CUTS=20 by default; POWER_SEED to repeat a run;
#        POWER_VARIANT=nofsync; KEEP_LOGS=DIR keeps the boots' logs and copies)
# Prints one line per check and ends with "N passed, N failed"; exits non-zero on any failure.
set -euo pipefail

BIN=$(readlink -f "${1:?usage: powerloss.sh BLEGATEWAY_BINARY}")
HERE=$(cd "$(dirname "$0")" && pwd)
CUTS=${POWER_CUTS:-20}
VARIANT=${POWER_VARIANT:-}
case $VARIANT in ""|nofsync) ;; *) echo "power-loss harness: POWER_VARIANT is nofsync or nothing"; exit 2 ;; esac
SEED=${POWER_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
RANDOM=$SEED
BOOT_LIMIT=${BOOT_LIMIT:-180}   # seconds from a boot's start to its process starting (TCG; ~15 s here)

WORK=$(mktemp -d /tmp/blegw-powerloss.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "${KEEP_LOGS:-}" ]; then mkdir -p "$KEEP_LOGS"; cp -r "$WORK/results" "$WORK"/*.txt "$WORK"/*.log "$KEEP_LOGS/" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
unset VM_TIMEOUT   # vm_qemu must become qemu itself: the cut is a SIGKILL to its pid
fail_setup() { echo "power-loss harness: $*"; echo "0 passed, 1 failed"; exit 1; }
. "$HERE/vm-lib.sh"
vm_preflight
vm_kernel
for tool in mosquitto mosquitto_sub socat mkfs.ext4 python3; do
    command -v "$tool" >/dev/null || fail_setup "$tool not found (make deps installs it)"
done
vm_initramfs "virtio_pci 9pnet_virtio 9p virtio_blk ext4 crc32c_generic virtio_net"
vm_env "$HERE/guest-powerloss.sh"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The broker and a subscriber that stays connected through every cut: what was delivered.
MQTT_PORT=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$MQTT_PORT" > "$WORK/mosquitto.conf"
mosquitto -c "$WORK/mosquitto.conf" > "$WORK/mosquitto.log" 2>&1 & PIDS+=($!)
# The simulator, its lobby gateway's controller bridged to a TCP port the VM reaches as 10.0.2.2.
mkdir -p "$WORK/sim"
"$BIN" sim --scenario "$HERE/../../config/scenarios/office.yaml" --socket-dir "$WORK/sim" --speed 1 \
    --status-every 0 > "$WORK/sim.log" 2>&1 & PIDS+=($!)
for _ in $(seq 1 100); do [ -S "$WORK/sim/gw-lobby.sock" ] && break; sleep 0.1; done
[ -S "$WORK/sim/gw-lobby.sock" ] || fail_setup "the simulator made no gw-lobby socket: $(tail -n 5 "$WORK/sim.log")"
HCI_PORT=$(free_port)
# Each cut leaves its connection broken mid-write: socat says so, in its own log.
socat "TCP-LISTEN:$HCI_PORT,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$WORK/sim/gw-lobby.sock" 2>"$WORK/socat.log" & PIDS+=($!)
for _ in $(seq 1 50); do mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -t x -E -W 1 2>/dev/null && break; sleep 0.1; done
mosquitto_sub -h 127.0.0.1 -p "$MQTT_PORT" -q 1 -t 'pl/#' -v > "$WORK/delivered.txt" 2>"$WORK/subscriber.log" &
SUBSCRIBER=$!
PIDS+=($SUBSCRIBER)

# The spool's disk: ext4 as on a Pi's SD card, in a file the VM sees as /dev/vda (qemu's default writeback cache:
# the guest issues flushes and qemu honours them; killing qemu loses what the guest had not yet written).
truncate -s 256M "$WORK/disk.img"
mkfs.ext4 -q -F "$WORK/disk.img"
cat > "$WORK/results/gateway.yaml" <<YAML
mqtt:
  reconnect_min_s: 0.2
  reconnect_max_s: 1
YAML

echo "power-loss drill${VARIANT:+ (variant $VARIANT)}: $CUTS cuts, seed $SEED"
T0=$(date +%s); echo "power-loss drill: set up at $(date +%T.%2N)"
: > "$WORK/cuts.txt"
BOOTS=$((CUTS + 2))   # the control boot, the cut gateway boots, and a final boot that only looks
for boot in $(seq 1 "$BOOTS"); do
    if [ "$boot" -eq 1 ]; then mode=control; elif [ "$boot" -eq "$BOOTS" ]; then mode=final; else mode=run; fi
    # Boots 6, 14, … damage the spool first and are cut while their gateway salvages it; the boot after resumes the
    # salvage (so one must follow before the final boot). Not in the variant, which is about the commit fsync.
    [ "$mode" = run ] && [ -z "$VARIANT" ] && [ $((boot % 8)) -eq 6 ] && [ "$boot" -le $((BOOTS - 2)) ] && mode=salvage
    # Boots 10, 18, 26, … (each after a boot without a broker, so the spool holds readings) grow the spool's
    # write-ahead log first and are cut while their gateway checkpoints it.
    [ "$mode" = run ] && [ -z "$VARIANT" ] && [ $((boot % 8)) -eq 2 ] && [ "$boot" -ge 10 ] && mode=checkpoint
    # Every other gateway boot has no broker: port 9 of the host refuses, so its readings stay in the spool.
    broker=$MQTT_PORT
    [ "$mode" = run ] && [ $((boot % 2)) -eq 1 ] && broker=9
    printf 'BOOT=%s\nMODE=%s\nMQTT_PORT=%s\nHCI_PORT=%s\nVARIANT=%s\n' "$boot" "$mode" "$broker" "$HCI_PORT" "$VARIANT" \
        > "$WORK/results/drill.env"
    # Where the cut falls: every fourth boot anywhere in the process's first 4 s (it takes ~3 s under TCG to load
    # and open its spool: cuts in the start, the open and the recovery), the others within 4 s of its first commit
    # of samples (cuts while it commits and publishes); the moment is random, the mix is not, so every run exercises
    # both. The control writer is cut within 1 s of its first commit, well before anything would write its pages back.
    delay=$((RANDOM % 4000)); trigger=committing
    if [ "$mode" = control ]; then delay=$((RANDOM % 1000)); elif [ $((boot % 4)) -eq 0 ]; then trigger="process starting"; fi
    # The salvage lasts a moment. Boot 6 is cut as soon as the console hears it has begun (so far always between the
    # marker and the move: the next start salvages the file again); the later ones up to half a second on, into the
    # copy of the rows (the next start resumes) or past its end.
    if [ "$mode" = salvage ]; then trigger=salvaging; delay=$([ "$boot" -eq 6 ] && echo 0 || echo $((RANDOM % 500))); fi
    # A checkpoint of some 1,000 pages (4.5 MB): its copy into the file's pages in memory takes about 0.1 s here, then
    # its fsync writes them to the disk, which in these boots writes 4 MB/s, as a Pi's SD card might (about a second).
    # The cut falls 0.4 s after the console hears of the first write (boot 10), or 0.1–0.8 s after it: into the fsync.
    disk_limit=
    if [ "$mode" = checkpoint ]; then
        trigger=checkpointing; delay=$([ "$boot" -eq 10 ] && echo 400 || echo $((100 + RANDOM % 700)))
        disk_limit=,throttling.bps-write=4194304
    fi
    rm -f "$WORK/console"; mkfifo "$WORK/console"
    vm_qemu stdio -drive "file=$WORK/disk.img,format=raw,if=virtio,cache=writeback$disk_limit" \
        -netdev user,id=net0 -device virtio-net-pci,netdev=net0 < /dev/null > "$WORK/console" 2>&1 &
    QEMU=$!
    PIDS+=($QEMU)
    # Nothing can wedge the drill: a boot that never starts its process is stopped.
    { sleep "$BOOT_LIMIT"; kill -9 "$QEMU"; } > /dev/null 2>&1 &
    LIMIT=$!
    cut=
    while IFS= read -r line; do
        echo "$(date +%T.%2N) $line" >> "$WORK/console-$boot.log"
        case $line in
            *"[powerloss] $trigger"*)
                [ -n "$cut" ] && continue
                kill "$LIMIT" 2>/dev/null || true
                cut="$delay ms after $trigger"
                { sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"; kill -9 "$QEMU"; } > /dev/null 2>&1 & ;;
        esac
    done < "$WORK/console"
    wait "$QEMU" 2>/dev/null || true
    kill "$LIMIT" 2>/dev/null || true
    echo "$boot $mode (broker port $broker): ${cut:-no cut}" >> "$WORK/cuts.txt"
    if [ "$mode" != final ] && [ -z "$cut" ]; then
        echo "power-loss harness: boot $boot ($mode) never reached \"$trigger\"; console:"
        tail -n 20 "$WORK/console-$boot.log"
        echo "boot $boot ($mode) never reached \"$trigger\" within ${BOOT_LIMIT} s" > "$WORK/untriggered.txt"
        BOOTS=$boot
        break
    fi
    # The variant stops at the first cut that lost a reading confirmed durable: the drill has caught it.
    if [ -n "$VARIANT" ] && [ "$boot" -ge 3 ] &&
        python3 "$HERE/powerloss-check.py" --expect-loss "$WORK" "$boot" > /dev/null 2>&1; then
        BOOTS=$boot
        break
    fi
done
T1=$(date +%s)
sleep 1   # the subscriber's last messages
kill "$SUBSCRIBER" 2>/dev/null || true
echo "power-loss drill: $BOOTS boots in $((T1 - T0)) s"
python3 "$HERE/powerloss-check.py" ${VARIANT:+--expect-loss} "$WORK" "$BOOTS"
