#!/usr/bin/env bash
# Runs every test of the project: unit and property tests, the loom model of the ring, and the
# multi-process tests under bbrun. Works on a fresh machine with a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
  echo "cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi

echo "== build (the multi-process tests launch these binaries)"
cargo build --workspace --bins --examples

echo "== unit, property and multi-process tests"
cargo test --workspace -- --test-threads=1

echo "== loom model of the fast-box ring (bounded preemptions keep it to about a minute)"
LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-2} RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
  cargo test -p billboard --release --lib loom
