#!/usr/bin/env python3
"""Sensor oracle: builds advertisement frames per format and decodes them with the parsers Home
Assistant uses (bthome-ble, xiaomi-ble, ruuvitag-ble, govee-ble, inkbird-ble, qingping-ble) and with
TheengsDecoder for the formats HA has no parser for (ATC1441, PVVX, SwitchBot Meter).

Writes one JSON object per line: the frame (where it goes in an advertisement, its hex, the bindkey if
encrypted) and what the reference parser made of it, with keys and units translated to the gateway's
quantity names (temperature_c, humidity_pct …). The Swift test SensorOracleTests decodes the same
frames and compares. Deterministic for a given --seed.
"""
import argparse
import ast
import json
import logging
import os
import random
import struct
import subprocess
import sys
import tarfile

from cryptography.hazmat.primitives.ciphers.aead import AESCCM
from habluetooth import BluetoothServiceInfoBleak

from bthome_ble import BTHomeBluetoothDeviceData
from bthome_ble.const import MEAS_TYPES
from govee_ble import GoveeBluetoothDeviceData
from inkbird_ble import INKBIRDBluetoothDeviceData
from qingping_ble import QingpingBluetoothDeviceData
from ruuvitag_ble import RuuvitagBluetoothDeviceData
from xiaomi_ble import XiaomiBluetoothDeviceData
from TheengsDecoder import decodeBLE
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from victron_ble.devices.battery_monitor import BatteryMonitor
from victron_ble.devices.solar_charger import SolarCharger

logging.disable(logging.CRITICAL)

ADDRESS = "A4:C1:38:0A:0B:0C"
MAC = bytes.fromhex(ADDRESS.replace(":", ""))
KEY = bytes.fromhex("231d39c1d7cc1ab1aee224cd096db932")


def uuid128(u16):
    return f"0000{u16:04x}-0000-1000-8000-00805f9b34fb"


def service_info(name, manufacturer, service):
    return BluetoothServiceInfoBleak(
        name, ADDRESS, -60, manufacturer, service, [], "local", None, None, True, 1000.0, None)


# Home Assistant key (and unit where it decides) → the gateway's quantity name and the factor to its unit.
def translate(key, unit):
    base = key
    for suffix in ("_1", "_2", "_3", "_4"):
        if key.endswith(suffix) and not key.startswith("acceleration_"):
            base = key[: -len(suffix)]
    simple = {
        "temperature": "temperature_c", "humidity": "humidity_pct", "battery": "battery_pct",
        "pressure": "pressure_hpa", "illuminance": "illuminance_lx", "dew_point": "dew_point_c",
        "count": "count", "energy": "energy_kwh", "power": "power_w", "pm25": "pm25_ugm3",
        "pm10": "pm10_ugm3", "carbon_dioxide": "co2_ppm", "volatile_organic_compounds": "tvoc_ugm3",
        "moisture": "moisture_pct", "packet_id": "packet_id", "rotation": "rotation_deg",
        "duration": "duration_s", "current": "current_a", "speed": "speed_ms", "uv_index": "uv_index",
        "volume_flow_rate": "volume_flow_rate_m3h", "gas": "gas_m3", "water": "water_l",
        "acceleration": "acceleration_ms2", "gyroscope": "gyroscope_dps", "volume_storage": "volume_storage_l",
        "conductivity": "conductivity_uscm", "direction": "direction_deg", "precipitation": "precipitation_mm",
        "channel": "channel", "rotational_speed": "rotational_speed_rpm", "light_level": "light_level",
        "settings_revision": "settings_revision", "movement_counter": "movement_counter",
        "acceleration_x": "acceleration_x_ms2", "acceleration_y": "acceleration_y_ms2",
        "acceleration_z": "acceleration_z_ms2", "formaldehyde": "formaldehyde_mgm3", "pm1": "pm1_ugm3",
        "pm4": "pm4_ugm3", "voc_index": "voc_index", "nox_index": "nox_index",
    }
    if base == "voltage":
        return "voltage_v", 0.001 if unit == "mV" else 1
    if base == "distance":
        return "distance_m", 0.001 if unit == "mm" else 1
    if base == "volume":
        return "volume_l", 0.001 if unit == "mL" else 1
    if base == "mass":
        return ("weight_lb" if unit == "lb" else "weight_kg"), 1
    if base in simple:
        return simple[base], 1
    return None, None


BINARY = {
    "generic": "generic", "power": "power", "opening": "opening", "battery": "battery_low",
    "battery_charging": "battery_charging", "carbon_monoxide": "carbon_monoxide", "cold": "cold",
    "connectivity": "connectivity", "door": "door", "garage_door": "garage_door", "gas": "gas_detected",
    "heat": "heat", "light": "light", "lock": "lock", "moisture": "moisture_detected", "motion": "motion",
    "moving": "moving", "occupancy": "occupancy", "plug": "plug", "presence": "presence", "problem": "problem",
    "running": "running", "safety": "safety", "smoke": "smoke", "sound": "sound", "tamper": "tamper",
    "vibration": "vibration", "window": "window",
}


# Home Assistant's event types → the gateway's event codes (BTHome's own numbers; docs/SENSORS.md).
BUTTON_EVENTS = {"press": 1, "double_press": 2, "triple_press": 3, "long_press": 4, "long_double_press": 5,
                 "long_triple_press": 6, "hold_press": 0x80}
DIMMER_EVENTS = {"rotate_left": 1, "rotate_right": 2}
# Keys a reference parser published that the translation does not know, for the test to fail on.
UNTRANSLATED = set()


def ha_values(update):
    out = {}
    if update is None:
        return out
    for k, v in update.entity_values.items():
        # Computed by the parser, not carried by the frame: RSSI (published apart), Ruuvi's total acceleration and
        # indoor air quality score.
        if k.key in ("signal_strength", "acceleration_total", "iaqs") or not isinstance(v.native_value, (int, float)):
            continue
        desc = update.entity_descriptions.get(k)
        unit = getattr(desc, "native_unit_of_measurement", None)
        name, factor = translate(k.key, unit)
        if name is None:
            UNTRANSLATED.add(f"{k.key} ({unit})")
            continue
        out.setdefault(name, float(v.native_value) * factor)
    for k, v in update.binary_entity_values.items():
        name = BINARY.get(k.key.rstrip("_0123456789") if k.key[-1:].isdigit() else k.key)
        if name and v.native_value is not None:
            out.setdefault(name, 1.0 if v.native_value else 0.0)
    # Events, the first of each kind (as for the quantities): a button's code; a dimmer's direction and steps.
    for k, e in sorted(getattr(update, "events", {}).items(), key=lambda kv: kv[0].key):
        if e.event_type in (None, "no_press"):
            # xiaomi-ble's name for a press type it does not know (a corrupted frame's): no event, as the gateway
            # publishes none.
            continue
        if k.key.rstrip("_0123456789") == "button" and e.event_type in BUTTON_EVENTS:
            out.setdefault("button_event", float(BUTTON_EVENTS[e.event_type]))
        elif k.key.rstrip("_0123456789") == "dimmer" and e.event_type in DIMMER_EVENTS:
            if "dimmer_event" not in out:
                out["dimmer_event"] = float(DIMMER_EVENTS[e.event_type])
                out["dimmer_steps"] = float((e.event_properties or {}).get("steps", 0))
        else:
            UNTRANSLATED.add(f"event {k.key} {e.event_type}")
    return out


def theengs_values(uuid, data):
    got = decodeBLE(json.dumps({"servicedata": data.hex(), "servicedatauuid": f"0x{uuid:04x}", "id": ADDRESS}))
    out = {}
    if not got:
        return out
    d = json.loads(got)
    for theirs, ours in (("tempc", "temperature_c"), ("hum", "humidity_pct"), ("batt", "battery_pct"),
                         ("volt", "voltage_v")):
        if theirs in d:
            out[ours] = float(d[theirs])
    return out


def corrupt(rng, frame):
    b = bytearray(frame)
    choice = rng.randrange(3)
    if choice == 0 and len(b) > 1:
        return bytes(b[: rng.randrange(1, len(b))])
    if choice == 1:
        b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    return bytes(b) + bytes([rng.randrange(256)])


# BTHome object ids that decode to a number (events, text, raw, device info and timestamps are not).
# 0x58 (temperature, factor 0.35) is left out: bthome-ble rounds it to one decimal (docs/SENSORS.md).
BTHOME_NUMERIC = [i for i in MEAS_TYPES
                  if i not in (0x3A, 0x3B, 0x3C, 0x50, 0x53, 0x54, 0x58, 0xF0, 0xF1, 0xF2)]


def reference_key(object_id):
    """The key Home Assistant files an object under: one object per key per frame keeps keys unambiguous."""
    fmt = MEAS_TYPES[object_id].meas_format
    return str(getattr(fmt, "device_class", None) or getattr(fmt, "key", None) or fmt)


# BTHome events (0x3A button: its event codes, 0x00 none; 0x3C dimmer: event 0 none, 1 left, 2 right, then steps).
BUTTON_CODES = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x80]
EVENTS = random.Random(1)  # reseeded from --seed in main()


def bthome_objects(rng):
    ids, seen = [], set()
    for i in sorted(rng.sample(BTHOME_NUMERIC, rng.randrange(1, 5))):
        key = reference_key(i)
        if key in seen:
            continue
        seen.add(key)
        ids.append(i)
    objects = [(i, bytes(rng.randrange(256) for _ in range(MEAS_TYPES[i].data_length))) for i in ids]
    # Button and dimmer events too, in object id order: one press is one event, compared as a value. Drawn from a
    # stream of their own, so adding them left every other frame of every family as it was.
    if EVENTS.random() < 0.3:
        objects.append((0x3A, bytes([EVENTS.choice(BUTTON_CODES)])))
    if EVENTS.random() < 0.2:
        objects.append((0x3C, bytes([EVENTS.randrange(0, 3), EVENTS.randrange(256)])))
    return b"".join(bytes([i]) + v for i, v in sorted(objects, key=lambda o: o[0]))


def bthome_frame(rng, encrypted):
    objects = bthome_objects(rng)
    if not encrypted:
        return b"\x40" + objects
    info = 0x41
    counter = struct.pack("<I", rng.randrange(100, 2**32))
    nonce = MAC + b"\xd2\xfc" + bytes([info]) + counter
    sealed = AESCCM(KEY, tag_length=4).encrypt(nonce, objects, None)
    return bytes([info]) + sealed[:-4] + counter + sealed[-4:]


MIBEACON_PRODUCTS = [0x01AA, 0x0347, 0x045B, 0x055B, 0x066F, 0x0098]


def mibeacon_objects(rng):
    choices = [
        (0x1004, lambda: struct.pack("<h", rng.randrange(-400, 600))),
        (0x1006, lambda: struct.pack("<H", rng.randrange(0, 1000))),
        (0x100A, lambda: bytes([rng.randrange(0, 101)])),
        (0x100D, lambda: struct.pack("<hH", rng.randrange(-400, 600), rng.randrange(0, 1000))),
        (0x1008, lambda: bytes([rng.randrange(0, 101)])),
        (0x1009, lambda: struct.pack("<H", rng.randrange(0, 5000))),
    ]
    oid, make = rng.choice(choices)
    value = make()
    return struct.pack("<HB", oid, len(value)) + value


# Xiaomi buttons (object 0x1001: button, value, press type) on the two single-button products the gateway reads,
# the wireless switch YLAI003 and the K9B-1BTN wall switch, whose press types mean different things. Drawn from a
# stream of their own (reseeded from --seed), so every other frame is as it was; press types the reference calls
# a press, double or long press (the others are rotations, or no event it names).
MIBEACON_BUTTON_PRODUCTS = [0x07BF, 0x1568]
MIBEACON_EVENTS = random.Random(2)


def mibeacon_button(product):
    r = MIBEACON_EVENTS
    if product == 0x07BF:
        button, press = r.choice([(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (r.randrange(3), 5), (r.randrange(3), 6)])
    else:
        button, press = 0, r.randrange(3)
    return struct.pack("<HBBBB", 0x1001, 3, button, r.randrange(256), press)


def mibeacon_frame(rng, encrypted):
    product = rng.choice(MIBEACON_PRODUCTS)
    counter = rng.randrange(256)
    objects = mibeacon_objects(rng)
    if MIBEACON_EVENTS.random() < 0.3:
        product = MIBEACON_EVENTS.choice(MIBEACON_BUTTON_PRODUCTS)
        objects += mibeacon_button(product)
    if not encrypted:
        control = 0x3050  # v3, MAC and object included
        return struct.pack("<HHB", control, product, counter) + MAC[::-1] + objects
    control = 0x5858  # v5, encrypted, MAC and object included, registered
    head = struct.pack("<HHB", control, product, counter)
    ext = bytes(rng.randrange(256) for _ in range(3))
    nonce = MAC[::-1] + head[2:5] + ext
    sealed = AESCCM(KEY, tag_length=4).encrypt(nonce, objects, b"\x11")
    return head + MAC[::-1] + sealed[:-4] + ext + sealed[-4:]


def ruuvi_frame(rng):
    return (b"\x05" + struct.pack(">hHHhhhHBH", rng.randrange(-32767, 32768), rng.randrange(0, 65536),
                                   rng.randrange(0, 65536), rng.randrange(-32767, 32768),
                                   rng.randrange(-32767, 32768), rng.randrange(-32767, 32768),
                                   rng.randrange(0, 65536), rng.randrange(0, 256), rng.randrange(0, 65536))
            + MAC)


def ruuvi3_frame(rng):
    # Format 3 (RAWv1): every field is a measurement (no "not available"); random octets cover signs and extremes.
    return bytes([0x03]) + bytes(rng.getrandbits(8) for _ in range(13))


def ruuvi6_frame(rng):
    return b"\x06" + bytes(rng.randrange(256) for _ in range(16)) + MAC[3:]


def ruuvie1_frame(rng):
    return b"\xe1" + bytes(rng.randrange(256) for _ in range(33)) + MAC


class Bits:
    """Packs fields least significant bit first, as Victron's records are."""

    def __init__(self):
        self.value, self.n = 0, 0

    def put(self, v, bits):
        self.value |= (v & ((1 << bits) - 1)) << self.n
        self.n += bits

    def bytes(self):
        return self.value.to_bytes((self.n + 7) // 8, "little")


def victron_frame(rng):
    b = Bits()
    if rng.randrange(2):
        readout = 0x01
        b.put(rng.choice([0, 3, 4, 5]), 8)
        b.put(0, 8)
        for bits in (16, 16, 16, 16, 9):
            b.put(rng.randrange(1 << bits), bits)
    else:
        readout = 0x02
        b.put(rng.randrange(1 << 16), 16)
        b.put(rng.randrange(1 << 16), 16)
        b.put(0, 16)
        b.put(rng.randrange(1 << 16), 16)
        b.put(rng.randrange(4), 2)
        b.put(rng.randrange(1 << 22), 22)
        b.put(rng.randrange(1 << 20), 20)
        b.put(rng.randrange(1 << 10), 10)
    iv = rng.randrange(1 << 16)
    # Victron's CTR counter is little-endian (cryptography's CTR mode counts big-endian): one block at a time.
    plain = b.bytes()
    out = b""
    for k in range(0, len(plain), 16):
        block = ((iv + k // 16) % (1 << 128)).to_bytes(16, "little")
        stream = Cipher(algorithms.AES(KEY), modes.ECB()).encryptor().update(block)
        out += bytes(x ^ y for x, y in zip(plain[k:k + 16], stream))
    return struct.pack("<HHBH", 0x0010, 0xA053, readout, iv) + bytes([KEY[0]]) + out


def victron_values(data):
    out = {}
    if len(data) < 5:
        return out
    device = SolarCharger if data[4] == 0x01 else BatteryMonitor if data[4] == 0x02 else None
    if device is None:
        return out
    try:
        parsed = device(KEY.hex()).parse(data)._data
    except Exception:  # the reference rejected the frame
        return out
    table = {
        "battery_voltage": ("voltage_v", 1), "battery_charging_current": ("current_a", 1),
        "yield_today": ("energy_kwh", 0.001), "solar_power": ("power_w", 1),
        "external_device_load": ("load_current_a", 1), "remaining_mins": ("remaining_time_s", 60),
        "voltage": ("voltage_v", 1), "current": ("current_a", 1), "consumed_ah": ("consumed_ah", 1),
        "soc": ("battery_pct", 1), "starter_voltage": ("starter_voltage_v", 1),
        "midpoint_voltage": ("midpoint_voltage_v", 1),
    }
    for k, v in parsed.items():
        if v is None:
            continue
        if k in table:
            out[table[k][0]] = float(v) * table[k][1]
        elif k == "temperature_kelvin":
            out["temperature_c"] = float(v) - 273.15
        elif k in ("charge_state", "charger_error"):
            out[k] = float(v.value)
    return out


def govee_frame(rng):
    kind = rng.randrange(3)
    temp, hum, batt = rng.randrange(-399, 999), rng.randrange(0, 1000), rng.randrange(0, 101)
    packed = abs(temp) * 1000 + hum
    if temp < 0:
        packed |= 0x800000
    if kind == 0:
        return "GVH5075_0B0C", 0xEC88, b"\x00" + packed.to_bytes(3, "big") + bytes([batt, 0])
    if kind == 1:
        return "Govee_H5074_0B0C", 0xEC88, struct.pack("<xhHBB", temp * 10, hum * 10, batt, 2)
    return "GVH5101_0B0C", 0x0001, b"\x01\x01" + packed.to_bytes(3, "big") + bytes([batt])


def qingping_frame(rng):
    tlv = struct.pack("<BBhH", 0x01, 4, rng.randrange(-400, 600), rng.randrange(0, 1000))
    if rng.randrange(2):
        tlv += bytes([0x02, 1, rng.randrange(0, 101)])
    if rng.randrange(2):
        tlv += struct.pack("<BBH", 0x07, 2, rng.randrange(9000, 11000))
    return bytes([0x88, rng.choice([0x01, 0x07, 0x10, 0x0C])]) + MAC[::-1] + tlv


def inkbird_frame(rng):
    return struct.pack("<hHBHBB", rng.randrange(-4000, 6000), rng.randrange(0, 10000), 0,
                       rng.randrange(65536), rng.randrange(0, 101), 8)


def atc_frame(rng):
    return MAC + struct.pack(">hBBHB", rng.randrange(-400, 600), rng.randrange(0, 101), rng.randrange(0, 101),
                             rng.randrange(2000, 3300), rng.randrange(256))


def pvvx_frame(rng):
    return MAC[::-1] + struct.pack("<hHHBBB", rng.randrange(-4000, 6000), rng.randrange(0, 10000),
                                   rng.randrange(2000, 3300), rng.randrange(0, 101), rng.randrange(256), 4)


def switchbot_frame(rng):
    t = rng.randrange(-300, 600)
    return bytes([0x54, 0, rng.randrange(0, 101), abs(t) % 10, (abs(t) // 10) | (0x80 if t >= 0 else 0),
                  rng.randrange(0, 100)])


def emit(fmt, case, where, ident, data, expected, name="", key=None):
    print(json.dumps({"format": fmt, "case": case, "where": where, "id": ident, "data": data.hex(),
                      "name": name, "key": key.hex() if key else None, "expected": expected,
                      "untranslated": sorted(UNTRANSLATED)}))
    UNTRANSLATED.clear()


DOC_FRAMES = [
    # (format, where, id, hex, name): the documentation's own examples.
    ("bthome", "service", 0xFCD2, "40 00 09 01 61 02 CA09 03 BF13 04 138A01 0C 020C 45 1101 57 EA", ""),
    ("ruuvi", "manufacturer", 0x0499, "03291A1ECE1EFC18F94202CA0B53", ""),
    ("ruuvi", "manufacturer", 0x0499, "0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F", ""),
    ("ruuvi", "manufacturer", 0x0499, "058001000000008001800180010000000000CBB8334C884F", ""),
    ("ruuvi", "manufacturer", 0x0499, "058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF", ""),
]


def reference(fmt, where, ident, data, name, key):
    if fmt in ("atc1441", "pvvx", "switchbot"):
        return theengs_values(ident, data)
    if fmt == "victron":
        return victron_values(data)
    manufacturer = {ident: data} if where == "manufacturer" else {}
    service = {uuid128(ident): data} if where == "service" else {}
    info = service_info(name or "sensor", manufacturer, service)
    parser = {
        "bthome": lambda: BTHomeBluetoothDeviceData(bindkey=key),
        "mibeacon": lambda: XiaomiBluetoothDeviceData(bindkey=key),
        "ruuvi": RuuvitagBluetoothDeviceData, "govee": GoveeBluetoothDeviceData,
        "inkbird": INKBIRDBluetoothDeviceData, "qingping": QingpingBluetoothDeviceData,
    }[fmt]()
    try:
        return ha_values(parser.update(info))
    except Exception as error:  # a reference parser that raises has rejected the frame
        del error
        return {}


# Where each family's frames are in an advertisement, by 16-bit service UUID or company id.
CAPTURE_SERVICES = {0xFE95: "mibeacon", 0xFCD2: "bthome", 0xFDCD: "qingping", 0xFD3D: "switchbot"}
CAPTURE_MANUFACTURERS = {0x0499: "ruuvi"}


def ad_entries(report):
    """The AD structures tshark dissected in one advertising report: (type, uuid or company id, data)."""
    out = []

    def walk(o):
        if isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, dict):
            if "btcommon.eir_ad.entry.type" in o:
                kind = int(o["btcommon.eir_ad.entry.type"], 16)
                if kind == 0x16 and "btcommon.eir_ad.entry.service_data" in o:
                    out.append((kind, int(o.get("btcommon.eir_ad.entry.uuid_16", "0"), 16),
                                bytes.fromhex(o["btcommon.eir_ad.entry.service_data"].replace(":", ""))))
                elif kind == 0xFF and "btcommon.eir_ad.entry.company_id" in o:
                    data = o.get("btcommon.eir_ad.entry.data", "")
                    out.append((kind, int(o["btcommon.eir_ad.entry.company_id"], 16),
                                bytes.fromhex(data.replace(":", "")) if isinstance(data, str) else b""))
            for v in o.values():
                if isinstance(v, (dict, list)):
                    walk(v)

    walk(report)
    return out


def capture_frames(paths):
    """Every sensor family's frame in real captures, as tshark (Debian's, apart from our parsers) dissects them:
    each advertising report with one report in its event, its advertiser's address, and the reference's verdict
    decoded with that address."""
    global ADDRESS
    for path in paths:
        filt = "btcommon.eir_ad.entry.type == 0x16 || btcommon.eir_ad.entry.type == 0xff"
        # --no-duplicate-keys: several AD structures in a report become a list, not keys that overwrite each other.
        text = subprocess.run(["tshark", "-r", path, "-Y", filt, "-T", "json", "--no-duplicate-keys"], capture_output=True, text=True,
                              check=True).stdout
        for packet in json.loads(text or "[]"):
            evt = packet["_source"]["layers"].get("bthci_evt", {})
            address = evt.get("bthci_evt.bd_addr")
            if not isinstance(address, str) or evt.get("bthci_evt.le_num_reports") != "1":
                continue
            for kind, ident, data in ad_entries(evt):
                fmt = (CAPTURE_SERVICES if kind == 0x16 else CAPTURE_MANUFACTURERS).get(ident)
                if fmt is None:
                    continue
                ADDRESS = address.upper()
                where = "service" if kind == 0x16 else "manufacturer"
                expected = reference(fmt, where, ident, data, "", None)
                print(json.dumps({"format": fmt, "case": "capture", "where": where, "id": ident, "data": data.hex(),
                                  "name": "", "key": None, "expected": expected, "address": ADDRESS,
                                  "capture": os.path.basename(path), "untranslated": sorted(UNTRANSLATED)}))
                UNTRANSLATED.clear()


# Each reference parser's package, and where its frames go in an advertisement (as its own tests put them).
LIBRARY_PLACES = {
    "ruuvitag_ble": ("ruuvi", "manufacturer", 0x0499),
    "bthome_ble": ("bthome", "service", 0xFCD2),
    "xiaomi_ble": ("mibeacon", "service", 0xFE95),
    "qingping_ble": ("qingping", "service", 0xFDCD),
    "govee_ble": (None, None, None),
    "inkbird_ble": (None, None, None),
}


def hex_literals(source):
    """The frames a test module spells as bytes.fromhex("…") with a literal (implicit concatenation included)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fromhex"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "bytes" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            try:
                out.append(bytes.fromhex(node.args[0].value))
            except ValueError:
                pass
    return out


def library_frames(directory):
    """The frames in the parser libraries' own test suites, read from their pinned source distributions (downloaded
    by `make sensors-venv`, never copied into the project): one line per frame, decoded by the reference, and one
    line per package saying how many test modules and frames its sdist carries (most carry no tests)."""
    global ADDRESS
    ADDRESS = "00:00:00:00:00:00"  # the address their tests give
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".tar.gz"):
            continue
        package = name.split("-")[0]
        fmt, where, ident = LIBRARY_PLACES.get(package, (None, None, None))
        modules = frames = 0
        with tarfile.open(os.path.join(directory, name)) as archive:
            for member in archive.getmembers():
                parts = member.name.split("/")
                if not (member.isfile() and "tests" in parts and parts[-1].endswith(".py")):
                    continue
                modules += 1
                source = archive.extractfile(member).read().decode()
                for data in hex_literals(source) if fmt else []:
                    frames += 1
                    expected = reference(fmt, where, ident, data, "", None)
                    print(json.dumps({"format": fmt, "case": "library", "where": where, "id": ident,
                                      "data": data.hex(), "name": "", "key": None, "expected": expected,
                                      "address": ADDRESS, "capture": f"{name}:{member.name}",
                                      "untranslated": sorted(UNTRANSLATED)}))
                    UNTRANSLATED.clear()
        print(json.dumps({"package": package, "sdist": name, "test_modules": modules, "frames": frames}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=2000, help="valid frames per format; half as many corrupted")
    ap.add_argument("--captures", nargs="*", help="real btsnoop captures: their sensor frames instead")
    ap.add_argument("--library-vectors", metavar="DIR",
                    help="the reference parsers' sdists: the frames of their own tests instead")
    args = ap.parse_args()
    if args.captures:
        capture_frames(args.captures)
        return
    if args.library_vectors:
        library_frames(args.library_vectors)
        return
    rng = random.Random(args.seed)
    EVENTS.seed(args.seed + 1_000_003)
    MIBEACON_EVENTS.seed(args.seed + 2_000_003)

    for fmt, where, ident, hexdata, name in DOC_FRAMES:
        data = bytes.fromhex(hexdata.replace(" ", ""))
        emit(fmt, "doc", where, ident, data, reference(fmt, where, ident, data, name, None), name)

    generators = {
        "bthome": lambda: ("service", 0xFCD2, bthome_frame(rng, False), "", None),
        "bthome-encrypted": lambda: ("service", 0xFCD2, bthome_frame(rng, True), "", KEY),
        "mibeacon": lambda: ("service", 0xFE95, mibeacon_frame(rng, False), "", None),
        "mibeacon-encrypted": lambda: ("service", 0xFE95, mibeacon_frame(rng, True), "", KEY),
        "ruuvi": lambda: ("manufacturer", 0x0499, ruuvi_frame(rng), "", None),
        "ruuvi-3": lambda: ("manufacturer", 0x0499, ruuvi3_frame(rng), "", None),
        "ruuvi-6": lambda: ("manufacturer", 0x0499, ruuvi6_frame(rng), "", None),
        "ruuvi-e1": lambda: ("manufacturer", 0x0499, ruuvie1_frame(rng), "", None),
        "govee": lambda: (lambda n, c, d: ("manufacturer", c, d, n, None))(*govee_frame(rng)),
        "qingping": lambda: ("service", 0xFDCD, qingping_frame(rng), "", None),
        "inkbird": lambda: ("inkbird", 0, inkbird_frame(rng), "sps", None),
        "atc1441": lambda: ("service", 0x181A, atc_frame(rng), "", None),
        "pvvx": lambda: ("service", 0x181A, pvvx_frame(rng), "", None),
        "switchbot": lambda: ("service", 0xFD3D, switchbot_frame(rng), "", None),
        "victron": lambda: ("manufacturer", 0x02E1, victron_frame(rng), "", KEY),
    }
    for label, make in generators.items():
        fmt = label.split("-")[0]
        for n in range(args.count + args.count // 2):
            where, ident, data, name, key = make()
            case = "valid"
            if n >= args.count:
                data, case = corrupt(rng, data), "corrupt"
            if where == "inkbird":
                # The "company id" is the temperature: the first two octets.
                where, ident, data = "manufacturer", int.from_bytes(data[:2], "little"), data[2:]
                expected = reference("inkbird", where, ident, data, name, key)
            else:
                expected = reference(fmt, where, ident, data, name, key)
            emit(label if label.startswith("ruuvi") else fmt, case, where, ident, data, expected, name, key)


if __name__ == "__main__":
    main()
