#!/usr/bin/env bash
# `make test-fleet`: the fleet service in a real browser. A local mosquitto, the simulated office with its three
# gateways (each a real `blegateway run` over H4), one `blegateway fleet`, and headless Chromium driven by Selenium
# (browser_test.py). Screenshots land in .build/fleet-screenshots/. Ends with "N passed, N failed".
set -euo pipefail

BIN=${1:?usage: run.sh PATH/TO/blegateway PATH/TO/python}
PY=${2:?usage: run.sh PATH/TO/blegateway PATH/TO/python}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blegateway-fleet-test.XXXXXX")
SHOTS="$ROOT/.build/fleet-screenshots"
PREFIX=fleettest
pids=()

cleanup() {
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM

free_port() {
    local p
    for _ in $(seq 1 100); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    return 1
}
wait_for() {  # wait_for DESCRIPTION COMMAND…: up to 15 s
    local what=$1; shift
    for _ in $(seq 1 150); do "$@" 2>/dev/null && return 0; sleep 0.1; done
    echo "test-fleet: $what did not come up; logs in $WORK" >&2; KEEP_WORK=1; return 1
}

MQTT_PORT=$(free_port)
cat >"$WORK/mosquitto.conf" <<CONF
listener $MQTT_PORT 127.0.0.1
allow_anonymous true
persistence false
CONF
/usr/sbin/mosquitto -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
pids+=($!)
wait_for "mosquitto" bash -c "exec 3<>/dev/tcp/127.0.0.1/$MQTT_PORT"

mkdir -p "$WORK/sim"
"$BIN" sim --scenario "$ROOT/config/scenarios/office.yaml" --socket-dir "$WORK/sim" --speed 1 >"$WORK/sim.log" 2>&1 &
pids+=($!)
wait_for "the simulator" bash -c "ls '$WORK'/sim/*.sock >/dev/null 2>&1"
sleep 0.3
CONFIG="$WORK/sim/gateway-config.yaml"
[ -s "$CONFIG" ] || CONFIG="$ROOT/config/gateway.yaml"

: >"$WORK/gateways.txt"
for sock in "$WORK"/sim/*.sock; do
    gw=$(basename "$sock" .sock)
    # In a subshell that waits for it: the test SIGKILLs one gateway on purpose, and a job of this shell killed
    # by a signal would be reported as "Killed" as if something had gone wrong.
    (
        "$BIN" run --config "$CONFIG" --gateway-id "$gw" --device "unix:$sock" \
            --broker "mqtt://127.0.0.1:$MQTT_PORT" --prefix "$PREFIX" --spool "$WORK/spool-$gw.sqlite" \
            >"$WORK/$gw.log" 2>&1 &
        echo "$gw $!" >>"$WORK/gateways.txt"
        wait
    ) &
done
for _ in $(seq 1 50); do [ "$(wc -l <"$WORK/gateways.txt")" -ge "$(ls "$WORK"/sim/*.sock | wc -l)" ] && break; sleep 0.1; done
while read -r _ pid; do pids+=("$pid"); done <"$WORK/gateways.txt"

HTTP_PORT=$(free_port)
"$BIN" fleet --broker "mqtt://127.0.0.1:$MQTT_PORT" --prefix "$PREFIX" --listen "127.0.0.1:$HTTP_PORT" \
    --history "$WORK/history.sqlite" --site "$WORK/sim/site.yaml" >"$WORK/fleet.log" 2>&1 &
pids+=($!)
wait_for "the fleet service" bash -c "exec 3<>/dev/tcp/127.0.0.1/$HTTP_PORT"

mkdir -p "$SHOTS"
set +e
"$PY" "$ROOT/Tests/fleet/browser_test.py" --url "http://127.0.0.1:$HTTP_PORT" --mqtt-port "$MQTT_PORT" \
    --prefix "$PREFIX" --gateways "$WORK/gateways.txt" --keepalive 30 --screenshots "$SHOTS"
rc=$?
set -e
[ $rc = 0 ] || { KEEP_WORK=1; tail -n 20 "$WORK/fleet.log" >&2; }
exit $rc
