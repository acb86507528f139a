#!/bin/sh
# Installs blegateway without the Debian package (docs/DEPLOY.md): the binary in /usr/local/bin, the systemd unit in
# /etc/systemd/system, the system user and group, /var/lib/blegateway and /etc/blegateway. Run as root:
#   deploy/install.sh PATH/TO/blegateway
# Safe to run again for an upgrade: an existing /etc/blegateway/gateway.yaml and the spool are never touched (the new
# example goes to gateway.yaml.example). The service is not enabled; that is `systemctl enable --now blegateway`.
set -eu

BIN=${1:?usage: install.sh PATH/TO/blegateway}
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
PREFIX=${PREFIX:-/usr/local}

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
"$BIN" --version >/dev/null || { echo "install.sh: $BIN does not run on this machine" >&2; exit 1; }

if ! getent group blegateway >/dev/null; then
    groupadd --system blegateway
fi
if ! getent passwd blegateway >/dev/null; then
    useradd --system --gid blegateway --home-dir /var/lib/blegateway --no-create-home \
        --shell /usr/sbin/nologin --comment "BLEGateway" blegateway
fi

install -d -m 0755 "$PREFIX/bin"
# Replace the binary atomically: a running gateway keeps its old inode until it restarts.
install -m 0755 "$BIN" "$PREFIX/bin/blegateway.new"
mv -f "$PREFIX/bin/blegateway.new" "$PREFIX/bin/blegateway"

install -d -o root -g blegateway -m 0750 /etc/blegateway
install -d -o root -g root -m 0700 /etc/blegateway/credentials
if [ -e /etc/blegateway/gateway.yaml ]; then
    install -o root -g blegateway -m 0640 "$REPO/config/gateway.yaml" /etc/blegateway/gateway.yaml.example
    echo "install.sh: kept /etc/blegateway/gateway.yaml; the shipped example is gateway.yaml.example"
else
    install -o root -g blegateway -m 0640 "$REPO/config/gateway.yaml" /etc/blegateway/gateway.yaml
fi
if [ ! -d /var/lib/blegateway ]; then
    install -d -o blegateway -g blegateway -m 0750 /var/lib/blegateway
fi

install -d -m 0755 /etc/systemd/system
sed "s#^ExecStart=/usr/bin/blegateway #ExecStart=$PREFIX/bin/blegateway #" "$REPO/deploy/systemd/blegateway.service" \
    >/etc/systemd/system/blegateway.service.new
chmod 0644 /etc/systemd/system/blegateway.service.new
mv -f /etc/systemd/system/blegateway.service.new /etc/systemd/system/blegateway.service

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    if systemctl is-active --quiet blegateway; then
        systemctl restart blegateway
        echo "install.sh: restarted blegateway on $("$PREFIX/bin/blegateway" --version)"
    fi
fi
echo "install.sh: installed blegateway $("$PREFIX/bin/blegateway" --version). Next: edit /etc/blegateway/gateway.yaml," \
    "put MQTT secrets in /etc/blegateway/credentials/, then: systemctl enable --now blegateway"
