# The VM's making, sourced by run.sh (the kernel checks) and powerloss.sh (the power-cut drill): a Debian kernel
# under qemu (TCG; KVM is not assumed) with a busybox initramfs built here, the host's / shared read-only over 9p
# and a writable share for the results. The init chroots into the host's tree and runs $GUEST_SCRIPT there.
# POSIX sh. The caller sets BIN (the blegateway binary), HERE (Tests/kernel), WORK (a scratch directory) and
# defines fail_setup MESSAGE.

KVER=${KVER:-$(ls /lib/modules | sort -V | tail -n 1)}
KERNEL=/boot/vmlinuz-$KVER
MODDIR=/lib/modules/$KVER
BUSYBOX=$(command -v busybox || true)
REPO_DIR=$(cd "$HERE/../.." && pwd)
BIN_DIR=$(cd "$(dirname "$BIN")" && pwd)

vm_preflight() {
    [ -x "$BIN" ] || fail_setup "no executable at $BIN"
    [ -r "$KERNEL" ] || fail_setup "no kernel at $KERNEL (install linux-image-amd64)"
    [ -n "$BUSYBOX" ] || fail_setup "busybox not found (install busybox-static)"
    file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' || [ ! -x /usr/bin/file ] ||
        fail_setup "$BUSYBOX is not static (install busybox-static)"
    command -v qemu-system-x86_64 >/dev/null || fail_setup "qemu-system-x86_64 not found (install qemu-system-x86)"
}

# vm_kernel — the kernel qemu boots: the ELF inside the bzImage when it can be unpacked (qemu starts it through its
# PVH entry, skipping the self-decompression that costs ~4 s per boot under TCG), else the bzImage itself.
vm_kernel() {
    python3 - "$KERNEL" "$WORK/vmlinux" <<'PY' && KERNEL=$WORK/vmlinux || true
import lzma, sys, zlib
image = open(sys.argv[1], "rb").read()
for magic, unpack in ((b"\xfd7zXZ\x00", lambda d: lzma.LZMADecompressor().decompress(d)),
                      (b"\x1f\x8b\x08", lambda d: zlib.decompressobj(31).decompress(d))):
    at = image.find(magic)
    while at >= 0:
        try:
            elf = unpack(image[at:])
            if elf[:4] == b"\x7fELF":
                open(sys.argv[2], "wb").write(elf)
                sys.exit(0)
        except (lzma.LZMAError, zlib.error):
            pass
        at = image.find(magic, at + 1)
sys.exit(1)
PY
}

# vm_initramfs "MODULE ..." — $WORK/initramfs.gz with these modules and their dependencies (loaded deps first).
vm_initramfs() {
    root=$WORK/initramfs
    mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/host" "$root/results" "$root/lib/modules"
    cp "$BUSYBOX" "$root/bin/busybox"
    for a in sh mount umount insmod mkdir cat echo sleep poweroff chroot ls; do ln -s busybox "$root/bin/$a"; done
    order=$WORK/order
    : > "$order"
    for m in $1; do
        path=$(grep -E "/$m\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | cut -d: -f1 | head -n 1)
        if [ -z "$path" ]; then
            grep -qE "/$m\.ko" "$MODDIR/modules.builtin" || fail_setup "module $m is neither loadable nor built in"
            continue
        fi
        vm_resolve "$path"
    done
    : > "$root/modules.order"
    while read -r p; do
        base=$(basename "$p")
        case $base in
            *.ko) cp "$MODDIR/$p" "$root/lib/modules/$base" ;;
            *.ko.xz) xz -dc "$MODDIR/$p" > "$root/lib/modules/${base%.xz}"; base=${base%.xz} ;;
            *.ko.zst) zstd -qdc "$MODDIR/$p" > "$root/lib/modules/${base%.zst}"; base=${base%.zst} ;;
            *.ko.gz) gzip -dc "$MODDIR/$p" > "$root/lib/modules/${base%.gz}"; base=${base%.gz} ;;
        esac
        echo "$base" >> "$root/modules.order"
    done < "$order"

    cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "[init] $(cat /proc/uptime | cut -d' ' -f1)s: kernel up"
while read -r m; do insmod "/lib/modules/$m" || echo "[init] insmod $m failed"; done < /modules.order
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=@CACHE@ hostroot /host || echo "[init] cannot mount hostroot"
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
    mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=@CACHE@ "$tag" "/host$dir" || echo "[init] cannot mount $tag at $dir"
done
echo "[init] $(cat /proc/uptime | cut -d' ' -f1)s: userspace ready"
chroot /host /bin/sh "$GUEST_SCRIPT" "$BLEGATEWAY" /run/results > /results/guest.log 2>&1
echo "[init] guest script exited $?"
sync
poweroff -f
INIT
    # The read-only shares are cached in the guest (cache=loose: nothing changes them while the VM runs), which
    # makes every start of blegateway after the first one ~1.5 s faster under TCG; the results share is not.
    sed -i "s/@CACHE@/${VM_9P_CACHE:-loose}/" "$root/init"
    chmod +x "$root/init"
    (cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initramfs.gz"
}

vm_resolve() {  # $1 = module path relative to $MODDIR; appends it to $order after its dependencies
    grep -qx "$1" "$order" && return 0
    deps=$(grep -E "^$1:" "$MODDIR/modules.dep" | cut -d: -f2)
    for d in $deps; do vm_resolve "$d"; done
    grep -qx "$1" "$order" || echo "$1" >> "$order"
}

# vm_env GUEST_SCRIPT — the results share ($WORK/results) and the env file the init sources from it.
vm_env() {
    mkdir -p "$WORK/results"
    cat > "$WORK/results/env" <<ENV
BLEGATEWAY='$BIN'
REPO_DIR='$REPO_DIR'
BIN_DIR='$BIN_DIR'
GUEST_SCRIPT='$1'
ENV
}

# vm_qemu CONSOLE [QEMU ARGS...] — becomes the VM (exec: run it with & and $! is qemu's pid), its serial console
# written to CONSOLE (a qemu chardev: file:PATH, or stdio). With VM_TIMEOUT set, `timeout` runs it and stops it then.
vm_qemu() {
    console=$1; shift
    exec ${VM_TIMEOUT:+timeout "$VM_TIMEOUT"} qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -no-reboot \
        -kernel "$KERNEL" -initrd "$WORK/initramfs.gz" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init" \
        -display none -serial "$console" -monitor none \
        -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
        -virtfs "local,path=$WORK/results,mount_tag=results,security_model=none" \
        -virtfs "local,path=$REPO_DIR,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
        -virtfs "local,path=$BIN_DIR,mount_tag=bin,security_model=none,readonly=on,multidevs=remap" \
        "$@"
}
