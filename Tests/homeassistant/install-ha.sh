#!/bin/sh
# Installs Home Assistant Core and the MQTT integration's requirements into a cached virtual environment, so the
# test needs no network once this has run. Idempotent: a venv whose marker matches the pinned version is kept.
set -eu
# The newest release that installs with the machine's Python 3.13 (pyenv's 3.13.0); later ones ask for a newer Python.
HA_VERSION="${HA_VERSION:-2025.4.4}"
VENV="${HA_VENV:-/var/cache/blegateway-ha-venv}"
REQUIREMENTS="$(cd "$(dirname "$0")" && pwd)/ha-requirements.txt"
# The marker names the version and the requirements' checksum: a change to either installs afresh.
MARKER="$VENV/.blegateway-ha-$HA_VERSION-$(cksum <"$REQUIREMENTS" | cut -d' ' -f1)"
[ -f "$MARKER" ] && exit 0

# Home Assistant 2025.4 requires Python 3.13; the machine's pyenv carries it.
PY="${HA_PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in "$(pyenv root 2>/dev/null)/versions/3.13."*/bin/python3.13 \
      /root/.pyenv/versions/3.13.*/bin/python3.13 \
      "$(command -v python3.13 || true)"; do
    [ -x "$candidate" ] && PY="$candidate" && break
  done
fi
[ -n "$PY" ] || { echo "install-ha: no Python 3.13 found (pyenv install 3.13)" >&2; exit 1; }

rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q "homeassistant==$HA_VERSION"
# What Home Assistant would otherwise fetch at run time (it runs with --skip-pip), pinned to what it asks for.
"$VENV/bin/pip" install -q -r "$REQUIREMENTS" \
  -c "$VENV/lib/python3.13/site-packages/homeassistant/package_constraints.txt"
touch "$MARKER"
