#!/usr/bin/env bash
# Deployment tests (`make test-deploy`): the systemd unit, the Debian package in a fresh Debian 12 root, its upgrade,
# and the broker side (fleet ACL, edge bridge with buffering) on real mosquitto processes on loopback.
#   Tests/deploy/run.sh BINARY [DEB]
# BINARY is a release build of blegateway for this machine; DEB the package `make deb` built from it (built here
# when absent). One line per check (PASS/FAIL/SKIP), then "N passed, N failed"; exit status 1 on any failure.
# Environment: BLEGATEWAY_TEST_CACHE (default /var/cache/blegateway-test) keeps the debootstrapped root as a tarball
# and the downloaded .debs; DEBIAN_MIRROR (default http://deb.debian.org/debian); BLEGATEWAY_TEST_NO_NSPAWN=1 skips the
# two checks that boot the root with systemd-nspawn (for machines where a container cannot boot systemd).
set -uo pipefail

BIN=$(readlink -f "${1:?usage: run.sh BINARY [DEB]}")
DEB=${2:+$(readlink -f "$2")}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${BLEGATEWAY_TEST_CACHE:-/var/cache/blegateway-test}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
ARCH=$(dpkg --print-architecture)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blegateway-deploy-test.XXXXXX")
CHROOT=$WORK/root
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)
passed=0 failed=0 skipped=0
pids=() mounts=()

cleanup() {
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}"; done
    # Never recurse into a mount that is still there: the archives bind mount is the shared cache.
    if grep -q " $WORK/" /proc/mounts; then
        echo "run.sh: something is still mounted under $WORK; left it in place" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; shift; [ $# = 0 ] || printf '%s\n' "$@" | sed 's/^/     /'; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
# check NAME COMMAND…: passes when COMMAND succeeds; on failure shows the tail of its output.
check() {
    local name=$1 log; shift
    log=$WORK/check.$((passed + failed + skipped)).log
    if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$(tail -n 8 "$log" | cut -c1-200)"; fi
}
stopwatch() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}
# wait_until SECONDS COMMAND…: polls every 0.1 s.
wait_until() {
    local deadline=$(($(date +%s) + $1)); shift
    until "$@" 2>/dev/null; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
in_root() { timeout 600 chroot "$CHROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive "$@"; }

# BLEGATEWAY_TEST_ONLY=broker runs the broker side alone (the ACL and the bridge), without a package or a root.
if [ "${BLEGATEWAY_TEST_ONLY:-}" != broker ]; then
# ---------------------------------------------------------------------------------------------------------------
# Packages: the one under test and an older one to upgrade from. The older one ships a different example config, so
# the upgrade meets dpkg's conffile question (changed locally and upstream) as a real release would.
PKGS=$WORK/debs
mkdir -p "$PKGS"
NEW_VERSION=$("$BIN" --version)
OLD_VERSION=0.0.1~upgradetest
if [ -z "$DEB" ]; then
    DEB=$(DEB_COMPRESS=gzip "$REPO/deploy/debian/build-deb.sh" "$BIN" "$PKGS" 2>"$WORK/build-new.log")
    check "package: build-deb.sh builds blegateway_${NEW_VERSION}_$ARCH.deb" test -s "$DEB"
fi
sed 's/^# BLEGateway configuration\./# BLEGateway configuration (as shipped by an older package)./' \
    "$REPO/config/gateway.yaml" >"$WORK/old-gateway.yaml"
OLD_DEB=$(DEB_CONFIG=$WORK/old-gateway.yaml DEB_COMPRESS=gzip \
    "$REPO/deploy/debian/build-deb.sh" "$BIN" "$PKGS" "$OLD_VERSION" 2>"$WORK/build-old.log")
check "package: $OLD_VERSION sorts before $NEW_VERSION" dpkg --compare-versions "$OLD_VERSION" lt "$NEW_VERSION"
check "package: Depends names the shared libraries the binary links (bluetooth, mosquitto, sqlite)" \
    bash -c "dpkg-deb -f '$DEB' Depends | grep -q libbluetooth3 && dpkg-deb -f '$DEB' Depends | grep -q libmosquitto1 \
        && dpkg-deb -f '$DEB' Depends | grep -q libsqlite3-0"
check "package: /etc/blegateway/gateway.yaml is a conffile" \
    bash -c "dpkg-deb --ctrl-tarfile '$DEB' | tar -xO ./conffiles | grep -qx /etc/blegateway/gateway.yaml"

# ---------------------------------------------------------------------------------------------------------------
# A fresh Debian 12 root (minbase + systemd, for systemd-analyze --root). debootstrap runs once; its result is cached
# as a tarball and unpacked for each run.
ROOT_TAR=$CACHE/$SUITE-minbase-systemd-$ARCH.tar.zst
prepare_root() {
    mkdir -p "$CACHE/archives/partial" "$CHROOT" || return 1
    if [ ! -s "$ROOT_TAR" ]; then
        local t0 build=$WORK/debootstrap
        t0=$(stopwatch)
        timeout 1200 debootstrap --variant=minbase --include=systemd --cache-dir="$CACHE/archives" \
            "$SUITE" "$build" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || { tail -5 "$WORK/debootstrap.log"; return 1; }
        echo "     debootstrap of $SUITE took $(seconds_since "$t0") s (cached in $ROOT_TAR)"
        CHROOT=$build in_root apt-get update -qq >/dev/null 2>&1 || true
        CHROOT=$build in_root apt-get clean
        tar -C "$build" --zstd -cf "$ROOT_TAR.tmp" . && mv "$ROOT_TAR.tmp" "$ROOT_TAR" || return 1
        rm -rf "$build"
    fi
    local t1; t1=$(stopwatch)
    tar -C "$CHROOT" --zstd -xf "$ROOT_TAR" || return 1
    echo "     unpacked the cached root in $(seconds_since "$t1") s"
    cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
    mount -t proc proc "$CHROOT/proc" && mounts+=("$CHROOT/proc")
    mount --bind "$CACHE/archives" "$CHROOT/var/cache/apt/archives" && mounts+=("$CHROOT/var/cache/apt/archives")
    mkdir -p "$CHROOT/tmp/debs" && cp "$DEB" "$OLD_DEB" "$CHROOT/tmp/debs/"
}
# dpkg -i, then apt-get -f install for the Depends; with lists from the cached root, refreshed if they are stale.
install_deb() {
    local deb=/tmp/debs/$(basename "$1"); shift
    in_root dpkg "$@" -i "$deb" </dev/null && return 0
    in_root apt-get -f install -y -qq </dev/null && return 0
    in_root apt-get update -qq && in_root apt-get -f install -y -qq </dev/null
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
owner_mode() { stat -c '%U:%G %a' "$1"; }

has_config_check=false
config_check_reason="\`blegateway config check\` is not in this build (\`blegateway config check --help\` does not show it)"
if "$BIN" config check --help 2>/dev/null | grep -q 'USAGE: blegateway config check'; then has_config_check=true; fi

# Without a root to install into, the unit is still verified on this machine, pointed at BINARY.
verify_on_host() {
    local unit=$WORK/unit/blegateway.service out
    mkdir -p "$WORK/unit"
    sed "s#^ExecStart=/usr/bin/blegateway #ExecStart=$BIN #" "$REPO/deploy/systemd/blegateway.service" >"$unit"
    out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out"; return 1; }
    [ -z "$out" ] || { echo "$out"; return 1; }
}
if [ "$(id -u)" != 0 ] || ! command -v debootstrap >/dev/null; then
    why="needs root (chroot, mount) and debootstrap"
    skip "package: install into a debootstrapped Debian $SUITE root" "$why"
    if command -v systemd-analyze >/dev/null; then
        check "unit: systemd-analyze verify (on this machine, ExecStart=BINARY) reports nothing" verify_on_host
    else
        skip "unit: systemd-analyze verify" "systemd-analyze is not installed on this machine"
    fi
else
    t0=$(stopwatch)
    if ! prepare_root >"$WORK/prepare.log" 2>&1; then
        fail "package: a Debian $SUITE root ($MIRROR)" "$(tail -n 5 "$WORK/prepare.log")"
    else
        cat "$WORK/prepare.log"
        pass "package: a Debian $SUITE root ready in $(seconds_since "$t0") s"
        check "package: dpkg -i $OLD_VERSION + apt-get -f install in the root" install_deb "$OLD_DEB"
        check "package: installed, version $OLD_VERSION" \
            bash -c "[ \"\$(chroot '$CHROOT' dpkg-query -W -f='\${Status} \${Version}' blegateway)\" = \
                'install ok installed $OLD_VERSION' ]"
        check "package: system user blegateway, no login shell, home /var/lib/blegateway" \
            bash -c "chroot '$CHROOT' getent passwd blegateway | grep -Eq '^blegateway:[^:]*:[0-9]+:[0-9]+:[^:]*:/var/lib/blegateway:/usr/sbin/nologin$'"
        check "package: /var/lib/blegateway is blegateway:blegateway 0750" \
            bash -c "[ \"\$(chroot '$CHROOT' stat -c '%U:%G %a' /var/lib/blegateway)\" = 'blegateway:blegateway 750' ]"
        check "package: /etc/blegateway/gateway.yaml is root:blegateway 0640, credentials/ root 0700" \
            bash -c "[ \"\$(chroot '$CHROOT' stat -c '%U:%G %a' /etc/blegateway/gateway.yaml)\" = 'root:blegateway 640' ] && \
                [ \"\$(chroot '$CHROOT' stat -c '%U:%G %a' /etc/blegateway/credentials)\" = 'root:root 700' ]"
        check "package: the service is not enabled on a first install" \
            bash -c "[ ! -e '$CHROOT/etc/systemd/system/multi-user.target.wants/blegateway.service' ]"
        # The root has no Swift toolchain: this runs only if the binary carries its Swift runtime.
        check "package: the installed blegateway --version runs in the root (no Swift runtime there)" \
            bash -c "[ \"\$(chroot --userspec=blegateway:blegateway '$CHROOT' /usr/bin/blegateway --version)\" = '$NEW_VERSION' ] \
                && [ -z \"\$(find '$CHROOT/usr' -name 'libswiftCore.so*' -print -quit)\" ]"
        # systemd-analyze verify prints problems (unknown keys, bad values, missing binaries) but exits 0 for most
        # of them, so any output is a failure. --root makes it load the installed unit and check its ExecStart.
        verify() {
            local out
            out=$(systemd-analyze verify --root="$CHROOT" blegateway.service 2>&1) || { echo "$out"; return 1; }
            [ -z "$out" ] || { echo "$out"; return 1; }
        }
        if command -v systemd-analyze >/dev/null; then
            check "unit: systemd-analyze verify --root (the installed unit and binary) reports nothing" verify
        else
            skip "unit: systemd-analyze verify" "systemd-analyze is not installed on this machine"
        fi
        if $has_config_check; then
            check "package: blegateway config check /etc/blegateway/gateway.yaml, as user blegateway, exits 0" \
                chroot --userspec=blegateway:blegateway "$CHROOT" /usr/bin/blegateway config check \
                /etc/blegateway/gateway.yaml
            printf 'gateway:\n  id: pi-01\nmqtt:\n  qos: high\n' >"$CHROOT/tmp/bad.yaml"
            bad_config() {
                local out
                if out=$(chroot "$CHROOT" /usr/bin/blegateway config check /tmp/bad.yaml 2>&1); then
                    echo "exit 0 for a bad config: $out"; return 1
                fi
                echo "$out"; echo "$out" | grep -Eq 'line 4, column [0-9]+: mqtt\.qos: '
            }
            check "package: config check on a bad file exits non-zero with \"line 4, column C: mqtt.qos: …\"" bad_config
            # A typo in a key is refused by the check, not left as a warning after "valid" (the default broker would
            # then be in force without anyone noticing).
            printf 'gateway:\n  id: pi-01\nmqtt:\n  brokr: mqtt://central:1883\n' >"$CHROOT/tmp/typo.yaml"
            typo_config() {
                local out
                if out=$(chroot "$CHROOT" /usr/bin/blegateway config check /tmp/typo.yaml 2>&1); then
                    echo "exit 0 for a typo: $out"; return 1
                fi
                echo "$out"; echo "$out" | grep -Eq 'line 4, column [0-9]+: mqtt\.brokr: unknown key' \
                    && ! echo "$out" | grep -q ': valid'
            }
            check "package: config check on an unknown key (mqtt.brokr) exits non-zero and names it" typo_config
            # Run with sudo, as DEPLOY.md says, the check judges the service user's access, not root's: root reads
            # everything, so a secret only root can read passed the check and then stopped the service at start.
            printf 'secret\n' >"$CHROOT/etc/blegateway/root-only.secret"
            chmod 600 "$CHROOT/etc/blegateway/root-only.secret"
            printf 'gateway:\n  id: pi-01\nmqtt:\n  username_file: /etc/blegateway/root-only.secret\n' \
                >"$CHROOT/tmp/root-only.yaml"
            root_judges_the_service_user() {
                local out
                out=$(chroot "$CHROOT" /usr/bin/blegateway config check /etc/blegateway/gateway.yaml 2>&1) \
                    || { echo "the shipped config, checked as root: $out"; return 1; }
                echo "$out"; echo "$out" | grep -q 'files as user blegateway may use them' || return 1
                if out=$(chroot "$CHROOT" /usr/bin/blegateway config check /tmp/root-only.yaml 2>&1); then
                    echo "exit 0 for a secret only root can read: $out"; return 1
                fi
                echo "$out"
                echo "$out" | grep -q 'mqtt.username_file: .*permission denied (user blegateway needs read access)'
            }
            # DEPLOY.md's recipe: the secrets come through systemd's LoadCredential=, which exists only while the
            # service runs; the check before the first start must not refuse it.
            credential_path_before_start() {
                local out
                printf 'gateway:\n  id: pi-01\nmqtt:\n  username_file: %s\n  password_file: %s\n' \
                    /run/credentials/blegateway.service/mqtt_username \
                    /run/credentials/blegateway.service/mqtt_password >"$CHROOT/tmp/credentials.yaml"
                out=$(chroot "$CHROOT" /usr/bin/blegateway config check /tmp/credentials.yaml 2>&1) \
                    || { echo "refused before start: $out"; return 1; }
                echo "$out"; echo "$out" | grep -q 'mqtt.password_file: .* is made by systemd (LoadCredential=)'
            }
            check "package: config check before the first start accepts DEPLOY.md's /run/credentials paths" \
                credential_path_before_start
            check "package: config check run as root judges the service user's access (a root-only secret fails)" \
                root_judges_the_service_user
            rm -f "$CHROOT/etc/blegateway/root-only.secret"
        else
            skip "package: blegateway config check /etc/blegateway/gateway.yaml" "$config_check_reason"
        fi

        # Upgrade: a locally changed config and a spool with data must survive it.
        conf=$CHROOT/etc/blegateway/gateway.yaml
        sed -i 's/^  id: gateway /  id: pi-upgrade /' "$conf" && echo "# changed on this gateway" >>"$conf"
        head -c 262144 /dev/urandom >"$CHROOT/var/lib/blegateway/spool.sqlite"
        head -c 32768 /dev/urandom >"$CHROOT/var/lib/blegateway/spool.sqlite-wal"
        head -c 16 /dev/urandom >"$CHROOT/var/lib/blegateway/spool.sqlite.seq"
        chroot "$CHROOT" chown blegateway:blegateway /var/lib/blegateway/spool.sqlite /var/lib/blegateway/spool.sqlite-wal \
            /var/lib/blegateway/spool.sqlite.seq
        conf_sum=$(sha "$conf") spool_sum=$(sha "$CHROOT/var/lib/blegateway/spool.sqlite")
        wal_sum=$(sha "$CHROOT/var/lib/blegateway/spool.sqlite-wal") seq_sum=$(sha "$CHROOT/var/lib/blegateway/spool.sqlite.seq")
        # What an unattended fleet upgrade passes: keep the local config, put the new example beside it.
        check "package: upgrade $OLD_VERSION → $NEW_VERSION (dpkg -i --force-confdef --force-confold)" \
            install_deb "$DEB" --force-confdef --force-confold
        check "package: installed, version $NEW_VERSION" \
            bash -c "[ \"\$(chroot '$CHROOT' dpkg-query -W -f='\${Status} \${Version}' blegateway)\" = \
                'install ok installed $NEW_VERSION' ]"
        check "package: upgrade kept the changed config, the new example is gateway.yaml.dpkg-dist" \
            bash -c "[ \"\$(sha256sum '$conf' | cut -d' ' -f1)\" = '$conf_sum' ] && \
                cmp -s '$CHROOT/etc/blegateway/gateway.yaml.dpkg-dist' '$REPO/config/gateway.yaml'"
        check "package: upgrade kept the config readable by the gateway (root:blegateway 0640)" \
            bash -c "[ \"\$(chroot '$CHROOT' stat -c '%U:%G %a' /etc/blegateway/gateway.yaml /etc/blegateway | paste -sd' ')\" \
                = 'root:blegateway 640 root:blegateway 750' ]"
        check "package: upgrade kept the spool (spool.sqlite, -wal, .seq byte for byte, owned by blegateway)" \
            bash -c "[ \"\$(sha256sum '$CHROOT/var/lib/blegateway/spool.sqlite' | cut -d' ' -f1)\" = '$spool_sum' ] && \
                [ \"\$(sha256sum '$CHROOT/var/lib/blegateway/spool.sqlite-wal' | cut -d' ' -f1)\" = '$wal_sum' ] && \
                [ \"\$(sha256sum '$CHROOT/var/lib/blegateway/spool.sqlite.seq' | cut -d' ' -f1)\" = '$seq_sum' ] && \
                [ \"\$(chroot '$CHROOT' stat -c '%U' /var/lib/blegateway/spool.sqlite)\" = blegateway ]"
        if $has_config_check; then
            check "package: config check on the kept, changed config after the upgrade" \
                chroot --userspec=blegateway:blegateway "$CHROOT" /usr/bin/blegateway config check \
                /etc/blegateway/gateway.yaml
        else
            skip "package: config check on the kept config after the upgrade" "$config_check_reason"
        fi
        # The unit under a real systemd: boot the root with systemd-nspawn, the installed unit enabled, its ExecStart
        # replaced by a probe that reports what the sandbox gives it, and poweroff when it exits.
        unit_probe() {
            local d=$CHROOT/etc/systemd/system out expected
            mkdir -p "$d/blegateway.service.d" "$d/multi-user.target.wants" "$CHROOT/home/someone"
            printf 'gw-probe\n' >"$CHROOT/etc/blegateway/credentials/username"
            printf 's3cret\n' >"$CHROOT/etc/blegateway/credentials/password"
            chmod 0600 "$CHROOT"/etc/blegateway/credentials/*
            cat >"$CHROOT/usr/local/bin/blegateway-probe" <<'PROBE'
#!/bin/sh
exec >/var/lib/blegateway/probe.txt 2>&1
echo "user $(id -un) $(id -gn)"
grep -E '^Cap(Eff|Bnd|Amb):' /proc/self/status | tr -s '\t' ' '
touch /var/lib/blegateway/write-test && echo "state dir writable"
touch /etc/blegateway/write-test 2>/dev/null || echo "/etc read-only"
touch /usr/write-test 2>/dev/null || echo "/usr read-only"
[ -z "$(ls -A /home 2>/dev/null)" ] && echo "/home hidden"
[ ! -e /tmp/debs ] && echo "/tmp private"
echo "credentials $(ls "$CREDENTIALS_DIRECTORY" | tr '\n' ' ')password=$(cat "$CREDENTIALS_DIRECTORY/mqtt_password")"
echo "version $(/usr/bin/blegateway --version)"
# The adapter ladder's devices: hidden, refused, or reaching the kernel (opened, or no such device behind the node).
for n in /dev/rfkill /dev/bus/usb/001/002; do
    if [ ! -e "$n" ]; then echo "$n hidden"
    elif (exec 3<>"$n") 2>/tmp/open.err; then echo "$n reached"
    else case $(cat /tmp/open.err) in *"No such device"*) echo "$n reached" ;; *) echo "$n $(sed 's/.*: //' /tmp/open.err)" ;; esac
    fi
done
PROBE
            chmod 0755 "$CHROOT/usr/local/bin/blegateway-probe"
            # Type=exec: the probe is not the gateway and never says READY=1 (the unit is Type=notify).
            printf '[Unit]\nSuccessAction=poweroff\nFailureAction=poweroff\n[Service]\nType=exec\nExecStart=\nExecStart=%s\n' \
                /usr/local/bin/blegateway-probe >"$d/blegateway.service.d/probe.conf"
            ln -sf /lib/systemd/system/blegateway.service "$d/multi-user.target.wants/blegateway.service"
            # With the adapter-recovery drop-in (argument "devices"), as docs/DEPLOY.md installs it.
            [ "${1:-}" = devices ] && cp "$REPO/deploy/systemd/adapter-recovery.conf" "$d/blegateway.service.d/"
            # /dev/rfkill and a USB adapter's usbfs node, owned as deploy/udev/60-blegateway-adapter-recovery.rules
            # makes them (group blegateway, 0664); this machine may have neither driver, so reaching the kernel
            # (ENODEV, ENXIO) is the proof that the sandbox let the gateway through.
            local nodes=$WORK/devnodes gid
            gid=$(chroot "$CHROOT" getent group blegateway | cut -d: -f3)
            rm -rf "$nodes"; mkdir -p "$nodes/usb/001"
            mknod "$nodes/rfkill" c 10 242 && mknod "$nodes/usb/001/002" c 189 1 || return 1
            chgrp "$gid" "$nodes/rfkill" "$nodes/usb/001/002" && chmod 0664 "$nodes/rfkill" "$nodes/usb/001/002"
            # nspawn keeps CAP_NET_ADMIN out of the container unless asked; the unit needs it in its bounding set.
            (cd "$WORK" && timeout 120 systemd-nspawn -q -D "$CHROOT" --boot --register=no --keep-unit \
                --capability=CAP_NET_ADMIN --bind="$nodes/rfkill:/dev/rfkill" --bind="$nodes/usb:/dev/bus/usb" \
                </dev/null >"$WORK/nspawn.log" 2>&1)
            rm -rf "$d/blegateway.service.d" "$d/multi-user.target.wants/blegateway.service" "$CHROOT/home/someone" \
                "$CHROOT/usr/local/bin/blegateway-probe" "$CHROOT"/etc/blegateway/credentials/* "$nodes"
            out=$(cat "$CHROOT/var/lib/blegateway/probe.txt" 2>/dev/null) || {
                echo "no probe output; the boot said:"; tail -n 15 "$WORK/nspawn.log" | tr -d '\r'; return 1; }
            rm -f "$CHROOT"/var/lib/blegateway/{probe.txt,write-test}
            expected="user blegateway blegateway
CapBnd: 0000000000003000
CapAmb: 0000000000003000
CapEff: 0000000000003000
state dir writable
/etc read-only
/usr read-only
/home hidden
/tmp private
credentials mqtt_password mqtt_username password=s3cret
version $NEW_VERSION"
            if [ "${1:-}" = devices ]; then
                expected+=$'\n/dev/rfkill reached\n/dev/bus/usb/001/002 reached'
            else
                expected+=$'\n/dev/rfkill hidden\n/dev/bus/usb/001/002 hidden'
            fi
            echo "$out"
            [ "$(echo "$out" | sort)" = "$(echo "$expected" | sort)" ]
        }
        nspawn_reason=
        if [ -n "${BLEGATEWAY_TEST_NO_NSPAWN:-}" ]; then nspawn_reason="BLEGATEWAY_TEST_NO_NSPAWN is set"
        elif ! command -v systemd-nspawn >/dev/null; then nspawn_reason="systemd-nspawn is not installed (package systemd-container)"
        fi
        if [ -z "$nspawn_reason" ]; then
            check "unit: under systemd (nspawn boot): user blegateway, caps NET_ADMIN+NET_RAW only, read-only system, credentials, no rfkill or USB nodes" \
                unit_probe
            # DevicePolicy=closed itself is not observable here: nspawn's containers on this machine do not enforce
            # device cgroups (a node the drop-in does not allow opens too), so this shows the two nodes let through.
            check "unit: with deploy/systemd/adapter-recovery.conf, /dev/rfkill and the adapter's usbfs node reach the kernel" \
                unit_probe devices
        else
            skip "unit: under systemd (nspawn boot)" "$nspawn_reason"
        fi
        # The real gateway under the installed unit: the root booted with systemd-nspawn (host network), the
        # simulator's office on the host with gw-lobby's controller socket bound into the container, a mosquitto on
        # the host that wants gw-lobby's password and applies the fleet ACL. The password reaches the gateway only
        # through LoadCredential=. A SIGTERM to nspawn shuts the container down in order.
        # Then the watchdog under that systemd (the unit's Type=notify as shipped; WatchdogSec shortened from 120 s to
        # 10 s by a drop-in, so the test does not wait two minutes): systemd calls the unit started only after the
        # gateway's READY=1 (its own log lines come first), and a gateway frozen with SIGSTOP stops feeding the
        # watchdog, so systemd kills it (SIGABRT at the timeout, held by the stopped process; SIGKILL at
        # TimeoutAbortSec, the unit's TimeoutStopSec, 20 s) and starts it again after RestartSec (10 s): a second
        # online status, from another process.
        unit_runs_gateway() {
            local d=$CHROOT/etc/systemd/system sim=$WORK/sim port boot observer simpid broker ok=0
            local saved=$WORK/gateway.yaml.saved
            mkdir -p "$sim" "$d/multi-user.target.wants" "$WORK/gwbroker"
            "$BIN" sim --scenario "$REPO/config/scenarios/office.yaml" --socket-dir "$sim" >"$WORK/sim.log" 2>&1 &
            simpid=$!; pids+=("$simpid")
            wait_until 20 test -S "$sim/gw-lobby.sock" || { echo "simulator socket missing"; cat "$WORK/sim.log"; return 1; }
            chmod 0755 "$sim" && chmod 0666 "$sim"/*.sock
            port=$(free_port)
            : >"$WORK/gwbroker/passwd"
            mosquitto_passwd -b "$WORK/gwbroker/passwd" gw-lobby s3cret 2>/dev/null
            mosquitto_passwd -b "$WORK/gwbroker/passwd" ops pw-ops 2>/dev/null
            printf 'listener %s 127.0.0.1\nallow_anonymous false\npassword_file %s\nacl_file %s\npersistence false\nuser %s\n' \
                "$port" "$WORK/gwbroker/passwd" "$REPO/deploy/mosquitto/blegateway.acl" "$(id -un)" >"$WORK/gwbroker/m.conf"
            "$MOSQUITTO" -c "$WORK/gwbroker/m.conf" >"$WORK/gwbroker/log" 2>&1 &
            broker=$!; pids+=("$broker")
            wait_until 10 port_open "$port" || { echo "broker did not start"; return 1; }
            timeout 300 mosquitto_sub -h 127.0.0.1 -p "$port" -u ops -P pw-ops -v -t 'blegateway/gw-lobby/#' \
                >"$WORK/gw-observed.log" 2>&1 &
            observer=$!; pids+=("$observer")
            cp -p "$CHROOT/etc/blegateway/gateway.yaml" "$saved"
            mkdir -p "$WORK/spool.saved" && mv "$CHROOT"/var/lib/blegateway/spool.sqlite* "$WORK/spool.saved/"
            sed -e 's/^  id: gateway .*/  id: gw-lobby/' \
                -e 's#^  device: hci0 .*#  device: unix:/run/blegateway-sim/gw-lobby.sock#' \
                -e "s#^  broker: mqtt://127.0.0.1:1883 .*#  broker: mqtt://127.0.0.1:$port#" \
                -e 's|^  # username_file: .*|  username_file: /run/credentials/blegateway.service/mqtt_username|' \
                -e 's|^  # password_file: .*|  password_file: /run/credentials/blegateway.service/mqtt_password|' \
                "$REPO/config/gateway.yaml" >"$CHROOT/etc/blegateway/gateway.yaml"
            printf 'gw-lobby\n' >"$CHROOT/etc/blegateway/credentials/username"
            printf 's3cret\n' >"$CHROOT/etc/blegateway/credentials/password"
            chmod 0600 "$CHROOT"/etc/blegateway/credentials/*
            ln -sf /lib/systemd/system/blegateway.service "$d/multi-user.target.wants/blegateway.service"
            mkdir -p "$d/blegateway.service.d" "$CHROOT/var/log/journal"
            printf '[Service]\nWatchdogSec=10s\n' >"$d/blegateway.service.d/watchdog-test.conf"
            (cd "$WORK" && exec timeout 300 systemd-nspawn -q -D "$CHROOT" --boot --register=no --keep-unit \
                --capability=CAP_NET_ADMIN --bind="$sim:/run/blegateway-sim" </dev/null >"$WORK/nspawn-run.log" 2>&1) &
            boot=$!; pids+=("$boot")
            if wait_until 90 grep -q '^blegateway/gw-lobby/status .*"online"' "$WORK/gw-observed.log" &&
                wait_until 60 grep -q '^blegateway/gw-lobby/beacons/' "$WORK/gw-observed.log"; then
                ok=1
            fi
            : >"$WORK/watchdog-step.log"
            local gw='^/usr/bin/blegateway run --config /etc/blegateway/gateway.yaml' pid1 pid2 online1 t0
            if [ "$ok" = 1 ]; then
                pid1=$(pgrep -f "$gw" | head -n 1)
                online1=$(grep -c '^blegateway/gw-lobby/status .*"online"' "$WORK/gw-observed.log")
                t0=$(date +%s)
                kill -STOP "$pid1" || ok=0
                if wait_until 90 bash -c "[ \$(grep -c '^blegateway/gw-lobby/status .*\"online\"' '$WORK/gw-observed.log') -gt $online1 ]"; then
                    pid2=$(pgrep -f "$gw" | head -n 1)
                    echo "frozen gateway $pid1 restarted as $pid2, online again $(($(date +%s) - t0)) s after the freeze" | tee -a "$WORK/watchdog-step.log"
                    [ -n "$pid2" ] && [ "$pid2" != "$pid1" ] || { echo "no new gateway process" | tee -a "$WORK/watchdog-step.log"; ok=0; }
                else
                    echo "no second online status within 90 s of freezing the gateway" | tee -a "$WORK/watchdog-step.log"; ok=0
                fi
                kill -CONT "$pid1" 2>/dev/null
            fi
            kill -TERM "$boot" 2>/dev/null
            wait_until 60 bash -c "! kill -0 $boot" || ok=0
            wait_until 10 bash -c "grep '^blegateway/gw-lobby/status ' '$WORK/gw-observed.log' | tail -n 1 | grep -q offline" ||
                { echo "the last status is not offline" | tee -a "$WORK/watchdog-step.log"; ok=0; }
            # The journal of this boot (persistent in the root; not filtered by unit: journald inside this machine's
            # nspawn cannot tell the gateway's unit from its pid): systemd calls the unit started only after the
            # gateway connected to the broker (READY=1 comes after that and the retained configuration), where
            # Type=exec would have called it started at once; and the watchdog ended the frozen one.
            local journal first started
            journal=$(journalctl -D "$CHROOT/var/log/journal" -b --no-pager -o short-monotonic 2>/dev/null)
            first=$(echo "$journal" | grep -n 'blegateway\[[0-9]*\]: .*connected to mqtt://' | head -n 1 | cut -d: -f1)
            started=$(echo "$journal" | grep -n 'Started blegateway.service' | head -n 1 | cut -d: -f1)
            echo "journal: the gateway connected at line ${first:-none}, systemd said 'Started' at line ${started:-none}" | tee -a "$WORK/watchdog-step.log"
            [ -n "$first" ] && [ -n "$started" ] && [ "$first" -lt "$started" ] ||
                { echo "the unit was not started after the gateway's READY=1" | tee -a "$WORK/watchdog-step.log"; ok=0; }
            echo "$journal" | grep -q 'Watchdog timeout' || { echo "no watchdog timeout in the journal" | tee -a "$WORK/watchdog-step.log"; ok=0; }
            kill "$observer" "$broker" "$simpid" 2>/dev/null
            grep -E '^blegateway/gw-lobby/(status|adapter) ' "$WORK/gw-observed.log" | cut -c1-160
            echo "$(grep -c '^blegateway/gw-lobby/beacons/' "$WORK/gw-observed.log") beacon messages"
            [ "$(chroot "$CHROOT" stat -c %U /var/lib/blegateway/spool.sqlite 2>&1)" = blegateway ] ||
                { echo "no spool owned by blegateway"; ok=0; }
            if [ "$ok" != 1 ]; then
                journalctl -D "$CHROOT/var/log/journal" -b --no-pager 2>/dev/null | grep -E 'blegateway' | tail -n 15
                # The check shows the last lines: the watchdog step's own findings.
                grep -E '^(frozen|no |the |journal:)' "$WORK/watchdog-step.log" 2>/dev/null
            fi
            rm -rf "$d/multi-user.target.wants/blegateway.service" "$CHROOT"/etc/blegateway/credentials/* \
                "$CHROOT"/var/lib/blegateway/spool.sqlite* "$d/blegateway.service.d" "$CHROOT/var/log/journal"
            mv "$WORK"/spool.saved/* "$CHROOT/var/lib/blegateway/"
            cp -p "$saved" "$CHROOT/etc/blegateway/gateway.yaml"
            [ "$ok" = 1 ]
        }
        if [ -n "$nspawn_reason" ]; then
            skip "unit: the gateway runs under the unit" "$nspawn_reason"
        elif ! "$BIN" run --help 2>/dev/null | grep -q 'USAGE: blegateway run'; then
            skip "unit: the gateway runs under the unit" "\`blegateway run\` is not in this build"
        else
            check "unit: blegateway run under the unit (nspawn boot) publishes online + readings with a LoadCredential password, is started after READY=1, is restarted by the watchdog when frozen, offline on shutdown" \
                unit_runs_gateway
        fi
        # Reinstalling the same version over an unchanged upstream conffile needs no dpkg option at all.
        check "package: reinstall without --force-conf* over a changed config does not prompt and keeps it" \
            bash -c "chroot '$CHROOT' dpkg -i /tmp/debs/$(basename "$DEB") </dev/null && \
                [ \"\$(sha256sum '$conf' | cut -d' ' -f1)\" = '$conf_sum' ]"
        check "package: remove keeps the spool and the config" \
            bash -c "chroot '$CHROOT' dpkg -r blegateway && [ -f '$CHROOT/var/lib/blegateway/spool.sqlite' ] && \
                [ -f '$conf' ] && [ ! -e '$CHROOT/usr/bin/blegateway' ]"
        check "package: purge deletes the spool, the config and the stat overrides" \
            bash -c "chroot '$CHROOT' dpkg -P blegateway && [ ! -e '$CHROOT/var/lib/blegateway' ] && \
                [ ! -e '$conf' ] && ! chroot '$CHROOT' dpkg-statoverride --list | grep -q blegateway"
        check "install.sh: installs binary, unit, user and config into the root (no systemd running)" \
            bash -c "cp '$BIN' '$CHROOT/tmp/blegateway' && cp -r '$REPO/deploy' '$REPO/config' '$CHROOT/tmp/' && \
                chroot '$CHROOT' /tmp/deploy/install.sh /tmp/blegateway && \
                [ \"\$(chroot '$CHROOT' /usr/local/bin/blegateway --version)\" = '$NEW_VERSION' ] && \
                grep -qx 'ExecStart=/usr/local/bin/blegateway run --config /etc/blegateway/gateway.yaml' \
                    '$CHROOT/etc/systemd/system/blegateway.service' && \
                [ \"\$(chroot '$CHROOT' stat -c '%U:%G %a' /etc/blegateway/gateway.yaml /var/lib/blegateway | paste -sd' ')\" \
                    = 'root:blegateway 640 blegateway:blegateway 750' ]"
        check "install.sh: run again, it keeps a changed config" \
            bash -c "echo '# local' >>'$conf' && s=\$(sha256sum '$conf') && chroot '$CHROOT' /tmp/deploy/install.sh /tmp/blegateway \
                && [ \"\$(sha256sum '$conf')\" = \"\$s\" ]"
    fi
fi

fi  # BLEGATEWAY_TEST_ONLY

# ---------------------------------------------------------------------------------------------------------------
# Broker side. The central broker runs deploy/mosquitto/fleet-broker.conf as shipped, with only paths, the port and
# the user (mosquitto drops root to `mosquitto` otherwise) rewritten; the ACL file is used unchanged.
if ! [ -x "$MOSQUITTO" ] || ! command -v mosquitto_pub >/dev/null || ! command -v openssl >/dev/null; then
    skip "broker: fleet ACL and edge bridge" "needs mosquitto, mosquitto-clients and openssl"
else
    M=$WORK/mqtt
    mkdir -p "$M/certs" "$M/central" "$M/edge"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=blegateway test CA" \
        -keyout "$M/certs/ca.key" -out "$M/certs/ca.pem" >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$M/certs/broker.key" \
        -out "$M/certs/broker.csr" >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$M/certs/san.ext"
    openssl x509 -req -in "$M/certs/broker.csr" -CA "$M/certs/ca.pem" -CAkey "$M/certs/ca.key" -CAcreateserial \
        -days 2 -extfile "$M/certs/san.ext" -out "$M/certs/broker.pem" >/dev/null 2>&1
    : >"$M/passwd"
    for u in gw-a gw-b ops consumer homeassistant blegateway-fleet; do
        mosquitto_passwd -b "$M/passwd" "$u" "pw-$u" 2>/dev/null
    done
    chmod 0600 "$M/passwd"
    CENTRAL_PORT=$(free_port) EDGE_PORT=$(free_port)
    sed -e "s#/etc/mosquitto/certs/#$M/certs/#" -e "s#/var/lib/mosquitto/#$M/central/#" \
        -e "s#^listener 8883\$#listener $CENTRAL_PORT 127.0.0.1#" -e "s#/etc/mosquitto/blegateway.passwd#$M/passwd#" \
        -e "s#/etc/mosquitto/blegateway.acl#$REPO/deploy/mosquitto/blegateway.acl#" \
        "$REPO/deploy/mosquitto/fleet-broker.conf" >"$M/central.conf"
    echo "user $(id -un)" >>"$M/central.conf"
    central_pid=
    start_central() {
        "$MOSQUITTO" -c "$M/central.conf" >>"$M/central.log" 2>&1 &
        central_pid=$!; pids+=("$central_pid")
        wait_until 10 port_open "$CENTRAL_PORT"
    }
    stop_central() { kill "$central_pid" && wait "$central_pid" 2>/dev/null; ! port_open "$CENTRAL_PORT"; }
    tls=(-h 127.0.0.1 -p "$CENTRAL_PORT" --cafile "$M/certs/ca.pem" -V mqttv5)
    pub() { local u=$1; shift; timeout 15 mosquitto_pub "${tls[@]}" -u "$u" -P "pw-$u" -q 1 "$@"; }
    sub() { local u=$1; shift; timeout 20 mosquitto_sub "${tls[@]}" -u "$u" -P "pw-$u" "$@"; }

    check "broker: fleet-broker.conf starts (TLS listener, password file, acl_file)" start_central
    check "broker: an anonymous client is refused" \
        bash -c "! timeout 10 mosquitto_pub -h 127.0.0.1 -p $CENTRAL_PORT --cafile '$M/certs/ca.pem' -t t -m x"
    check "broker: a wrong password is refused" \
        bash -c "! timeout 10 mosquitto_pub -h 127.0.0.1 -p $CENTRAL_PORT --cafile '$M/certs/ca.pem' -u gw-a -P nope -t t -m x"
    pub ops -r -t blegateway/gw-a/config -m cfg-a
    pub ops -r -t blegateway/gw-b/config -m cfg-b
    pub ops -r -t blegateway/fleet/config -m cfg-fleet
    # Retained messages come at subscribe time: a granted topic answers at once, so two answers out of three topics
    # within the time limit means the third was withheld.
    reads() {
        local out
        out=$(sub gw-a -v -C 3 -W 4 -t blegateway/gw-a/config -t blegateway/gw-b/config -t blegateway/fleet/config \
            | sort | paste -sd' ')
        echo "$out"
        [ "$out" = "blegateway/fleet/config cfg-fleet blegateway/gw-a/config cfg-a" ]
    }
    check "broker ACL: gw-a reads its own and the fleet config, not gw-b's" reads
    # Every topic the gateway publishes, from Topics.swift: `\(base)/…` with each interpolation filled in.
    mapfile -t families < <(grep -o '"\\(base)/[^"]*"' "$REPO/Sources/BLEPublishing/Topics.swift" \
        | sed -e 's/^"\\(base)\///' -e 's/"$//' -e 's/\\([^)]*)/x1/g' | grep -vx -e config -e enrol \
        | grep -v -e '+' -e '/$' | sort -u)  # not what it reads (config, enrol) nor its filters (peripherals/+/write, …/)
    echo "     gateway topics from Topics.swift: ${families[*]}"
    observer_log=$M/observer.log
    timeout 30 mosquitto_sub "${tls[@]}" -u ops -P pw-ops -v -q 1 -t 'blegateway/#' >"$observer_log" 2>&1 &
    observer=$!; pids+=("$observer")
    sleep 0.5  # let the observer's SUBSCRIBE land; the marker below confirms it
    writes() {
        local t expected=()
        for t in "${families[@]}"; do
            pub gw-a -t "blegateway/gw-a/$t" -m own || return 1
            pub gw-a -t "blegateway/gw-b/$t" -m intruder || true
            expected+=("blegateway/gw-a/$t own")
        done
        pub gw-a -t blegateway/gw-a/config -m overwritten || true
        pub gw-a -t blegateway/fleet/config -m overwritten || true
        pub gw-a -t blegateway/gw-a/status -m marker
        wait_until 10 grep -q 'blegateway/gw-a/status marker' "$observer_log" || { echo "no marker"; return 1; }
        for t in "${expected[@]}"; do grep -qx "$t" "$observer_log" || { echo "missing: $t"; return 1; }; done
    }
    check "broker ACL: gw-a publishes every gateway topic under its own prefix" writes
    check "broker ACL: gw-a cannot publish under gw-b's prefix" bash -c "grep -q 'blegateway/gw-a/status own' '$observer_log' && ! grep -q intruder '$observer_log'"
    check "broker ACL: gw-a cannot write desired config (its own or the fleet's)" \
        bash -c "! grep -q overwritten '$observer_log' && \
            [ \"\$(timeout 10 mosquitto_sub ${tls[*]} -u ops -P pw-ops -C 2 -W 4 -t blegateway/gw-a/config \
                -t blegateway/fleet/config | sort | paste -sd' ')\" = 'cfg-a cfg-fleet' ]"
    kill "$observer" 2>/dev/null; wait "$observer" 2>/dev/null

    # Home Assistant's discovery, its own user and the fleet service's, under the same file. Each write is seen (or
    # not) by a subscriber that may read everything; retained answers come at subscribe time.
    everything_log=$M/everything.log
    timeout 40 mosquitto_sub "${tls[@]}" -u ops -P pw-ops -v -q 1 -t 'blegateway/#' >"$everything_log" 2>&1 &
    everything=$!; pids+=("$everything")
    ha_log=$M/ha.log
    timeout 40 mosquitto_sub "${tls[@]}" -u homeassistant -P pw-homeassistant -v -q 1 -t 'homeassistant/#' \
        -t 'blegateway/#' >"$ha_log" 2>&1 &
    ha_watch=$!; pids+=("$ha_watch")
    sleep 0.5  # both SUBSCRIBEs land; the markers below confirm it
    seen() { wait_until 10 grep -qx "$1" "$2"; }
    discovery() {
        pub gw-a -r -t homeassistant/device/gw-a/blegateway_gw-a/config -m doc-a || return 1
        pub gw-a -r -t homeassistant/device/gw-b/blegateway_gw-b/config -m forged || true
        pub gw-a -r -t homeassistant/device/blegateway_gw-a/config -m nodeless || true
        pub gw-a -t blegateway/gw-a/status -m discovery-marker || return 1
        seen "blegateway/gw-a/status discovery-marker" "$ha_log" || { echo "no marker"; return 1; }
        seen "homeassistant/device/gw-a/blegateway_gw-a/config doc-a" "$ha_log" || { echo "own document missing"; return 1; }
        ! grep -q -e forged -e nodeless "$ha_log" || { echo "a document outside its node was taken"; return 1; }
        # It reads its own back (what an earlier run left) and Home Assistant's birth message.
        [ "$(sub gw-a -C 1 -W 4 -t homeassistant/device/gw-a/+/config)" = doc-a ] || { echo "cannot read its own"; return 1; }
        # The broadcasting sensors' shared node: every gateway writes and reads it.
        pub gw-b -r -t homeassistant/device/blegateway-sensors/blegateway_sensor_a4c138000073/config -m sensor-doc \
            || return 1
        [ "$(sub gw-a -C 1 -W 4 -t homeassistant/device/blegateway-sensors/+/config)" = sensor-doc ] \
            || { echo "cannot read the sensors' shared documents"; return 1; }
    }
    check "broker ACL: gw-a writes and reads its own discovery documents (node gw-a), not gw-b's nor node-less ones; both the sensors' shared node" discovery
    ha_user() {
        pub homeassistant -r -t homeassistant/status -m online || return 1
        [ "$(sub gw-a -C 1 -W 4 -t homeassistant/status)" = online ] || { echo "gw-a cannot read the birth"; return 1; }
        pub homeassistant -t blegateway/gw-a/peripherals/001bdc100001/write -m ha-command || return 1
        pub homeassistant -t blegateway/gw-a/config -m ha-config || true
        pub homeassistant -t blegateway/gw-a/beacons/b1 -m ha-reading || true
        pub homeassistant -t blegateway/gw-a/status -m ha-marker || true
        pub ops -t blegateway/gw-a/status -m ha-done || return 1
        seen "blegateway/gw-a/status ha-done" "$everything_log" || { echo "no marker"; return 1; }
        seen "blegateway/gw-a/peripherals/001bdc100001/write ha-command" "$everything_log" || { echo "command missing"; return 1; }
        ! grep -q -e ha-config -e ha-reading -e ha-marker "$everything_log" || { echo "homeassistant wrote a gateway topic"; return 1; }
        # What it reads: discovery (above) and the states under the prefix.
        grep -qx "blegateway/gw-a/status ha-done" "$ha_log" || { echo "homeassistant cannot read the prefix"; return 1; }
    }
    check "broker ACL: homeassistant reads discovery and the prefix, writes its birth and peripheral commands only" ha_user
    fleet_user() {
        pub blegateway-fleet -r -t blegateway/fleet/presence/tag-1 -m room-1 || return 1
        pub blegateway-fleet -r -t blegateway/fleet/status -m fleet-online || return 1
        pub blegateway-fleet -r -t blegateway/fleet/lease -m fleet-lease || return 1
        pub blegateway-fleet -r -t homeassistant/device_tracker/blegateway_tag_tag-1/config -m tracker || return 1
        pub blegateway-fleet -r -t blegateway/fleet/rooms/kitchen -m occupied || return 1
        pub blegateway-fleet -r -t homeassistant/device/blegateway-fleet/blegateway_room_kitchen/config -m room-doc \
            || return 1
        pub blegateway-fleet -t blegateway/gw-a/status -m fleet-forged || true
        pub blegateway-fleet -t blegateway/fleet/config -m fleet-config || true
        pub blegateway-fleet -t homeassistant/device/gw-a/blegateway_gw-a/config -m fleet-doc || true
        pub ops -t blegateway/gw-a/status -m fleet-done || return 1
        seen "blegateway/gw-a/status fleet-done" "$everything_log" || { echo "no marker"; return 1; }
        seen "blegateway/fleet/presence/tag-1 room-1" "$everything_log" || { echo "presence missing"; return 1; }
        seen "blegateway/fleet/status fleet-online" "$everything_log" || { echo "status missing"; return 1; }
        # Its lease, which it must read back (its own claim's echo keeps it active).
        [ "$(sub blegateway-fleet -C 1 -W 4 -t blegateway/fleet/lease)" = fleet-lease ] || { echo "lease not read back"; return 1; }
        seen "homeassistant/device_tracker/blegateway_tag_tag-1/config tracker" "$ha_log" || { echo "tracker missing"; return 1; }
        seen "blegateway/fleet/rooms/kitchen occupied" "$everything_log" || { echo "room missing"; return 1; }
        seen "homeassistant/device/blegateway-fleet/blegateway_room_kitchen/config room-doc" "$ha_log" \
            || { echo "room document missing"; return 1; }
        ! grep -q -e fleet-forged -e fleet-config "$everything_log" && ! grep -q fleet-doc "$ha_log" \
            || { echo "blegateway-fleet wrote what it must not"; return 1; }
        [ "$(sub blegateway-fleet -C 1 -W 4 -t blegateway/gw-a/config)" = cfg-a ] || { echo "cannot read the fleet"; return 1; }
    }
    check "broker ACL: blegateway-fleet reads the fleet, writes presence, its status and trackers' discovery only" fleet_user
    kill "$everything" "$ha_watch" 2>/dev/null; wait "$everything" "$ha_watch" 2>/dev/null

    # Edge bridge: deploy/mosquitto/edge-bridge.conf with the gateway id, the central address and the paths filled
    # in, and a shorter reconnect backoff so that the test does not wait up to a minute.
    sed -e "s/pi-01/gw-a/g" -e "s/^listener 1883 127.0.0.1\$/listener $EDGE_PORT 127.0.0.1/" \
        -e "s#^address central.example.net:8883\$#address 127.0.0.1:$CENTRAL_PORT#" \
        -e "s#/etc/mosquitto/certs/#$M/certs/#" -e "s#/var/lib/mosquitto/#$M/edge/#" \
        -e "s/^remote_password CHANGE-ME\$/remote_password pw-gw-a/" -e "s/^restart_timeout .*/restart_timeout 1 2/" \
        "$REPO/deploy/mosquitto/edge-bridge.conf" >"$M/edge.conf"
    echo "user $(id -un)" >>"$M/edge.conf"
    edge() { timeout 20 "$@" -h 127.0.0.1 -p "$EDGE_PORT"; }
    bridge_state() {  # the edge's retained notification: 1 connected, 0 not
        [ "$(edge mosquitto_sub -C 1 -W 2 -t '$SYS/broker/connection/blegateway-bridge-gw-a/state')" = "$1" ]
    }
    # A persistent consumer session on central (QoS 1, clean session off): messages wait for it while it is away.
    consumer() { sub consumer -V mqttv311 -i deploy-test-consumer -c -q 1 -t 'blegateway/gw-a/beacons/#' "$@"; }
    "$MOSQUITTO" -c "$M/edge.conf" >"$M/edge.log" 2>&1 &
    edge_pid=$!; pids+=("$edge_pid")
    bridge_up() { wait_until 10 port_open "$EDGE_PORT" && wait_until 15 bridge_state 1; }
    check "bridge: edge-bridge.conf starts and connects to central over TLS as gw-a" bridge_up
    consumer -E >/dev/null
    forwards() {
        edge mosquitto_pub -q 1 -t blegateway/gw-a/beacons/b1 -m warmup || return 1
        [ "$(consumer -C 1 -W 10)" = warmup ]
    }
    check "bridge: a reading published at the edge arrives at central" forwards
    check "bridge: config written centrally reaches the edge (in direction)" \
        bash -c "[ \"\$(timeout 10 mosquitto_sub -h 127.0.0.1 -p $EDGE_PORT -C 1 -W 5 -t blegateway/gw-a/config)\" = cfg-a ]"
    # Commands come in (a write, an enrolment) exactly once, and the per-adapter states go out.
    commands_in() {
        local got central
        edge mosquitto_sub -C 2 -W 10 -t blegateway/gw-a/peripherals/+/write -t blegateway/gw-a/enrol \
            > "$M/commands.txt" &
        local sub=$!
        # Central's view too: each command once, not again as the edge sends it back.
        sub ops -C 4 -W 6 -t blegateway/gw-a/peripherals/+/write -t blegateway/gw-a/enrol > "$M/central.txt" &
        central=$!
        sleep 0.5  # both subscriptions land before the commands are published
        pub ops -t blegateway/gw-a/peripherals/001bdc100001/write -m write-1 || return 1
        pub ops -t blegateway/gw-a/enrol -m enrol-1 || return 1
        wait $sub
        wait $central
        got=$(sort "$M/commands.txt" | paste -sd' ')
        echo "edge got: $got; central saw $(wc -l < "$M/central.txt")"
        [ "$got" = "enrol-1 write-1" ] && [ "$(wc -l < "$M/central.txt")" = 2 ]
    }
    check "bridge: write and enrolment commands reach the edge, once" commands_in
    adapters_out() {
        edge mosquitto_pub -q 1 -r -t blegateway/gw-a/adapters/primary -m slot-state || return 1
        [ "$(timeout 10 mosquitto_sub "${tls[@]}" -u ops -P pw-ops -C 1 -W 8 -t blegateway/gw-a/adapters/primary)" \
            = slot-state ]
    }
    check "bridge: each adapter's state (adapters/<slot>) reaches central" adapters_out
    N=500
    outage() {
        stop_central || { echo "central did not stop"; return 1; }
        wait_until 15 bridge_state 0 || { echo "edge did not notice the outage"; return 1; }
        seq 1 "$N" | edge mosquitto_pub -q 1 -l -t blegateway/gw-a/beacons/b1 || return 1
        start_central || { echo "central did not restart"; return 1; }
        wait_until 20 bridge_state 1 || { echo "bridge did not reconnect"; return 1; }
        local got
        got=$(consumer -C "$N" -W 30 | sort -n | uniq | wc -l)
        echo "received $got distinct of $N"
        [ "$got" = "$N" ]
    }
    check "bridge: $N QoS 1 readings published at the edge while central is down all arrive after it restarts" outage
fi

[ "$skipped" = 0 ] || echo "($skipped skipped)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
