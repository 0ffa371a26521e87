#!/usr/bin/env bash
# Runs every test of the project: unit and property tests, the loom model of the ring, and the
# multi-process tests under bbrun. Works on a fresh machine with a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi

# MPICH's compiler and Hydra let the interop tests (bbrun serving a C program built with
# mpicc.mpich; our PMI client under mpiexec.hydra) run instead of skipping.
if ! command -v mpicc.mpich >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== installing MPICH for the interop tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q mpich libmpich-dev >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q mpich libmpich-dev >/dev/null; } ||
    echo "could not install MPICH: its interop tests will be skipped"
fi

echo "== build (the multi-process tests launch these binaries; the C suite uses dist/)"
cargo build --workspace --bins --examples
make --no-print-directory

echo "== unit, property and multi-process tests"
cargo test --workspace -- --test-threads=1

echo "== loom model of the fast-box ring (bounded preemptions keep it to about a minute)"
LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-2} RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p billboard --release --lib loom
