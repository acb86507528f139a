#!/bin/sh
# `make test-homeassistant`: the discovery check against a real Home Assistant (test_homeassistant.py), then the
# ESPHome proxy check (test_esphome_proxy.py).
set -eu
BIN=${1:?usage: run.sh PATH/TO/blegateway}
HERE=$(cd "$(dirname "$0")" && pwd)
VENV="${HA_VENV:-/var/cache/blegateway-ha-venv}"
"$HERE/install-ha.sh"
status=0
"$VENV/bin/python" "$HERE/test_homeassistant.py" "$BIN" "$VENV" || status=1
# The gateway as an ESPHome Bluetooth proxy, added through Home Assistant's esphome integration (docs/ESPHOME.md).
"$VENV/bin/python" "$HERE/test_esphome_proxy.py" "$BIN" "$VENV" || status=1
exit $status
