#!/usr/bin/env bash
# `make demo`: a local mosquitto on a free loopback port, the simulated office with its three
# gateways, each gateway a real `blegateway run` over H4 on a Unix socket, the fleet service's web dashboard
# (its URL printed first), and a live terminal view fed by a subscription to the broker.
# Ctrl-C stops everything this script started.
set -euo pipefail

BIN=${1:?usage: demo.sh PATH/TO/blegateway}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCENARIO=${SCENARIO:-$ROOT/config/scenarios/office.yaml}
PREFIX=${PREFIX:-demo}
SPEED=${SPEED:-1}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/blegateway-demo.XXXXXX")
pids=()

cleanup() {
    trap - EXIT INT TERM
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "demo stopped; logs were in $WORK (removed)"
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

free_port() {
    local p
    for _ in $(seq 1 100); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    echo "no free loopback port found" >&2; return 1
}

wait_for() {  # wait_for DESCRIPTION COMMAND…: up to 10 s
    local what=$1; shift
    for _ in $(seq 1 100); do "$@" 2>/dev/null && return 0; sleep 0.1; done
    echo "demo: $what did not come up; see $WORK" >&2; return 1
}

PORT=$(free_port)
cat >"$WORK/mosquitto.conf" <<CONF
listener $PORT 127.0.0.1
allow_anonymous true
persistence false
CONF
MOSQUITTO=$(command -v mosquitto || echo /usr/sbin/mosquitto)
"$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
pids+=($!)
wait_for "mosquitto on port $PORT" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT"

# The dashboard first: it fills from the retained topics as the gateways come up.
FLEET_PORT=${FLEET_PORT:-$(free_port)}
"$BIN" fleet --broker "mqtt://127.0.0.1:$PORT" --prefix "$PREFIX" --listen "127.0.0.1:$FLEET_PORT" \
    --history "$WORK/fleet-history.sqlite" >"$WORK/fleet.log" 2>&1 &
pids+=($!)
wait_for "the fleet dashboard on port $FLEET_PORT" bash -c "exec 3<>/dev/tcp/127.0.0.1/$FLEET_PORT"
echo "fleet dashboard: http://127.0.0.1:$FLEET_PORT/  (room presence: /presence, metrics: /metrics)"

mkdir -p "$WORK/sim"
"$BIN" sim --scenario "$SCENARIO" --socket-dir "$WORK/sim" --speed "$SPEED" --truth "$WORK/truth.jsonl" \
    >"$WORK/sim.log" 2>&1 &
pids+=($!)
wait_for "the simulator" bash -c "ls '$WORK'/sim/*.sock >/dev/null 2>&1"
sleep 0.3  # every gateway's socket is created in one pass; give the last one a moment

# …and its site description (rooms, where the gateways are): pushed retained, the fleet service's presence uses it.
if [ -s "$WORK/sim/site.yaml" ]; then
    "$BIN" site push --broker "mqtt://127.0.0.1:$PORT" --prefix "$PREFIX" "$WORK/sim/site.yaml" >>"$WORK/fleet.log" 2>&1
fi

# The scenario ships the configuration its gateways run with (regions, peripherals to keep connected).
CONFIG="$WORK/sim/gateway-config.yaml"
[ -s "$CONFIG" ] || CONFIG="$ROOT/config/gateway.yaml"
for sock in "$WORK"/sim/*.sock; do
    gw=$(basename "$sock" .sock)
    # …with what belongs to one gateway (its receiver's correction) merged in by the simulator.
    own="$WORK/sim/$gw.gateway-config.yaml"
    [ -s "$own" ] && CONFIG_GW="$own" || CONFIG_GW="$CONFIG"
    "$BIN" run --config "$CONFIG_GW" --gateway-id "$gw" --device "unix:$sock" \
        --broker "mqtt://127.0.0.1:$PORT" --prefix "$PREFIX" --spool "$WORK/spool-$gw.sqlite" \
        >"$WORK/$gw.log" 2>&1 &
    pids+=($!)
done

echo "broker mqtt://127.0.0.1:$PORT, prefix $PREFIX; logs in $WORK. Ctrl-C to stop."
"$BIN" watch --broker "mqtt://127.0.0.1:$PORT" --prefix "$PREFIX"
