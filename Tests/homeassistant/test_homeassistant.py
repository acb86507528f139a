#!/usr/bin/env python3
"""The gateway's MQTT discovery, checked by a real Home Assistant Core (docs/HOMEASSISTANT.md).

Runs a small house as the documentation sets it up: mosquitto on a free loopback port with the shipped ACL
(deploy/mosquitto/blegateway.acl) and a password per user (each gateway, Home Assistant, the fleet service, an
operator), Home Assistant with a fresh configuration directory (onboarding and the MQTT config-entry flow done through
its REST API, as a person's browser would), the simulator, three gateways that all hear one broadcasting sensor, and
the fleet service; and asserts through Home Assistant's own APIs (REST states, WebSocket registries) what a user would see: devices,
entities, names, device classes, units, states; unavailable when the gateway dies and back when it restarts; still
there after a restart of Home Assistant and of the broker; removed when remote configuration removes a thing.

Run with the cached venv's Python: Tests/homeassistant/run.sh PATH/TO/blegateway. Prints `N passed, N failed`.
"""
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import getpass

import yaml

import aiohttp
import paho.mqtt.client as mqtt

HERE = os.path.dirname(os.path.abspath(__file__))
# The shipped ACL names the default prefix.
PREFIX = "blegateway"
GW = "gw-ha"
# The other gateways of the house: they hear the broadcasting sensor too, and must not add entities for it.
OTHER_GATEWAYS = ["gw-ha2", "gw-ha3"]
GATEWAYS = [GW] + OTHER_GATEWAYS
REPO = os.path.dirname(os.path.dirname(HERE))
ACL = os.path.join(REPO, "deploy", "mosquitto", "blegateway.acl")
# The broker's users: each gateway is a user named after its id (the ACL's %u patterns), then the roles it names.
USERS = {**{g: f"pw-{g}" for g in GATEWAYS}, "homeassistant": "pw-ha", "blegateway-fleet": "pw-fleet", "ops": "pw-ops"}
ADDRESS = "00:1B:DC:10:00:71"
HEX = ADDRESS.replace(":", "").lower()
GW_DEVICE = "blegateway_gw-ha"
PERIPHERAL_DEVICE = f"blegateway_gw-ha_{HEX}"
FOUND_ADDRESS = "00:1B:DC:10:00:72"
FOUND_DEVICE = "blegateway_gw-ha_001bdc100072"
SENSOR_ADDRESS = "A4:C1:38:00:00:73"
SENSOR_DEVICE = "blegateway_sensor_a4c138000073"
BUTTON_EVENT = f"event.{SENSOR_DEVICE}_button_event"
# The gateway cuts names to 64 characters after dropping control characters and collapsing white space.
PERIPHERAL_NAME = "Thermo lobby with a name far longer than anyone would want to read in a list of devices"[:64]
# The desk badge, followed by the fleet service's presence (docs/PRESENCE.md) as a device tracker.
DESK_BEACON = "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-100-1"
TRACKER_DEVICE = f"blegateway_tag_{PREFIX}_" + DESK_BEACON.replace("-", "_")
SITE = """rooms: [{id: office, name: Office, polygon: [[-5, -5], [5, -5], [5, 5], [-5, 5]]}]
gateways: [{id: gw-ha, position: [0, 0, 2], room: office}, {id: gw-ha2, position: [4, 0, 2], room: office},
           {id: gw-ha3, position: [0, 4, 2], room: office}]
"""
# Each wait has its own bound; Home Assistant itself starts in under 10 s.
WAIT = 30.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def finish(self, work):
        """The logs kept when a check failed, removed otherwise; prints the count and returns the exit status."""
        if self.failed == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"logs kept in {work}", flush=True)
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        return 0 if self.failed == 0 else 1

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {name}{': ' + detail if detail else ''}", flush=True)
        return ok


def log_problems(work, ours):
    """Home Assistant's WARNING and ERROR lines, from every log it wrote under `work`, that `ours` claims."""
    found = []
    for name in sorted(os.listdir(work)):
        if name.startswith("homeassistant.") and name.endswith(".log"):
            with open(os.path.join(work, name), errors="replace") as f:
                found += [line.strip()[:400] for line in f
                          if (" WARNING " in line or " ERROR " in line) and ours(line)]
    return found


class Process:
    """One child process with its log file; stopped by its own pid only."""

    def __init__(self, name, argv, work, env=None):
        self.name, self.argv, self.work, self.env = name, argv, work, env
        self.proc = None
        self.runs = 0

    def start(self):
        self.runs += 1
        log = open(os.path.join(self.work, f"{self.name}.{self.runs}.log"), "wb")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                     cwd=self.work, start_new_session=True)
        log.close()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def until(what, probe, timeout=WAIT, every=0.25):
    """The probe's first truthy answer within `timeout`, else None. Home Assistant's state is read, not pushed, here:
    a harness reading another program's API; nothing in the gateway waits like this."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = await probe()
            if last:
                return last
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError, KeyError, ValueError):
            pass
        await asyncio.sleep(every)
    print(f"     (waited {timeout:.0f} s for {what}; last answer {last!r})", flush=True)
    return None


def configuration_header(name, port):
    """What every check's configuration.yaml starts with: a named home at a fixed place, the pages the checks read,
    and the HTTP server on loopback at `port`."""
    return f"""homeassistant:
  name: {name}
  latitude: 0
  longitude: 0
  elevation: 0
  unit_system: metric
  time_zone: UTC
  country: DE
  currency: EUR
frontend:
config:
http:
  server_host: 127.0.0.1
  server_port: {port}
"""


class HomeAssistant:
    def __init__(self, venv, work, mqtt_port):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.config = os.path.join(work, "ha-config")
        os.makedirs(self.config)
        with open(os.path.join(self.config, "configuration.yaml"), "w") as f:
            f.write(configuration_header("BLEGateway check", self.port) + f"""# A press of the sensor's button, heard by three gateways, runs this once (counted by the counter).
counter:
  presses:
    initial: 0
automation:
  - id: blegateway_check_button
    alias: Count the sensor's button presses
    mode: queued
    max: 100
    triggers:
      - trigger: state
        entity_id: {BUTTON_EVENT}
        not_from: [unavailable]
        not_to: [unavailable, unknown]
    actions:
      - action: counter.increment
        target: {{entity_id: counter.presses}}
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
""")
        # --skip-pip: everything it needs was installed into the venv up front; it never reaches for the network.
        self.process = Process("homeassistant", [os.path.join(venv, "bin", "hass"), "-c", self.config, "--skip-pip"],
                               work)
        self.mqtt_port = mqtt_port
        self.token = None
        self.tokens = None
        self.session = None

    async def start(self):
        self.process.start()
        self.session = self.session or aiohttp.ClientSession()
        return await until("Home Assistant's HTTP API", self._up, timeout=60)

    async def _up(self):
        async with self.session.get(f"{self.base}/api/onboarding") as r:
            return r.status in (200, 401, 404)

    def headers(self):
        return {"Authorization": f"Bearer {self.token}"}

    async def onboard(self):
        client_id = f"{self.base}/"
        async with self.session.post(f"{self.base}/api/onboarding/users", json={
                "client_id": client_id, "name": "Check", "username": "check", "password": "check-password-1",
                "language": "en"}) as r:
            code = (await r.json())["auth_code"]
        async with self.session.post(f"{self.base}/auth/token", data={
                "grant_type": "authorization_code", "code": code, "client_id": client_id}) as r:
            self.tokens = await r.json()
            self.token = self.tokens["access_token"]
        for step, body in [("core_config", {}), ("analytics", {}),
                           ("integration", {"client_id": client_id, "redirect_uri": f"{self.base}/?auth_callback=1"})]:
            async with self.session.post(f"{self.base}/api/onboarding/{step}", json=body,
                                         headers=self.headers()) as r:
                if r.status != 200:
                    return False
        return True

    async def configure_mqtt(self):
        async with self.session.post(f"{self.base}/api/config/config_entries/flow",
                                     json={"handler": "mqtt", "show_advanced_options": False},
                                     headers=self.headers()) as r:
            flow = await r.json()
        if flow.get("type") == "menu":  # a later Home Assistant may ask first what to set up
            async with self.session.post(f"{self.base}/api/config/config_entries/flow/{flow['flow_id']}",
                                         json={"next_step_id": "broker"}, headers=self.headers()) as r:
                flow = await r.json()
        async with self.session.post(f"{self.base}/api/config/config_entries/flow/{flow['flow_id']}",
                                     json={"broker": "127.0.0.1", "port": self.mqtt_port,
                                           "username": "homeassistant", "password": USERS["homeassistant"]},
                                     headers=self.headers()) as r:
            done = await r.json()
        return done.get("type") == "create_entry", done

    async def states(self):
        async with self.session.get(f"{self.base}/api/states", headers=self.headers()) as r:
            if r.status != 200:
                return {}
            return {s["entity_id"]: s for s in await r.json()}

    async def state(self, entity_id):
        async with self.session.get(f"{self.base}/api/states/{entity_id}", headers=self.headers()) as r:
            return await r.json() if r.status == 200 else None

    async def ws(self, *commands):
        """Answers to WebSocket commands (registries are only there)."""
        async with self.session.ws_connect(f"{self.base}/api/websocket") as ws:
            await ws.receive_json()
            await ws.send_json({"type": "auth", "access_token": self.token})
            if (await ws.receive_json()).get("type") != "auth_ok":
                return None
            out = []
            for n, command in enumerate(commands, start=1):
                await ws.send_json({"id": n, **command})
                while True:
                    msg = await ws.receive_json()
                    if msg.get("id") == n and msg.get("type") == "result":
                        out.append(msg.get("result"))
                        break
            return out

    async def registries(self):
        devices, entities = await self.ws({"type": "config/device_registry/list"},
                                          {"type": "config/entity_registry/list"})
        by_identifier = {}
        for d in devices:
            for domain, ident in d["identifiers"]:
                if domain == "mqtt":
                    by_identifier[ident] = d
        return by_identifier, {e["entity_id"]: e for e in entities if e["platform"] == "mqtt"}

    async def call(self, domain, service, data):
        async with self.session.post(f"{self.base}/api/services/{domain}/{service}", json=data,
                                     headers=self.headers()) as r:
            return r.status

    async def stop(self):
        self.process.stop(signal.SIGTERM, timeout=30)

    async def close(self):
        await self.stop()
        if self.session:
            await self.session.close()


def entity(kind, key, device=GW_DEVICE):
    # object_id is the unique_id; Home Assistant makes it an entity id by replacing '-' with '_'.
    return f"{kind}.{device}_{key}".replace("-", "_")


GATEWAY_ENTITIES = {
    # entity id: (friendly name after the device name, device class, unit, diagnostic)
    entity("binary_sensor", "connectivity"): ("Connectivity", "connectivity", None, True),
    entity("sensor", "adapter"): ("Adapter", None, None, True),
    entity("sensor", "spool_depth"): ("Spool depth", None, "readings", True),
    entity("sensor", "messages_per_s"): ("Messages per second", None, "msg/s", True),
    entity("sensor", "dropped_samples"): ("Dropped samples", None, "samples", True),
    entity("sensor", "uptime"): ("Uptime", "duration", "s", True),
    entity("sensor", "version"): ("Version", None, None, True),
    entity("sensor", "config"): ("Configuration", "enum", None, True),
    entity("binary_sensor", "region_desk-near"): ("desk-near", "presence", None, False),
}
PERIPHERAL_ENTITIES = {
    entity("sensor", "link", PERIPHERAL_DEVICE): ("Link", "enum", None, False),
    entity("sensor", "rssi", PERIPHERAL_DEVICE): ("RSSI", "signal_strength", "dBm", True),
    entity("sensor", "char_2a6e", PERIPHERAL_DEVICE): ("Temperature", "temperature", "°C", False),
    entity("sensor", "char_2a6f", PERIPHERAL_DEVICE): ("Humidity", "humidity", "%", False),
    entity("sensor", "char_2a19", PERIPHERAL_DEVICE): ("Battery", "battery", "%", True),
    entity("number", "write_2a06", PERIPHERAL_DEVICE): ("Alert level", None, None, False),
}
FOUND_TEMPERATURE = entity("sensor", "char_2a6e", FOUND_DEVICE)
UPTIME = entity("sensor", "uptime")
CONNECTIVITY = entity("binary_sensor", "connectivity")
TEMPERATURE = entity("sensor", "char_2a6e", PERIPHERAL_DEVICE)
REGION = entity("binary_sensor", "region_desk-near")
LINK = entity("sensor", "link", PERIPHERAL_DEVICE)
ALERT = entity("number", "write_2a06", PERIPHERAL_DEVICE)


def is_number(v):
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


async def main(binary, venv):
    results = Results()
    check = results.check
    work = tempfile.mkdtemp(prefix="blegateway-ha-")
    mqtt_port = free_port()
    passwd = os.path.join(work, "passwd")
    open(passwd, "w").close()
    credentials = {}
    for user, password in USERS.items():
        subprocess.run(["mosquitto_passwd", "-b", passwd, user, password], check=True, capture_output=True)
        for kind, value in (("username", user), ("password", password)):
            path = os.path.join(work, f"{user}.{kind}")
            with open(path, "w") as f:
                f.write(value + "\n")
            credentials[(user, kind)] = path
    with open(os.path.join(work, "mosquitto.conf"), "w") as f:
        f.write(f"listener {mqtt_port} 127.0.0.1\nallow_anonymous false\npassword_file {passwd}\nacl_file {ACL}\n"
                f"persistence false\nuser {getpass.getuser()}\n")
    mosquitto = Process("mosquitto", [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c",
                                      os.path.join(work, "mosquitto.conf")], work)
    sim_dir = os.path.join(work, "sim")
    os.makedirs(sim_dir)
    sim = Process("sim", [binary, "sim", "--scenario", os.path.join(HERE, "scenario.yaml"), "--socket-dir", sim_dir],
                  work)
    config_path = os.path.join(work, "gateway.yaml")

    def gateway_process(gw, config):
        return Process(gw, [binary, "run", "--config", config,
                            "--gateway-id", gw, "--device", f"unix:{sim_dir}/{gw}.sock",
                            "--broker", f"mqtt://127.0.0.1:{mqtt_port}", "--prefix", PREFIX,
                            "--spool", os.path.join(work, f"spool-{gw}.sqlite")], work)
    gateway = gateway_process(GW, config_path)
    others = [gateway_process(g, os.path.join(work, f"{g}.yaml")) for g in OTHER_GATEWAYS]
    site_path = os.path.join(work, "site.yaml")
    with open(site_path, "w") as f:
        f.write(SITE)
    fleet = Process("fleet", [binary, "fleet", "--broker", f"mqtt://127.0.0.1:{mqtt_port}", "--prefix", PREFIX,
                              "--listen", "127.0.0.1:0", "--site", site_path,
                              "--homeassistant-discovery-prefix", "homeassistant",
                              "--username-file", credentials[("blegateway-fleet", "username")],
                              "--password-file", credentials[("blegateway-fleet", "password")]], work)
    ha = HomeAssistant(venv, work, mqtt_port)
    results_seen = []
    # The check watches as Home Assistant's user does (it reads discovery and the prefix), and changes a gateway's
    # configuration as the operator's user.
    watcher = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ha-check-watcher")
    watcher.username_pw_set("homeassistant", USERS["homeassistant"])

    def operator_publish(topic, payload):
        operator = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ha-check-operator")
        operator.username_pw_set("ops", USERS["ops"])
        operator.connect("127.0.0.1", mqtt_port)
        operator.loop_start()
        operator.publish(topic, payload, qos=1, retain=True).wait_for_publish(10)
        operator.disconnect()
        operator.loop_stop()
    presses_seen = []  # (arrival, counter) of every button press any gateway published

    def on_message(c, u, m):
        results_seen.append((m.topic, m.payload))
        if "/sensors/" in m.topic:
            body = json.loads(m.payload)
            if body.get("values", {}).get("button_event"):
                presses_seen.append((time.monotonic(), body.get("counter")))
    watcher.on_message = on_message
    try:
        mosquitto.start()
        sim.start()

        async def socket_ready():
            return os.path.exists(f"{sim_dir}/{GW}.sock") and os.path.exists(f"{sim_dir}/gateway-config.yaml")
        check("simulator up", await until("the simulator's socket", socket_ready, timeout=15))
        # The gateway's configuration as the simulator wrote it, kept apart so the check can change it later, with the
        # broker user of each gateway; the other two without peripherals or regions.
        with open(os.path.join(sim_dir, "gateway-config.yaml")) as f:
            text = f.read()
        with open(config_path, "w") as f:
            f.write(text + f"\nmqtt:\n  username_file: {credentials[(GW, 'username')]}\n"
                    f"  password_file: {credentials[(GW, 'password')]}\n")
        for g in OTHER_GATEWAYS:
            c = yaml.safe_load(text)
            c.pop("peripherals", None)
            c.pop("regions", None)
            c["mqtt"] = {**c.get("mqtt", {}), "username_file": credentials[(g, "username")],
                         "password_file": credentials[(g, "password")]}
            with open(os.path.join(work, f"{g}.yaml"), "w") as f:
                yaml.safe_dump(c, f)
        gateway.start()
        for o in others:
            o.start()
        fleet.start()

        async def broker_up():
            try:
                watcher.connect("127.0.0.1", mqtt_port)
                return True
            except OSError:
                return False
        await until("the broker", broker_up, timeout=10)
        watcher.subscribe(f"{PREFIX}/{GW}/peripherals/+/write/result", qos=1)
        watcher.subscribe(f"homeassistant/device/{GW}/+/config", qos=1)
        watcher.subscribe(f"{PREFIX}/+/sensors/{SENSOR_DEVICE.rsplit('_', 1)[1]}", qos=1)
        watcher.loop_start()

        # Home Assistant is not there yet: the documents wait on the broker, retained.
        async def retained_documents():
            topics = {t for t, _ in list(results_seen)}
            return {f"homeassistant/device/{GW}/{GW_DEVICE}/config",
                    f"homeassistant/device/{GW}/{PERIPHERAL_DEVICE}/config"} <= topics
        check("discovery documents retained on the broker before Home Assistant exists",
              await until("the retained discovery documents", retained_documents))

        check("Home Assistant starts", await ha.start())
        check("onboarding through the REST API", await ha.onboard())
        ok, answer = await ha.configure_mqtt()
        check("MQTT config entry through the config-entry flow", ok, json.dumps(answer)[:300])

        # Devices and entities, as Home Assistant's registries hold them.
        async def both_devices():
            devices, _ = await ha.registries()
            return devices if GW_DEVICE in devices and PERIPHERAL_DEVICE in devices else None
        devices = await until("both devices in the device registry", both_devices)
        check("the gateway and its peripheral are devices", devices is not None)
        if devices:
            gw, per = devices[GW_DEVICE], devices[PERIPHERAL_DEVICE]
            check("gateway device: name, maker, version",
                  (gw["name"], gw["manufacturer"], gw["sw_version"]) == (GW, "BLEGateway", "0.1.0"), json.dumps(gw))
            check("peripheral device is via the gateway", per["via_device_id"] == gw["id"], json.dumps(per))
            check("peripheral name from configuration: control characters dropped, cut to 64",
                  per["name"] == PERIPHERAL_NAME, repr(per["name"]))
            check("peripheral carries its Bluetooth address", ["bluetooth", ADDRESS] in per["connections"],
                  json.dumps(per["connections"]))

        async def all_entities():
            states = await ha.states()
            wanted = {**GATEWAY_ENTITIES, **PERIPHERAL_ENTITIES}
            return states if all(e in states for e in wanted) else None
        states = await until("every entity in the state machine", all_entities)
        check("every expected entity exists", states is not None,
              str(sorted(set({**GATEWAY_ENTITIES, **PERIPHERAL_ENTITIES}) - set((await ha.states()).keys()))))
        _, registry = await ha.registries()
        for table, device_name in [(GATEWAY_ENTITIES, GW), (PERIPHERAL_ENTITIES, PERIPHERAL_NAME)]:
            for entity_id, (name, device_class, unit, diagnostic) in table.items():
                s = (states or {}).get(entity_id, {"attributes": {}})
                a = s["attributes"]
                check(f"{entity_id}: named '{device_name} {name}' (device name once)",
                      a.get("friendly_name") == f"{device_name} {name}", repr(a.get("friendly_name")))
                check(f"{entity_id}: device class {device_class}, unit {unit}",
                      a.get("device_class") == device_class and a.get("unit_of_measurement") == unit,
                      f"{a.get('device_class')} {a.get('unit_of_measurement')}")
                r = registry.get(entity_id, {})
                check(f"{entity_id}: {'diagnostic' if diagnostic else 'primary'} entity",
                      r.get("entity_category") == ("diagnostic" if diagnostic else None),
                      repr(r.get("entity_category")))

        # States, as they come from the gateway's topics.
        async def state_is(entity_id, test):
            async def probe():
                s = await ha.state(entity_id)
                return s if s and test(s) else None
            return await until(f"{entity_id} to reach its expected state", probe)
        check("connectivity on", await state_is(CONNECTIVITY, lambda s: s["state"] == "on"))
        check("adapter poweredOn, with its reason attribute",
              await state_is(entity("sensor", "adapter"),
                             lambda s: s["state"] == "poweredOn" and "reason" in s["attributes"]))
        check("version 0.1.0", await state_is(entity("sensor", "version"), lambda s: s["state"] == "0.1.0"))
        check("configuration applied", await state_is(entity("sensor", "config"), lambda s: s["state"] == "applied"))
        check("uptime is a number of seconds", await state_is(UPTIME, lambda s: is_number(s["state"])))
        check("spool depth is a number",
              await state_is(entity("sensor", "spool_depth"), lambda s: is_number(s["state"])))
        check("link connected", await state_is(LINK, lambda s: s["state"] == "connected"))
        check("temperature in °C from the sensor's notifications",
              await state_is(TEMPERATURE, lambda s: is_number(s["state"]) and -40 < float(s["state"]) < 85))
        check("humidity in %", await state_is(entity("sensor", "char_2a6f", PERIPHERAL_DEVICE),
                                              lambda s: is_number(s["state"]) and 0 <= float(s["state"]) <= 100))
        check("RSSI in dBm", await state_is(entity("sensor", "rssi", PERIPHERAL_DEVICE),
                                            lambda s: is_number(s["state"]) and float(s["state"]) < 0))
        check("region presence on (the badge is beside the gateway)",
              await state_is(REGION, lambda s: s["state"] == "on"))

        # A device taken by a name_prefix entry appears once found, named by the entry and its address.
        async def found_device():
            devices, _ = await ha.registries()
            return devices.get(FOUND_DEVICE)
        found = await until("the device found by name", found_device)
        check("a device found by a name_prefix entry is a device via the gateway",
              found is not None and found["name"] == f"found {FOUND_ADDRESS}"
              and devices is not None and found["via_device_id"] == devices[GW_DEVICE]["id"], json.dumps(found))
        check("its temperature in °C", await state_is(FOUND_TEMPERATURE, lambda s: is_number(s["state"])
                                                       and s["attributes"].get("unit_of_measurement") == "°C"))

        # A broadcasting sensor the gateway decodes is a device of its own (identified by its address, so every
        # gateway that hears it describes the same device), with an entity per quantity it reported.
        async def sensor_device():
            devices, _ = await ha.registries()
            return devices.get(SENSOR_DEVICE)
        sensor = await until("the broadcasting sensor's device", sensor_device)
        check("a decoded broadcasting sensor is a device with its Bluetooth address",
              sensor is not None and ["bluetooth", SENSOR_ADDRESS] in sensor["connections"]
              and sensor["via_device_id"] is None, json.dumps(sensor))
        # One entity per quantity whichever gateways hear it: no gateway in its id, and the one that heard it named.
        sensor_key = SENSOR_DEVICE
        for key, device_class, unit, low, high in [("temperature_c", "temperature", "°C", 15, 30),
                                                   ("humidity_pct", "humidity", "%", 0, 100),
                                                   ("battery_pct", "battery", "%", 0, 100)]:
            entity_id = entity("sensor", key, sensor_key)
            check(f"{entity_id}: a number in {unit}, device class {device_class}",
                  await state_is(entity_id, lambda s: is_number(s["state"]) and low <= float(s["state"]) <= high
                                 and s["attributes"].get("device_class") == device_class
                                 and s["attributes"].get("unit_of_measurement") == unit
                                 and s["attributes"].get("gateway") in GATEWAYS
                                 and is_number(s["attributes"].get("rssi"))))
        # Three gateways hear it: still one entity per quantity (and its RSSI), none named after a gateway.
        _, registry = await ha.registries()
        sensor_ids = sorted(v.get("unique_id") for v in registry.values()
                            if (v.get("unique_id") or "").startswith(SENSOR_DEVICE + "_")
                            or any(f"{g}_sensor_" in (v.get("unique_id") or "") for g in GATEWAYS))
        quantities = {k for t, p in list(results_seen) if "/sensors/" in t for k in json.loads(p).get("values", {})}
        wanted = sorted(f"{SENSOR_DEVICE}_{k}" for k in quantities | {"rssi"})
        check("three gateways hear the sensor: exactly one entity per quantity it sent, none per gateway",
              {"temperature_c", "humidity_pct", "battery_pct"} <= quantities and sensor_ids == wanted,
              json.dumps(sensor_ids) + " " + json.dumps(wanted))
        heard_by = {t.split("/")[1] for t, _ in list(results_seen) if "/sensors/" in t}
        check("every gateway of the house publishes the sensor", heard_by == set(GATEWAYS), json.dumps(sorted(heard_by)))

        async def newest_on_broker():
            newest = [json.loads(p) for t, p in list(results_seen) if "/sensors/" in t]
            s = await ha.state(entity("sensor", "temperature_c", sensor_key))
            if not newest or not s or not is_number(s["state"]):
                return None
            want = newest[-1].get("values", {}).get("temperature_c")
            return s if want is not None and abs(float(s["state"]) - float(want)) < 1e-6 else None
        check("the sensor's temperature is the newest any gateway published",
              await until("the temperature to match the broker's newest", newest_on_broker) is not None)
        # Its button, pressed every 6 s and published by all three gateways: one automation run per press. Counted
        # between two quiet moments (2 s after a press), so no press is on the broker and not yet in Home Assistant.
        async def quiet_after_press(after):
            presses = list(presses_seen)
            fresh = [p for p in presses if p[0] > after]
            if not fresh or time.monotonic() - presses[-1][0] < 2 or time.monotonic() - presses[-1][0] > 4:
                return None
            s = await ha.state("counter.presses")
            return (time.monotonic(), int(s["state"]), {c for _, c in presses}) if s and is_number(s["state"]) else None
        first = await until("a quiet moment after a press", lambda: quiet_after_press(0), timeout=60)
        second = first and await until("two more presses", lambda: quiet_after_press(first[0] + 6.5), timeout=60)
        if first and second:
            runs, pressed = second[1] - first[1], len(second[2] - first[2])
            check("each press of the sensor's button runs an automation once, though three gateways publish it",
                  pressed >= 2 and runs == pressed, f"{runs} runs for {pressed} presses")
        else:
            check("each press of the sensor's button runs an automation once, though three gateways publish it", False,
                  f"no quiet moments: {first} {second}")
        check("the sensor's battery is a diagnostic entity",
              registry.get(entity("sensor", "battery_pct", sensor_key), {}).get("entity_category") == "diagnostic")

        # The fleet service's presence: the desk badge is a device tracker whose state is its room.
        async def tracker():
            devices, registry = await ha.registries()
            if TRACKER_DEVICE not in devices:
                return None
            ids = [e for e, v in registry.items() if v.get("unique_id") == TRACKER_DEVICE]
            return ids[0] if ids else None
        tracker_id = await until("the desk badge's device tracker", tracker)
        check("a tracked tag is a device_tracker entity", tracker_id is not None and tracker_id.startswith("device_tracker."),
              f"{tracker_id}")
        if tracker_id:
            check("its state is the room's name, with source type bluetooth_le and its position as attributes",
                  await state_is(tracker_id, lambda s: s["state"] == "Office"
                                 and s["attributes"].get("source_type") == "bluetooth_le"
                                 and s["attributes"].get("room_name") == "Office"
                                 and is_number(s["attributes"].get("confidence"))))
            # The room as a device: occupied, the badge among the tags present (every advertiser presence places there
            # counts: the sensor and the peripherals beside it too), in the area named after the room.
            room = f"blegateway_room_{PREFIX}_office".replace("-", "_")
            occupied = await state_is(f"binary_sensor.{room}_occupancy", lambda s: s["state"] == "on")
            counted = await state_is(f"sensor.{room}_count", lambda s: DESK_BEACON in s["attributes"].get("tags", [])
                                     and s["state"] == str(len(s["attributes"]["tags"])))
            check("the office's occupancy is on and counts its tags, the badge among them", occupied and counted,
                  json.dumps([occupied, await ha.state(f"sensor.{room}_count")]))

            # Each gateway's device in the area of its room in the site (the fleet's document for it), one device each.
            async def gateways_in_office():
                devices, _ = await ha.registries()
                ids = [f"blegateway_{g}" for g in GATEWAYS]
                return devices if all(devices.get(i, {}).get("area_id") == "office" for i in ids) else None
            placed = await until("the gateways' devices in the office's area", gateways_in_office)
            check("every gateway's device is in its room's area, with its own name",
                  placed is not None and all(placed[f"blegateway_{g}"]["name"] == g for g in GATEWAYS),
                  json.dumps({g: (placed or {}).get(f"blegateway_{g}", {}).get("area_id") for g in GATEWAYS}))
            # The fleet service decides the room: killed (no DISCONNECT), its last will turns the tracker unavailable
            # instead of leaving the badge in the office for ever; restarted, the tracker is back.
            fleet.stop(signal.SIGKILL)
            check("fleet service killed: the tracker and the room's occupancy are unavailable (its last will)",
                  await state_is(tracker_id, lambda s: s["state"] == "unavailable")
                  and await state_is(f"binary_sensor.{room}_occupancy", lambda s: s["state"] == "unavailable"))
            fleet.start()
            check("fleet service restarted: the tracker is in the office again",
                  await state_is(tracker_id, lambda s: s["state"] == "Office"))

        # Home Assistant's own pages, for docs/HOMEASSISTANT.md: the gateway's, the peripheral's and the tag's devices, in the
        # fleet test's headless Chromium when it is installed (make deps-browser; skipped, and said so, otherwise).
        browser = "/var/cache/blegateway-browser-venv/bin/python"
        if os.path.exists(browser) and os.path.exists("/usr/bin/chromium"):
            devices, _ = await ha.registries()
            shots = os.path.join(os.path.dirname(os.path.dirname(HERE)), ".build", "homeassistant-screenshots")
            os.makedirs(shots, exist_ok=True)
            pages = [f"{devices[d]['id']}={name}={file}" for d, name, file in [
                (GW_DEVICE, GW, "gateway-device.png"),
                (PERIPHERAL_DEVICE, devices.get(PERIPHERAL_DEVICE, {}).get("name", ""), "peripheral-device.png"),
                (TRACKER_DEVICE, f"Tag {DESK_BEACON}", "tag-device.png")] if d in devices]
            shot = subprocess.run([browser, os.path.join(HERE, "screenshot.py"), ha.base, json.dumps(ha.tokens), shots]
                                  + pages, capture_output=True, text=True, timeout=180)
            check("Home Assistant's device pages render with our devices (screenshots in .build/homeassistant-screenshots)",
                  shot.returncode == 0 and shot.stdout.count("ok ") == len(pages) == 3, shot.stdout + shot.stderr[-500:])
        else:
            print("skip Home Assistant screenshots: no headless Chromium here (make deps-browser installs it)", flush=True)

        # A write from Home Assistant reaches the peripheral: the number entity sends the write command.
        status = await ha.call("number", "set_value", {"entity_id": ALERT, "value": 2})

        async def write_result():
            for topic, payload in list(results_seen):
                if not topic.endswith("/write/result"):
                    continue
                body = json.loads(payload)
                if body.get("id") == "homeassistant-write_2a06":
                    return body
            return None
        body = await until("the write result", write_result)
        check("Alert level set from Home Assistant is written to the peripheral",
              status == 200 and body is not None and body.get("result") == "success", f"{status} {body}")

        # The gateway dies: its last will makes everything unavailable (connectivity off); back when it restarts.
        gateway.stop(signal.SIGKILL)
        check("gateway killed: its entities unavailable",
              await state_is(UPTIME, lambda s: s["state"] == "unavailable"))
        check("gateway killed: connectivity off", await state_is(CONNECTIVITY, lambda s: s["state"] == "off"))
        check("gateway killed: peripheral entities unavailable",
              await state_is(TEMPERATURE, lambda s: s["state"] == "unavailable"))
        gateway.start()
        check("gateway restarted: available again", await state_is(UPTIME, lambda s: is_number(s["state"])))
        check("gateway restarted: temperature again", await state_is(TEMPERATURE, lambda s: is_number(s["state"])))

        # Home Assistant restarts: the entities are still there, with states.
        await ha.stop()
        check("Home Assistant restarted", await ha.start())
        check("after Home Assistant's restart: connectivity on",
              await state_is(CONNECTIVITY, lambda s: s["state"] == "on"))
        check("after Home Assistant's restart: uptime", await state_is(UPTIME, lambda s: is_number(s["state"])))
        check("after Home Assistant's restart: temperature",
              await state_is(TEMPERATURE, lambda s: is_number(s["state"])))

        # The broker restarts (without persistence: every retained message is gone): the gateway's status and
        # Home Assistant's birth message bring everything back.
        mosquitto.stop(signal.SIGKILL)
        check("broker down: entities unavailable once Home Assistant notices",
              await state_is(UPTIME, lambda s: s["state"] == "unavailable"))
        mosquitto.start()
        check("after the broker's restart: uptime", await state_is(UPTIME, lambda s: is_number(s["state"]), ))
        check("after the broker's restart: temperature", await state_is(TEMPERATURE, lambda s: is_number(s["state"])))
        check("after the broker's restart: connectivity on",
              await state_is(CONNECTIVITY, lambda s: s["state"] == "on"))

        # A remote document removes the region while the gateway runs: Home Assistant forgets the entity.
        operator_publish(f"{PREFIX}/{GW}/config", json.dumps({"regions": []}))

        async def region_removed():
            devices, registry = await ha.registries()
            return REGION not in registry and PERIPHERAL_DEVICE in devices and GW_DEVICE in devices
        check("a region removed by remote configuration is gone from Home Assistant",
              await until("the region's removal", region_removed))

        # The peripheral is taken out of the local file while the gateway is stopped: at its next start the document
        # its earlier run left retained is removed, and Home Assistant forgets the device.
        gateway.stop(signal.SIGTERM)
        with open(config_path) as f:
            text = f.read()
        with open(config_path, "w") as f:
            # An unknown key is only a warning: the old list stays in the file, read by nobody.
            f.write(text.replace("\nperipherals:", "\nperipherals: []\nunused_peripherals:", 1))

        async def peripheral_removed():
            devices, _ = await ha.registries()
            return PERIPHERAL_DEVICE not in devices and FOUND_DEVICE not in devices and GW_DEVICE in devices
        gateway.start()
        check("peripherals removed from the file while the gateway was stopped are gone from Home Assistant",
              await until("the peripheral's removal", peripheral_removed))
        check("the gateway's own entities stay", await state_is(UPTIME, lambda s: is_number(s["state"])))

        # Home Assistant logs what it refuses or doubts in a document (a class or unit it does not take, an invalid
        # option, a state class impossible for the device class) rather than failing: its log must name none of ours.
        # Ours: a line naming one of our ids or topics, or any from the MQTT integration or the sensor platform
        # (their schema and class warnings name neither), except the broker outages this test makes on purpose.
        outage = ("Disconnected from MQTT server", "Failed to connect to MQTT server", "Error returned from MQTT server",
                  "Connection to MQTT broker lost", "Unable to connect to the MQTT broker")

        def ours(line):
            if any(o in line for o in outage):
                return False
            return "blegateway" in line or "[homeassistant.components.mqtt" in line \
                or "[homeassistant.components.sensor" in line

        problems = log_problems(work, ours)
        check("Home Assistant's log has no warning or error about our documents or entities", not problems,
              "\n".join(problems[:5]))
    finally:
        watcher.loop_stop()
        await ha.close()
        fleet.stop()
        gateway.stop()
        for o in others:
            o.stop()
        sim.stop()
        mosquitto.stop()
    return results.finish(work)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_homeassistant.py PATH/TO/blegateway PATH/TO/ha-venv")
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
