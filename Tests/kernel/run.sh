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

KVER=${KVER:-$(ls /lib/modules | sort -V | tail -n 1)}
KERNEL=/boot/vmlinuz-$KVER
MODDIR=/lib/modules/$KVER
BUSYBOX=$(command -v busybox || true)

fail_setup() { echo "kernel harness: $*"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$BIN" ] || fail_setup "no executable at $BIN"
[ -r "$KERNEL" ] || fail_setup "no kernel at $KERNEL (install linux-image-amd64)"
[ -n "$BUSYBOX" ] || fail_setup "busybox not found (install busybox-static)"
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' || [ ! -x /usr/bin/file ] ||
    fail_setup "$BUSYBOX is not static (install busybox-static)"
command -v qemu-system-x86_64 >/dev/null || fail_setup "qemu-system-x86_64 not found (install qemu-system-x86)"
command -v btvirt >/dev/null || fail_setup "btvirt not found (install bluez-test-tools)"

WORK=$(mktemp -d /tmp/blegw-kernel.XXXXXX)
QEMU_PID=
cleanup() {
    [ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# --- initramfs ---------------------------------------------------------------------------------
ROOT=$WORK/initramfs
mkdir -p "$ROOT/bin" "$ROOT/proc" "$ROOT/sys" "$ROOT/dev" "$ROOT/host" "$ROOT/results" "$ROOT/lib/modules"
cp "$BUSYBOX" "$ROOT/bin/busybox"
for a in sh mount umount insmod mkdir cat echo sleep poweroff chroot ls; do ln -s busybox "$ROOT/bin/$a"; done

# Modules and their dependencies, in load order, resolved from modules.dep (deps first).
WANT="virtio_pci 9pnet_virtio 9p bluetooth hci_vhci rfkill af_alg algif_hash algif_skcipher cmac ecb ecdh_generic"
ORDER=$WORK/order
: > "$ORDER"
resolve() {  # $1 = module path relative to $MODDIR
    grep -qx "$1" "$ORDER" && return 0
    deps=$(grep -E "^$1:" "$MODDIR/modules.dep" | cut -d: -f2)
    for d in $deps; do resolve "$d"; done
    grep -qx "$1" "$ORDER" || echo "$1" >> "$ORDER"
}
for m in $WANT; do
    path=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | cut -d: -f1 | head -n 1)
    if [ -z "$path" ]; then
        grep -qE "/$m\.ko" "$MODDIR/modules.builtin" || fail_setup "module $m is neither loadable nor built in"
        continue
    fi
    resolve "$path"
done
: > "$ROOT/modules.order"
while read -r p; do
    base=$(basename "$p")
    case $base in
        *.ko) cp "$MODDIR/$p" "$ROOT/lib/modules/$base" ;;
        *.ko.xz) xz -dc "$MODDIR/$p" > "$ROOT/lib/modules/${base%.xz}"; base=${base%.xz} ;;
        *.ko.zst) zstd -qdc "$MODDIR/$p" > "$ROOT/lib/modules/${base%.zst}"; base=${base%.zst} ;;
        *.ko.gz) gzip -dc "$MODDIR/$p" > "$ROOT/lib/modules/${base%.gz}"; base=${base%.gz} ;;
    esac
    echo "$base" >> "$ROOT/modules.order"
done < "$ORDER"

cat > "$ROOT/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "[init] $(cat /proc/uptime | cut -d' ' -f1)s: kernel up"
while read -r m; do insmod "/lib/modules/$m" || echo "[init] insmod $m failed"; done < /modules.order
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /host || echo "[init] cannot mount hostroot"
mount -t 9p -o trans=virtio,version=9p2000.L,rw results /results || echo "[init] cannot mount results"
# The guest runs inside the host's tree (read-only) with fresh kernel and scratch filesystems on top.
for d in proc sys dev; do mount --bind /$d /host/$d; done
mount -t devpts devpts /host/dev/pts 2>/dev/null
for d in tmp run var/run var/lib/bluetooth var/tmp; do [ -d /host/$d ] && mount -t tmpfs tmpfs /host/$d; done
mkdir -p /host/run/results
mount --bind /results /host/run/results
. /results/env
# The checkout and the binary may live under /tmp (CI clones there), which the tmpfs above hides: they come in
# as shares of their own, mounted back at their own paths.
for share in repo:"$REPO_DIR" bin:"$BIN_DIR"; do
    tag=${share%%:*}; dir=${share#*:}
    mkdir -p "/host$dir" 2>/dev/null
    mount -t 9p -o trans=virtio,version=9p2000.L,ro "$tag" "/host$dir" || echo "[init] cannot mount $tag at $dir"
done
echo "[init] $(cat /proc/uptime | cut -d' ' -f1)s: userspace ready"
chroot /host /bin/sh "$GUEST_SCRIPT" "$BLEGATEWAY" /run/results > /results/guest.log 2>&1
echo "[init] guest script exited $?"
sync
poweroff -f
INIT
chmod +x "$ROOT/init"
(cd "$ROOT" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initramfs.gz"

mkdir -p "$WORK/results"
REPO_DIR=$(cd "$HERE/../.." && pwd)
BIN_DIR=$(cd "$(dirname "$BIN")" && pwd)
cat > "$WORK/results/env" <<ENV
BLEGATEWAY='$BIN'
REPO_DIR='$REPO_DIR'
BIN_DIR='$BIN_DIR'
GUEST_SCRIPT=${GUEST_SCRIPT:-"$HERE/guest-checks.sh"}
ENV

# --- boot ----------------------------------------------------------------------------------------
T0=$(date +%s)
timeout "$VM_TIMEOUT" qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -no-reboot \
    -kernel "$KERNEL" -initrd "$WORK/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init" \
    -display none -serial "file:$WORK/console.log" -monitor none \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$WORK/results,mount_tag=results,security_model=none" \
    -virtfs "local,path=$REPO_DIR,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
    -virtfs "local,path=$BIN_DIR,mount_tag=bin,security_model=none,readonly=on,multidevs=remap" &
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
