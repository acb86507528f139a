# Adapter lifecycle checks (#5), sourced by guest-checks.sh: rfkill blocks and unblocks, binding an adapter by its
# public address, and the USB reset step on an adapter that is not USB. Uses BIN, OUT, BTVIRT, check, log and the
# advertising helpers of guest-checks.sh.
#
# btvirt's addresses are 00:AA:01:<slot>:<index hi>:<index lo> — the slot in its own process, the index the kernel
# gave the vhci controller (BlueZ emulator/vhci.c passes the kernel's index to btdev_create, btdev.c get_bdaddr
# puts it in the low bytes) — so a btvirt controller never has the same address under another index. What can be
# shown: an address configured with another index's name (hci0) opens the adapter that has it (hci1), the named
# adapter is left alone while the address is gone, and the adapter is opened again when its address returns.

hci_address() { hciconfig "$1" 2>/dev/null | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3; }
rfkill_of() { ls "/sys/class/bluetooth/$1" 2>/dev/null | grep '^rfkill' | head -n 1; }
wait_present() { for i in $(seq 1 20); do [ -e "/sys/class/bluetooth/$1" ] && return 0; sleep 0.5; done; return 1; }
# Waits (up to $3 s) for a line matching $1 in file $2: a slow or loaded host starts the gateway late.
wait_log() { for i in $(seq 1 $(($3 * 2))); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.5; done; return 1; }
wait_gone() { for i in $(seq 1 20); do [ -e "/sys/class/bluetooth/$1" ] || return 0; sleep 0.5; done; return 1; }
# Sightings of the iBeacon in a scan's JSON lines stamped at or after epoch second $2.
ibeacons_since() {
    grep -i e2c56db5 "$1" 2>/dev/null | sed -n 's/^{"ts":\([0-9]*\).*/\1/p' | awk -v t="$2" '$1 >= t' | wc -l
}

# Legacy advertising (the iBeacon) from any adapter of the running btvirt through its user channel.
advertise_ibeacon_on() {
    timeout 15 "$BIN" hci-dump --device "$1" --send $RESET --send $ADV_PARAMS --send "$(set_adv_data $IB_DATA)" \
        --send $ADV_ON --duration 1 > "$OUT/adv-$1.txt" 2> "$OUT/adv-$1.err"
}
advertise_ibeacon_on_hci2() { advertise_ibeacon_on hci2; }
advertise_ibeacon_on_hci1() { advertise_ibeacon_on hci1; }

# Exclusive mode, no bluetoothd; btvirt -l2 ($BTVIRT) gives hci0 and hci1, and is running again afterwards.
adapter_exclusive_checks() {
    # --- (a) blocked before the scan starts: the state is blocked; unblocked from outside, the gateway opens it --
    log "adapter: rfkill block before an exclusive scan"
    rf=$(rfkill_of hci0)
    r=ok
    [ -n "$rf" ] || r="hci0 has no rfkill switch in sysfs"
    if [ "$r" = ok ]; then
        echo 1 > "/sys/class/rfkill/$rf/soft"
        timeout 40 "$BIN" scan --device hci0 --mode exclusive --json --duration 12 \
            > "$OUT/rfkill-outside.json" 2> "$OUT/rfkill-outside.err" &
        pid=$!
        wait_log "adapter hci0: blocked" "$OUT/rfkill-outside.err" 8 ||
            r="no blocked state while the radio was blocked: $(tail -n 1 "$OUT/rfkill-outside.err")"
        echo 0 > "/sys/class/rfkill/$rf/soft"
        keep_advertising advertise_legacy_on_hci1 $pid
        wait $pid; rc=$?
        [ "$r" != ok ] || [ $rc -eq 0 ] || r="scan exited $rc: $(tail -n 1 "$OUT/rfkill-outside.err")"
        [ "$r" != ok ] || grep -qi e2c56db5 "$OUT/rfkill-outside.json" ||
            r="no iBeacon after the radio was unblocked: $(tail -n 2 "$OUT/rfkill-outside.err" | tr '\n' ' ')"
    fi
    check rfkill-blocked-before-scan-then-unblocked "$r"

    # --- (b) the same with --allow-rfkill-unblock: the gateway clears the soft block itself ------------------------
    log "adapter: rfkill block, the gateway unblocks"
    r=ok
    [ -n "$rf" ] || r="hci0 has no rfkill switch in sysfs"
    if [ "$r" = ok ]; then
        echo 1 > "/sys/class/rfkill/$rf/soft"
        timeout 40 "$BIN" scan --device hci0 --mode exclusive --json --duration 10 --allow-rfkill-unblock \
            > "$OUT/rfkill-self.json" 2> "$OUT/rfkill-self.err" &
        pid=$!
        wait_log "recovery step rfkill_unblock" "$OUT/rfkill-self.err" 8
        keep_advertising advertise_legacy_on_hci1 $pid
        wait $pid; rc=$?
        soft=$(cat "/sys/class/rfkill/$rf/soft")
        [ "$soft" = 0 ] || { r="the radio is still soft-blocked"; echo 0 > "/sys/class/rfkill/$rf/soft"; }
        [ "$r" != ok ] || [ $rc -eq 0 ] || r="scan exited $rc: $(tail -n 1 "$OUT/rfkill-self.err")"
        [ "$r" != ok ] || grep -q "recovery step rfkill_unblock" "$OUT/rfkill-self.err" ||
            r="no rfkill_unblock step logged: $(tail -n 1 "$OUT/rfkill-self.err")"
        [ "$r" != ok ] || grep -qi e2c56db5 "$OUT/rfkill-self.json" || r="no iBeacon after the gateway unblocked"
    fi
    check rfkill-unblocked-by-the-gateway "$r"

    # --- the USB reset step on a vhci adapter: "not a USB device", then the ladder waits for the adapter ----------
    # btvirt stopped: every command times out, and the ladder climbs reset → power cycle → USB reset → await.
    log "adapter: USB reset step on a virtual adapter"
    kill -STOP $BTVIRT
    timeout 60 "$BIN" scan --device hci0 --mode exclusive --json --duration 40 --allow-usb-reset \
        > /dev/null 2> "$OUT/usb-reset.err"; rc=$?
    kill -CONT $BTVIRT
    r=ok
    grep -q "recovery step usb_reset" "$OUT/usb-reset.err" ||
        r="the ladder never reached usb_reset (exit $rc): $(tail -n 1 "$OUT/usb-reset.err")"
    [ "$r" != ok ] || grep -q "not a USB device.*virtual" "$OUT/usb-reset.err" ||
        r="usb_reset did not say 'not a USB device (virtual)'"
    [ "$r" != ok ] || grep -q "waiting for the adapter to return, next try in 30 s" "$OUT/usb-reset.err" ||
        r="no wait for the adapter after usb_reset: $(tail -n 1 "$OUT/usb-reset.err")"
    if [ "$r" = ok ] && { [ $rc -lt 1 ] || [ $rc -ge 124 ]; }; then
        r="exit status $rc (expected the plain failure of a scan that never ran)"
    fi
    check usb-reset-step-on-vhci-says-not-usb-and-waits "$r"

    # --- bind by address: configured as hci0 with hci1's address ------------------------------------------------
    log "adapter: bind by address"
    kill $BTVIRT 2>/dev/null; wait $BTVIRT 2>/dev/null
    wait_gone hci1
    btvirt -l1 > "$OUT/btvirt-other.log" 2>&1 &
    OTHER=$!                       # hci0, a radio of its own
    wait_present hci0
    btvirt -l2 > "$OUT/btvirt-bound.log" 2>&1 &
    BTVIRT=$!                      # hci1 (the bound adapter) and hci2 (its advertiser)
    wait_present hci2
    addr=$(hci_address hci1)
    r=ok
    [ -n "$addr" ] || r="cannot read hci1's address"
    if [ "$r" = ok ]; then
        timeout 60 "$BIN" scan --device hci0 --address "$addr" --mode exclusive --json --duration 24 \
            > "$OUT/bind.json" 2> "$OUT/bind.err" &
        pid=$!
        t0=$(date +%s)
        wait_log "is hci1 now; opening hci1" "$OUT/bind.err" 8
        sleep 1
        advertise_ibeacon_on_hci2; advertise_ibeacon_on_hci2
        # The bound adapter goes away: the gateway looks for the address, and leaves hci0 alone.
        kill $BTVIRT 2>/dev/null; wait $BTVIRT 2>/dev/null
        sleep 1
        timeout 10 "$BIN" hci-dump --device hci0 --mode exclusive --send $RESET --duration 1 \
            > "$OUT/bind-hci0.txt" 2> "$OUT/bind-hci0.err"; free=$?
        btvirt -l2 > "$OUT/btvirt-bound2.log" 2>&1 &
        BTVIRT=$!
        wait_present hci2
        t1=$(date +%s)
        [ "$(hci_address hci1)" = "$addr" ] || r="hci1 came back with another address: $(hci_address hci1)"
        keep_advertising advertise_ibeacon_on_hci2 $pid
        wait $pid; rc=$?
        [ "$r" != ok ] || [ $rc -eq 0 ] || r="scan exited $rc: $(tail -n 1 "$OUT/bind.err")"
        [ "$r" != ok ] || [ "$(ibeacons_since "$OUT/bind.json" "$t0")" -ge 1 ] ||
            r="no iBeacon from hci2's radio: hci1 was not opened for $addr"
        [ "$r" != ok ] || grep -q "$addr is hci1 now; opening hci1" "$OUT/bind.err" || r="no note that $addr is hci1"
        # rfkill is followed on the adapter opened (hci1), not the one configured (hci0, still there): hci1's switch
        # going away is the adapter's removal.
        [ "$r" != ok ] || grep -q "adapter hci0: absent (the adapter was removed" "$OUT/bind.err" ||
            r="hci1's removal was not seen through rfkill: $(grep adapter "$OUT/bind.err" | tail -n 1)"
        [ "$r" != ok ] || [ $free -eq 0 ] || r="hci0 was taken while $addr was gone: $(tail -n 1 "$OUT/bind-hci0.err")"
        [ "$r" != ok ] || [ "$(ibeacons_since "$OUT/bind.json" "$t1")" -ge 1 ] ||
            r="no iBeacon after $addr came back: $(grep adapter "$OUT/bind.err" | tail -n 2 | tr '\n' ' ')"
    fi
    check bind-by-address-opens-and-follows-the-address "$r"
    # An address no adapter has: absent, named in the error (a scan that never ran exits 3 on absent).
    timeout 20 "$BIN" scan --device hci0 --address 00:AA:01:0F:00:0F --json --duration 5 > /dev/null \
        2> "$OUT/bind-none.err"; rc=$?
    r=ok
    [ $rc -eq 3 ] || r="exit status $rc (expected 3, absent): $(tail -n 1 "$OUT/bind-none.err")"
    grep -q "^error: no Bluetooth adapter with address 00:AA:01:0F:00:0F" "$OUT/bind-none.err" ||
        r="the error does not name the address: $(grep error "$OUT/bind-none.err" | head -n 1)"
    timeout 10 "$BIN" scan --device hci0 --address 00:AA:01:0F:00 --duration 1 > /dev/null 2> "$OUT/bind-bad.err"
    grep -q "bad adapter address \"00:AA:01:0F:00\"" "$OUT/bind-bad.err" || r="a malformed --address was not refused"
    check bind-by-address-none-has-it-names-the-address "$r"
    kill $BTVIRT $OTHER 2>/dev/null; wait $BTVIRT 2>/dev/null; wait $OTHER 2>/dev/null
    wait_gone hci0; wait_gone hci2
    btvirt -l2 > "$OUT/btvirt-again.log" 2>&1 &
    BTVIRT=$!
    wait_present hci1
}

# Shared mode beside bluetoothd: the radio is blocked while scanning and unblocked; reports come again.
adapter_shared_checks() {
    log "adapter: rfkill block under a shared scan"
    rf=$(rfkill_of hci0)
    r=ok
    [ -n "$rf" ] || { check rfkill-shared-reports-again-after-unblock "hci0 has no rfkill switch"; return; }
    timeout 40 "$BIN" scan --device hci0 --mode shared --json --duration 14 \
        > "$OUT/rfkill-shared.json" 2> "$OUT/rfkill-shared.err" &
    pid=$!
    sleep 3
    echo 1 > "/sys/class/rfkill/$rf/soft"
    sleep 2
    timeout 5 btmgmt -i hci0 info 2>/dev/null | grep -q "current settings: powered" &&
        r="hci0 stayed powered under the block"
    echo 0 > "/sys/class/rfkill/$rf/soft"
    t1=$(date +%s)
    # bluetoothd powers an adapter again when its radio is unblocked; give it a moment, then do it if it did not.
    sleep 2
    timeout 5 btmgmt -i hci0 info 2>/dev/null | grep -q "current settings: powered" ||
        { log "bluetoothd did not power hci0 after the unblock"; timeout 5 btmgmt -i hci0 power on > /dev/null 2>&1; }
    advertise_with_btmgmt
    wait $pid; rc=$?
    [ "$r" != ok ] || [ $rc -eq 0 ] || r="scan exited $rc: $(tail -n 1 "$OUT/rfkill-shared.err")"
    [ "$r" != ok ] || [ "$(ibeacons_since "$OUT/rfkill-shared.json" "$t1")" -ge 1 ] ||
        r="no iBeacon after the unblock: $(tail -n 2 "$OUT/rfkill-shared.err" | tr '\n' ' ')"
    check rfkill-shared-reports-again-after-unblock "$r"
}

# Every adapter event during a running gateway (#21, #43), in either mode: `blegateway run --mode $1` publishes on
# …/adapter what happens to the adapter it holds — blocked and unblocked by rfkill, powered off and on, removed and
# back — each within a second of the event, and scans again by itself each time the adapter returns. Each state is
# looked for after a mark taken just before its action, so a state published earlier (a poweredOff while starting)
# cannot satisfy a later check. Shared mode expects bluetoothd running (it powers the adapter again); exclusive mode
# expects it stopped. Leaves btvirt (hci0, hci1) running, BTVIRT following it.
adapter_event_checks() {
    mode=$1
    if [ ! -x /usr/sbin/mosquitto ] || [ ! -x /usr/bin/mosquitto_sub ]; then
        skip "$mode-adapter-events" "no /usr/sbin/mosquitto or /usr/bin/mosquitto_sub"
        return
    fi
    W=/tmp/$mode-events
    mkdir -p $W
    log "adapter: every event during a $mode run"
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
    printf 'listener 1884 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n' > $W/mosquitto.conf
    /usr/sbin/mosquitto -c $W/mosquitto.conf > "$OUT/$mode-events-mosquitto.log" 2>&1 &
    broker=$!
    for i in $(seq 1 20); do grep -q "running" "$OUT/$mode-events-mosquitto.log" && break; sleep 0.5; done
    M="$OUT/$mode-events-mqtt.txt"
    # Each line stamped with the guest's uptime when it arrived, to measure how late a state is published.
    timeout 230 mosquitto_sub -h 127.0.0.1 -p 1884 -v -t 'vmev/vm/adapter' -t 'vmev/vm/beacons/#' |
        while IFS= read -r line; do echo "$(cut -d' ' -f1 /proc/uptime) $line"; done > "$M" 2>&1 &
    sub=$!
    printf 'gateway:\n  id: vm\nadapter:\n  device: hci0\n  mode: %s\nmqtt:\n  broker: mqtt://127.0.0.1:1884\n  prefix: vmev\nspool:\n  path: %s/spool.sqlite\nremote_config:\n  enabled: false\n' \
        "$mode" $W > $W/gateway.yaml
    timeout 220 "$BIN" run --config $W/gateway.yaml > "$OUT/$mode-events-run.txt" 2> "$OUT/$mode-events-run.err" &
    gw=$!
    if [ "$mode" = shared ]; then
        advertise() { advertise_with_btmgmt; }
    else
        # hci1 advertises through its own user channel for as long as the gateway runs (btvirt restarted or not).
        advertise() { :; }
        keep_advertising advertise_ibeacon_on_hci1 $gw &
        advertiser=$!
    fi
    mark() { MARK=$(wc -l < "$M"); T_MARK=$(cut -d' ' -f1 /proc/uptime); }
    # The first adapter state $1 published after the mark, within $2 s; LATE says how long after the mark it came.
    since_mark() { tail -n +"$((MARK + 1))" "$M"; }
    wait_state() {
        for i in $(seq 1 $(($2 * 2))); do
            at=$(since_mark | grep ' vmev/vm/adapter ' | grep -E "\"state\": ?\"$1\"" | head -n 1 | cut -d' ' -f1)
            [ -n "$at" ] && { LATE=$(echo "$at $T_MARK" | awk '{ printf "%.1f", $1 - $2 }'); return 0; }
            sleep 0.5
        done
        return 1
    }
    last_state() { grep ' vmev/vm/adapter ' "$M" | tail -n 1 | sed -n 's/.*"state": \{0,1\}"\([a-zA-Z]*\)".*/\1/p'; }
    # Within a second of the event, with the VM's timing as slack: TCG runs the guest several times slower than
    # hardware, so the check allows 3 s and the log line gives each measured delay.
    on_time() {  # $1 = state, $2 = what was done
        wait_state "$1" 15 || { r="still $(last_state) after $2"; return 1; }
        log "$mode: $1 published ${LATE} s after $2"
        echo "$LATE" | awk '{ exit !($1 <= 3.0) }' || { r="$1 published ${LATE} s after $2 (more than 3 s)"; return 1; }
    }
    scanning_again() {  # the iBeacon hci1 advertises is ranged after the mark
        advertise
        for i in $(seq 1 40); do
            since_mark | grep ' vmev/vm/beacons/' | grep -qi e2c56db5 && return 0
            sleep 0.5
        done
        r="no iBeacon reading after $1: $(grep adapter "$OUT/$mode-events-run.err" | tail -n 2 | tr '\n' ' ')"
        return 1
    }
    # Shared mode: bluetoothd powers the adapter again after an unblock or a return; by hand if it did not in 3 s.
    powered_again() {
        [ "$mode" = shared ] || return 0
        for i in $(seq 1 6); do
            timeout 5 btmgmt -i hci0 info 2>/dev/null | grep -q "current settings: powered" && return
            sleep 0.5
        done
        log "bluetoothd did not power hci0; powering it"
        timeout 5 btmgmt -i hci0 power on > /dev/null 2>&1
    }
    rf=$(rfkill_of hci0)

    r=ok
    mark
    wait_state poweredOn 40 || r="no poweredOn at start: $(tail -n 1 "$OUT/$mode-events-run.err")"
    [ "$r" != ok ] || scanning_again "the start" || true
    check "$mode-adapter-topic-poweredOn-and-scanning-at-start" "$r"

    r=ok
    if [ "$mode" = shared ]; then
        mark; timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
        on_time poweredOff "btmgmt power off" &&
            { mark; timeout 5 btmgmt -i hci0 power on > /dev/null 2>&1; on_time poweredOn "btmgmt power on"; } &&
            scanning_again "power on"
    else
        # The gateway holds hci0's user channel: nothing else may power it off (the kernel refuses HCIDEVDOWN with
        # EBUSY and management does not list the index). The gateway stays poweredOn and scanning.
        mark
        hciconfig hci0 down > "$OUT/$mode-events-down.err" 2>&1 && r="hciconfig hci0 down succeeded under the user channel"
        sleep 2
        [ "$r" != ok ] || ! since_mark | grep ' vmev/vm/adapter ' | grep -qv poweredOn ||
            r="the adapter topic changed: $(since_mark | grep ' vmev/vm/adapter ' | tail -n 1)"
        [ "$r" != ok ] || scanning_again "a refused power off" || true
    fi
    check "$mode-adapter-topic-follows-power-off-and-on" "$r"

    r=ok
    [ -n "$rf" ] || r="hci0 has no rfkill switch"
    if [ "$r" = ok ] && [ "$mode" = exclusive ]; then
        # The kernel refuses to block an adapter held through the HCI user channel (hci_rfkill_set_block answers
        # EBUSY) and sends no rfkill event, so the switch stays unblocked and the gateway cannot know it was tried: it
        # must go on scanning and stay poweredOn. (A kernel that did block it would have to be seen as blocked, then
        # scanning again.) `rfkill block bluetooth` also blocks every other adapter: here hci1, the advertiser.
        mark; echo 1 > "/sys/class/rfkill/$rf/soft"
        soft=$(cat "/sys/class/rfkill/$rf/soft")
        log "$mode: rfkill soft after the block: $soft"
        if [ "$soft" = 1 ]; then
            on_time blocked "rfkill block" || true
        else
            sleep 3
            [ "$r" != ok ] || ! since_mark | grep ' vmev/vm/adapter ' | grep -qv poweredOn ||
                r="the adapter topic changed under a refused block: $(since_mark | grep ' vmev/vm/adapter ' | tail -n 1)"
            [ "$r" != ok ] || scanning_again "a refused rfkill block" || true
        fi
        mark; echo 0 > "/sys/class/rfkill/$rf/soft"
        if [ "$soft" = 1 ]; then
            [ "$r" != ok ] || on_time poweredOn "rfkill unblock" || true
            [ "$r" != ok ] || scanning_again "the unblock" || true
        fi
    elif [ "$r" = ok ]; then
        mark; echo 1 > "/sys/class/rfkill/$rf/soft"
        on_time blocked "rfkill block"
        sleep 2
        mark; echo 0 > "/sys/class/rfkill/$rf/soft"
        powered_again
        [ "$r" != ok ] || on_time poweredOn "rfkill unblock" || true
        [ "$r" != ok ] || scanning_again "the unblock" || true
    fi
    check "$mode-adapter-topic-follows-rfkill-block-and-unblock" "$r"

    r=ok
    mark; kill $BTVIRT 2>/dev/null; wait $BTVIRT 2>/dev/null
    on_time absent "hci0's removal" || true
    mark; start_btvirt
    # The return is timed from hci0's appearance, not from the start of btvirt (see start_btvirt).
    T_MARK=${HCI0_AT:-$T_MARK}
    powered_again
    [ "$r" != ok ] || on_time poweredOn "hci0's return" || true
    [ "$r" != ok ] || scanning_again "the return" || true
    check "$mode-adapter-topic-follows-removal-and-return" "$r"

    kill -TERM $gw 2>/dev/null; wait $gw; rc=$?
    r=ok
    [ $rc -eq 0 ] || r="blegateway run exited $rc on SIGTERM: $(tail -n 1 "$OUT/$mode-events-run.err")"
    # Each adapter state is logged once (not as a warning and again as info): no line repeats the one before it.
    dup=$(grep 'adapter hci0: ' "$OUT/$mode-events-run.err" | sed 's/^[^ ]* [a-z]* //' | uniq -d | head -n 1)
    [ "$r" != ok ] || [ -z "$dup" ] || r="logged twice in a row: $dup"
    check "$mode-adapter-events-stop-cleanly-each-logged-once" "$r"
    sed -n 's/^[0-9.]* vmev\/vm\/adapter .*"state": \{0,1\}"\([a-zA-Z]*\)".*/\1/p' "$M" | tr '\n' ' ' > "$OUT/$mode-state-sequence.txt"
    log "$mode adapter states: $(cat "$OUT/$mode-state-sequence.txt")"
    [ -z "${advertiser:-}" ] || { kill $advertiser 2>/dev/null; wait $advertiser 2>/dev/null; advertiser=; }
    # $sub is the stamping loop; the subscriber before it in the pipe is stopped by name (wait would wait for both).
    pkill -f 'mosquitto_sub -h 127.0.0.1 -p 1884' 2>/dev/null
    kill $sub $broker 2>/dev/null; wait $sub 2>/dev/null; wait $broker 2>/dev/null
}
