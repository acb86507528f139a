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
    # -c 0x03 NoInputNoOutput: Just Works; -t 0x01 LE public. The kernel still asks user space to confirm a Just
    # Works pairing (mgmt User Confirmation Request), which btmgmt puts to its terminal: the answer is piped in.
    # btmgmt takes the answer only in its interactive shell, so the commands go in on stdin.
    (echo "pair -c 0x03 -t 0x01 $gw"; sleep 4; echo yes; sleep 20; echo quit) |
        timeout 40 btmgmt -i hci1 > "$OUT/enrol-pair.txt" 2>&1
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
