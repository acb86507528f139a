#!/usr/bin/env bash
# Builds blegateway_<version>_<arch>.deb with dpkg-deb from a release binary (`make deb`).
#   build-deb.sh BINARY OUTDIR [VERSION]
# VERSION defaults to what `BINARY --version` prints. The architecture is the build machine's (dpkg
# --print-architecture); the binary must be built for it (`swift build -c release --static-swift-stdlib`, so the
# target needs no Swift runtime). Depends is computed from the shared libraries the binary links.
# Environment: DEB_COMPRESS (xz, the default; gzip is 5x faster for test builds), DEB_CONFIG (the conffile shipped
# as /etc/blegateway/gateway.yaml, default config/gateway.yaml; the upgrade test ships a different one), and for a
# cross-built binary DEB_ARCH (e.g. arm64) with DEB_DEPENDS (dpkg-shlibdeps cannot read a foreign binary).
set -euo pipefail

BIN=${1:?usage: build-deb.sh BINARY OUTDIR [VERSION]}
OUT=${2:?usage: build-deb.sh BINARY OUTDIR [VERSION]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VERSION=${3:-$("$BIN" --version)}
ARCH=${DEB_ARCH:-$(dpkg --print-architecture)}
CONFIG=${DEB_CONFIG:-$ROOT/config/gateway.yaml}
COMPRESS=${DEB_COMPRESS:-xz}
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/blegateway-deb.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

case "$VERSION" in
    [0-9]*) ;;
    *) echo "build-deb.sh: version \"$VERSION\" must start with a digit" >&2; exit 1 ;;
esac

pkg=$STAGE/pkg
install -d -m 0755 "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" \
    "$pkg/usr/share/doc/blegateway/examples/mosquitto" "$pkg/usr/share/doc/blegateway/examples/systemd"
install -d -m 0750 "$pkg/etc/blegateway"
install -d -m 0700 "$pkg/etc/blegateway/credentials"
install -m 0755 "$BIN" "$pkg/usr/bin/blegateway"
strip --strip-unneeded "$pkg/usr/bin/blegateway" 2>/dev/null || true
install -m 0644 "$ROOT/deploy/systemd/blegateway.service" "$pkg/lib/systemd/system/"
# The fleet service (docs/FLEET.md): shipped, not enabled; it reads fleet.yaml and keeps its plots in
# /var/lib/blegateway-fleet (StateDirectory=).
install -m 0644 "$ROOT/deploy/systemd/blegateway-fleet.service" "$pkg/lib/systemd/system/"
install -m 0640 "$CONFIG" "$pkg/etc/blegateway/gateway.yaml"
install -m 0640 "$ROOT/config/fleet.yaml" "$pkg/etc/blegateway/fleet.yaml"
install -m 0644 "$ROOT/docs/DEPLOY.md" "$ROOT/docs/CONFIG.md" "$pkg/usr/share/doc/blegateway/"
[ -f "$ROOT/docs/FLEET.md" ] && install -m 0644 "$ROOT/docs/FLEET.md" "$pkg/usr/share/doc/blegateway/"
install -d -m 0755 "$pkg/usr/share/doc/blegateway/examples/grafana"
install -m 0644 "$ROOT"/deploy/grafana/*.json "$pkg/usr/share/doc/blegateway/examples/grafana/"
[ -f "$ROOT/docs/TOPICS.md" ] && install -m 0644 "$ROOT/docs/TOPICS.md" "$pkg/usr/share/doc/blegateway/"
install -m 0644 "$ROOT/deploy/systemd/serial-adapter.conf" "$ROOT/deploy/systemd/adapter-recovery.conf" \
    "$pkg/usr/share/doc/blegateway/examples/systemd/"
install -d -m 0755 "$pkg/usr/share/doc/blegateway/examples/udev"
install -m 0644 "$ROOT"/deploy/udev/*.rules "$pkg/usr/share/doc/blegateway/examples/udev/"
install -m 0644 "$ROOT"/deploy/mosquitto/*.conf "$ROOT"/deploy/mosquitto/*.acl \
    "$pkg/usr/share/doc/blegateway/examples/mosquitto/"

depends=${DEB_DEPENDS:-}
# Depends: dpkg-shlibdeps maps each NEEDED library to its package with the minimum version the symbols require.
mkdir -p "$STAGE/src/debian"
printf 'Source: blegateway\n\nPackage: blegateway\nArchitecture: any\n' >"$STAGE/src/debian/control"
if [ -z "$depends" ]; then
    depends=$(cd "$STAGE/src" && dpkg-shlibdeps -O "$pkg/usr/bin/blegateway" 2>"$STAGE/shlibdeps.err" \
        | sed -n 's/^shlibs:Depends=//p') || true
fi
if [ -z "$depends" ]; then
    # Fallback without version floors: ldd + dpkg -S.
    echo "build-deb.sh: dpkg-shlibdeps failed ($(head -c 300 "$STAGE/shlibdeps.err")); using ldd + dpkg -S" >&2
    depends=$(ldd "$pkg/usr/bin/blegateway" | awk '/=> \//{print $3}' | while read -r lib; do
        dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib"; done \
        | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g')
fi
[ -n "$depends" ] || { echo "build-deb.sh: could not determine Depends" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@DEPENDS@/$depends/" -e "s/@SIZE@/$size/" \
    "$ROOT/deploy/debian/control.in" >"$pkg/DEBIAN/control"
install -m 0644 "$ROOT/deploy/debian/conffiles" "$pkg/DEBIAN/"
install -m 0755 "$ROOT/deploy/debian/postinst" "$ROOT/deploy/debian/prerm" "$ROOT/deploy/debian/postrm" "$pkg/DEBIAN/"

mkdir -p "$OUT"
deb="$OUT/blegateway_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Z"$COMPRESS" --build "$pkg" "$deb" >/dev/null
echo "$deb"
echo "build-deb.sh: Depends: $depends" >&2
