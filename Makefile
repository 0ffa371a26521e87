# Builds the release binaries and lays them out like an MPI installation under $(DIST).
#   make                 -> dist/bin/bbrun, dist/bin/bb-bench
#   make install PREFIX=/opt/billboard
#   make test            -> the whole test suite (what .ci/run runs)
DIST    ?= dist
PREFIX  ?= /usr/local
CARGO   ?= cargo
BINS    := bbrun bb-bench

.PHONY: all build install test clean
all: build
	@mkdir -p $(DIST)/bin
	@for b in $(BINS); do install -m 0755 target/release/$$b $(DIST)/bin/$$b; done
	@echo "installed into $(DIST)/: $$(cd $(DIST) && find . -type f | sort | tr '\n' ' ')"

build:
	$(CARGO) build --release --workspace --bins

install: all
	@mkdir -p $(PREFIX)
	cp -R $(DIST)/. $(PREFIX)/

test:
	./scripts/test.sh

clean:
	$(CARGO) clean
	rm -rf $(DIST)
