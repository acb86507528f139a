"""Screenshots of Home Assistant's own pages for docs/HOMEASSISTANT.md, in Debian's headless Chromium (the fleet
test's browser venv): signed in with the check's tokens, it opens each device page given and saves it once the
device's name shows. Prints one line per page: `ok NAME` or `missing NAME: why`.
Usage: screenshot.py BASE_URL TOKENS_JSON OUT_DIR DEVICE_ID=NAME=FILE ..."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import headless_chromium  # noqa: E402

base, tokens, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
driver = headless_chromium.driver(1280, 1000, page_load_timeout=30)
# The frontend keeps its session in localStorage (hassTokens): set it on the origin, then every page is signed in.
driver.get(base + "/manifest.json")
driver.execute_script("localStorage.setItem('hassTokens', arguments[0]);", json.dumps({
    "access_token": tokens["access_token"], "refresh_token": tokens["refresh_token"], "token_type": "Bearer",
    "expires_in": 1800, "expires": int(time.time() * 1000) + 1800 * 1000, "hassUrl": base, "clientId": base + "/"}))
# The page's text lives in shadow roots: gathered by walking them.
DEEP_TEXT = """
    const parts = [];
    const walk = n => { if (n.shadowRoot) walk(n.shadowRoot);
                        for (const c of n.childNodes) { if (c.nodeType === 3) parts.push(c.textContent); else walk(c); } };
    walk(document.body); return parts.join(' ');"""
status = 0
for spec in sys.argv[4:]:
    device_id, name, filename = spec.split("=", 2)
    driver.get(f"{base}/config/devices/device/{device_id}")
    deadline = time.monotonic() + 30
    shown = False
    while time.monotonic() < deadline:
        if name in driver.execute_script(DEEP_TEXT):
            shown = True
            break
        time.sleep(0.5)
    time.sleep(2)  # the cards finish drawing after the name appears
    driver.save_screenshot(os.path.join(out, filename))
    print(("ok " if shown else "missing ") + name + ("" if shown else ": the name never showed"), flush=True)
    status |= 0 if shown else 1
driver.quit()
sys.exit(status)
