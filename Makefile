# Builds the release binaries and lays them out like an MPI installation under $(DIST).
#   make                 -> dist/bin/{bbrun,mpiexec,mpicc,mpicxx,bb-bench,bbpvmd}, dist/lib/libmpi.so.12
#                           (+ libmpich.so.12, libmpi.so, libmpich.so), dist/include/{mpi.h,mpio.h},
#                           dist/lib/libmpichfort.so.12 (+ .so), dist/include/{mpif.h,mpi.mod,mpi_f08.mod},
#                           dist/bin/{mpifort,mpif90,mpif77}, dist/lib/libpvm3.so.3 (+ libgpvm3.so.3, the same object), dist/include/pvm3.h
#   make install PREFIX=/opt/billboard
#   make test            -> the whole test suite (what .ci/run runs)
DIST    ?= dist
PREFIX  ?= /usr/local
CARGO   ?= cargo
BINS    := bbrun bb-bench bbpvmd

.PHONY: all build install test clean
all: build
	@mkdir -p $(DIST)/bin $(DIST)/lib $(DIST)/include
	@for b in $(BINS); do install -m 0755 target/release/$$b $(DIST)/bin/$$b; done
	@ln -sf bbrun $(DIST)/bin/mpiexec && ln -sf bbrun $(DIST)/bin/mpirun
	@install -m 0755 crates/mpi/bin/mpicc $(DIST)/bin/mpicc
	@ln -sf mpicc $(DIST)/bin/mpicxx
	@install -m 0644 crates/mpi/include/mpi.h $(DIST)/include/mpi.h
	@install -m 0644 crates/mpi/include/mpio.h $(DIST)/include/mpio.h
	@install -m 0755 target/release/libmpi.so $(DIST)/lib/libmpi.so.12
	@for l in libmpich.so.12 libmpi.so libmpich.so; do ln -sf libmpi.so.12 $(DIST)/lib/$$l; done
	@crates/mpi/fortran/build.sh target/release target/fortran
	@if [ -f target/fortran/libmpichfort.so.12 ]; then \
	  install -m 0755 target/fortran/libmpichfort.so.12 $(DIST)/lib/libmpichfort.so.12; \
	  ln -sf libmpichfort.so.12 $(DIST)/lib/libmpichfort.so; \
	  install -m 0644 target/fortran/mpif.h $(DIST)/include/; \
	  for f in mpifort mpif90 mpif77; do ln -sf mpicc $(DIST)/bin/$$f; done; \
	fi
	@for m in mpi.mod mpi_f08.mod; do if [ -f target/fortran/$$m ]; then install -m 0644 target/fortran/$$m $(DIST)/include/; fi; done
	@install -m 0644 crates/pvm/include/pvm3.h $(DIST)/include/pvm3.h
	@install -m 0755 target/release/libpvm.so $(DIST)/lib/libpvm3.so.3
	@# The group calls live in libpvm3 itself; a program that needs libgpvm3.so.3 loads the same
	@# file (the loader sees one object), so both share one task state.
	@for l in libgpvm3.so.3 libpvm3.so libgpvm3.so; do ln -sf libpvm3.so.3 $(DIST)/lib/$$l; done
	@echo "installed into $(DIST)/: $$(cd $(DIST) && find . -type f | sort | tr '\n' ' ')"

build:
	$(CARGO) build --release --workspace --bins --lib

install: all
	@mkdir -p $(PREFIX)
	cp -R $(DIST)/. $(PREFIX)/

test:
	./scripts/test.sh

clean:
	$(CARGO) clean
	rm -rf $(DIST)
