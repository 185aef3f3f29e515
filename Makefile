# shortd - build, run, test.
#   make            release build: build/shortd
#   make run        build, then serve on 127.0.0.1:8080 with data/shortd.db
#                   (make run PORT=9000, or LISTEN=0.0.0.0:9000)
#   make install    the binary, its man page, the systemd unit, the bash
#                   completion and /etc/shortd/shortd.conf, under PREFIX
#                   (/usr/local) and DESTDIR; make uninstall removes them
#   make deb        a Debian package, build/deb/shortd_VERSION_ARCH.deb
#   make test       install what is missing, then every suite (scripts/test.sh):
#                   unit tests under ASan+UBSan and under ThreadSanitizer, a
#                   fuzz smoke pass, end-to-end tests on SQLite and PostgreSQL,
#                   cluster, storage-freeze and browser tests, a bench smoke run
#   make SAN=thread ... a ThreadSanitizer build into build/tsan
#   make PROFILE=1  an -O2 build with frame pointers into build/prof, for perf
#   make fuzz       every libFuzzer target (fuzz/*.c) for FUZZ_SECONDS each
#                   (docs/fuzzing.md); make fuzz-smoke: a few seconds each

CC      ?= cc
PKGS    := libuv sqlite3 libsodium jansson liburcu-memb libmaxminddb zlib libdeflate libpcre2-8 \
           libpq libqrencode libpng hiredis libcrypto libcrypt libcurl
LLHTTP  := /usr/share/llhttp
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wvla -Wformat=2 -Werror
BASE    := -std=c17 -D_GNU_SOURCE -pthread -g -Isrc -Ibuild/gen -I/usr/share/include/llhttp
# libcsv (Debian's libcsv-dev) ships no .pc file
LIBS     = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcsv -lm -pthread

V       ?=
Q        = $(if $(V),,@)
SAN     ?=
ifneq ($(PROFILE),)
  OUT   := build/prof
  OPT   := -O2 -fno-omit-frame-pointer
else ifneq ($(HARDEN),)
  # The Debian package's build (make deb): Debian's hardening, checked libc
  # calls and a relocation table made read-only at start-up. A build of its
  # own, so the release build that bench/ measures keeps its flags until a
  # bench run before and after says what these cost.
  OUT   := build/hardened
  OPT   := -O2 -D_FORTIFY_SOURCE=2 -Wl,-z,relro,-z,now
else ifeq ($(SAN),)
  OUT   := build
  OPT   := -O2
else ifeq ($(SAN),thread)
  OUT   := build/tsan
  OPT   := -O1 -fsanitize=thread -fno-omit-frame-pointer
else
  OUT   := build/asan
  OPT   := -O1 -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

SRC      := $(wildcard src/*/*.c)
HDR      := $(wildcard src/*/*.h)
OBJ      := $(SRC:src/%.c=$(OUT)/obj/%.o)
LIBOBJ   := $(filter-out $(OUT)/obj/app/main.o,$(OBJ))
LLOBJ    := $(OUT)/obj/llhttp_api.o $(OUT)/obj/llhttp_http.o $(OUT)/obj/llhttp_llhttp.o
UNITSRC  := $(wildcard tests/unit/*.c)
UNITOBJ  := $(UNITSRC:tests/unit/%.c=$(OUT)/unit/%.o)

.PHONY: all run test unit e2e setup clean asan bench format fuzz fuzz-smoke FORCE install uninstall deb
all: $(OUT)/shortd $(OUT)/shortd.1

# The man page comes from the binary's own tables (src/app/manpage.h).
$(OUT)/shortd.1: $(OUT)/shortd
	@echo "  MAN     $@"
	$(Q)$< man >$@.tmp && mv $@.tmp $@

$(OUT)/shortd: $(OBJ) $(LLOBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -o $@ $^ $(LIBS)

$(OUT)/obj/%.o: src/%.c $(HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE) $(WARN) $(OPT) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -c -o $@ $<

# The version: VERSION (one line), and the commit this build comes from
# (`git describe --always --dirty`; "unknown" outside a git checkout of this
# tree, e.g. an unpacked tarball). They reach the code as -D flags written into
# build/gen/version.h, rewritten only when they change: a flag given on the
# command line would leave an object built at an older commit unrebuilt.
# COMMIT=... names the commit where there is no .git (the container build).
SHORTD_VERSION := $(shell cat VERSION)
VERSION_H := build/gen/version.h
$(OUT)/obj/app/cli.o $(OUT)/obj/app/serve.o $(OUT)/obj/api/api_ops.o: $(VERSION_H)

$(VERSION_H): FORCE
	@mkdir -p $(@D)
	@c="$(COMMIT)"; if [ -z "$$c" ] && [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ]; then \
	    c=$$(git describe --always --dirty 2>/dev/null); fi; \
	printf '#define SHORTD_VERSION "%s"\n#define SHORTD_COMMIT "%s"\n' \
	    "$(SHORTD_VERSION)" "$${c:-unknown}" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

FORCE:

# The bot patterns come from the npm isbot package, pinned in package-lock.json;
# scripts/gen-isbot.mjs turns its list into C. Generated, never copied in.
ISBOT_INC := build/gen/isbot_patterns.inc
$(OUT)/obj/clicks/classify.o: $(ISBOT_INC)

$(ISBOT_INC): package-lock.json scripts/gen-isbot.mjs
	@if ! node scripts/gen-isbot.mjs --check; then npm ci --no-audit --no-fund; fi
	node scripts/gen-isbot.mjs $@

# The dashboard (web/) and the chart library it uses (npm uplot, pinned in
# package-lock.json) are compiled into the binary: scripts/embed-web.mjs turns
# them into a C table, web/openapi.json (served at /api/openapi.json) among
# them. Its --check also covers playwright-core, which the browser tests need,
# and the validators of tests/e2e/openapi.test.mjs (ajv, ajv-formats,
# @seriousme/openapi-schema-validator), so this npm ci installs everything the
# lock file pins (after the isbot rule's, never at the same time as it under
# make -j).
WEB_INC := build/gen/web_assets.inc
$(OUT)/obj/api/dashboard.o: $(WEB_INC)

$(WEB_INC): package-lock.json scripts/embed-web.mjs scripts/c-literal.mjs $(filter-out web/site,$(wildcard web/*)) | $(ISBOT_INC)
	@if ! node scripts/embed-web.mjs --check; then npm ci --no-audit --no-fund; fi
	node scripts/embed-web.mjs $@

# The page script that sites install (web/site/, readable source) is built
# by esbuild (npm, pinned in package-lock.json) into one minified file that
# the binary serves at /s.js; the build fails when it is over 2,048 bytes
# gzipped. After the dashboard's rule, which runs npm ci when esbuild is not
# the locked version.
SITE_INC := build/gen/site_script.inc
$(OUT)/obj/api/dashboard.o: $(SITE_INC)

$(SITE_INC): package-lock.json scripts/build-site-script.mjs scripts/c-literal.mjs $(wildcard web/site/*.js) | $(WEB_INC)
	$(Q)node scripts/build-site-script.mjs $@

# The password gate's one style block (src/redirect/gate.css) and its SHA-256, which
# the gate page's Content-Security-Policy names instead of 'unsafe-inline'.
GATE_INC := build/gen/gate_style.inc
$(OUT)/obj/redirect/gate.o: $(GATE_INC)

$(GATE_INC): src/redirect/gate.css scripts/gen-gate-style.mjs
	@echo "  GEN     $@"
	$(Q)node scripts/gen-gate-style.mjs src/redirect/gate.css $@

# Each backend's schema migrations are SQL files, embedded as C strings:
# build/gen/<backend>_migrations.inc holds one {version, "name", "sql"} entry
# per migrations/<backend>/NNNN_name.sql, in order (src/store/migrations.h).
MIG_INC := build/gen/pg_migrations.inc build/gen/sqlite_migrations.inc
$(OUT)/obj/store/store_pg.o: build/gen/pg_migrations.inc
$(OUT)/obj/store/store_sqlite.o: build/gen/sqlite_migrations.inc
$(OUT)/unit/test_migrations.o $(OUT)/unit/test_sqlgen.o: $(MIG_INC)

.SECONDEXPANSION:
build/gen/%_migrations.inc: $$(sort $$(wildcard migrations/$$*/*.sql)) Makefile
	@mkdir -p $(@D)
	@echo "  GEN     $@"
	$(Q)for f in $(filter %.sql,$^); do \
	    n=$$(basename $$f); v=$${n%%_*}; \
	    printf '{%d, "%s",\n' "$$(expr "$$v" + 0)" "$$n"; \
	    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/ "/' -e 's/$$/\\n"/' $$f; \
	    printf '},\n'; \
	done >$@.tmp && mv $@.tmp $@

# llhttp's C sources come from Debian's node-llhttp; they are generated code
# and are built with the warnings they need relaxed, never copied into the repo.
$(OUT)/obj/llhttp_%.o: $(LLHTTP)/%.c | $(OUT)/obj
	@echo "  CC      $< (llhttp)"
	$(Q)$(CC) $(BASE) $(OPT) -w -c -o $@ $<

$(OUT)/unit/%.o: tests/unit/%.c $(HDR) $(wildcard tests/unit/*.h) | $(OUT)/unit
	@echo "  CC      $<"
	$(Q)$(CC) $(BASE) $(WARN) $(OPT) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -Itests/unit -c -o $@ $<

$(OUT)/unit_tests: $(UNITOBJ) $(LIBOBJ) $(LLOBJ)
	@echo "  LD      $@"
	$(Q)$(CC) $(OPT) -o $@ $^ $(LIBS)

# bench/storecost.c: the store's CPU per click, apart from the server
$(OUT)/bench/storecost: bench/storecost.c $(LIBOBJ) $(LLOBJ) $(HDR)
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(BASE) $(WARN) $(OPT) $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -o $@ \
		bench/storecost.c $(LIBOBJ) $(LLOBJ) $(LIBS)

# bench/floorcost.c: SQLite alone storing a count a click (a floor)
$(OUT)/bench/floorcost: bench/floorcost.c
	@mkdir -p $(@D)
	@echo "  LD      $@"
	$(Q)$(CC) $(BASE) $(WARN) $(OPT) -o $@ bench/floorcost.c -lsqlite3

$(OUT)/obj $(OUT)/unit:
	mkdir -p $@

# libFuzzer targets (docs/fuzzing.md): every fuzz/<name>.c becomes
# build/fuzz/<name>, built by Debian's clang with ASan and UBSan and linked
# with every src/*/*.c object but app/main.o, compiled by clang into build/fuzz/obj/.
# fuzz/run.sh runs one on a scratch copy of fuzz/corpus/<name>/ after
# replaying fuzz/regressions/<name>/.
FUZZCC       ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 2
FUZZOPT  := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZSRC  := $(wildcard fuzz/*.c)
FUZZBIN  := $(FUZZSRC:fuzz/%.c=build/fuzz/%)
FUZZOBJ  := $(filter-out build/fuzz/obj/app/main.o,$(SRC:src/%.c=build/fuzz/obj/%.o)) \
            build/fuzz/obj/llhttp_api.o build/fuzz/obj/llhttp_http.o build/fuzz/obj/llhttp_llhttp.o

build/fuzz/obj/%.o: src/%.c $(HDR)
	@mkdir -p $(@D)
	@echo "  CC      $< (fuzz)"
	$(Q)$(FUZZCC) $(BASE) $(WARN) -Wno-error -Wno-format-nonliteral $(FUZZOPT) -fsanitize=fuzzer-no-link $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -c -o $@ $<

build/fuzz/obj/llhttp_%.o: $(LLHTTP)/%.c | build/fuzz/obj
	@echo "  CC      $< (llhttp, fuzz)"
	$(Q)$(FUZZCC) $(BASE) $(FUZZOPT) -fsanitize=fuzzer-no-link -w -c -o $@ $<

build/fuzz/obj/clicks/classify.o: $(ISBOT_INC)
build/fuzz/obj/app/cli.o: $(VERSION_H)
build/fuzz/obj/api/dashboard.o: $(WEB_INC) $(SITE_INC)
build/fuzz/obj/redirect/gate.o: $(GATE_INC)
build/fuzz/obj/store/store_pg.o: build/gen/pg_migrations.inc
build/fuzz/obj/store/store_sqlite.o: build/gen/sqlite_migrations.inc

build/fuzz/%: fuzz/%.c $(FUZZOBJ)
	@echo "  LD      $@ (libFuzzer)"
	$(Q)$(FUZZCC) $(BASE) $(WARN) $(FUZZOPT) -fsanitize=fuzzer $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -o $@ $< $(FUZZOBJ) $(LIBS)

build/fuzz/obj:
	mkdir -p $@

.SECONDARY: $(FUZZOBJ)

# Every target runs even after one fails; the status says whether any did.
fuzz: $(FUZZBIN)
	@st=0; for t in $(FUZZSRC:fuzz/%.c=%); do fuzz/run.sh $$t $(FUZZ_SECONDS) || st=1; done; exit $$st

# The smoke pass runs JOBS targets at a time (each one process); xargs goes
# on past a failure and exits non-zero at the end.
fuzz-smoke: $(FUZZBIN)
	@printf '%s\n' $(FUZZSRC:fuzz/%.c=%) | xargs -P$(JOBS) -I{} fuzz/run.sh {} $(FUZZ_SMOKE_SECONDS)

setup:
	@scripts/setup.sh

PORT    ?= 8080
LISTEN  ?= 127.0.0.1:$(PORT)
run: setup
	@$(MAKE) --no-print-directory all
	@mkdir -p data
	build/shortd serve --listen $(LISTEN) --db data/shortd.db

# make install: where things go. A daemon's config lives in /etc whatever the
# PREFIX (the unit and the man page name /etc/shortd/shortd.conf); an existing
# one is never overwritten. The unit's ExecStart names BINDIR.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
DOCDIR      ?= $(PREFIX)/share/doc/shortd
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DESTDIR     ?=

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) \
	    $(DESTDIR)$(UNITDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(SYSCONFDIR)/shortd
	install -m 0755 $(OUT)/shortd $(DESTDIR)$(BINDIR)/shortd
	install -m 0644 $(OUT)/shortd.1 $(DESTDIR)$(MANDIR)/man1/shortd.1
	$(OUT)/shortd config example >$(DESTDIR)$(DOCDIR)/shortd.conf.example
	install -m 0644 README.md LICENSE $(DESTDIR)$(DOCDIR)/
	sed 's|^ExecStart=/usr/bin/shortd |ExecStart=$(BINDIR)/shortd |' packaging/shortd.service \
	    >$(DESTDIR)$(UNITDIR)/shortd.service
	install -m 0644 packaging/shortd.bash-completion $(DESTDIR)$(BASHCOMPDIR)/shortd
	@# The service's data goes to its StateDirectory, /var/lib/shortd.
	test -e $(DESTDIR)$(SYSCONFDIR)/shortd/shortd.conf || \
	    $(OUT)/shortd config example | sed 's|^db = .*|db = /var/lib/shortd/shortd.db|' \
	    >$(DESTDIR)$(SYSCONFDIR)/shortd/shortd.conf

# Leaves /etc/shortd/shortd.conf (it may hold the operator's changes) and the
# data in /var/lib/shortd.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/shortd $(DESTDIR)$(MANDIR)/man1/shortd.1 \
	    $(DESTDIR)$(UNITDIR)/shortd.service $(DESTDIR)$(BASHCOMPDIR)/shortd
	rm -rf $(DESTDIR)$(DOCDIR)

# The Debian package (packaging/mkdeb.sh): dpkg-deb, no debhelper.
deb:
	@$(MAKE) --no-print-directory HARDEN=1 all
	packaging/mkdeb.sh build/deb

# The test build: every test runs against the sanitizer binary. The three
# builds use every core (JOBS).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test: setup
	@node scripts/embed-web.mjs --check || npm ci --no-audit --no-fund
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=address,undefined build/asan/shortd build/asan/unit_tests
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=thread build/tsan/unit_tests
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@scripts/test.sh

unit: setup
	@$(MAKE) --no-print-directory SAN=address,undefined build/asan/unit_tests
	build/asan/unit_tests

e2e: setup
	@$(MAKE) --no-print-directory SAN=address,undefined build/asan/shortd
	SHORTD_BIN=build/asan/shortd node --test tests/e2e/

asan:
	@$(MAKE) --no-print-directory SAN=address,undefined build/asan/shortd

# The benchmark against nginx (bench/run.sh, bench/README.md): not part of
# `make test`. Installs what it needs (bench/setup.sh), builds the release
# binary, runs on loopback for about 10 minutes. BENCH_LINKS=1000,1000000,10000000
# adds the 10 M point; BENCH_ARGS passes more flags (e.g. --quick).
bench: setup
	@bench/setup.sh
	@$(MAKE) --no-print-directory all
	bench/run.sh $(if $(BENCH_LINKS),--links $(BENCH_LINKS)) $(BENCH_ARGS)

format:
	clang-format -i src/*/*.c src/*/*.h tests/unit/*.c fuzz/*.c

clean:
	rm -rf build

-include $(OBJ:.o=.d)
