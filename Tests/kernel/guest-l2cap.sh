# Sourced by guest-checks.sh (and guest-l2cap-only.sh) inside the kernel VM: shared mode's path to a
# peripheral, where the kernel owns the LE link and L2CAP and the gateway talks ATT through an L2CAP socket
# on the ATT fixed channel. hci1 is the peripheral (`blegateway gatt-serve`, the simulator's sensor GATT
# server), hci0 the gateway (`blegateway gatt`). Expects btvirt's hci0/hci1 and no bluetoothd: its own GATT
# server listens on ATT for every adapter and would answer beside ours.
# Uses BIN, OUT and the pass/fail/skip/check/log helpers of the caller.

L2CAP_ABSENT=00:11:22:33:44:55   # no such device on btvirt's radio

l2cap_checks() {
    if ! timeout 10 "$BIN" gatt --help 2>&1 | grep -qi "usage: blegateway gatt"; then
        skip l2cap "blegateway has no gatt subcommand (not wired into the command list)"
        return
    fi
    # With LE off, the kernel refuses an LE connect at once: the error must say so and what to do.
    log "l2cap: connect with LE off on hci0"
    timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
    timeout 5 btmgmt -i hci0 le off > "$OUT/l2cap-btmgmt.log" 2>&1
    timeout 5 btmgmt -i hci0 power on >> "$OUT/l2cap-btmgmt.log" 2>&1
    timeout 30 "$BIN" gatt --adapter hci0 --connect $L2CAP_ABSENT --timeout 10 \
        > "$OUT/gatt-le-off.txt" 2> "$OUT/gatt-le-off.err"; rc=$?
    r=ok
    [ $rc -ge 1 ] && [ $rc -lt 124 ] || r="exit status $rc (expected a plain failure)"
    grep -q "ECONNREFUSED" "$OUT/gatt-le-off.err" || [ "$r" != ok ] ||
        r="expected ECONNREFUSED, got: $(head -n 1 "$OUT/gatt-le-off.err")"
    grep -q "btmgmt -i hci0 le on" "$OUT/gatt-le-off.err" || [ "$r" != ok ] || r="the error gives no advice"
    check l2cap-le-off-refused-clearly "$r"

    log "l2cap: preparing hci0 (central) and hci1 (peripheral) through the kernel"
    # btvirt's controllers are dual-mode: the kernel starts LE connections only with LE enabled
    # (without it connect() fails at once with ECONNREFUSED). The peer advertises through the kernel
    # (connectable, then advertising), so the kernel knows it is connectable and accepts the link.
    for a in hci0 hci1; do
        timeout 5 btmgmt -i $a power off > /dev/null 2>&1
        timeout 5 btmgmt -i $a le on >> "$OUT/l2cap-btmgmt.log" 2>&1
    done
    timeout 5 btmgmt -i hci1 connectable on >> "$OUT/l2cap-btmgmt.log" 2>&1
    for a in hci0 hci1; do timeout 5 btmgmt -i $a power on >> "$OUT/l2cap-btmgmt.log" 2>&1; done
    timeout 5 btmgmt -i hci1 advertising on >> "$OUT/l2cap-btmgmt.log" 2>&1
    timeout 5 btmgmt -i hci0 info >> "$OUT/l2cap-btmgmt.log" 2>&1
    timeout 5 btmgmt -i hci1 info > "$OUT/l2cap-hci1-info.txt" 2>&1
    addr=$(sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' "$OUT/l2cap-hci1-info.txt" | head -n 1)
    if [ -z "$addr" ]; then
        fail l2cap-setup "no address for hci1: $(head -n 3 "$OUT/l2cap-hci1-info.txt" | tr '\n' ' ')"
        return
    fi
    grep -q "current settings:.*le.*advertising" "$OUT/l2cap-hci1-info.txt" ||
        log "l2cap: hci1 settings: $(grep 'current settings' "$OUT/l2cap-hci1-info.txt")"

    log "l2cap: gatt-serve on hci1 ($addr)"
    timeout 90 "$BIN" gatt-serve --adapter hci1 --duration 75 --notify-interval 1 \
        > "$OUT/gatt-serve.txt" 2> "$OUT/gatt-serve.err" &
    SERVER=$!
    # Under TCG the first start of the binary can take seconds.
    for i in $(seq 1 30); do grep -q "^listening on hci1" "$OUT/gatt-serve.txt" && break; sleep 0.5; done
    r=ok
    kill -0 $SERVER 2>/dev/null || r="gatt-serve exited: $(tail -n 1 "$OUT/gatt-serve.err")"
    grep -q "^listening on hci1" "$OUT/gatt-serve.txt" || [ "$r" != ok ] || r="gatt-serve is not listening after 15 s"
    check l2cap-server-listens-on-att "$r"

    log "l2cap: gatt on hci0 → $addr"
    timeout 60 "$BIN" gatt --adapter hci0 --connect "$addr" --timeout 20 --read 2A6E --subscribe 2A6E --count 3 \
        > "$OUT/gatt.txt" 2> "$OUT/gatt.err"; rc=$?
    r=ok
    grep -q "^connected hci0" "$OUT/gatt.txt" || r="no connection (exit $rc): $(tail -n 1 "$OUT/gatt.err")"
    check l2cap-connect-le-att "$r"
    r=ok
    grep -q "^mtu 247" "$OUT/gatt.txt" || r="no MTU exchange: $(tail -n 1 "$OUT/gatt.err")"
    grep -q "^rx 02" "$OUT/gatt-serve.txt" || [ "$r" != ok ] || r="the server saw no Exchange MTU Request"
    check l2cap-exchange-mtu "$r"
    r=ok
    grep -qi "^service 0x181a" "$OUT/gatt.txt" ||
        r="no Environmental Sensing service discovered: $(tail -n 1 "$OUT/gatt.err")"
    check l2cap-discover-environmental-sensing "$r"
    r=ok
    grep -qi "^read 0x2a6e" "$OUT/gatt.txt" || r="no Temperature read: $(tail -n 1 "$OUT/gatt.err")"
    check l2cap-read-temperature "$r"
    r=ok
    n=$(grep -ci "^notification 0x2a6e" "$OUT/gatt.txt")
    [ "$n" -ge 3 ] || r="$n Temperature notification(s), expected 3: $(tail -n 1 "$OUT/gatt.err")"
    check l2cap-notifications "$r"
    r=ok
    [ $rc -eq 0 ] || r="gatt exited $rc: $(tail -n 1 "$OUT/gatt.err")"
    check l2cap-client-exits-cleanly "$r"

    # Indications (Battery Level 0x2A19 indicates only): the client confirms each, and the server sends the
    # next only after the confirmation (Vol 3, Part F, §3.4.7.2).
    log "l2cap: gatt on hci0 → $addr, Battery Level indications"
    timeout 60 "$BIN" gatt --adapter hci0 --connect "$addr" --timeout 20 --subscribe 2A19 --indicate --count 2 \
        > "$OUT/gatt-indicate.txt" 2> "$OUT/gatt-indicate.err"; rc=$?
    r=ok
    n=$(grep -ci "^indication 0x2a19" "$OUT/gatt-indicate.txt")
    [ "$n" -ge 2 ] && [ $rc -eq 0 ] ||
        r="$n Battery Level indication(s), exit $rc: $(tail -n 1 "$OUT/gatt-indicate.err")"
    [ "$r" != ok ] || grep -q "^rx 1e" "$OUT/gatt-serve.txt" || r="the server saw no Handle Value Confirmation"
    check l2cap-indications-confirmed "$r"

    # Stopped by a signal mid-subscription, the client keeps every line it printed, says how many, and exits 0
    # (paper cut: stdout to a file is block-buffered; a signal must not lose it).
    for sig in INT TERM; do
        log "l2cap: gatt on hci0 → $addr, stopped by SIG$sig"
        timeout 60 "$BIN" gatt --adapter hci0 --connect "$addr" --timeout 20 --subscribe 2A6E --count 1000 \
            > "$OUT/gatt-sig.txt" 2> "$OUT/gatt-sig.err" &
        CLIENT=$!
        for i in $(seq 1 40); do [ "$(grep -ci '^notification 0x2a6e' "$OUT/gatt-sig.txt")" -ge 2 ] && break; sleep 0.5; done
        kill -$sig $CLIENT; wait $CLIENT; rc=$?
        lines=$(wc -l < "$OUT/gatt-sig.txt")
        r=ok
        [ "$(grep -ci '^notification 0x2a6e' "$OUT/gatt-sig.txt")" -ge 2 ] || r="no notifications before the signal"
        [ $rc -eq 0 ] || [ "$r" != ok ] || r="exit status $rc after SIG$sig: $(tail -n 1 "$OUT/gatt-sig.err")"
        grep -q "^gatt: $lines lines, stopped by signal" "$OUT/gatt-sig.err" || [ "$r" != ok ] ||
            r="the summary does not count the $lines lines printed: $(tail -n 1 "$OUT/gatt-sig.err")"
        check "l2cap-gatt-sig$(echo $sig | tr A-Z a-z)-keeps-every-line" "$r"
    done

    # A peer that is not there: the kernel scans for it and never connects; our deadline ends it.
    log "l2cap: gatt on hci0 → absent $L2CAP_ABSENT"
    timeout 30 "$BIN" gatt --adapter hci0 --connect $L2CAP_ABSENT --timeout 5 \
        > "$OUT/gatt-absent.txt" 2> "$OUT/gatt-absent.err"; rc=$?
    r=ok
    [ $rc -ge 1 ] && [ $rc -lt 124 ] || r="exit status $rc (expected a plain failure within the timeout)"
    grep -q "ETIMEDOUT" "$OUT/gatt-absent.err" || [ "$r" != ok ] ||
        r="the error does not say ETIMEDOUT: $(head -n 1 "$OUT/gatt-absent.err")"
    grep -q "$L2CAP_ABSENT" "$OUT/gatt-absent.err" || [ "$r" != ok ] || r="the error does not name the peer"
    check l2cap-absent-peer-times-out-clearly "$r"

    kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null
}
