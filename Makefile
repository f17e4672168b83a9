# netobserver — the two commands that matter: `make run` and `make test`.
# Both install the Debian packages they need when missing (via sudo when not root).

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

SWIFT ?= $(shell command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

BUILD_PACKAGES := libdbus-1-dev libcurl4-openssl-dev pkg-config dbus-daemon gcc libglib2.0-dev
TEST_PACKAGES := $(BUILD_PACKAGES) dbus-bin systemd libglib2.0-bin qdbus-qt5 python3 python3-dbus python3-gi \
                 iproute2 iptables libxml2-utils procps util-linux passwd python3-seccomp \
                 prometheus zsh fish python3-dbusmock nftables dnsmasq-base xdg-desktop-portal python3-pyqt6 strace \
                 tayga openssl ca-certificates debhelper lintian dpkg-dev fakeroot unbound
DEB_PACKAGES := $(BUILD_PACKAGES) debhelper lintian dpkg-dev fakeroot
BENCH_PACKAGES := $(BUILD_PACKAGES) make libsystemd-dev dbus-bin python3-dbus python3-gi python3-dbusmock iproute2 procps \
                  xdg-desktop-portal openssl curl nftables dnsmasq-base unbound fping

# Warnings are errors wherever `make` builds: the standard is none.
SWIFT_FLAGS := -Xswiftc -warnings-as-errors
# No $$ORIGIN run path: the installed binaries load no library from beside themselves.
# Read-only relocations, bound at start, and the C shims' calls fortified, as Debian builds its own.
RELEASE_FLAGS := -c release --static-swift-stdlib --disable-local-rpath $(SWIFT_FLAGS) \
                 -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now -Xcc -D_FORTIFY_SOURCE=2

.PHONY: all build release run test check purity bench deb deps-deb format format-check text-order fuzz install uninstall deps-build deps-test deps-bench gio-module gio-fuzz-replay clean

all: build

# Installs the packages in $(1) that dpkg does not know as installed.
define apt_install
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

deps-build:
	$(call apt_install,$(BUILD_PACKAGES))

deps-test:
	$(call apt_install,$(TEST_PACKAGES))

deps-bench:
	$(call apt_install,$(BENCH_PACKAGES))

deps-deb:
	$(call apt_install,$(DEB_PACKAGES))

build: deps-build gio-module
	$(SWIFT) build $(SWIFT_FLAGS)

# The GIO module is C against GIO: it is loaded into every GLib program, so no Swift runtime goes with it.
GIO_MODULE := .build/gio/libgionetobserver.so
GIO_MODULE_SOURCES := $(wildcard gio/*.c gio/*.h)
gio-module: deps-build $(GIO_MODULE)

$(GIO_MODULE): $(GIO_MODULE_SOURCES)
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -g -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror -fvisibility=hidden -D_FORTIFY_SOURCE=2 \
	  $(CPPFLAGS) $(CFLAGS) \
	  $$(pkg-config --cflags gio-2.0) $(filter %.c,$^) -o $@ $$(pkg-config --libs gio-2.0) -Wl,-z,defs -Wl,--as-needed -Wl,-z,relro -Wl,-z,now $(LDFLAGS)

release: deps-build
	$(SWIFT) build $(RELEASE_FLAGS)

# Runs the daemon in the foreground: on the session bus when one is set,
# else on a private bus that tools/run.sh starts and stops.
run: release
	@tools/run.sh "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/netobserverd" $(ARGS)

# systemd-resolved 252 for the DNS truth tests, unpacked and never installed: Debian's package takes over
# /etc/resolv.conf when installed. The tests run it in their own namespaces (NETOBSERVER_RESOLVED).
RESOLVED_BIN := .build/resolved/root/lib/systemd/systemd-resolved
$(RESOLVED_BIN):
	@rm -rf .build/resolved && mkdir -p .build/resolved
	@cd .build/resolved && { apt-get download systemd-resolved >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && apt-get download systemd-resolved >/dev/null 2>&1; }; } && \
	  dpkg-deb -x systemd-resolved_*.deb root

# The package is built first: the systemd lane installs and purges it (NETOBSERVER_DEB).
test: deps-test gio-module gio-fuzz-replay purity format-check deb $(RESOLVED_BIN)
	@# Namespaces left by an interrupted earlier run (tests name theirs no-*).
	@for ns in $$(ip netns list 2>/dev/null | awk '/^no-/ {print $$1}'); do ip netns del $$ns 2>/dev/null || true; done
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	tools/check-install.sh
	@# The systemd lane's files, staged before `swift test` takes the build directory's lock.
	rm -rf .build/lane-stage && $(MAKE) -s install DESTDIR=$(CURDIR)/.build/lane-stage PREFIX=/usr >/dev/null
	NETOBSERVERD="$$($(SWIFT) build $(SWIFT_FLAGS) --show-bin-path)/netobserverd" \
	NETOBSERVER_DEB="$(CURDIR)/netobserver_$(DEB_VERSION)_$(DEB_ARCH).deb" NETOBSERVER_LANE_STAGE="$(CURDIR)/.build/lane-stage" \
	NETOBSERVER_RESOLVED="$(CURDIR)/$(RESOLVED_BIN)" \
	  $(SWIFT) test --disable-swift-testing $(SWIFT_FLAGS)

# The GIO module's reading of what the service sends, under AddressSanitizer, over the fuzz corpus and any crash input.
GIO_FUZZ_SOURCES := gio/service-values.c gio/verdict.c Fuzz/gio/fuzz_gio.c
gio-fuzz-replay: deps-build
	@mkdir -p .build/fuzz
	$(CC) -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -Wall -Werror $$(pkg-config --cflags gio-2.0) \
	  $(GIO_FUZZ_SOURCES) Fuzz/gio/replay.c -o .build/fuzz/gio-replay $$(pkg-config --libs gio-2.0)
	.build/fuzz/gio-replay Fuzz/gio/corpus Fuzz/gio/crashes

# The pure parts alone: each pure target's test target and the simulation, in virtual time; no root,
# no bus, no socket (under a minute). The list of pure targets is tools/purity.sh's.
CHECK_SUITES = $(shell tools/purity.sh --list | sed 's/\([A-Za-z]*\)/\1Tests/g; s/ /|/g')|SimulationTests
# The pure targets (NetAddress, Timekeeping, ProbeRules, ReachabilityRules, MonitorRules) import only one another.
purity:
	@tools/purity.sh

# The toolchain's swift-format, as .swift-format configures it (4 spaces, 120 columns, its lint rules off: only the
# layout is checked). `make format` rewrites Sources and Tests in place; `make check` and `make test` refuse a
# file it would change. Lines it cannot break (a long string literal or comment) may pass 120.
format:
	$(SWIFT) format format -i -r Sources Tests

format-check:
	@$(SWIFT) format lint --strict -r Sources Tests || { echo "run make format"; exit 1; }

check: deps-build purity format-check
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --disable-swift-testing $(SWIFT_FLAGS) --filter '^($(CHECK_SUITES))\.'

bench: deps-bench release gio-module $(RESOLVED_BIN)
	@for ns in $$(ip netns list 2>/dev/null | awk '/^nob-/ {print $$1}'); do ip netns del $$ns 2>/dev/null || true; done
	@bin="$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)"; \
	  "$$bin/netobserver-bench" && "$$bin/netobserver-bench" portal && "$$bin/netobserver-bench" blame && "$$bin/netobserver-bench" simulate 20000 && \
	  "$$bin/netobserver-bench" dual-stack && \
	  tools/bench_dns.sh "$$bin/netobserverd" "$$bin/netobserver" "$(CURDIR)/$(RESOLVED_BIN)" && \
	  tools/pure-lines.sh && \
	  tools/bench.sh "$$bin/netobserverd"

# The functions an idle daemon runs, linked first in the release binary (Sources/netobserverd/steady-text.order):
# regenerate after large changes; stale names are skipped.
text-order: release
	tools/text-order.sh "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/netobserverd"
	@# SwiftPM does not see the order file as an input: the daemon is linked again by hand.
	rm -f "$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/netobserverd"
	$(SWIFT) build $(RELEASE_FLAGS) --product netobserverd

# libFuzzer on the rtnetlink parser, the router advertisements' options, the sock_diag parser, the ICMP reply parser, the GIO module's reading of the
# service's replies and signals, the D-Bus surface (the whole service)
# and the state file, the validators, the client and the system-bus follower: FUZZ_RUNS executions
# each (default 10 million); crash inputs land in Fuzz/*/crashes, which `make test` replays.
FUZZ_RUNS ?= 10000000
# Each fuzzer is a package of its own over the real modules (libFuzzer brings its own main), built
# with the sanitizers; lld, because gold crashes on the sanitizer build. Fuzz/parsers: the pure rtnetlink,
# router advertisement, ICMP reply, sock_diag, captive-portal API, history and numeric address readers (FUZZ_PARSER picks
# one). Fuzz/dbus: the D-Bus surface and the others (FUZZ_SURFACE picks one) over the
# real DBusKit, MonitorService and MonitorClientCore; libdbus demarshals each D-Bus input and
# ObjectServer dispatches it to the whole service.
# Without manifest caching: the cached build plan of a fuzzer package misses a source file added to the
# main package since its last build (seen: a new DBusKit file, then "cannot find type").
FUZZ_BUILD := build -c release --disable-build-manifest-caching -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld
FUZZ_PARSERS := netlink router echo sockdiag capport history address
PARSER_FUZZER := .build/fuzz/parsers-spm/release/ParserFuzzer
FUZZ_SURFACES := dbus statefile validators client follower helper dns
SURFACE_FUZZER := .build/fuzz/dbus-spm/release/SurfaceFuzzer

fuzz: deps-build
	mkdir -p .build/fuzz
	@# A failed build must stop here, not fuzz a stale binary.
	cd Fuzz/parsers && out=$$($(SWIFT) $(FUZZ_BUILD) --scratch-path ../../.build/fuzz/parsers-spm \
	  --product ParserFuzzer 2>&1) || { echo "$$out"; exit 1; }; echo "$$out" | grep -E "error|warning:" || true
	@for parser in $(FUZZ_PARSERS); do \
	  echo "fuzzing $$parser"; mkdir -p .build/fuzz/$$parser-corpus; cp Fuzz/$$parser/corpus/* .build/fuzz/$$parser-corpus/; \
	  FUZZ_PARSER=$$parser SWIFT_BACKTRACE=enable=no $(PARSER_FUZZER) -runs=$(FUZZ_RUNS) -print_final_stats=1 \
	    -artifact_prefix=Fuzz/$$parser/crashes/ .build/fuzz/$$parser-corpus 2>&1 \
	    | grep -E "^(Done|stat::number_of_executed_units|==.*ERROR|SUMMARY)" || exit 1; done
	@# The GIO module (C, loaded into every GLib program): GetAll replies and PropertiesChanged bodies.
	$(dir $(SWIFT))clang -g -O1 -fsanitize=fuzzer,address $$(pkg-config --cflags gio-2.0) $(GIO_FUZZ_SOURCES) \
	  -o .build/fuzz/gio $$(pkg-config --libs gio-2.0) 2>&1 | grep -v "Cannot export local symbol '__asan" || true
	@test -x .build/fuzz/gio
	mkdir -p .build/fuzz/gio-corpus && cp Fuzz/gio/corpus/* .build/fuzz/gio-corpus/
	.build/fuzz/gio -runs=$(FUZZ_RUNS) -print_final_stats=1 -artifact_prefix=Fuzz/gio/crashes/ .build/fuzz/gio-corpus 2>&1 \
	  | grep -E "^(Done|stat::number_of_executed_units|==.*ERROR|SUMMARY)"
	@# A failed build must stop here, not fuzz a stale binary.
	cd Fuzz/dbus && out=$$($(SWIFT) $(FUZZ_BUILD) --scratch-path ../../.build/fuzz/dbus-spm --product SurfaceFuzzer 2>&1) \
	  || { echo "$$out"; exit 1; }; \
	  echo "$$out" | grep -E "error|warning:" || true
	@for surface in $(FUZZ_SURFACES); do \
	  echo "fuzzing $$surface"; mkdir -p .build/fuzz/$$surface-corpus; cp Fuzz/$$surface/corpus/* .build/fuzz/$$surface-corpus/; \
	  FUZZ_SURFACE=$$surface LSAN_OPTIONS=suppressions=Fuzz/lsan.supp SWIFT_BACKTRACE=enable=no $(SURFACE_FUZZER) -runs=$(FUZZ_RUNS) -print_final_stats=1 \
	    -artifact_prefix=Fuzz/$$surface/crashes/ .build/fuzz/$$surface-corpus 2>&1 \
	    | grep -E "^(Done|stat::number_of_executed_units|==.*ERROR|SUMMARY)" || exit 1; done

# make install [PREFIX=/usr/local] [DESTDIR=...]: binaries, bus policy, the system bus's activation file, the
# systemd unit, the sysusers file and the man pages. make uninstall removes exactly those. No session-bus activation
# file: a per-user daemon started by a client's call would probe on its own beside the system's (INTERFACE.md).
PREFIX ?= /usr/local
SBINDIR := $(PREFIX)/sbin
# GIO's module directory as gio-2.0.pc says, under PREFIX (/usr/lib/<triplet>/gio/modules with PREFIX=/usr).
GIOMODULEDIR ?= $(shell pkg-config --define-variable=prefix=$(PREFIX) --variable=giomoduledir gio-2.0 2>/dev/null)
SYSTEM_GIOMODULEDIR := $(shell pkg-config --variable=giomoduledir gio-2.0 2>/dev/null)
# Where the system looks whatever PREFIX is: dbus-daemon reads bus policies from /usr/share/dbus-1/system.d and
# /etc/dbus-1/system.d only; Debian's zsh reads /usr/local/share/zsh/site-functions, not vendor-completions there.
# systemd's units: Debian 12 keeps packaged units in /lib/systemd/system (the package passes it).
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
ifeq ($(PREFIX),/usr)
DBUS_POLICYDIR ?= /usr/share/dbus-1/system.d
ZSH_COMPLETIONDIR ?= /usr/share/zsh/vendor-completions
else
DBUS_POLICYDIR ?= /etc/dbus-1/system.d
ZSH_COMPLETIONDIR ?= $(PREFIX)/share/zsh/site-functions
endif
INSTALLED := $(SBINDIR)/netobserverd $(PREFIX)/bin/netobserver \
  $(DBUS_POLICYDIR)/org.netobserver.Monitor.conf \
  $(PREFIX)/share/dbus-1/system-services/org.netobserver.Monitor.service \
  $(PREFIX)/share/dbus-1/interfaces/org.netobserver.Monitor.xml \
  $(SYSTEMDUNITDIR)/netobserver.service \
  $(SYSTEMDUNITDIR)/netobserver-wait-online.service \
  $(PREFIX)/lib/sysusers.d/netobserver.conf \
  $(PREFIX)/share/man/man8/netobserverd.8 $(PREFIX)/share/man/man1/netobserver.1 \
  $(PREFIX)/share/bash-completion/completions/netobserver \
  $(ZSH_COMPLETIONDIR)/_netobserver \
  $(PREFIX)/share/fish/vendor_completions.d/netobserver.fish \
  $(PREFIX)/share/doc/netobserver/netobserver-metrics.service \
  $(GIOMODULEDIR)/libgionetobserver.so

# Every directory is made 0755 and every file given its mode, whatever the caller's umask.
install: release gio-module
	@[ -n "$(GIOMODULEDIR)" ] || { echo "pkg-config knows no giomoduledir (is libglib2.0-dev installed?)"; exit 1; }
	@umask 022; for d in $(sort $(dir $(INSTALLED))); do mkdir -p "$(DESTDIR)$$d"; done
	install -D -m 644 $(GIO_MODULE) "$(DESTDIR)$(GIOMODULEDIR)/libgionetobserver.so"
	@# A staged tree (DESTDIR) carries no giomodule.cache: the package's trigger writes it on the target.
	[ -n "$(DESTDIR)" ] || gio-querymodules "$(GIOMODULEDIR)"
	@bin="$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)"; set -e; \
	  install -D -m 755 "$$bin/netobserverd" "$(DESTDIR)$(SBINDIR)/netobserverd"; \
	  install -D -m 755 "$$bin/netobserver" "$(DESTDIR)$(PREFIX)/bin/netobserver"
	install -D -m 644 dbus/org.netobserver.Monitor.conf "$(DESTDIR)$(DBUS_POLICYDIR)/org.netobserver.Monitor.conf"
	install -D -m 644 dbus/org.netobserver.Monitor.xml "$(DESTDIR)$(PREFIX)/share/dbus-1/interfaces/org.netobserver.Monitor.xml"
	install -D -m 644 dbus/netobserver.sysusers "$(DESTDIR)$(PREFIX)/lib/sysusers.d/netobserver.conf"
	install -D -m 644 man/netobserverd.8 "$(DESTDIR)$(PREFIX)/share/man/man8/netobserverd.8"
	install -D -m 644 man/netobserver.1 "$(DESTDIR)$(PREFIX)/share/man/man1/netobserver.1"
	install -D -m 644 completions/netobserver.bash "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/netobserver"
	install -D -m 644 completions/_netobserver "$(DESTDIR)$(ZSH_COMPLETIONDIR)/_netobserver"
	install -D -m 644 completions/netobserver.fish "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/netobserver.fish"
	mkdir -p "$(DESTDIR)$(PREFIX)/share/doc/netobserver"
	sed 's|@bindir@|$(PREFIX)/bin|g' dbus/netobserver-metrics.service.in > "$(DESTDIR)$(PREFIX)/share/doc/netobserver/netobserver-metrics.service"
	sed 's|@bindir@|$(PREFIX)/bin|g' dbus/netobserver-wait-online.service.in > "$(DESTDIR)$(SYSTEMDUNITDIR)/netobserver-wait-online.service"
	chmod 644 "$(DESTDIR)$(SYSTEMDUNITDIR)/netobserver-wait-online.service"
	chmod 644 "$(DESTDIR)$(PREFIX)/share/doc/netobserver/netobserver-metrics.service"
	for f in "dbus/netobserver.service.in:$(SYSTEMDUNITDIR)/netobserver.service" \
	         "dbus/system-services.service.in:$(PREFIX)/share/dbus-1/system-services/org.netobserver.Monitor.service"; do \
	  sed 's|@sbindir@|$(SBINDIR)|g' "$${f%%:*}" > "$(DESTDIR)$${f#*:}"; \
	  chmod 644 "$(DESTDIR)$${f#*:}"; \
	done
	@# Said plainly where the system will not look by itself.
	@[ "$(GIOMODULEDIR)" = "$(SYSTEM_GIOMODULEDIR)" ] || echo "note: GLib loads GIO modules from $(SYSTEM_GIOMODULEDIR) only:" \
	  "the module in $(GIOMODULEDIR) is used by programs started with GIO_EXTRA_MODULES=$(GIOMODULEDIR)," \
	  "or install with PREFIX=/usr to have every GLib program use it"
	@case "$(PREFIX)" in /usr|/usr/local) ;; *) echo "note: systemd, dbus-daemon, man and the shells do not look under" \
	  "$(PREFIX): link the units from $(PREFIX)/lib/systemd/system into /etc/systemd/system and the D-Bus service files" \
	  "into /usr/local/share/dbus-1, or install with PREFIX=/usr or /usr/local";; esac

# make deb: netobserver_VERSION_ARCH.deb at the top of the tree (dpkg-buildpackage over debian/, the
# Swift runtime linked statically), checked by lintian; the .buildinfo, .changes and debug symbols
# go to .build/deb. Install it with: apt-get install ./netobserver_*.deb
DEB_VERSION = $(shell dpkg-parsechangelog -S Version)
DEB_ARCH = $(shell dpkg-architecture -qDEB_HOST_ARCH)
DEB_DIR := .build/deb
deb: deps-deb
	@mkdir -p $(DEB_DIR)
	NETOBSERVER_DEB_DIR=$(DEB_DIR) dpkg-buildpackage --build=binary --no-sign \
	  --buildinfo-option=-u$(DEB_DIR) --changes-option=-u$(DEB_DIR) \
	  --buildinfo-file=$(DEB_DIR)/netobserver_$(DEB_VERSION)_$(DEB_ARCH).buildinfo \
	  --changes-file=$(DEB_DIR)/netobserver_$(DEB_VERSION)_$(DEB_ARCH).changes
	cp $(DEB_DIR)/netobserver_$(DEB_VERSION)_$(DEB_ARCH).deb .
	lintian --fail-on error netobserver_$(DEB_VERSION)_$(DEB_ARCH).deb

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	[ -n "$(DESTDIR)" ] || [ ! -d "$(GIOMODULEDIR)" ] || gio-querymodules "$(GIOMODULEDIR)"

clean:
	rm -rf .build
