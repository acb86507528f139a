#!/usr/bin/env python3
"""Replays btsnoop captures through `blegateway scan --device file:X --json` and compares every report with
tshark's independent dissection of the same file (`tshark -T json --no-duplicate-keys`).

Usage: compare_tshark.py BLEGATEWAY CAPTURE...

Each capture's advertising reports (LE Advertising Report 0x02 and LE Extended Advertising Report 0x0D) must come
out of the gateway one line per report, in file order, with equal fields: address and its type, RSSI, TX power,
connectable, scan response, flags, appearance, name (up to the first NUL, as tshark and BlueZ read it), service
UUIDs, the first manufacturer data, every service data, and the iBeacon and Eddystone fields, which tshark leaves as
raw bytes and this script decodes from them by the formats' definitions. Prints one line per capture and a closing
`N passed, N failed`; exits non-zero on any difference.
"""
import json
import subprocess
import sys

ADDRESS_TYPES = {0: "public", 1: "random", 2: "public-identity", 3: "random-identity", 0xFF: "anonymous"}


def entries(evt):
    ad = evt.get("btcommon.eir_ad.advertising_data")
    if not ad:
        return []
    e = ad.get("btcommon.eir_ad.entry", [])
    return e if isinstance(e, list) else [e]


def as_list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def hexbytes(s):
    return s.replace(":", "").lower() if s else ""


def uuid_text(entry):
    """A UUID as the gateway prints it: 4 or 8 upper-case hex digits, or the 36-character form."""
    out = []
    for v in as_list(entry.get("btcommon.eir_ad.entry.uuid_16")):
        out.append("%04X" % int(v, 16))
    for key in ("btcommon.eir_ad.entry.uuid_32", "btcommon.eir_ad.entry.custom_uuid_32"):
        for v in as_list(entry.get(key)):
            out.append(("%08X" % int(v, 16)) if v.startswith("0x") else hexbytes(v).upper())
    for key in ("btcommon.eir_ad.entry.uuid_128", "btcommon.eir_ad.entry.custom_uuid_128"):
        for v in as_list(entry.get(key)):
            h = hexbytes(v).upper()
            out.append("%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]))
    return out


def expected(evt):
    """The fields the gateway must print for one tshark report."""
    ext = evt.get("bthci_evt.le_meta_subevent") == "0x0d"
    exp = {
        "address": evt["bthci_evt.bd_addr"].upper(),
        "address_type": ADDRESS_TYPES.get(int(evt["bthci_evt.le_peer_address_type"], 16),
                                          "address-type(0x%02X)" % int(evt["bthci_evt.le_peer_address_type"], 16)),
    }
    rssi = int(evt["bthci_evt.rssi"])
    exp["rssi"] = None if rssi == 127 else rssi
    if ext:
        tree = evt["bthci_evt.le_ext_advts_event_type_tree"]
        exp["connectable"] = tree["bthci_evt.le_ext_advts_event_type.connectable"] == "1"
        exp["scan_response"] = tree["bthci_evt.le_ext_advts_event_type.scan_response"] == "1"
        tx = int(evt["bthci_evt.tx_power"])
        report_tx = None if tx == 127 else tx
    else:
        kind = int(evt["bthci_evt.le_advts_event_type"], 16)
        exp["connectable"] = kind in (0x00, 0x01)
        exp["scan_response"] = kind == 0x04
        report_tx = None
    flags = appearance = ad_tx = None
    complete = short = None
    services, service_data, manufacturer = [], [], None
    for e in entries(evt):
        t = int(e["btcommon.eir_ad.entry.type"], 16)
        if t == 0x01 and "btcommon.eir_ad.entry.flags.reserved" in e and flags is None:
            bits = [("reserved", 0), ("le_bredr_support_host", 4), ("le_bredr_support_controller", 3),
                    ("bredr_not_supported", 2), ("le_general_discoverable_mode", 1),
                    ("le_limited_discoverable_mode", 0)]
            flags = 0
            for name, shift in bits:
                v = int(e["btcommon.eir_ad.entry.flags." + name], 16)
                flags |= (v << 5) if name == "reserved" else (v << shift)
        elif t in (0x02, 0x03, 0x04, 0x05, 0x06, 0x07):
            services += uuid_text(e)
        elif t in (0x08, 0x09) and "btcommon.eir_ad.entry.device_name" in e:
            # tshark prints the name as a C string: it ends at the first NUL.
            name = e["btcommon.eir_ad.entry.device_name"]
            if t == 0x09 and complete is None:
                complete = name
            elif t == 0x08 and short is None:
                short = name
        elif t == 0x0A and ad_tx is None and "btcommon.eir_ad.entry.power_level" in e:
            ad_tx = int(e["btcommon.eir_ad.entry.power_level"])
        elif t == 0x19 and appearance is None and "btcommon.eir_ad.entry.appearance" in e:
            appearance = int(e["btcommon.eir_ad.entry.appearance"], 16)
        elif t in (0x16, 0x20, 0x21) and "btcommon.eir_ad.entry.service_data" in e:
            u = uuid_text(e)
            if u:
                service_data.append({"uuid": u[0], "data": hexbytes(e["btcommon.eir_ad.entry.service_data"])})
        elif t == 0x16 and "bluetooth.gaen" in e:
            # Exposure Notification service data (0xFD6F): tshark shows it dissected, as its two fields.
            g = e["bluetooth.gaen"]
            service_data.append({"uuid": uuid_text(e)[0],
                                 "data": hexbytes(g["bluetooth.gaen.rpi"]) + hexbytes(g["bluetooth.gaen.aemd"])})
        elif t == 0xFF and manufacturer is None and "btcommon.eir_ad.entry.company_id" in e:
            manufacturer = {"company_id": int(e["btcommon.eir_ad.entry.company_id"], 16),
                            "data": hexbytes(e.get("btcommon.eir_ad.entry.data", ""))}
    exp["tx_power"] = report_tx if report_tx is not None else ad_tx
    exp["name"] = complete if complete is not None else short
    exp["flags"] = flags
    exp["appearance"] = appearance
    exp["services"] = services
    exp["manufacturer"] = manufacturer
    exp["service_data"] = service_data
    exp.update(beacon_fields(manufacturer, service_data))
    return exp


def beacon_fields(manufacturer, service_data):
    """iBeacon (Apple 0x004C, type 0x02, length 0x15) and Eddystone (service data 0xFEAA) decoded from the raw
    bytes tshark shows, by the formats' own definitions."""
    if manufacturer and manufacturer["company_id"] == 0x004C:
        d = bytes.fromhex(manufacturer["data"])
        if len(d) >= 23 and d[0] == 0x02 and d[1] == 0x15:
            u = d[2:18].hex().upper()
            return {"kind": "ibeacon", "ibeacon": {
                "uuid": "%s-%s-%s-%s-%s" % (u[0:8], u[8:12], u[12:16], u[16:20], u[20:32]),
                "major": int.from_bytes(d[18:20], "big"), "minor": int.from_bytes(d[20:22], "big"),
                "measured_power": int.from_bytes(d[22:23], "big", signed=True)}}
    for sd in service_data:
        if sd["uuid"] != "FEAA":
            continue
        d = bytes.fromhex(sd["data"])
        if len(d) >= 18 and d[0] == 0x00:
            return {"kind": "eddystone-uid", "eddystone": {
                "namespace": d[2:12].hex(), "instance": d[12:18].hex(),
                "tx_power_0m": int.from_bytes(d[1:2], "big", signed=True)}}
        if len(d) == 14 and d[0] == 0x20 and d[1] == 0x00:
            return {"kind": "eddystone-tlm"}
    return {}


def compare(ours, exp):
    diffs = []
    for k, v in exp.items():
        if k == "kind":
            if ours.get("kind") != v:
                diffs.append("kind: ours %r, expected %r" % (ours.get("kind"), v))
            continue
        got = ours.get(k)
        if k == "address":
            got = (got or "").upper()
        if k in ("ibeacon", "eddystone"):
            got = {kk: got.get(kk) for kk in v} if isinstance(got, dict) else got
        if got != v:
            diffs.append("%s: ours %r, tshark %r" % (k, got, v))
    return diffs


def main():
    binary, captures = sys.argv[1], sys.argv[2:]
    passed = failed = 0
    for capture in captures:
        ts = subprocess.run(
            ["tshark", "-r", capture, "-Y", "bthci_evt.le_meta_subevent==0x02 || bthci_evt.le_meta_subevent==0x0d",
             "-T", "json", "--no-duplicate-keys"], capture_output=True, check=True)
        reports = [p["_source"]["layers"]["bthci_evt"] for p in json.loads(ts.stdout)]
        # tshark shows one report per event here; an event of several would need splitting.
        multi = sum(1 for r in reports if r.get("bthci_evt.le_num_reports") != "1")
        run = subprocess.run([binary, "scan", "--device", "file:" + capture, "--json"], capture_output=True,
                             check=True)
        lines = [json.loads(l) for l in run.stdout.decode().splitlines()]
        problems = []
        if multi:
            problems.append("%d events carry several reports" % multi)
        if len(lines) != len(reports):
            problems.append("%d reports from the gateway, %d from tshark" % (len(lines), len(reports)))
        for i, (ours, theirs) in enumerate(zip(lines, reports)):
            d = compare(ours, expected(theirs))
            if d:
                problems.append("report %d (%s): %s" % (i + 1, theirs["bthci_evt.bd_addr"], "; ".join(d)))
        name = capture.rsplit("/", 1)[-1]
        if problems:
            failed += 1
            print("FAIL %s: %d reports, %d differences" % (name, len(reports), len(problems)))
            for p in problems[:10]:
                print("  " + p)
        else:
            passed += 1
            print("ok   %s: %d reports, every field equal" % (name, len(reports)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
