# Sourced by guest-checks.sh (and guest-enrol-only.sh) inside the kernel VM: enrolment between two btvirt
# controllers. `blegateway enrol` owns hci0 (exclusive, our own host and Security Manager) and advertises; BlueZ's
# kernel Security Manager on hci1, told by `btmgmt pair`, connects and pairs (LE Secure Connections, bonding, with
# privacy on and an IRK we chose), and distributes its IRK and identity address. The check: the identities file
# holds exactly that IRK and hci1's address, mode 0600. Expects btvirt's hci0/hci1 powered off and no bluetoothd.
# Uses BIN, OUT and the pass/fail/skip/check/log helpers of the caller.

# The IRK hci1 distributes. `btmgmt privacy` takes it in the kernel's order, least significant octet first (as on
# the air); the identities file holds it most significant octet first, as the specification writes keys.
ENROL_IRK=00112233445566778899aabbccddeeff
ENROL_IRK_MSB_FIRST=ffeeddccbbaa99887766554433221100

# btmgmt's interactive shell on controller $1, given the command $2 (or none), output in $3: it answers "yes" once
# the kernel's confirmation question (mgmt User Confirmation Request) is on its terminal, and quits when its output
# matches the extended regex $4 (none: when the caller kills it), or after $5 seconds. The answer waits for the
# question: typed before it, btmgmt reads "yes" as an unknown command and the pairing hangs unanswered, which is how
# a fixed 5 s wait failed when TCG was slow. btmgmt takes answers only in its shell, so stdin is a FIFO kept open.
btmgmt_confirming() {
    fifo=/tmp/btmgmt-$1.fifo
    rm -f $fifo && mkfifo $fifo
    timeout $5 btmgmt -i $1 < $fifo > "$3" 2>&1 &
    shell=$!
    exec 8> $fifo
    trap 'echo quit >&8; exec 8>&-; wait $shell; rm -f $fifo; exit 0' TERM
    [ -n "$2" ] && echo "$2" >&8
    answered=
    end=$(($(date +%s) + $5))
    while [ "$(date +%s)" -lt $end ] && kill -0 $shell 2> /dev/null; do
        if [ -z "$answered" ] && grep -q "(yes/no)" "$3"; then
            echo yes >&8
            answered=1
        fi
        [ -n "$answered" ] && [ -n "$4" ] && grep -qE "$4" "$3" && break
        sleep 0.2
    done
    trap - TERM
    echo quit >&8 2> /dev/null
    exec 8>&-
    wait $shell
    rm -f $fifo
}

# hci1 pairs with the address $1, its btmgmt shell's output in $2. -c 0x03 NoInputNoOutput: Just Works; -t 0x01 LE
# public. The kernel still asks user space to confirm a Just Works pairing, which btmgmt puts to its terminal. Done
# at btmgmt's "Paired with …" or "Pairing with … failed".
pair_from_hci1() {
    btmgmt_confirming hci1 "pair -c 0x03 -t 0x01 $1" "$2" "Paired with|Pairing with .* failed" 40
}

# What bluetoothd's agent does in shared mode, played by btmgmt's shell on hci0: it answers the kernel's User
# Confirmation Request for the pairing hci1 starts, until the caller kills it. Output in $1.
agent_on_hci0() {
    btmgmt_confirming hci0 "" "$1" "" 40
}

enrol_checks() {
    if ! timeout 10 "$BIN" enrol --help 2>&1 | grep -qi "usage: blegateway enrol"; then
        skip enrol "blegateway has no enrol subcommand"
        return
    fi
    W=/tmp/enrol
    mkdir -p $W
    rm -f $W/identities.yaml
    # hci1: LE only (Secure Connections on a BR/EDR controller would need SSP), bondable, Secure Connections,
    # privacy with our IRK (all while powered off), then on.
    {
        timeout 5 btmgmt -i hci1 power off
        timeout 5 btmgmt -i hci1 le on
        timeout 5 btmgmt -i hci1 bredr off
        timeout 5 btmgmt -i hci1 bondable on
        timeout 5 btmgmt -i hci1 sc on
        timeout 5 btmgmt -i hci1 privacy on $ENROL_IRK
        timeout 5 btmgmt -i hci1 power on
        timeout 5 btmgmt -i hci1 info
    } > "$OUT/enrol-btmgmt.log" 2>&1
    addr=$(sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' "$OUT/enrol-btmgmt.log" | head -n 1)
    if [ -z "$addr" ]; then
        fail enrol-setup "no address for hci1: $(tail -n 2 "$OUT/enrol-btmgmt.log" | tr '\n' ' ')"
        return
    fi
    timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
    # Both sides' HCI traffic, for reading a failure afterwards (btmon -r).
    btmon -w "$OUT/enrol.btsnoop" > /dev/null 2>&1 &
    MON=$!

    timeout 90 "$BIN" enrol --device hci0 --name vm-peer --identities $W/identities.yaml --yes --timeout 80 \
        > "$OUT/enrol.txt" 2> "$OUT/enrol.err" &
    ENROL=$!
    gw=
    for i in $(seq 1 60); do
        gw=$(sed -n 's/^advertising as .* from \([0-9A-F:]\{17\}\);.*/\1/p' "$OUT/enrol.txt" | head -n 1)
        [ -n "$gw" ] && break
        sleep 0.5
    done
    if [ -z "$gw" ]; then
        kill $ENROL $MON 2>/dev/null
        wait $ENROL 2>/dev/null
        fail enrol-advertises "enrol did not advertise: $(tail -n 2 "$OUT/enrol.err" | tr '\n' ' ')"
        return
    fi
    pass enrol-advertises
    log "enrol: hci1 ($addr) pairs with hci0 ($gw)"
    pair_from_hci1 "$gw" "$OUT/enrol-pair.txt"
    wait $ENROL
    rc=$?
    kill $MON 2>/dev/null
    dmesg | grep -iE "bluetooth|smp|hci" > "$OUT/enrol-dmesg.txt" 2>&1
    r=ok
    [ $rc -eq 0 ] || r="enrol exited $rc: $(tail -n 1 "$OUT/enrol.err"); btmgmt: $(tail -n 1 "$OUT/enrol-pair.txt")"
    check enrol-pairs-with-bluez "$r"
    r=ok
    if [ ! -f $W/identities.yaml ]; then
        r="no identities file"
    elif ! grep -q "irk: \"$ENROL_IRK_MSB_FIRST\"" $W/identities.yaml; then
        r="the IRK read back differs: $(grep -o 'irk: "[0-9a-f]*"' $W/identities.yaml)"
    elif ! grep -qi "address: \"$addr\"" $W/identities.yaml; then
        r="the identity address differs from hci1's $addr: $(grep -o 'address: "[^"]*"' $W/identities.yaml)"
    elif [ "$(stat -c %a $W/identities.yaml)" != 600 ]; then
        r="mode $(stat -c %a $W/identities.yaml), not 600"
    fi
    check enrol-irk-matches-bluez "$r"
    # And the key does what it is for: the resolvable private address hci1 connected from resolves under the IRK
    # read back (hash = ah(IRK, prand) = the last 24 bits of AES-128(IRK, 0^104 || prand), Vol 3, Part H, §2.2.2),
    # with openssl as the AES.
    r=ok
    rpa=$(sed -n 's/^connected: \([0-9A-F:]\{17\}\)$/\1/p' "$OUT/enrol.txt" | tr -d ':' | tr 'A-F' 'a-f')
    irk=$(sed -n 's/.*irk: "\([0-9a-f]\{32\}\)".*/\1/p' $W/identities.yaml 2>/dev/null | head -n 1)
    if [ -z "$rpa" ] || [ -z "$irk" ]; then
        r="no connected address or no key to check"
    else
        prand=$(echo "$rpa" | cut -c1-6)
        hash=$(echo "$rpa" | cut -c7-12)
        got=$(printf "00000000000000000000000000$prand" | xxd -r -p | openssl enc -aes-128-ecb -K "$irk" -nopad |
            xxd -p | tr -d '\n' | tail -c 6)
        [ "$got" = "$hash" ] || r="ah(IRK, $prand) = $got, but hci1 connected from $rpa"
    fi
    check enrol-irk-resolves-bluez-rpa "$r"
}

# An iPhone's way, played by BlueZ: hci1 connects without asking for security (gatttool's interactive connect, no
# pairing of its own), and pairs only because the enrolling gateway asks, with an SMP Security Request as the link
# opens (the kernel's smp.c answers one with its Pairing Request). A btmgmt shell on hci1 stands for its agent and
# confirms. Runs after enrol_checks (hci1 set up with privacy and ENROL_IRK); hci1 forgets that bond first.
enrol_asked_checks() {
    if ! command -v gatttool > /dev/null 2>&1; then
        skip enrol-asked "no gatttool (bluez)"
        return
    fi
    W=/tmp/enrol
    mkdir -p $W
    rm -f $W/asked.yaml
    addr=$(timeout 5 btmgmt -i hci1 info 2>/dev/null | sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' | head -n 1)
    timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
    btmon -w "$OUT/enrol-asked.btsnoop" > /dev/null 2>&1 &
    MON=$!
    timeout 90 "$BIN" enrol --device hci0 --name vm-peer-asked --identities $W/asked.yaml --yes --timeout 80 \
        > "$OUT/enrol-asked.txt" 2> "$OUT/enrol-asked.err" &
    ENROL=$!
    gw=
    for i in $(seq 1 60); do
        gw=$(sed -n 's/^advertising as .* from \([0-9A-F:]\{17\}\);.*/\1/p' "$OUT/enrol-asked.txt" | head -n 1)
        [ -n "$gw" ] && break
        sleep 0.5
    done
    if [ -z "$gw" ] || [ -z "$addr" ]; then
        kill $ENROL $MON 2>/dev/null
        wait $ENROL 2>/dev/null
        fail enrol-asked-advertises "no address for hci1 ($addr), or enrol did not advertise: $(tail -n 2 "$OUT/enrol-asked.err" | tr '\n' ' ')"
        return
    fi
    timeout 5 btmgmt -i hci1 unpair -t 0x01 "$gw" > /dev/null 2>&1
    log "enrol (asked): hci1 ($addr) connects to hci0 ($gw) without pairing"
    btmgmt_confirming hci1 "" "$OUT/enrol-asked-agent.txt" "" 40 &
    AGENT=$!
    sleep 1
    (echo connect; sleep 30; echo exit) | timeout 40 gatttool -i hci1 -b "$gw" -t public -I \
        > "$OUT/enrol-asked-gatt.txt" 2>&1 &
    GATT=$!
    wait $ENROL
    rc=$?
    kill $MON $AGENT $GATT 2>/dev/null
    r=ok
    if [ $rc -ne 0 ]; then
        r="enrol exited $rc: $(tail -n 1 "$OUT/enrol-asked.err"); gatttool: $(tail -n 1 "$OUT/enrol-asked-gatt.txt" | tr -d '\r')"
    elif ! grep -q "irk: \"$ENROL_IRK_MSB_FIRST\"" $W/asked.yaml 2>/dev/null; then
        r="no identity with hci1's IRK in $W/asked.yaml"
    fi
    check enrol-bluez-pairs-when-asked "$r"
    timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
}

# Shared mode: the kernel owns hci0 and its Security Manager answers; `blegateway enrol --mode shared` only asks the
# kernel to advertise (management Add Advertising) and reads the key from the kernel's New Identity Resolving Key
# event on the monitor channel. Without bluetoothd, a btmgmt shell on hci0 stands for its agent and confirms. Runs
# after enrol_checks: hci1 is set up (privacy with ENROL_IRK) and forgets its earlier bond with hci0 first.
enrol_shared_checks() {
    if ! timeout 10 "$BIN" enrol --help 2>&1 | grep -q -- "--mode"; then
        skip enrol-shared "blegateway enrol has no --mode"
        return
    fi
    W=/tmp/enrol
    mkdir -p $W
    rm -f $W/shared.yaml
    addr=$(timeout 5 btmgmt -i hci1 info 2>/dev/null | sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' | head -n 1)
    {
        timeout 5 btmgmt -i hci0 power off
        timeout 5 btmgmt -i hci0 le on
        timeout 5 btmgmt -i hci0 bredr off
        timeout 5 btmgmt -i hci0 bondable on
        timeout 5 btmgmt -i hci0 sc on
        # What bluetoothd does at start: load the stored identity keys (none here). Only then does the kernel ask a
        # peer to distribute its identity (smp.c: SMP_DIST_ID_KEY once HCI_RPA_RESOLVING is set).
        timeout 5 btmgmt -i hci0 irks
        timeout 5 btmgmt -i hci0 power on
        timeout 5 btmgmt -i hci0 info
    } > "$OUT/enrol-shared-btmgmt.log" 2>&1
    gw=$(sed -n 's/.*addr \([0-9A-Fa-f:]\{17\}\).*/\1/p' "$OUT/enrol-shared-btmgmt.log" | head -n 1)
    if [ -z "$addr" ] || [ -z "$gw" ]; then
        fail enrol-shared-setup "no address for hci0 ($gw) or hci1 ($addr)"
        return
    fi
    timeout 5 btmgmt -i hci1 unpair -t 0x01 "$gw" > /dev/null 2>&1
    btmon -w "$OUT/enrol-shared.btsnoop" > /dev/null 2>&1 &
    MON=$!
    timeout 90 "$BIN" enrol --mode shared --device hci0 --name vm-peer-shared --identities $W/shared.yaml \
        --timeout 80 > "$OUT/enrol-shared.txt" 2> "$OUT/enrol-shared.err" &
    ENROL=$!
    advertised=
    for i in $(seq 1 60); do
        grep -q "^advertising as " "$OUT/enrol-shared.txt" && { advertised=1; break; }
        sleep 0.5
    done
    if [ -z "$advertised" ]; then
        kill $ENROL $MON 2>/dev/null
        wait $ENROL 2>/dev/null
        fail enrol-shared-advertises "enrol --mode shared did not advertise: $(tail -n 2 "$OUT/enrol-shared.err" | tr '\n' ' ')"
        return
    fi
    pass enrol-shared-advertises
    log "enrol (shared): hci1 ($addr) pairs with the kernel's hci0 ($gw)"
    agent_on_hci0 "$OUT/enrol-shared-agent.txt" &
    AGENT=$!
    pair_from_hci1 "$gw" "$OUT/enrol-shared-pair.txt"
    wait $ENROL
    rc=$?
    kill $MON $AGENT 2>/dev/null
    r=ok
    [ $rc -eq 0 ] || r="enrol exited $rc: $(tail -n 1 "$OUT/enrol-shared.err"); btmgmt: $(tail -n 1 "$OUT/enrol-shared-pair.txt")"
    check enrol-shared-pairs-through-the-kernel "$r"
    r=ok
    if [ ! -f $W/shared.yaml ]; then
        r="no identities file"
    elif ! grep -q "irk: \"$ENROL_IRK_MSB_FIRST\"" $W/shared.yaml; then
        r="the IRK read from the kernel differs: $(grep -o 'irk: "[0-9a-f]*"' $W/shared.yaml)"
    elif ! grep -qi "address: \"$addr\"" $W/shared.yaml; then
        r="the identity address differs from hci1's $addr: $(grep -o 'address: "[^"]*"' $W/shared.yaml)"
    fi
    check enrol-shared-irk-matches-bluez "$r"
    # Our advertising instance is gone again: the kernel lists no instance on hci0.
    r=ok
    timeout 5 btmgmt -i hci0 advinfo > "$OUT/enrol-shared-advinfo.txt" 2>&1
    grep -qE "Instances list with [1-9]" "$OUT/enrol-shared-advinfo.txt" && r="an advertising instance is left: $(tr '\n' ' ' < "$OUT/enrol-shared-advinfo.txt")"
    check enrol-shared-stops-advertising "$r"
    enrol_command_checks "$gw" "$addr"
    timeout 5 btmgmt -i hci0 power off > /dev/null 2>&1
}

# The same through a running gateway in shared mode: a command on …/enrol, each step on …/enrol/state. Both sides
# forget the bond of the check before. Arguments: hci0's and hci1's addresses.
enrol_command_checks() {
    gw=$1
    addr=$2
    if [ ! -x /usr/sbin/mosquitto ] || [ ! -x /usr/bin/mosquitto_sub ]; then
        skip enrol-command "no /usr/sbin/mosquitto or /usr/bin/mosquitto_sub"
        return
    fi
    W=/tmp/enrol-command
    mkdir -p $W
    rm -f $W/identities.yaml
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
    printf 'listener 1885 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest stderr\n' > $W/mosquitto.conf
    /usr/sbin/mosquitto -c $W/mosquitto.conf > "$OUT/enrol-command-mosquitto.log" 2>&1 &
    BROKER=$!
    for i in $(seq 1 20); do grep -q "running" "$OUT/enrol-command-mosquitto.log" && break; sleep 0.5; done
    timeout 5 btmgmt -i hci1 unpair -t 0x01 "$gw" > /dev/null 2>&1
    timeout 5 btmgmt -i hci0 unpair -t 0x01 "$addr" > /dev/null 2>&1
    timeout 100 mosquitto_sub -h 127.0.0.1 -p 1885 -v -t 'vmen/vm/#' > "$OUT/enrol-command-mqtt.txt" 2>&1 &
    SUB=$!
    cat > $W/gateway.yaml <<CONF
gateway:
  id: vm
adapter:
  device: hci0
  mode: shared
mqtt:
  broker: mqtt://127.0.0.1:1885
  prefix: vmen
spool:
  path: $W/spool.sqlite
remote_config:
  enabled: false
identity_keys_file: $W/identities.yaml
CONF
    timeout 90 "$BIN" run --config $W/gateway.yaml > "$OUT/enrol-command-gw.txt" 2>&1 &
    GW=$!
    for i in $(seq 1 40); do grep -q '^vmen/vm/adapter .*"poweredOn"' "$OUT/enrol-command-mqtt.txt" && break; sleep 0.5; done
    timeout 5 mosquitto_pub -h 127.0.0.1 -p 1885 -q 1 -t vmen/vm/enrol \
        -m '{"id": "vm1", "name": "vm-peer-command", "timeout_s": 60}'
    advertised=
    for i in $(seq 1 40); do
        grep -q '^vmen/vm/enrol/state .*"state":"advertising"' "$OUT/enrol-command-mqtt.txt" && { advertised=1; break; }
        sleep 0.5
    done
    r=ok
    if [ -z "$advertised" ]; then
        r="no advertising step: $(grep 'enrol/state' "$OUT/enrol-command-mqtt.txt" | tail -n 1)"
    else
        agent_on_hci0 "$OUT/enrol-command-agent.txt" &
        AGENT=$!
        pair_from_hci1 "$gw" "$OUT/enrol-command-pair.txt"
        kill $AGENT 2>/dev/null
        for i in $(seq 1 20); do
            grep -q '^vmen/vm/enrol/state .*"state":"\(enrolled\|failed\)"' "$OUT/enrol-command-mqtt.txt" && break
            sleep 0.5
        done
        last=$(grep '^vmen/vm/enrol/state' "$OUT/enrol-command-mqtt.txt" | tail -n 1)
        echo "$last" | grep -q '"state":"enrolled"' || r="the last step: $last"
        [ "$r" = ok ] && ! grep -qi "address: \"$addr\"" $W/identities.yaml 2>/dev/null && r="$addr not kept"
        [ "$r" = ok ] && ! grep -q "irk: \"$ENROL_IRK_MSB_FIRST\"" $W/identities.yaml && r="the IRK kept differs"
    fi
    check enrol-command-through-a-running-shared-gateway "$r"
    kill $GW 2>/dev/null
    wait $GW 2>/dev/null
    kill $SUB $BROKER 2>/dev/null
    wait $SUB $BROKER 2>/dev/null
}
