#!/usr/bin/env bash
# Runs the examples of rsmpi (the `mpi` crate, Rust's MPI bindings from crates.io) on our library
# beside MPICH's, the way a Rust user gets them: the crate's source release built with our mpicc
# (its build script probes `mpicc -show`, bindgen reads our mpi.h), then every example run under
# bbrun and under MPICH's mpiexec with MPICH's libmpi, at each rank count. The examples check
# their own results (assert!), so an example passes when it exits 0; a run passes when every
# example that passes under MPICH passes here (three fail on MPICH too: all_gather_bool needs 2
# ranks, immediate_multiple_requests assumes 2 or more, comm_name's own panic aborts; MPICH 4.0.2
# also fails dyn_communicator, an assertion on an overlapping memcpy in its yaksa packer, and the
# two spawn examples, "Error in spawn call", which pass here).
#
#   scripts/rsmpi.sh                     every example at 1, 2 and 3 ranks
#   scripts/rsmpi.sh --ranks 2 barrier   one example at 2 ranks
#
# Options:
#   --ranks LIST     comma-separated rank counts (default 1,2,3; 3 outnumbers this machine's cores)
#   --timeout S      seconds one example may take before it counts as hung (default 60)
#
# The examples are built once per mpi.h and build recipe, under
# ${BB_CACHE:-~/.cache/billboard}/rsmpi-VERSION-HASH (about 3 minutes on 2 cores; needs
# crates.io and libclang-dev). Exit status: 0 when no example failed here that passed under MPICH,
# 1 when one did, 2 for a usage error or a build that failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=0.8.2
RANKS=1,2,3
TIMEOUT=60
EXAMPLES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "rsmpi.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) EXAMPLES+=("$1"); shift ;;
  esac
done

MPICC="$ROOT/dist/bin/mpicc"
if [ ! -x "$MPICC" ] || [ ! -f "$ROOT/dist/lib/libmpi.so.12" ]; then
  echo "rsmpi.sh: dist/bin/mpicc or dist/lib/libmpi.so.12 missing: run make first" >&2
  exit 2
fi
MPICH_LIB=$(ls /usr/lib/*/libmpich.so.12 2>/dev/null | head -1)
if [ -z "$MPICH_LIB" ] || ! command -v mpiexec.mpich >/dev/null; then
  echo "rsmpi.sh: SKIP: MPICH (mpich, libmpich-dev) is needed to compare with"
  exit 0
fi

if ! ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1; then
  echo "rsmpi.sh: SKIP: libclang-dev is needed (rsmpi's build runs bindgen over mpi.h)"
  exit 0
fi

KEY=$({ cat "$ROOT/dist/include/mpi.h"; sed -n '/^build()/,/^}/p' "$0"; } | sha256sum | cut -c1-16)
CACHE="${BB_CACHE:-$HOME/.cache/billboard}/rsmpi-$VERSION-$KEY"

# The crate's source comes through cargo (a probe project that depends on it, vendored), so the
# registry and its checksums are cargo's own; the examples are built in the vendored copy.
build() {
  rm -rf "$CACHE" && mkdir -p "$CACHE/probe/src" &&
    printf '[package]\nname = "probe"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nmpi = "=%s"\n' \
      "$VERSION" >"$CACHE/probe/Cargo.toml" &&
    echo 'fn main() {}' >"$CACHE/probe/src/main.rs" &&
    (cd "$CACHE/probe" && cargo vendor -q "$CACHE/vendor" >/dev/null) &&
    cp -r "$CACHE/vendor/mpi" "$CACHE/mpi" && rm -f "$CACHE/mpi/.cargo-checksum.json" &&
    (cd "$CACHE/mpi" && MPICC="$MPICC" CARGO_TARGET_DIR="$CACHE/target" \
      cargo build -q --release --examples --features derive,complex) &&
    touch "$CACHE/built"
}
mkdir -p "$(dirname "$CACHE")"
if [ ! -f "$CACHE/built" ]; then
  echo "== building rsmpi $VERSION's examples with dist/bin/mpicc into $CACHE"
  if ! build >"$CACHE.log" 2>&1; then
    tail -20 "$CACHE.log"
    echo "rsmpi.sh: the build failed (log: $CACHE.log)" >&2
    exit 2
  fi
  find "$(dirname "$CACHE")" -maxdepth 1 -name "rsmpi-$VERSION-*" ! -name "$(basename "$CACHE")*" \
    -exec rm -rf {} + 2>/dev/null
fi

BIN="$CACHE/target/release/examples"
if [ ${#EXAMPLES[@]} -eq 0 ]; then
  for f in "$CACHE"/mpi/examples/*.rs; do EXAMPLES+=("$(basename "$f" .rs)"); done
fi
# MPICH's library under the soname our binaries ask for; the binaries' RUNPATH names dist/lib,
# which LD_LIBRARY_PATH overrides.
MPICH_DIR=$(mktemp -d)
trap 'rm -rf "$MPICH_DIR"' EXIT
ln -s "$MPICH_LIB" "$MPICH_DIR/libmpi.so.12"

# One example at one rank count under one library: prints 0 when it passed, else its status.
outcome() {
  local log=$1; shift
  timeout --kill-after=5 $((TIMEOUT + 5)) "$@" >"$log" 2>&1
  echo $?
}
failed=0
IFS=, read -ra counts <<<"$RANKS"
for n in "${counts[@]}"; do
  start=$(date +%s) passed=0 both=() only_here=() differ=()
  for ex in "${EXAMPLES[@]}"; do
    [ -x "$BIN/$ex" ] || { differ+=("$ex: not built"); continue; }
    ours=$(MPIEXEC_TIMEOUT=$TIMEOUT outcome "$MPICH_DIR/ours.log" \
      env LD_LIBRARY_PATH="$ROOT/dist/lib" "$ROOT/dist/bin/bbrun" -n "$n" "$BIN/$ex")
    theirs=$(MPIEXEC_TIMEOUT=$TIMEOUT outcome "$MPICH_DIR/mpich.log" \
      env LD_LIBRARY_PATH="$MPICH_DIR" mpiexec.mpich -n "$n" "$BIN/$ex")
    if [ "$ours" = 0 ]; then
      passed=$((passed + 1))
      [ "$theirs" = 0 ] || only_here+=("$ex")
    elif [ "$theirs" != 0 ]; then
      both+=("$ex")
    else
      differ+=("$ex: exit $ours here, 0 under MPICH")
      tail -5 "$MPICH_DIR/ours.log" | sed 's/^/    /'
    fi
  done
  summary="$passed passed${only_here:+ (under MPICH ${only_here[*]} failed)}"
  summary+=", ${#both[@]} failed on both${both:+: ${both[*]}}"
  if [ ${#differ[@]} -eq 0 ]; then
    echo "rsmpi $n rank(s): as under MPICH or better in $(($(date +%s) - start)) s ($summary)"
  else
    failed=1
    echo "rsmpi $n rank(s): FAILED ($summary, ${#differ[@]} failed only here)"
    printf '  %s\n' "${differ[@]}"
  fi
done
exit $failed
