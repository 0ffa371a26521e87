#!/usr/bin/env bash
# Fuzzes the decoders of bytes from the network (TCP frame header, frame reader, connection
# handshake, PMI-1 lines, the UDP route as a peer holding the secret drives it) for
# SECONDS_PER_TARGET seconds each (default 15), starting from a generated seed corpus. Fails if
# any target crashes: a panic, a broken property, a hang (10 s on one input) or a leak of memory
# past libFuzzer's limit. The crashing input is kept in
# fuzz/artifacts/<target>/; replay it with `cargo fuzz run -s none -O -a <target> <file>`.
#
# Stable toolchain only: `-s none` builds without a sanitizer (AddressSanitizer needs nightly's
# -Zsanitizer); what remains is stable rustc's coverage instrumentation (-Cpasses=sancov-module),
# debug assertions and overflow checks. The code fuzzed is safe Rust, so a sanitizer would add
# little. libfuzzer-sys compiles libFuzzer from its C++ sources: it needs a C++ compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-15}
FLAGS=(-s none -O -a)

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

echo "== build the fuzz targets"
cargo fuzz build "${FLAGS[@]}"

echo "== seed corpus (fuzz/corpus/<target>/seed-*)"
cargo run -q --manifest-path fuzz/Cargo.toml --no-default-features --example seeds -- fuzz/corpus

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=()
for target in $(cargo fuzz list); do
  echo "== fuzz $target for ${SECONDS_PER_TARGET}s"
  if cargo fuzz run "${FLAGS[@]}" "$target" -- -max_total_time="$SECONDS_PER_TARGET" -timeout=10 \
      >"$logs/$target" 2>&1; then
    grep -E '^#[0-9]+[[:space:]]+DONE' "$logs/$target" | tail -1 || true
  else
    grep -E -A2 "panicked at|==ERROR|SUMMARY|Test unit written|Reproduce with|^Error" "$logs/$target" ||
      tail -40 "$logs/$target"
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
  exit 1
fi
echo "fuzz: every target ran ${SECONDS_PER_TARGET}s without a crash"
