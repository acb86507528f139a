# BLEGateway: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs the Debian packages it needs first, and only those that are missing.

SWIFT        ?= swift
ARCH         := $(shell uname -m)
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and runtime libraries (one system-library target each), and the broker the demo and tests start.
PKGS_BUILD   := libbluetooth-dev libmosquitto-dev libsqlite3-dev libssl-dev pkg-config
PKGS_RUN     := mosquitto mosquitto-clients nats-server openssl python3-jsonschema python3-venv socat tshark
# The kernel path is tested in a qemu VM running a Debian kernel and BlueZ's btvirt (x86_64 hosts).
PKGS_KERNEL  := qemu-system-x86 linux-image-amd64 busybox-static bluez bluez-test-tools cpio kmod e2fsprogs

.PHONY: all deps deps-kernel deps-browser test-venv sensors-venv esphome-venv esphome-proto ha-venv build release test test-unit test-kernel test-powerloss soak test-homeassistant test-fleet demo bench fuzz test-fuzz amqtt-venv clean

all: build

# Installs only what is missing; a no-op when everything is there.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(PKGS_BUILD) $(PKGS_RUN))

# The payload validator runs under pinned packages (Tests/tools/requirements.txt), kept outside the clone and
# rebuilt only when the pins change.
VENV         ?= /var/cache/blegateway-venv
test-venv: deps
	@if ! cmp -s Tests/tools/requirements.txt $(VENV)/requirements.txt; then \
	  echo "Building the validator's venv in $(VENV)"; \
	  $(SUDO) rm -rf $(VENV) && $(SUDO) /usr/bin/python3 -m venv $(VENV) && \
	  $(SUDO) $(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/tools/requirements.txt && \
	  $(SUDO) cp Tests/tools/requirements.txt $(VENV)/requirements.txt; \
	fi

# The fleet dashboard's browser test: Debian's headless Chromium and its driver, Selenium and a Prometheus text
# parser from PyPI in a venv cached outside the clone (made once, reused by every clone).
PKGS_BROWSER := chromium chromium-driver python3-venv
BROWSER_VENV ?= /var/cache/blegateway-browser-venv
deps-browser:
	$(call apt_install,$(PKGS_BROWSER))
	@if ! "$(BROWSER_VENV)/bin/python" -c 'import selenium, prometheus_client' 2>/dev/null; then \
	  echo "Creating $(BROWSER_VENV)"; \
	  $(SUDO) mkdir -p "$(BROWSER_VENV)" && $(SUDO) chown "$$(id -u)" "$(BROWSER_VENV)" && \
	  python3 -m venv "$(BROWSER_VENV)" && \
	  "$(BROWSER_VENV)/bin/pip" install -q "selenium>=4.11,<5" "prometheus-client>=0.17,<1"; \
	fi

deps-kernel:
ifeq ($(ARCH),x86_64)
	$(call apt_install,$(PKGS_KERNEL))
endif

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product blegateway

# Unit, protocol and end-to-end tests (a real mosquitto, SQLite on real files, the simulator), then the Linux
# kernel path in a VM, then the Debian package in a Debian root. Each part prints its own closing count.
test: deps deps-kernel test-venv sensors-venv amqtt-venv ha-venv esphome-venv
	# Package.swift lists exactly what each target imports, and docs/ARCHITECTURE.md draws that graph.
	$(SWIFT) package dump-package | python3 Tests/tools/check_target_imports.py --graph docs/ARCHITECTURE.md
	# The format .swift-format describes (120 columns), on the shipped code, the benchmarks, the tests and the fuzzers.
	$(SWIFT) format lint --strict --recursive Sources Benchmarks Tests Fuzz
	$(SWIFT) build --build-tests
	# One test at a time: side by side, the suites that start brokers, captures and Python oracles starved the MQTT
	# tests' timeouts on two cores, and Foundation's Process crashed in waitUntilExit with many children at once.
	Tests/tools/swift-test.sh $(SWIFT)
	$(MAKE) --no-print-directory test-homeassistant
	$(MAKE) --no-print-directory test-fleet
	# The kernel checks, then the power-loss drill: side by side (one TCG vCPU each) they saved four minutes, but the
	# VM's shared-mode checks with bluetoothd then failed (an adapter's return published 20 s late, a pairing that
	# never came) where alone they passed.
	$(MAKE) --no-print-directory test-kernel
	$(MAKE) --no-print-directory test-powerloss
	$(MAKE) --no-print-directory test-deploy DEB_BUILD=debug
	$(MAKE) --no-print-directory test-fuzz

test-unit: deps test-venv
	$(SWIFT) test

# Home Assistant's sensor parsers (and TheengsDecoder), pinned, for the sensor oracle test
# (Tests/BLEDomainTests/SensorOracleTests.swift). Cached outside the clone; rebuilt only when the pins change.
# A second broker implementation (amqtt, Python), for the retained-config round trip (docs/DEPLOY.md, "Brokers").
AMQTT_VENV := /var/cache/blegateway-amqtt-venv
AMQTT_REQS := Tests/tools/amqtt-requirements.txt
amqtt-venv:
	$(call apt_install,python3-venv)
	@if ! cmp -s $(AMQTT_REQS) $(AMQTT_VENV)/requirements.txt; then \
	  echo "Building the second broker's venv in $(AMQTT_VENV)"; \
	  $(SUDO) rm -rf $(AMQTT_VENV) && $(SUDO) python3 -m venv $(AMQTT_VENV) && \
	  $(SUDO) $(AMQTT_VENV)/bin/pip install -q --disable-pip-version-check -r $(AMQTT_REQS) && \
	  $(SUDO) cp $(AMQTT_REQS) $(AMQTT_VENV)/requirements.txt; \
	fi

# Home Assistant's ESPHome client (aioesphomeapi, the version Home Assistant 2025.4 pins), for the proxy's end-to-end
# test (Tests/BLEGatewayTests/ESPHomeProxyEndToEndTests.swift). Cached outside the clone; rebuilt when the pin changes.
ESPHOME_VENV := /var/cache/blegateway-esphome-venv
ESPHOME_REQS := Tests/tools/esphome-requirements.txt
esphome-venv:
	$(call apt_install,python3-venv)
	@if ! cmp -s $(ESPHOME_REQS) $(ESPHOME_VENV)/requirements.txt; then \
	  echo "Building the ESPHome client's venv in $(ESPHOME_VENV)"; \
	  $(SUDO) rm -rf $(ESPHOME_VENV) && $(SUDO) python3 -m venv $(ESPHOME_VENV) && \
	  $(SUDO) $(ESPHOME_VENV)/bin/pip install -q --disable-pip-version-check -r $(ESPHOME_REQS) && \
	  $(SUDO) cp $(ESPHOME_REQS) $(ESPHOME_VENV)/requirements.txt; \
	fi

# The proxy's messages, generated once from the api.proto that aioesphomeapi (the pinned version) was built from, and
# committed: Sources/BLEESPHome/Generated/api.pb.swift. Needs protoc (Debian's protobuf-compiler) and swift-protobuf's
# protoc-gen-swift built in PROTOC_GEN_SWIFT's folder; not part of `make test`.
PROTOC_GEN_SWIFT ?= $(HOME)/swift-protobuf/.build/release/protoc-gen-swift
esphome-proto: esphome-venv
	$(call apt_install,protobuf-compiler)
	$(ESPHOME_VENV)/bin/python Tests/tools/esphome_api_descriptor.py /tmp/esphome-api.pb
	protoc --plugin=protoc-gen-swift=$(PROTOC_GEN_SWIFT) --descriptor_set_in=/tmp/esphome-api.pb \
	  --swift_out=Sources/BLEESPHome/Generated --swift_opt=Visibility=Public api.proto

SENSORS_VENV := /var/cache/blegateway-sensors-venv
SENSORS_REQS := Tests/tools/sensor-oracle-requirements.txt
sensors-venv:
	$(call apt_install,python3-venv)
	@if ! cmp -s $(SENSORS_REQS) $(SENSORS_VENV)/requirements.txt; then \
	  echo "Building the sensor oracle's venv in $(SENSORS_VENV)"; \
	  $(SUDO) rm -rf $(SENSORS_VENV) && $(SUDO) python3 -m venv $(SENSORS_VENV) && \
	  $(SUDO) $(SENSORS_VENV)/bin/pip install -q --disable-pip-version-check -r $(SENSORS_REQS) && \
	  $(SUDO) cp $(SENSORS_REQS) $(SENSORS_VENV)/requirements.txt; \
	fi
	@# The reference parsers' source distributions, for their own test frames (SensorOracleTests); pinned as above.
	@if ! cmp -s $(SENSORS_REQS) $(SENSORS_VENV)/sdists/requirements.txt; then \
	  echo "Downloading the reference parsers' sdists into $(SENSORS_VENV)/sdists"; \
	  $(SUDO) rm -rf $(SENSORS_VENV)/sdists && \
	  $(SUDO) $(SENSORS_VENV)/bin/pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
	    -d $(SENSORS_VENV)/sdists $$(grep -E '^(bthome-ble|xiaomi-ble|ruuvitag-ble|govee-ble|inkbird-ble|qingping-ble)==' \
	    $(SENSORS_REQS)) && \
	  $(SUDO) cp $(SENSORS_REQS) $(SENSORS_VENV)/sdists/requirements.txt; \
	fi

# Boots a Debian kernel under qemu (TCG), runs btvirt inside and drives `blegateway` against it.
test-kernel: deps-kernel
ifeq ($(ARCH),x86_64)
	$(SWIFT) build --product blegateway
	Tests/kernel/run.sh "$$($(SWIFT) build --show-bin-path)/blegateway"
else
	@echo "test-kernel: skipped: the VM harness boots an x86_64 Debian kernel; run it on an x86_64 host."
endif

# The power-loss drill (docs/RELIABILITY.md): the gateway in the VM with its spool on a virtio disk, the VM killed
# at random moments; every reading the spool said was durable must be found after the reboot. 20 cuts in `make
# test` (~5 min, beside the kernel checks), 200 in `make soak` (~50 min).
POWER_CUTS ?= 20
test-powerloss: deps deps-kernel
ifeq ($(ARCH),x86_64)
	$(SWIFT) build --product blegateway
	POWER_CUTS=$(POWER_CUTS) Tests/kernel/powerloss.sh "$$($(SWIFT) build --show-bin-path)/blegateway"
	# The same drill must catch a gateway that skips its commit fsync (it stops at the first cut that does).
	POWER_CUTS=$(POWER_CUTS) POWER_VARIANT=nofsync Tests/kernel/powerloss.sh "$$($(SWIFT) build --show-bin-path)/blegateway"
else
	@echo "test-powerloss: skipped: the VM harness boots an x86_64 Debian kernel; run it on an x86_64 host."
endif

soak:
	$(MAKE) --no-print-directory test-powerloss POWER_CUTS=200

# Home Assistant discovery checked by a real Home Assistant Core (docs/HOMEASSISTANT.md). The first run installs it
# into a cached venv (/var/cache/blegateway-ha-venv, pyenv's Python 3.13; minutes, ~0.8 GB); each run after that
# takes about 30 s. Prints its own closing count.
# Two of Home Assistant's requirements (pymicro-vad, pyspeex-noise) build from source: a C++ compiler.
PKGS_HA      := g++ dbus

# Home Assistant Core's venv: the real Home Assistant test, and the Swift test that judges every entity the gateway can
# announce with Home Assistant's own schemas and class tables (HomeAssistantClassesTests).
ha-venv:
	$(call apt_install,$(PKGS_HA))
	Tests/homeassistant/install-ha.sh

test-homeassistant: deps deps-browser ha-venv
	$(SWIFT) build --product blegateway
	Tests/homeassistant/run.sh "$$($(SWIFT) build --show-bin-path)/blegateway"

# The fleet service in headless Chromium against the simulated office (Tests/fleet/run.sh); about a minute.
test-fleet: deps deps-browser
	$(SWIFT) build --product blegateway
	Tests/fleet/run.sh "$$($(SWIFT) build --show-bin-path)/blegateway" "$(BROWSER_VENV)/bin/python"

demo: deps
	$(SWIFT) build --product blegateway
	deploy/demo.sh "$$($(SWIFT) build --show-bin-path)/blegateway"

# The peer measured beside the replay benchmark: Home Assistant's advertisement parser, in a venv kept outside the clone.
BENCH_VENV   ?= /var/cache/blegateway-bench-venv
BENCH_PEER   := bluetooth-data-tools==1.29.24

bench: deps esphome-venv
	$(call apt_install,valgrind binutils python3-venv)
	@[ -x $(BENCH_VENV)/bin/python3 ] && $(BENCH_VENV)/bin/pip show -q bluetooth-data-tools >/dev/null 2>&1 || \
	  { python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install -q $(BENCH_PEER); }
	# One product per build: given two --product options, swift build builds only the last.
	$(SWIFT) build -c release --product blegateway-bench
	$(SWIFT) build -c release --product blegateway
	"$$($(SWIFT) build -c release --show-bin-path)/blegateway-bench" $(BENCH_ARGS)

# libFuzzer over every parser that takes bytes from outside (Fuzz/): each harness with its committed seeds.
# HCI: H4, advertising reports, AD structures, beacons, sensor decoders; host: ATT, L2CAP signalling, ACL
# reassembly, GATT values; config: remote-config JSON, the YAML reader; fleet: every schema topic's payload as the
# fleet service folds it, presence, and the site description on <prefix>/fleet/site; ESPHome: what a client on the
# network sends the native API (both framings, the Noise handshake, the requests). A finding fails the run and is kept as
# Fuzz/crash-*. `make fuzz` runs each for FUZZ_SECONDS (default 600) and keeps what it learns in Fuzz/corpus-*;
# `make test` runs each for FUZZ_SMOKE_SECONDS (default 30) from the seeds alone. They run side by side, one per core
# (Tests/tools/fuzz.sh).
FUZZ_SECONDS       ?= 600
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_HARNESSES     := HCIParsers:seeds HostParsers:seeds-host ConfigParsers:seeds-config FleetParsers:seeds-fleet \
                      ESPHomeParsers:seeds-esphome
define fuzz_run
	cd Fuzz && $(SWIFT) build -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
	Tests/tools/fuzz.sh "$$(cd Fuzz && $(SWIFT) build -c debug --show-bin-path)" $(1) $(2) $(FUZZ_HARNESSES)
endef

fuzz: deps
	$(call fuzz_run,$(FUZZ_SECONDS),keep)

test-fuzz: deps
	$(call fuzz_run,$(FUZZ_SMOKE_SECONDS),discard)

clean:
	rm -rf .build Fuzz/.build

# Deployment (docs/DEPLOY.md). `make deb` builds blegateway_<version>_<arch>.deb for this machine's architecture
# from a release binary that carries its Swift runtime; `make test-deploy` checks the unit, installs and upgrades the
# package in a debootstrapped Debian 12 root (cached in /var/cache/blegateway-test), and runs the fleet ACL and the
# edge bridge on loopback mosquittos. The root part needs root (chroot, mount).
PKGS_DEPLOY  := dpkg-dev binutils debootstrap zstd systemd systemd-container mosquitto mosquitto-clients openssl
DEB_DIR      ?= .build/deb
# The configuration the package is built from. `make test` packages the debug build it already has (the same
# build-deb.sh, unit, maintainer scripts and checks; linking it with the Swift runtime takes under a minute) instead of
# spending ten minutes of its budget on a release build; `make deb` and `make test-deploy` alone package release.
DEB_BUILD    ?= release
RELEASE_BIN   = $$($(SWIFT) build -c $(DEB_BUILD) --static-swift-stdlib --show-bin-path)/blegateway

.PHONY: deb test-deploy

deb: deps
	$(call apt_install,$(PKGS_DEPLOY))
	@mkdir -p .build && touch .build/deb-stamp
	# A debug tree's objects were compiled against the shared Swift runtime, whose Foundation asks the linker for
	# neither CoreFoundation nor _FoundationICU, and SwiftPM relinks them as they are: the executable's own module is
	# compiled again, against the static runtime, so that the link asks for both.
	@if [ "$(DEB_BUILD)" = debug ]; then \
	  rm -f "$$($(SWIFT) build -c debug --show-bin-path)"/blegateway.build/*.o; fi
	$(SWIFT) build -c $(DEB_BUILD) --static-swift-stdlib --product blegateway
	deploy/debian/build-deb.sh "$(RELEASE_BIN)" $(DEB_DIR)
	# SwiftPM keeps the objects it compiled for the static runtime when the flag goes away, and the next ordinary
	# debug build then fails to link (-lCoreFoundation): in the everyday debug tree, they are compiled again.
	@if [ "$(DEB_BUILD)" = debug ]; then \
	  find "$$($(SWIFT) build -c debug --show-bin-path)/" -name '*.o' -newer .build/deb-stamp -delete; fi

test-deploy: deb
	bin="$(RELEASE_BIN)"; \
	  $(SUDO) Tests/deploy/run.sh "$$bin" "$(DEB_DIR)/blegateway_$$("$$bin" --version)_$$(dpkg --print-architecture).deb"
