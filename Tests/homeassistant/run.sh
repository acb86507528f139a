#!/bin/sh
# `make test-homeassistant`: the discovery check against a real Home Assistant (test_homeassistant.py).
set -eu
BIN=${1:?usage: run.sh PATH/TO/blegateway}
HERE=$(cd "$(dirname "$0")" && pwd)
VENV="${HA_VENV:-/var/cache/blegateway-ha-venv}"
"$HERE/install-ha.sh"
exec "$VENV/bin/python" "$HERE/test_homeassistant.py" "$BIN" "$VENV"
