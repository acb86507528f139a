"""The fleet dashboard in headless Chromium (Debian's chromium + chromium-driver), driven by Selenium, against a
running `blegateway fleet` fed by simulated gateways through a real mosquitto. Prints `N passed, N failed`."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import headless_chromium  # noqa: E402

args = argparse.ArgumentParser()
args.add_argument("--url", required=True)
args.add_argument("--mqtt-port", required=True)
args.add_argument("--prefix", required=True)
args.add_argument("--gateways", required=True, help="file of 'id pid' lines")
args.add_argument("--keepalive", type=float, required=True)
args.add_argument("--screenshots", required=True)
a = args.parse_args()

gateways = dict(line.split() for line in open(a.gateways) if line.strip())
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)


def wait_until(what, timeout, poll=0.1):
    """The test's own waiting on the browser (the service under test does not poll)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = what()
            if value:
                return value
        except Exception:
            pass
        if time.monotonic() > deadline:
            return None
        time.sleep(poll)


def retained(topic):
    """The broker's retained payload for `topic`, read with mosquitto_sub (-W: give up if none)."""
    out = subprocess.run(["mosquitto_sub", "-p", a.mqtt_port, "-t", topic, "-C", "1", "-W", "3", "--retained-only"],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.stdout.strip() else None


driver = headless_chromium.driver(1280, 900, page_load_timeout=20)

try:
    # 1. The overview lists the three gateways with the values the broker holds.
    driver.get(a.url + "/")

    def rows():
        # Read in one script call: the page replaces its rows at every event, so element handles go stale.
        return driver.execute_script("""
            const found = {};
            for (const tr of document.querySelectorAll("#gateways tbody tr")) {
              found[tr.dataset.gateway] = {status: tr.querySelector("td.status").textContent,
                adapter: tr.querySelector("td.adapter").textContent, version: tr.querySelector("td.version").textContent,
                first: tr === document.querySelector("#gateways tbody tr")};
            }
            return found;""")

    def all_online():
        r = rows()
        return r if set(gateways) <= set(r) and all(r[g]["status"] == "online" for g in gateways) else None

    shown = wait_until(all_online, 30)
    check("overview lists every gateway online", shown is not None, f"rows: {rows()}")
    shown = shown or rows()
    for gw in sorted(gateways):
        status = retained(f"{a.prefix}/{gw}/status") or {}
        adapter = retained(f"{a.prefix}/{gw}/adapter") or {}
        row = shown.get(gw, {})
        check(f"{gw}: version and adapter state as the broker holds them",
              row.get("version") == status.get("version") and row.get("adapter", "").startswith(adapter.get("state", "?")),
              f"page {row}, broker version {status.get('version')} adapter {adapter.get('state')}")
    driver.save_screenshot(os.path.join(a.screenshots, "overview.png"))

    # 1b. Bad input is counted and shown, and markup heard over the air stays text.
    evil = '<img src=x onerror="window.__pwned=1">'
    beacon = {"run": "e", "seq": 1, "ts": time.time(), "clock_synced": True, "id": "mac-c4bbcad07f7d", "kind": "other",
              "address": "C4:BB:CA:D0:7F:7D", "rssi": -40.0, "samples": 1, "interval_s": 1, "name": evil}
    for topic, payload, retain in [(f"{a.prefix}/gw-evil/beacons/mac-c4bbcad07f7d", json.dumps(beacon), False),
                                   (f"{a.prefix}/gw-evil/health", "not json", False),
                                   (f"{a.prefix}/gw-evil/bogus", "{}", True)]:
        subprocess.run(["mosquitto_pub", "-p", a.mqtt_port, "-t", topic, "-m", payload] + (["-r"] if retain else []),
                       check=True)
    shown_as_text = wait_until(lambda: evil in driver.execute_script(
        "return document.querySelector('#beacons').textContent;"), 10)
    check("a beacon name with markup shows as text", shown_as_text is not None)
    check("and runs nothing", driver.execute_script("return window.__pwned === undefined;") is True)
    # Both entries, not the first to arrive: the three messages reach the page in any order.
    def bad_listed():
        text = driver.execute_script("return document.querySelector('#bad tbody').textContent;") or ""
        return text if "not JSON" in text and "not in the topic schema" in text else None
    bad = wait_until(bad_listed, 10) or driver.execute_script(
        "return document.querySelector('#bad tbody').textContent;") or ""
    check("bad payloads and unknown topics are listed", "not JSON" in bad and "not in the topic schema" in bad, bad)

    # 1c. Presence: the office's floor plan with its rooms and gateways, and the static beacons in their rooms,
    # on the page and in the retained presence topics (which follow schema/v1/presence.json).
    driver.get(a.url + "/presence")

    def plan():
        return driver.execute_script("""
            const rooms = {};
            for (const tr of document.querySelectorAll("#tags tbody tr")) rooms[tr.dataset.tag] = tr.children[2].textContent;
            return {rooms: document.querySelectorAll("polygon[data-room]").length,
                    gateways: document.querySelectorAll("rect[data-gateway]").length,
                    tags: document.querySelectorAll("circle[data-tag]").length, where: rooms};""")

    statics = {"ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-1-2": "lobby", "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-2-2": "lab",
               "ibeacon-e2c56db5dffb48d2b060d0f5a71096e0-3-3": "kitchen"}
    placed = wait_until(lambda: (lambda p: p if all(p["where"].get(b) == r for b, r in statics.items()) else None)(plan()), 30)
    shown = placed or plan()
    check("presence page draws the office's 4 rooms and 3 gateways", shown["rooms"] == 4 and shown["gateways"] == 3,
          f"{shown['rooms']} rooms, {shown['gateways']} gateways")
    check("static beacons shown in their rooms", placed is not None,
          f"{ {b: shown['where'].get(b) for b in statics} }")
    check("tags drawn with their error circles", shown["tags"] >= 10, f"{shown['tags']} tags")
    driver.save_screenshot(os.path.join(a.screenshots, "presence.png"))
    messages = []
    for b, room in statics.items():
        payload = retained(f"{a.prefix}/fleet/presence/{b}")
        check(f"retained presence of {b[-5:]} says {room}", (payload or {}).get("room") == room, f"{payload}")
        messages.append(json.dumps({"topic": f"{a.prefix}/fleet/presence/{b}", "payload": json.dumps(payload)}))
    jsonl = os.path.join(a.screenshots, "presence-messages.jsonl")
    with open(jsonl, "w") as f:
        f.write("\n".join(messages) + "\n")
    validated = subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "..", "tools", "validate_payloads.py"),
                                a.prefix, jsonl], capture_output=True, text=True)
    check("presence payloads follow schema/v1/presence.json", validated.returncode == 0 and "3 passed, 0 failed" in validated.stdout,
          validated.stdout + validated.stderr)
    driver.get(a.url + "/")

    # 2. A killed gateway turns offline on the page, without a reload, within its keepalive plus 2 s.
    victim = sorted(gateways)[0]
    driver.execute_script("window.__notReloaded = true;")
    os.kill(int(gateways[victim]), signal.SIGKILL)
    killed = time.monotonic()
    went = wait_until(lambda: rows().get(victim, {}).get("status", "").startswith("offline"), a.keepalive + 2)
    elapsed = time.monotonic() - killed
    check(f"killed {victim} shows offline within keepalive + 2 s", went is not None, f"not after {elapsed:.1f} s")
    check("without a reload", driver.execute_script("return window.__notReloaded === true;") is True)
    first = next((g for g, r in rows().items() if r["first"]), None)
    check("offline gateway sorts first", first == victim, f"first row {first}")
    driver.save_screenshot(os.path.join(a.screenshots, "overview-offline.png"))

    # 3. The gateway page and a beacon page draw plots with points.
    live = sorted(set(gateways) - {victim})[0]
    driver.get(a.url + "/gateway/" + live)
    href = wait_until(lambda: driver.execute_script(
        "const a = document.querySelector('#beacons tbody tr a'); return a ? a.href : null;"), 20)
    check(f"gateway page of {live} lists beacons", href is not None)
    # Its health, once the first arrives: the node it publishes to and its failovers (mqtt.brokers).
    facts = "return document.getElementById('facts').textContent;"
    shown = wait_until(lambda: "connected to 127.0.0.1:" in driver.execute_script(facts), 30)
    check(f"gateway page of {live} says which broker it publishes to", shown is not None,
          driver.execute_script(facts)[:300])
    driver.save_screenshot(os.path.join(a.screenshots, "gateway.png"))
    if href is not None:
        driver.get(href)
        count = "return document.querySelectorAll('#plot-rssi svg circle.point').length;"
        points = wait_until(lambda: driver.execute_script(count) >= 2, 20)
        check("beacon page draws RSSI points", points is not None, f"{driver.execute_script(count)} points drawn")
        driver.save_screenshot(os.path.join(a.screenshots, "beacon.png"))
        # A longer window, chosen by ?hours=: the heading says it, offers the others, and the points are drawn.
        driver.get(href + "?hours=24")
        heading = "return [...document.querySelectorAll('.window')].map(e => e.textContent).join('|');"
        points = wait_until(lambda: driver.execute_script(count) >= 2, 20)
        said = driver.execute_script(heading)
        check("beacon page over 24 h says so and offers 1 h to 7 d",
              points is not None and said.startswith("last 24 h") and "7 d" in said, said)
    else:
        check("beacon page draws RSSI points", False, "no beacon to open")

    # A broadcasting sensor's page draws a plot per quantity (the office has four sensors).
    driver.get(a.url + "/gateway/" + live)
    href = wait_until(lambda: driver.execute_script(
        "const a = document.querySelector('#sensors tbody tr a'); return a ? a.href : null;"), 30)
    check(f"gateway page of {live} lists sensors", href is not None)
    if href is not None:
        driver.get(href)
        count = ("return document.querySelectorAll('#sensor-plots .plot[data-quantity=\"temperature_c\"] "
                 "svg circle.point').length;")
        points = wait_until(lambda: driver.execute_script(count) >= 2, 30)
        check("sensor page plots temperature points", points is not None, f"{driver.execute_script(count)} points drawn")
        driver.save_screenshot(os.path.join(a.screenshots, "sensor.png"))
    else:
        check("sensor page plots temperature points", False, "no sensor to open")

    # 4. /metrics parses as Prometheus text and agrees with the page.
    text = urllib.request.urlopen(a.url + "/metrics", timeout=5).read().decode()
    up = {}
    try:
        for family in text_string_to_metric_families(text):
            if family.name == "blegateway_gateway_up":
                up = {s.labels["gateway"]: s.value for s in family.samples}
        parsed = True
    except Exception as e:
        parsed = False
        print("parse error:", e)
    check("/metrics parses with prometheus_client", parsed)
    check("blegateway_gateway_up: the killed gateway 0, the others 1",
          up.get(victim) == 0 and all(up.get(g) == 1 for g in gateways if g != victim), f"{up}")

    # 5. On a phone: the page still lists every gateway (the table scrolls sideways inside the page).
    driver.set_window_size(390, 844)
    driver.get(a.url + "/")
    phone = wait_until(lambda: set(gateways) <= set(rows()), 10)
    width = driver.execute_script("return document.documentElement.scrollWidth;")
    check("readable on a phone: every gateway listed, no page-wide horizontal scroll",
          phone is not None and width <= 400, f"page width {width}")
    driver.save_screenshot(os.path.join(a.screenshots, "overview-phone.png"))
finally:
    driver.quit()

passed = sum(1 for r in results if r)
failed = len(results) - passed
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
