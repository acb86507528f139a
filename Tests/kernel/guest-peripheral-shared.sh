# Sourced by guest-checks.sh (and guest-peripheral-shared-only.sh) inside the kernel VM, after the L2CAP checks:
# the gateway itself, `blegateway run` in shared mode on hci0, keeps hci1's `gatt-serve` peripheral connected
# through kernel L2CAP sockets (PeripheralService's kernel link maker), subscribed to Temperature (0x2A6E), and
# publishes to a mosquitto on the VM's loopback. Expects btvirt's hci0/hci1 and no bluetoothd.
# Uses BIN, OUT and the pass/fail/skip/check/log helpers of the caller.

shared_peripheral_checks() {
    if ! timeout 10 "$BIN" run --help 2>&1 | grep -qi "usage: blegateway run"; then
        skip shared-peripheral "blegateway has no run subcommand"
        return
    fi
    if ! timeout 10 "$BIN" gatt-serve --help 2>&1 | grep -qi "usage: blegateway gatt-serve"; then
        skip shared-peripheral "blegateway has no gatt-serve subcommand (not wired into the command list)"
        return
    fi
    if [ ! -x /usr/sbin/mosquitto ] || [ ! -x /usr/bin/mosquitto_sub ]; then
        skip shared-peripheral "no /usr/sbin/mosquitto or /usr/bin/mosquitto_sub"
        return
    fi
    W=/tmp/shared-peripheral
    mkdir -p $W
    log "shared peripheral: loopback, mosquitto"
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
    cat > $W/mosquitto.conf <<CONF
listener 1883 127.0.0.1
allow_anonymous true
persistence false
log_dest stderr
CONF
    /usr/sbin/mosquitto -c $W/mosquitto.conf > "$OUT/shared-peripheral-mosquitto.log" 2>&1 &
    BROKER=$!
    for i in $(seq 1 20); do grep -q "running" "$OUT/shared-peripheral-mosquitto.log" && break; sleep 0.5; done

    # hci1 advertises connectably through the kernel; hci0 with LE on (see guest-l2cap.sh).
    for a in hci0 hci1; do
        timeout 5 btmgmt -i $a power off > /dev/null 2>&1
        timeout 5 btmgmt -i $a le on >> "$OUT/shared-peripheral-btmgmt.log" 2>&1
    done
    timeout 5 btmgmt -i hci1 connectable on >> "$OUT/shared-peripheral-btmgmt.log" 2>&1
    for a in hci0 hci1; do timeout 5 btmgmt -i $a power on >> "$OUT/shared-peripheral-btmgmt.log" 2>&1; done
    timeout 5 btmgmt -i hci1 advertising on >> "$OUT/shared-peripheral-btmgmt.log" 2>&1
    timeout 5 btmgmt -i hci1 info > "$OUT/shared-peripheral-hci1.txt" 2>&1
    addr=$(sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' "$OUT/shared-peripheral-hci1.txt" | head -n 1)
    if [ -z "$addr" ]; then
        fail shared-peripheral-setup "no address for hci1"
        kill $BROKER 2>/dev/null; wait $BROKER 2>/dev/null
        return
    fi
    hex=$(echo "$addr" | tr -d ':' | tr 'A-F' 'a-f')

    timeout 120 "$BIN" gatt-serve --adapter hci1 --duration 110 --notify-interval 1 \
        > "$OUT/shared-peripheral-serve.txt" 2> "$OUT/shared-peripheral-serve.err" &
    SERVER=$!
    for i in $(seq 1 30); do grep -q "^listening on hci1" "$OUT/shared-peripheral-serve.txt" && break; sleep 0.5; done

    timeout 110 mosquitto_sub -h 127.0.0.1 -p 1883 -v -t 'vmgw/#' > "$OUT/shared-peripheral-mqtt.txt" 2>&1 &
    SUB=$!
    cat > $W/gateway.yaml <<CONF
gateway:
  id: vm
adapter:
  device: hci0
  mode: shared
mqtt:
  broker: mqtt://127.0.0.1:1883
  prefix: vmgw
spool:
  path: $W/spool.sqlite
remote_config:
  enabled: false
connections:
  connect_timeout_s: 5
  rssi_interval_s: 5
peripherals:
  - address: "$addr"
    name: vm-sensor
    address_type: public
    subscribe:
      - {service: "181A", characteristic: "2A6E"}
CONF
    log "shared peripheral: blegateway run --mode shared --device hci0, peripheral $addr"
    timeout 100 "$BIN" run --config $W/gateway.yaml --mode shared --device hci0 --log-level debug \
        > "$OUT/shared-peripheral-run.txt" 2> "$OUT/shared-peripheral-run.err" &
    GW=$!
    # Connected and three Temperature notifications, within 60 s (TCG is slow to start the binary).
    for i in $(seq 1 120); do
        [ "$(grep -c "^vmgw/vm/peripherals/$hex/char/2a6e " "$OUT/shared-peripheral-mqtt.txt")" -ge 3 ] && break
        kill -0 $GW 2>/dev/null || break
        sleep 0.5
    done
    kill -TERM $GW 2>/dev/null; wait $GW; rc=$?
    sleep 1
    kill $SUB 2>/dev/null; wait $SUB 2>/dev/null
    kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null
    kill $BROKER 2>/dev/null; wait $BROKER 2>/dev/null

    M="$OUT/shared-peripheral-mqtt.txt"
    r=ok
    grep "^vmgw/vm/peripherals/$hex/state " "$M" | grep -qE '"state": ?"connected"' ||
        r="no connected state on vmgw/vm/peripherals/$hex/state: $(grep "/state " "$M" | tail -n 1 | cut -c1-300)"
    check shared-peripheral-connected "$r"
    r=ok
    grep -q "^rx 02" "$OUT/shared-peripheral-serve.txt" || r="the peripheral saw no Exchange MTU Request"
    grep "^vmgw/vm/peripherals/$hex/gatt " "$M" | grep -qi '181a' || [ "$r" != ok ] ||
        r="no GATT database with Environmental Sensing on …/gatt"
    check shared-peripheral-discovered "$r"
    r=ok
    n=$(grep -c "^vmgw/vm/peripherals/$hex/char/2a6e " "$M")
    [ "$n" -ge 3 ] || r="$n Temperature value(s) on …/char/2a6e, expected 3: $(grep -i 'peripheral' "$OUT/shared-peripheral-run.err" | tail -n 2 | tr '\n' ' ' | cut -c1-300)"
    grep "^vmgw/vm/peripherals/$hex/char/2a6e " "$M" | head -n 1 | grep -qE '"via": ?"notification"' || [ "$r" != ok ] ||
        r="the values did not come as notifications"
    check shared-peripheral-notifications "$r"
    r=ok
    [ $rc -eq 0 ] || r="blegateway run exited $rc on SIGTERM: $(tail -n 1 "$OUT/shared-peripheral-run.err")"
    grep "^vmgw/vm/peripherals/$hex/state " "$M" | tail -n 1 | grep -q 'the gateway stopped' || [ "$r" != ok ] ||
        r="the last state is not \"the gateway stopped\": $(grep "/state " "$M" | tail -n 1 | cut -c1-300)"
    check shared-peripheral-stops-cleanly "$r"
}
