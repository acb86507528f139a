# BLEGateway: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs the Debian packages it needs first, and only those that are missing.

SWIFT        ?= swift
ARCH         := $(shell uname -m)
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Build and runtime libraries (one system-library target each), and the broker the demo and tests start.
PKGS_BUILD   := libbluetooth-dev libmosquitto-dev libsqlite3-dev pkg-config
PKGS_RUN     := mosquitto mosquitto-clients openssl python3-jsonschema socat
# The kernel path is tested in a qemu VM running a Debian kernel and BlueZ's btvirt (x86_64 hosts).
PKGS_KERNEL  := qemu-system-x86 linux-image-amd64 busybox-static bluez bluez-test-tools cpio kmod

.PHONY: all deps deps-kernel build release test test-unit test-kernel demo bench fuzz clean sensors-venv

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
test: deps deps-kernel sensors-venv
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(MAKE) --no-print-directory test-kernel
	$(MAKE) --no-print-directory test-deploy

test-unit: deps
	$(SWIFT) test

# Home Assistant's sensor parsers (and TheengsDecoder), pinned, for the sensor oracle test
# (Tests/BLEDomainTests/SensorOracleTests.swift). Cached outside the clone; rebuilt only when the pins change.
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

# Boots a Debian kernel under qemu (TCG), runs btvirt inside and drives `blegateway` against it.
test-kernel: deps-kernel
ifeq ($(ARCH),x86_64)
	$(SWIFT) build --product blegateway
	Tests/kernel/run.sh "$$($(SWIFT) build --show-bin-path)/blegateway"
else
	@echo "test-kernel: skipped: the VM harness boots an x86_64 Debian kernel; run it on an x86_64 host."
endif

demo: deps
	$(SWIFT) build --product blegateway
	deploy/demo.sh "$$($(SWIFT) build --show-bin-path)/blegateway"

bench: deps
	# One product per build: given two --product options, swift build builds only the last.
	$(SWIFT) build -c release --product blegateway-bench
	$(SWIFT) build -c release --product blegateway
	"$$($(SWIFT) build -c release --show-bin-path)/blegateway-bench" $(BENCH_ARGS)

# Bounded libFuzzer run over the H4/HCI/AD parsers (FUZZ_SECONDS, default 60).
FUZZ_SECONDS ?= 60
fuzz: deps
	cd Fuzz && $(SWIFT) build -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
	mkdir -p Fuzz/corpus
	cd Fuzz && "$$($(SWIFT) build --show-bin-path)/FuzzHCIParsers" -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 corpus seeds

clean:
	rm -rf .build Fuzz/.build

# Deployment (docs/DEPLOY.md). `make deb` builds blegateway_<version>_<arch>.deb for this machine's architecture
# from a release binary that carries its Swift runtime; `make test-deploy` checks the unit, installs and upgrades the
# package in a debootstrapped Debian 12 root (cached in /var/cache/blegateway-test), and runs the fleet ACL and the
# edge bridge on loopback mosquittos. The root part needs root (chroot, mount).
PKGS_DEPLOY  := dpkg-dev binutils debootstrap zstd systemd systemd-container mosquitto mosquitto-clients openssl
DEB_DIR      ?= .build/deb
RELEASE_BIN   = $$($(SWIFT) build -c release --static-swift-stdlib --show-bin-path)/blegateway

.PHONY: deb test-deploy

deb: deps
	$(call apt_install,$(PKGS_DEPLOY))
	$(SWIFT) build -c release --static-swift-stdlib --product blegateway
	deploy/debian/build-deb.sh "$(RELEASE_BIN)" $(DEB_DIR)

test-deploy: deb
	bin="$(RELEASE_BIN)"; \
	  $(SUDO) Tests/deploy/run.sh "$$bin" "$(DEB_DIR)/blegateway_$$("$$bin" --version)_$$(dpkg --print-architecture).deb"
